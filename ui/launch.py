"""Start the app: `python -m ui.launch [streamlit options]` (what `make run` does).

Why not plain `streamlit run app.py`: a `pages/` folder beside the entry script makes Streamlit
treat the very first session of a fresh process as a legacy multipage app, so a deep link opened
first after a restart shows a false "Page not found" dialog (st.navigation clears the flag only
once it has run). We use st.navigation, so we clear the flag before the server starts. It also
redirects nested page paths, which plain Streamlit serves as a blank page (ui/nested_paths.py),
starts the simulation worker with the models loaded, so the first simulation does not wait for it,
and keeps a live panel's poll from replacing a page change (ui/rerun_guard.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

from streamlit.runtime.pages_manager import PagesManager
from streamlit.web import cli

from ui.nested_paths import install as install_nested_path_redirect
from ui.rerun_guard import install as install_rerun_guard
from ui.sim_runs import RUNS

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> None:
    PagesManager.uses_pages_directory = False
    install_nested_path_redirect()
    install_rerun_guard()  # a poll's tick never replaces a page change (ui/rerun_guard.py)
    RUNS.warm()  # the simulation worker, started before the server's threads (ui/sim_runs.py)
    sys.argv = ["streamlit", "run", str(ROOT / "app.py"), *argv]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
