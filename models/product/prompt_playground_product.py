"""A prompt playground as a product: versions, sharing, very large prompts, export (seed 001).

The deployment is given and traffic is low; the interest is the data model. The walkthrough
computes, in interview order:

    the prompt          size in kB, tokens and lines; whether its body fits a database row or
                        goes to object storage behind a reference (uploaded straight from the client)
    versions            immutable, each with a parent pointer; stored as a diff against the parent
                        with a full snapshot every k versions: full copies against snapshots plus
                        diffs, the saving, and the longest diff chain a render must apply (k - 1)
    sharing             public links, login links, per-account grants; a revocation takes effect
                        after the permission cache's TTL plus propagation, and a pre-signed body URL
                        already handed out lives until it expires
    export              a saved version becomes a real API call; what one run costs in input tokens

The interactive element is a version tree (`VersionTree`): add a version, branch from an older
one, undo (a new version whose body is its target's parent's), all pure and immutable; the page
replays the tree from an operation string kept in the URL.

Modelling choices stated on the page: a linear history of N versions for the storage figures
(a branch point changes where snapshots fall, not the ratio much); a diff stores about the edited
bytes (offsets and headers are tens of bytes); no compression (text bodies compress 3-4x, which
scales both sides alike).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Annotated, Mapping

from models.core import Derivation, Knob, StrictModel

API_URL = "https://api.anthropic.com/v1/messages"
API_VERSION = "2023-06-01"


class Params(StrictModel):
    prompt_size_kB: Annotated[
        float,
        Knob("Prompt size", "kB", 1, 10_000, 1, log=True,
             help="Body of one version: system prompt, examples, pasted documents.", draw=(50, 2000)),
    ] = 400
    bytes_per_token: Annotated[
        float,
        Knob("Bytes per token", "B", 2, 6, 0.1, help="English text averages about 4.", draw=(3.5, 4.5)),
    ] = 4
    versions: Annotated[
        int,
        Knob("Versions of the prompt", "", 2, 10_000, 1, log=True,
             help="Saved versions over the prompt's life (N).", draw=(50, 2000)),
    ] = 200
    edit_size_kB: Annotated[
        float,
        Knob("Edit per version", "kB", 0.01, 1000, 0.01, log=True,
             help="Bytes one save changes (e): a reworded instruction, a swapped example.", draw=(0.5, 20)),
    ] = 2
    snapshot_every: Annotated[
        int,
        Knob("Snapshot every", "versions", 1, 1000, 1, log=True,
             help="A full copy every k versions; the ones between are diffs (k = 1: every version is a copy).",
             draw=(10, 50)),
    ] = 20
    inline_limit_kB: Annotated[
        float,
        Knob("Largest body kept in the database row", "kB", 1, 1024, 1, log=True,
             help="Above this the row holds a reference and the body lives in object storage.", draw=(16, 256)),
    ] = 64
    request_limit_kB: Annotated[
        float,
        Knob("Request body limit in front of the API", "kB", 100, 100_000, 1, log=True,
             help="nginx's client_max_body_size defaults to 1m (1 MiB); cloud gateways allow tens of MB.",
             draw=(1000, 10_000)),
    ] = 1000
    autosave_interval_s: Annotated[
        float,
        Knob("Autosave interval", "s", 1, 300, 1, log=True,
             help="How often the editor writes the open draft while someone types.", draw=(2, 30)),
    ] = 5
    permission_cache_ttl_s: Annotated[
        float,
        Knob("Permission cache TTL", "s", 1, 3600, 1, log=True,
             help="How long a server trusts a cached 'may this account see this prompt' answer.", draw=(10, 300)),
    ] = 60
    propagation_s: Annotated[
        float,
        Knob("Propagation", "s", 0.1, 120, 0.1, log=True,
             help="Replica lag plus the time for a revocation to reach every server's cache.", draw=(1, 30)),
    ] = 5
    presigned_url_ttl_s: Annotated[
        float,
        Knob("Pre-signed body URL lifetime", "s", 10, 86_400, 10, log=True,
             help="A body download link, once issued, works until it expires: revocation cannot recall it.",
             draw=(60, 3600)),
    ] = 300
    active_viewers: Annotated[
        int,
        Knob("Viewers with a shared prompt open", "viewers", 10, 1_000_000, 10, log=True,
             help="Each re-checks its permission once per TTL.", draw=(200, 20_000)),
    ] = 2000
    viewport_lines: Annotated[
        int,
        Knob("Lines on screen", "lines", 10, 500, 1, help="What the editor renders at once.", draw=(40, 120)),
    ] = 60
    bytes_per_line: Annotated[
        int,
        Knob("Bytes per line", "B", 20, 400, 1, help="Average line length of the prompt text.", draw=(60, 120)),
    ] = 80
    input_price_per_mtok_usd: Annotated[
        float,
        Knob("Input price", "USD/M tokens", 0.1, 100, 0.1, log=True,
             help="List price of input tokens for the model the version pins.", draw=(0.5, 15)),
    ] = 3


def snapshot_count(versions: int, every: int) -> int:
    """Versions 0, k, 2k, ... of a linear history of N are full copies: ceil(N / k)."""
    return -(-versions // every)


def mean_chain(versions: int, every: int) -> float:
    """Average diffs applied to render one version of a linear history: mean of i mod k."""
    full, rest = divmod(versions, every)
    total = full * every * (every - 1) // 2 + rest * (rest - 1) // 2
    return total / versions


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    S, e, N, k = p.prompt_size_kB, p.edit_size_kB, p.versions, p.snapshot_every

    # --- the prompt --------------------------------------------------------------------------------
    d.step("prompt_tokens", "Tokens in one version", S * 1000 / p.bytes_per_token, "1", noun="tokens",
           formula="{prompt_size_kB} / {bytes_per_token}")
    lines = d.step("prompt_lines", "Lines in one version", S * 1000 / p.bytes_per_line, "1", noun="lines",
                   formula="{prompt_size_kB} / {bytes_per_line}")
    d.step("lazy_render_fraction", "Share of the text the editor renders at once",
           min(1.0, p.viewport_lines / lines), "1", percent=True,
           formula="min(1, {viewport_lines} / {prompt_lines})")
    in_store = S > p.inline_limit_kB
    d.step("body_home", "Where the body lives", "object storage, behind a reference" if in_store else "the database row",
           "1", formula="{prompt_size_kB} kB against the {inline_limit_kB} kB row limit")
    d.step("request_limit_share", "Share of the request body limit one save uses", S / p.request_limit_kB, "1",
           percent=True, formula="{prompt_size_kB} kB / {request_limit_kB} kB")
    d.step("request_limit_tokens", "Largest prompt the request limit lets through the API",
           p.request_limit_kB * 1000 / p.bytes_per_token, "1", noun="tokens",
           formula="{request_limit_kB} kB / {bytes_per_token} B")
    d.step("upload_path", "How a save's body travels",
           "straight from the client to object storage on a pre-signed URL, because the body is over the "
           "request limit" if S > p.request_limit_kB
           else "through the API, because the body fits the request limit (a pre-signed upload is needed only above it)",
           "1")
    d.step("autosaves_per_hour", "Draft writes per hour of editing", 3600 / p.autosave_interval_s, "1",
           noun="writes", formula="3600 s / {autosave_interval_s}")

    # --- versions: full copies against snapshots plus diffs --------------------------------------
    full = d.step("full_copies_KB", "Every version a full copy", N * S, "kB",
                  formula="{versions} versions × {prompt_size_kB} kB")
    snaps = d.step("snapshots_stored", "Versions stored as full snapshots", snapshot_count(N, k), "1",
                   noun="snapshots", formula="ceil({versions} / {snapshot_every})")
    diffs = d.step("diffs_stored", "Versions stored as diffs", N - snaps, "1", noun="diffs",
                   formula="{versions} − {snapshots_stored}")
    spd = d.step("snapshot_plus_diff_KB", "Snapshots plus diffs", snaps * S + diffs * e, "kB",
                 formula="{snapshots_stored} × {prompt_size_kB} kB + {diffs_stored} × {edit_size_kB} kB")
    d.step("storage_saving_ratio", "Full copies over snapshots plus diffs", full / spd, "1", noun="×",
           formula="{full_copies_KB} kB / {snapshot_plus_diff_KB} kB")
    diff_only = d.step("diff_only_KB", "One snapshot, then only diffs", S + (N - 1) * e, "kB",
                       formula="{prompt_size_kB} kB + ({versions} − 1) × {edit_size_kB} kB")
    d.step("snapshot_overhead_KB", "What the periodic snapshots cost over diffs alone", spd - diff_only, "kB",
           formula="{snapshot_plus_diff_KB} kB − {diff_only_KB} kB")
    worst = d.step("worst_case_diffs_applied", "Diffs applied to render the worst version", min(k, N) - 1, "1",
                   noun="diffs", formula="min({snapshot_every}, {versions}) − 1")
    cycles, rest = divmod(N, k)
    d.step("snapshot_cycles", "Whole snapshot cycles in the history", cycles, "1", noun="cycles",
           formula="floor({versions} / {snapshot_every})")
    d.step("versions_after_last_cycle", "Versions after the last whole cycle", rest, "1", noun="versions",
           formula="{versions} − {snapshot_every} × {snapshot_cycles}")
    d.step("mean_diffs_applied", "Diffs applied for an average version", mean_chain(N, k), "1", noun="diffs",
           formula="({snapshot_cycles} × {snapshot_every} × ({snapshot_every} − 1) / 2 + {versions_after_last_cycle} × "
                   "({versions_after_last_cycle} − 1) / 2) / {versions}",
           note="Version i of a cycle applies i diffs (0 to k − 1): the mean of i mod k over the history.")
    d.step("worst_case_read_KB", "Bytes read to render the worst version", S + worst * e, "kB",
           formula="{prompt_size_kB} kB + {worst_case_diffs_applied} × {edit_size_kB} kB")
    d.step("diff_only_worst_case_diffs", "Diffs to apply with no snapshots after the first", N - 1, "1",
           noun="diffs", formula="{versions} − 1")
    d.step("skip_delta_worst_diffs", "Deltas to render the worst version with skip-deltas", N.bit_length() - 1, "1", noun="deltas", formula="floor(log2({versions}))",
           note="Version n is a delta against n with its lowest set bit cleared, so rendering it applies one "
                "delta per set bit of n: at most floor(log2 N) below N.")

    # --- sharing and revocation -------------------------------------------------------------------
    bound = d.step("revocation_staleness_bound_s", "Longest a revoked viewer can still load the prompt",
                   p.permission_cache_ttl_s + p.propagation_s, "s",
                   formula="{permission_cache_ttl_s} + {propagation_s}")
    d.step("body_link_staleness_bound_s", "Longest a body URL issued before the revocation still works",
           max(bound, p.presigned_url_ttl_s), "s",
           formula="max({revocation_staleness_bound_s} s, {presigned_url_ttl_s} s)")
    d.step("authz_reads_per_s", "Permission reads reaching the database", p.active_viewers / p.permission_cache_ttl_s,
           "1/s", noun="reads", formula="{active_viewers} viewers / {permission_cache_ttl_s} s")

    # --- export ------------------------------------------------------------------------------------
    d.step("cost_per_run_usd", "Input cost of running this version once",
           d.value("prompt_tokens") * p.input_price_per_mtok_usd / 1e6, "USD",
           formula="{prompt_tokens} × {input_price_per_mtok_usd} / 1,000,000")
    return d


# --------------------------------------------------------------------------------------------------
# The version tree: immutable versions with a parent pointer. No operation changes a version that
# exists; every operation returns a new tree holding one more version.

ROOT_LINES = ("You review supplier contracts for a procurement team.",)
EDIT_LINES = (
    "Quote the clause number for every finding.",
    "Flag auto-renewal terms longer than 12 months.",
    "Answer in at most five bullet points.",
    "Return JSON with keys summary and risks.",
    "Do not give legal advice; say when a lawyer is needed.",
    "Treat liability caps below the contract value as high risk.",
    "Write for a buyer, not a lawyer.",
    "List missing termination clauses first.",
)
MAX_VERSIONS = 40


@dataclass(frozen=True)
class Version:
    id: int
    parent: int | None
    lines: tuple[str, ...]
    kind: str  # "root" | "edit" | "undo"
    note: str
    depth: int
    restores: int | None = None  # for an undo: the version whose body it brings back


@dataclass(frozen=True)
class VersionTree:
    versions: tuple[Version, ...]

    def __len__(self) -> int:
        return len(self.versions)

    def get(self, vid: int) -> Version:
        if not 0 <= vid < len(self.versions):
            raise KeyError(f"no version v{vid}")
        return self.versions[vid]

    def children(self, vid: int) -> tuple[int, ...]:
        return tuple(v.id for v in self.versions if v.parent == vid)

    def tips(self) -> tuple[int, ...]:
        parents = {v.parent for v in self.versions}
        return tuple(v.id for v in self.versions if v.id not in parents)

    def history(self, vid: int) -> tuple[int, ...]:
        """The version and its ancestors, newest first: what the parent pointers give for free."""
        out = []
        cur: int | None = vid
        while cur is not None:
            out.append(cur)
            cur = self.get(cur).parent
        return tuple(out)


def new_tree() -> VersionTree:
    return VersionTree((Version(0, None, ROOT_LINES, "root", "first save", 0),))


def _append(tree: VersionTree, version: Version) -> VersionTree:
    if len(tree) >= MAX_VERSIONS:
        raise ValueError(f"the demo keeps at most {MAX_VERSIONS} versions")
    return VersionTree(tree.versions + (version,))


def add_version(tree: VersionTree, parent: int) -> VersionTree:
    """A new version on top of `parent`; if `parent` already has children, this starts a branch."""
    base = tree.get(parent)
    vid = len(tree)
    line = EDIT_LINES[(vid - 1) % len(EDIT_LINES)]
    branch = bool(tree.children(parent))
    note = f"{'branch from' if branch else 'edit on'} v{parent}: + “{line}”"
    return _append(tree, Version(vid, parent, base.lines + (line,), "edit", note, base.depth + 1))


def undo(tree: VersionTree, target: int) -> VersionTree:
    """Undo `target`: a new version, child of `target`, whose body is `target`'s parent's.

    Nothing is deleted and no pointer moves, so two people undoing at once make two versions
    and nobody needs a lock. Undoing an undo brings the edit back (a redo)."""
    version = tree.get(target)
    if version.parent is None:
        raise ValueError("the first version has nothing to undo")
    restored = tree.get(version.parent)
    vid = len(tree)
    note = f"undo of v{target}: body of v{restored.id}"
    return _append(tree, Version(vid, target, restored.lines, "undo", note, version.depth + 1, restored.id))


_OP = re.compile(r"^([eu])(\d{1,3})$")


def replay(ops: str) -> VersionTree:
    """Rebuild a tree from its operation log, e.g. "e0.e1.e1.u2" (edit on v0, edit on v1, ...)."""
    tree = new_tree()
    if not ops:
        return tree
    for token in ops.split("."):
        m = _OP.match(token)
        if not m:
            raise ValueError(f"'{token}' is not an operation (e<version> or u<version>)")
        vid = int(m.group(2))
        if vid >= len(tree):
            raise ValueError(f"'{token}' names v{vid}, which does not exist yet")
        tree = add_version(tree, vid) if m.group(1) == "e" else undo(tree, vid)
    return tree


def diffs_to_render(tree: VersionTree, vid: int, every: int) -> int:
    """Snapshots fall at depths 0, k, 2k, ... along each chain; a render applies depth mod k diffs."""
    return tree.get(vid).depth % every


def layout(tree: VersionTree) -> dict[int, tuple[int, int]]:
    """(column, lane) per version for drawing: column = depth; a first child keeps its parent's
    lane, every later child opens a new lane."""
    pos: dict[int, tuple[int, int]] = {}
    next_lane = 0

    def place(vid: int, lane: int) -> None:
        nonlocal next_lane
        pos[vid] = (tree.get(vid).depth, lane)
        for i, child in enumerate(tree.children(vid)):
            if i == 0:
                place(child, lane)
            else:
                next_lane += 1
                place(child, next_lane)

    place(0, 0)
    return pos


def move_label(labels: Mapping[str, int], name: str, expected: int | None, new: int) -> tuple[dict[str, int], bool]:
    """Compare-and-set on a named pointer ("latest", "production"): the one mutable thing.

    Succeeds only if the label still points where the caller last saw it; a loser's version is
    kept (it is a branch), it just does not become the label's target."""
    current = labels.get(name)
    out = dict(labels)
    if current != expected:
        return out, False
    out[name] = new
    return out, True


def export_request(lines: tuple[str, ...], model: str = "claude-sonnet-4-5", max_tokens: int = 1024,
                   temperature: float = 0.0, user_message: str = "{{contract_text}}") -> dict:
    """A saved version as the body of a Messages API call: the version freezes the model, the
    system prompt, the sampling settings and the template of the user turn."""
    return {
        "model": model,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "system": "\n".join(lines),
        "messages": [{"role": "user", "content": user_message}],
    }


def export_curl(body: Mapping, body_file: str | None = None) -> str:
    """The call as a shell command; a large body goes in a file (`--data @file`), not on the line."""
    head = (f"curl {API_URL} \\\n"
            '  -H "x-api-key: $ANTHROPIC_API_KEY" \\\n'
            f'  -H "anthropic-version: {API_VERSION}" \\\n'
            '  -H "content-type: application/json" \\\n')
    if body_file:
        return head + f"  --data @{body_file}"
    return head + "  --data '" + json.dumps(body, ensure_ascii=False).replace("'", "'\\''") + "'"


def tokens_of(lines: tuple[str, ...], bytes_per_token: float) -> int:
    return math.ceil(len("\n".join(lines).encode()) / bytes_per_token)
