"""The class deployment on loopback: deploy/nginx.conf in front of N replicas (test and bench).

The committed config runs as it is except for its ports: `render_nginx_conf` swaps the
`listen` port and the upstream's `server 127.0.0.1:PORT` lines and touches nothing else, so a
test of the rendered file is a test of the recipe in the README.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NGINX_CONF = ROOT / "deploy" / "nginx.conf"
COOKIE = "walkthroughs_replica"
INSTALL_HINT = "nginx is not installed; `make test` installs Debian's nginx (apt-get install nginx)."

_UPSTREAM_SERVER = re.compile(r"^(\s*)server 127\.0\.0\.1:\d+( [^;]*)?;.*$", re.M)
_LISTEN = re.compile(r"^(\s*)listen \d+;", re.M)


def find_nginx() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)


def render_nginx_conf(replica_ports: list[int], listen_port: int, text: str | None = None) -> str:
    """deploy/nginx.conf with these replicas and this loopback port; nothing else changes."""
    text = NGINX_CONF.read_text() if text is None else text
    servers = list(_UPSTREAM_SERVER.finditer(text))
    if not servers or len(_LISTEN.findall(text)) != 1:
        raise ValueError("deploy/nginx.conf: expected upstream `server 127.0.0.1:PORT ...;` lines and one `listen PORT;`")
    indent, options = servers[0].group(1), servers[0].group(2) or ""
    block = "\n".join(f"{indent}server 127.0.0.1:{p}{options};" for p in replica_ports)
    first, last = servers[0].start(), servers[-1].end()
    text = text[:first] + block + text[last:]
    return _LISTEN.sub(lambda m: f"{m.group(1)}listen 127.0.0.1:{listen_port};", text)


class Nginx:
    """nginx in the foreground with its own prefix dir (pid, logs, temp files)."""

    def __init__(self, replica_ports: list[int], listen_port: int):
        binary = find_nginx()
        if binary is None:
            raise RuntimeError(INSTALL_HINT)
        # Not under pytest's 0700 tmp dir: as root, nginx's workers run as `nobody`.
        self.prefix = Path(tempfile.mkdtemp(prefix="walkthroughs-nginx-"))
        self.prefix.chmod(0o755)
        self.conf = self.prefix / "nginx.conf"
        self.conf.write_text(render_nginx_conf(replica_ports, listen_port))
        self.access_log = self.prefix / "access.log"
        self.error_log = self.prefix / "error.log"
        self.url = f"http://127.0.0.1:{listen_port}"
        self.proc = subprocess.Popen(
            [binary, "-p", str(self.prefix), "-c", str(self.conf), "-e", str(self.error_log), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.proc.stderr.read()}\n{self._errors()}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except (OSError, urllib.error.HTTPError):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"nginx did not answer on {self.url}:\n{self._errors()}")

    def _errors(self) -> str:
        return self.error_log.read_text(errors="replace")[-3000:] if self.error_log.exists() else ""

    def upstream_for(self, key: str) -> str:
        """The replica (host:port) nginx picks for a browser whose sticky cookie is `key`."""
        req = urllib.request.Request(f"{self.url}/_stcore/health", headers={"Cookie": f"{COOKIE}={key}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.headers["X-Upstream"]

    def keys_for(self, replica_ports: list[int]) -> dict[int, str]:
        """A sticky-cookie value per replica port: browsers given them land where we choose."""
        found: dict[int, str] = {}
        for i in range(200):
            key = f"pin{i:04d}"
            port = int(self.upstream_for(key).rsplit(":", 1)[1])
            found.setdefault(port, key)
            if set(found) >= set(replica_ports):
                return found
        raise RuntimeError(f"no cookie value reaches every replica: {found}")

    def log_lines(self) -> list[dict[str, str]]:
        """Parsed access log: request, status, upstream (may list several: a retry), sticky key."""
        pattern = re.compile(r'"(?P<request>[^"]*)" (?P<status>\d+) \d+ upstream="(?P<upstream>[^"]*)" '
                             r'sticky="(?P<sticky>[^"]*)"')
        text = self.access_log.read_text(errors="replace") if self.access_log.exists() else ""
        return [m.groupdict() for m in map(pattern.search, text.splitlines()) if m]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: fast shutdown of master and workers
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()

    def cleanup(self) -> None:
        shutil.rmtree(self.prefix, ignore_errors=True)
