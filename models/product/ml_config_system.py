"""An ML configuration system for training runs (seed 001): layers, schema, resolve, hash, pin.

The seed names the parts (schemas, inheritance and overrides, validation, reproducibility made
concrete, the flexible-versus-strict trade-off) but no numbers, so the scenario is ours: a 7B
dense model trained on data-parallel x tensor-parallel x pipeline-parallel GPUs, one sweep of
small proxy runs, and one relaunch weeks later on a machine with a different GPU count.

Everything the page's live resolver does is a pure function here, tested on its own:

    parse_layer(name, text)       TOML or JSON text -> dict, or one plain error naming layer and line
    deep_merge(base, over)        maps merge key by key; lists and scalars are replaced whole
    resolve(layers, pins, strict) base < experiment < command line < pins (pins always win),
                                  provenance per leaf, schema validation, lossless type
                                  normalization (strict), derived fields, the two hashes
    canonical_json / sha256_hex   json.dumps(obj, sort_keys=True, separators=(",", ":")) -> SHA-256
    expand_sweep(axes)            the cartesian product of sweep axes, one override per run

Modelling choices stated on the page: the command-line layer is the page's knobs; the hash
covers the whole resolved config, pins and derived fields included; a second hash leaves out the
layout (parallelism and micro batch), which a relaunch on other hardware may change without
changing the experiment; a relaunch keeps the micro batch (it is set by memory) and the global
batch (it is part of the experiment).
"""

from __future__ import annotations

import difflib
from functools import lru_cache
import hashlib
import itertools
import json
import math
import re
import tomllib
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Mapping, Sequence

from models.core import Derivation, Knob, StrictModel

# ---------------------------------------------------------------------------------------------
# The scenario's layers, as the text a researcher would write. The page's text areas start from
# exactly these strings, so an unedited resolver reproduces the derivation's hash.

BASE_TOML = """\
# base.toml: every field, with the team's defaults
[model]
name = "dense-7b"
layers = 32
hidden = 4096
heads = 32
vocab = 128256
seq_len = 2048

[optim]
name = "adamw"
lr = 3e-4
betas = [0.9, 0.95]
weight_decay = 0.1
warmup_steps = 2000
schedule = "cosine"

[batch]
global_batch = 512
micro_batch = 2

[layout]
data_parallel = 1
tensor_parallel = 1
pipeline_parallel = 1

[data]
snapshot = "latest"
manifest_sha256 = ""
sources = ["web", "code", "books"]
weights = [0.7, 0.2, 0.1]

[train]
tokens = 100_000_000_000
seed = 0

[env]
image = "registry.internal/train:latest"
code_commit = ""
"""

EXPERIMENT_TOML = """\
# experiments/code-heavy.toml: only what this experiment changes
[optim]
lr = 1.5e-4
warmup_steps = 1000

[data]
sources = ["web", "code"]
weights = [0.85, 0.15]

[train]
seed = 17
"""

PINS_TOML = """\
# pins: written by the launcher at resolve time, never by hand
[env]
image = "registry.internal/train@sha256:7b5193becf34e25f4e3056c1a0a6cfb33013ffe04a38b58ebf19fc4a2e4dc1c6"
code_commit = "7d28d5a14600f66d5eb7325e3d016511ccd63be5"

[data]
snapshot = "web-code-2025-06-02"
manifest_sha256 = "22f39156a0021099ca93acabe840dfdbb83bb249f80fdc4e876b605ccc595914"
"""

BASE = tomllib.loads(BASE_TOML)
EXPERIMENT = tomllib.loads(EXPERIMENT_TOML)
PINS = tomllib.loads(PINS_TOML)

LAYER_NAMES = ("base", "experiment", "command line", "pins")

# Paths a relaunch on other hardware may change without changing the experiment.
LAYOUT_PATHS = ("layout", "batch.micro_batch", "derived.gpus", "derived.grad_accum_steps")

# Tags that move: a config naming one of them is not pinned, whatever else it says.
MOVING_TAGS = ("latest", "main", "head", "current", "stable", "")

# ---------------------------------------------------------------------------------------------
# Knobs: the numeric scenario, which is also the resolver's command-line layer.

GlobalBatch = Literal[256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192]
MicroBatch = Literal[1, 2, 4, 8, 16]
DataParallel = Literal[1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]
ModelParallel = Literal[1, 2, 4, 8]
SeqLen = Literal[2048, 4096, 8192, 16384, 32768]


class Params(StrictModel):
    global_batch: Annotated[
        GlobalBatch,
        Knob("Global batch", "sequences", 256, 8192, help="Sequences per optimizer step: part of the experiment, "
             "because the learning rate was tuned for it.", draw=(512, 4096)),
    ] = 1024
    micro_batch: Annotated[
        MicroBatch,
        Knob("Micro batch", "sequences", 1, 16, help="Sequences one data-parallel replica runs per forward/backward; "
             "set by GPU memory.", draw=(1, 8)),
    ] = 4
    data_parallel: Annotated[
        DataParallel,
        Knob("Data-parallel size", "replicas", 1, 512, draw=(8, 128),
             help="Model replicas that each see a different slice of the batch."),
    ] = 32
    tensor_parallel: Annotated[
        ModelParallel,
        Knob("Tensor parallel", "", 1, 8, help="GPUs that split each layer's matrices; must divide the 32 heads.",
             draw=(1, 8)),
    ] = 4
    pipeline_parallel: Annotated[
        ModelParallel,
        Knob("Pipeline parallel", "", 1, 8, help="Pipeline stages; must divide the 32 layers.", draw=(1, 4)),
    ] = 2
    seq_len: Annotated[
        SeqLen,
        Knob("Sequence length", "tokens", 2048, 32768, help="Tokens per training sequence.", draw=(2048, 8192)),
    ] = 4096
    train_tokens: Annotated[
        float,
        Knob("Training tokens", "tokens", 1e9, 1e14, log=True, help="Tokens the run trains on; sets the step count.",
             draw=(1e11, 1e13)),
    ] = 1e12
    relaunch_gpus: Annotated[
        int,
        Knob("GPUs at the relaunch", "GPUs", 64, 16384, 8,
             help="The machine the same experiment is relaunched on weeks later.", draw=(64, 2048)),
    ] = 192
    sweep_lr_values: Annotated[
        int, Knob("Sweep: learning rates", "", 1, 12, 1, help="Values on the learning-rate axis.", draw=(2, 6)),
    ] = 4
    sweep_warmup_values: Annotated[
        int, Knob("Sweep: warmup lengths", "", 1, 8, 1, help="Values on the warmup axis.", draw=(1, 4)),
    ] = 3
    sweep_seeds: Annotated[
        int, Knob("Sweep: seeds", "seeds", 1, 10, 1, help="Seeds per point, to see noise.", draw=(1, 5)),
    ] = 3
    sweep_gpus_per_run: Annotated[
        int, Knob("Sweep: GPUs per run", "GPUs", 1, 256, 1, log=True, help="A proxy run's size.", draw=(4, 64)),
    ] = 8
    sweep_run_hours: Annotated[
        float, Knob("Sweep: hours per run", "h", 0.5, 72, 0.5, log=True, help="Wall-clock per proxy run.",
                    draw=(2, 24)),
    ] = 6
    hours_to_notice_typo: Annotated[
        float, Knob("Hours before a silent typo is noticed", "h", 1, 336, 1, log=True,
                    help="Until an eval or a loss curve gives it away.", draw=(6, 96)),
    ] = 36
    gpu_hour_usd: Annotated[
        float, Knob("GPU-hour cost", "USD", 0.5, 10, 0.1, help="Rental, or amortized ownership.", draw=(1.5, 4)),
    ] = 2.5
    runs_per_day: Annotated[
        int, Knob("Runs launched per day", "runs", 1, 5000, 1, log=True,
                  help="Across the organization, sweeps included: every one stores a resolved config.",
                  draw=(50, 1000)),
    ] = 200


def cli_layer(p: Params) -> dict:
    """The command-line layer the knobs stand for."""
    return {
        "batch": {"global_batch": p.global_batch, "micro_batch": p.micro_batch},
        "layout": {"data_parallel": p.data_parallel, "tensor_parallel": p.tensor_parallel,
                   "pipeline_parallel": p.pipeline_parallel},
        "model": {"seq_len": p.seq_len},
        "train": {"tokens": int(round(p.train_tokens))},
    }


def cli_toml(p: Params) -> str:
    """The same layer as `--key=value` overrides, written as TOML dotted keys."""
    lines = ["# command line: --key=value overrides (here, the page's knobs)"]
    for path, value in flatten(cli_layer(p)).items():
        lines.append(f"{path} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Parsing a layer


@dataclass(frozen=True)
class ParsedLayer:
    data: dict | None
    error: str | None = None


_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_END = re.compile(r"\s*\(at end of document\)\s*$")


def _json_types(obj: Any, path: str = "") -> str | None:
    """The first value JSON cannot hold (a TOML date or time), by path."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            bad = _json_types(v, f"{path}.{k}" if path else str(k))
            if bad:
                return bad
        return None
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            bad = _json_types(v, f"{path}[{i}]")
            if bad:
                return bad
        return None
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return None
    return path


def parse_layer(name: str, text: str) -> ParsedLayer:
    """TOML, or JSON when the text starts with `{`. Never raises: errors are one plain sentence."""
    stripped = text.strip()
    if not stripped:
        return ParsedLayer({})
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            return ParsedLayer(None, f"{name} layer (JSON), line {e.lineno}, column {e.colno}: {e.msg}.")
        if not isinstance(data, dict):
            return ParsedLayer(None, f"{name} layer (JSON): the top level must be an object {{...}}.")
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            msg = str(e)
            m = _TOML_AT.search(msg)
            if m:
                return ParsedLayer(None, f"{name} layer (TOML), line {m.group(1)}, column {m.group(2)}: "
                                         f"{_TOML_AT.sub('', msg)}.")
            if _TOML_END.search(msg):
                return ParsedLayer(None, f"{name} layer (TOML), at the end: {_TOML_END.sub('', msg)}.")
            return ParsedLayer(None, f"{name} layer (TOML): {msg}.")
    bad = _json_types(data)
    if bad:
        return ParsedLayer(None, f"{name} layer: `{bad}` is a TOML date or time; quote it as a string "
                                 "(the hash is computed over JSON).")
    return ParsedLayer(data)


# ---------------------------------------------------------------------------------------------
# Merging


def _clone(obj: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars), much cheaper than copy.deepcopy."""
    if isinstance(obj, dict):
        return {k: _clone(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clone(v) for v in obj]
    return obj


def deep_merge(base: Mapping, over: Mapping) -> dict:
    """A new dict: maps merge key by key, recursively; anything else in `over` replaces whole.

    Lists are replaced, never appended: a list is one value (a data mix, Adam's betas), and an
    append would make the result depend on how many layers mentioned it. Neither input is
    modified, and the result shares nothing with them."""
    out = {k: _clone(v) for k, v in base.items()}
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = _clone(v)
    return out


def flatten(obj: Mapping, prefix: str = "") -> dict[str, Any]:
    """Leaf path -> value; lists are leaves (they are replaced whole), empty maps have no leaves."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        path = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict):
            out.update(flatten(v, path))
        else:
            out[path] = v
    return out


def set_path(obj: dict, path: str, value: Any) -> dict:
    """Set a dotted path in a nested dict (creating maps on the way); returns obj."""
    keys = path.split(".")
    node = obj
    for k in keys[:-1]:
        nxt = node.get(k)
        if not isinstance(nxt, dict):
            nxt = {}
            node[k] = nxt
        node = nxt
    node[keys[-1]] = value
    return obj


def drop_paths(obj: Mapping, paths: Sequence[str]) -> dict:
    """A copy without the given dotted paths (a path may name a whole section)."""
    out = _clone(dict(obj))
    for path in paths:
        keys = path.split(".")
        node = out
        for k in keys[:-1]:
            node = node.get(k) if isinstance(node, dict) else None
            if not isinstance(node, dict):
                break
        else:
            if isinstance(node, dict):
                node.pop(keys[-1], None)
    return out


def _related(a: str, b: str) -> bool:
    """One path is the other or lies under it."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _provenance(layers: Sequence[tuple[str, Mapping]], merged: Mapping) -> dict[str, str]:
    """Leaf of the merged config -> the layer its value came from.

    That is the last layer holding exactly that leaf: a later layer that replaced an ancestor
    with a scalar, or the leaf with a map, would have removed the leaf from the result."""
    flats = [(name, flatten(layer)) for name, layer in layers]
    prov = {}
    for path in flatten(merged):
        for name, flat in reversed(flats):
            if path in flat:
                prov[path] = name
                break
    return prov


# ---------------------------------------------------------------------------------------------
# The schema


@dataclass(frozen=True)
class Field:
    kind: Literal["int", "float", "str", "list[float]", "list[str]"]
    lo: float | None = None
    hi: float | None = None
    gt: float | None = None  # exclusive lower bound
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    length: int | None = None
    help: str = ""


HEX64 = r"[0-9a-f]{64}"
SCHEMA: dict[str, Field] = {
    "model.name": Field("str"),
    "model.layers": Field("int", lo=1, hi=1000),
    "model.hidden": Field("int", lo=1),
    "model.heads": Field("int", lo=1),
    "model.vocab": Field("int", lo=1),
    "model.seq_len": Field("int", lo=1, hi=1_048_576),
    "optim.name": Field("str", choices=("adamw", "adafactor", "lion", "sgd")),
    "optim.lr": Field("float", gt=0, hi=1),
    "optim.betas": Field("list[float]", lo=0, hi=1, length=2),
    "optim.weight_decay": Field("float", lo=0, hi=1),
    "optim.warmup_steps": Field("int", lo=0),
    "optim.schedule": Field("str", choices=("cosine", "linear", "constant")),
    "batch.global_batch": Field("int", lo=1),
    "batch.micro_batch": Field("int", lo=1),
    "layout.data_parallel": Field("int", lo=1),
    "layout.tensor_parallel": Field("int", lo=1),
    "layout.pipeline_parallel": Field("int", lo=1),
    "data.snapshot": Field("str"),
    "data.manifest_sha256": Field("str", pattern=HEX64, help="the SHA-256 of the snapshot's file manifest"),
    "data.sources": Field("list[str]"),
    "data.weights": Field("list[float]", lo=0, hi=1),
    "train.tokens": Field("int", lo=1),
    "train.seed": Field("int", lo=0),
    "env.image": Field("str", pattern=r".+@sha256:" + HEX64, help="an image reference by digest"),
    "env.code_commit": Field("str", pattern=r"[0-9a-f]{40}", help="a full git commit id"),
}
SECTIONS = sorted({p.rsplit(".", 1)[0] for p in SCHEMA})

# Schema v2 renamed two keys. A strict loader names the rename; a flexible one ignores the old key.
SCHEMA_VERSION = 2
RENAMED = {"optim.learning_rate": "optim.lr", "batch.micro_batch_size": "batch.micro_batch"}


def migrate(config: Mapping) -> tuple[dict, list[str]]:
    """v1 -> v2: move every renamed key to its new name. A file that sets both keeps the new
    value and says so; running it twice changes nothing."""
    out = _clone(dict(config))
    notes = []
    for old, new in RENAMED.items():
        value = flat_config_value(out, old)
        if value is None:
            continue
        out = drop_paths(out, [old])
        if flat_config_value(out, new) is None:
            set_path(out, new, value)
            notes.append(f"moved `{old}` to `{new}`")
        else:
            notes.append(f"dropped `{old}`: `{new}` is already set")
    return out, notes


@dataclass(frozen=True)
class Issue:
    """One thing the strict schema rejects, with what a flexible loader would silently do instead."""

    path: str
    kind: Literal["unknown", "missing", "type", "range", "cross", "pin"]
    message: str
    silently: str


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _normalize(value: Any, f: Field) -> tuple[bool, Any]:
    """(ok, value as the schema's type), converting only when nothing is lost."""
    if f.kind == "int":
        if _is_number(value) and float(value).is_integer() and math.isfinite(value):
            return True, int(value)
        return False, value
    if f.kind == "float":
        if _is_number(value):
            return True, float(value)
        return False, value
    if f.kind == "str":
        return isinstance(value, str), value
    if not isinstance(value, list):
        return False, value
    if f.kind == "list[float]":
        if all(_is_number(x) for x in value):
            return True, [float(x) for x in value]
        return False, value
    return all(isinstance(x, str) for x in value), value


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "an integer-valued float" if value.is_integer() else "a fraction"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


_WANT = {"int": "an integer", "float": "a number", "str": "a string", "list[float]": "a list of numbers",
         "list[str]": "a list of strings"}


def _range_problem(value: Any, f: Field) -> str | None:
    values = value if isinstance(value, list) else [value]
    if f.length is not None and isinstance(value, list) and len(value) != f.length:
        return f"needs exactly {f.length} values, got {len(value)}"
    if f.kind == "list[str]" and not value:
        return "needs at least one entry"
    for x in values:
        if not _is_number(x):
            continue
        if f.gt is not None and not x > f.gt:
            return f"must be above {f.gt:g}, got {x:g}"
        if f.lo is not None and x < f.lo:
            return f"must be at least {f.lo:g}, got {x:g}"
        if f.hi is not None and x > f.hi:
            return f"must be at most {f.hi:g}, got {x:g}"
    if f.choices and value not in f.choices:
        return f"must be one of {', '.join(f.choices)}; got {value!r}"
    if f.pattern and isinstance(value, str) and not re.fullmatch(f.pattern, value):
        return f"must be {f.help or 'in the expected format'}; got {value!r}"
    return None


def validate(config: Mapping) -> tuple[dict, list[Issue]]:
    """The strict schema: (config normalized to the schema's types, issues). Pure, never raises.

    Checks, in order: unknown keys (with the closest known key), missing keys, types (converted
    only when lossless: 1 -> 1.0 for a float, 1e12 -> 1000000000000 for an integer), ranges, the
    cross-field rules of the parallel layout and the batch, and the pins."""
    issues: list[Issue] = []
    known = set(SCHEMA) | set(SECTIONS)
    flat_seen: dict[str, Any] = {}
    normalized = _clone(dict(config))

    def walk(node: Mapping, prefix: str) -> None:
        for k, v in node.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            if path in SCHEMA:
                flat_seen[path] = v
                continue
            if path in SECTIONS:
                if isinstance(v, dict):
                    walk(v, path)
                else:
                    issues.append(Issue(path, "type", f"`{path}` must be a table of settings, got {_type_name(v)}.",
                                        "every setting under it falls back to code defaults or crashes the loader"))
                continue
            if path == "derived" or path.startswith("derived."):
                issues.append(Issue(path, "unknown", f"`{path}` is computed by the resolver; a layer may not set it.",
                                    "the trainer reads a value that disagrees with the one it computes"))
                continue
            if path in RENAMED:
                target = RENAMED[path]
                current = flat_config_value(config, target)
                issues.append(Issue(path, "unknown", f"`{path}` was renamed to `{target}` in schema "
                                    f"v{SCHEMA_VERSION}; migrate the file (`migrate`).",
                                    f"ignored: the run uses `{target}` = {json.dumps(current)} from another layer"))
                continue
            pool = SECTIONS if isinstance(v, dict) else sorted(SCHEMA)
            guess = difflib.get_close_matches(path, pool, n=1, cutoff=0.75)
            hint = f" Did you mean `{guess[0]}`?" if guess else ""
            current = flat_config_value(config, guess[0]) if guess and not isinstance(v, dict) else None
            silently = (f"ignored: the run uses `{guess[0]}` = {json.dumps(current)} from another layer"
                        if current is not None else "ignored: nothing reads it")
            what = "table" if isinstance(v, dict) else "key"
            issues.append(Issue(path, "unknown", f"unknown {what} `{path}`.{hint}", silently))

    walk(config, "")
    for path, f in SCHEMA.items():
        if path not in flat_seen:
            issues.append(Issue(path, "missing", f"`{path}` is missing ({_WANT[f.kind]}).",
                                "the trainer's code default is used, and the config no longer says what ran"))
            continue
        value = flat_seen[path]
        ok, norm = _normalize(value, f)
        if not ok:
            issues.append(Issue(path, "type", f"`{path}` must be {_WANT[f.kind]}, got {_type_name(value)} "
                                f"{json.dumps(value)}.",
                                "loads, then fails (or compares strings) hours later, inside the job"))
            continue
        set_path(normalized, path, norm)
        problem = _range_problem(norm, f)
        if problem:
            issues.append(Issue(path, "range", f"`{path}` {problem}.", "launches with a value no one meant"))
            continue
        flat_seen[path] = norm

    good = {p: v for p, v in flat_seen.items() if not any(i.path == p for i in issues)}
    issues.extend(_cross_checks(good))
    return normalized, issues


def flat_config_value(config: Mapping, path: str) -> Any:
    node: Any = config
    for k in path.split("."):
        if not isinstance(node, dict) or k not in node:
            return None
        node = node[k]
    return node


def _cross_checks(v: Mapping[str, Any]) -> list[Issue]:
    out: list[Issue] = []
    tp, pp, dp = v.get("layout.tensor_parallel"), v.get("layout.pipeline_parallel"), v.get("layout.data_parallel")
    heads, layers = v.get("model.heads"), v.get("model.layers")
    if tp and heads and heads % tp:
        out.append(Issue("layout.tensor_parallel", "cross",
                         f"tensor_parallel {tp} does not divide model.heads {heads} (remainder {heads % tp}).",
                         "the model fails to shard at start-up, after the job waited in the queue"))
    if pp and layers and layers % pp:
        out.append(Issue("layout.pipeline_parallel", "cross",
                         f"pipeline_parallel {pp} does not divide model.layers {layers} (remainder {layers % pp}).",
                         "uneven stages: the pipeline runs at the pace of its largest stage"))
    g, m = v.get("batch.global_batch"), v.get("batch.micro_batch")
    if g and m and dp:
        per = m * dp
        if g % per:
            floored = max(1, g // per)
            eff = floored * per
            out.append(Issue("batch.global_batch", "cross",
                             f"global_batch {g} is not divisible by micro_batch × data_parallel = {m} × {dp} = {per} "
                             f"(remainder {g % per}).",
                             f"a trainer that floors accumulation runs {floored} micro-steps: {eff} sequences per "
                             f"step, {100 * (eff - g) / g:+.2f}% against the {g} written"))
    src, w = v.get("data.sources"), v.get("data.weights")
    if src is not None and w is not None:
        if len(src) != len(w):
            out.append(Issue("data.weights", "cross", f"data.weights has {len(w)} entries for {len(src)} sources.",
                             "a zip() drops the extra sources or weights without a word"))
        elif abs(sum(w) - 1) > 1e-6:
            out.append(Issue("data.weights", "cross", f"data.weights sum to {sum(w):g}, not 1.",
                             "the sampler renormalizes, and the mix is not the one written"))
    snap = v.get("data.snapshot")
    if snap is not None and snap.strip().lower() in MOVING_TAGS:
        out.append(Issue("data.snapshot", "pin", f"data.snapshot {snap!r} is a moving tag, not a version.",
                         "a relaunch reads whatever the tag means that day, under the same hash"))
    return out


def derive(config: Mapping) -> dict:
    """Fields the resolver computes from a valid config; they are hashed with it."""
    b, lay, m, t = config["batch"], config["layout"], config["model"], config["train"]
    tokens_per_step = b["global_batch"] * m["seq_len"]
    return {
        "gpus": lay["data_parallel"] * lay["tensor_parallel"] * lay["pipeline_parallel"],
        "grad_accum_steps": b["global_batch"] // (b["micro_batch"] * lay["data_parallel"]),
        "tokens_per_step": tokens_per_step,
        "total_steps": -(-t["tokens"] // tokens_per_step),
    }


# ---------------------------------------------------------------------------------------------
# Hashing


def canonical_json(obj: Any) -> str:
    """Sorted keys, no whitespace: the same config always serializes to the same bytes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def sha256_hex(obj: Any) -> str:
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------
# Resolving


@dataclass(frozen=True)
class PinOverride:
    path: str
    layer: str  # the layer whose value the pin replaced
    was: Any
    pinned: Any


@dataclass(frozen=True)
class Resolution:
    config: dict
    provenance: dict[str, str]
    pinned_over: tuple[PinOverride, ...]
    issues: tuple[Issue, ...]
    strict: bool
    sha256: str
    experiment_sha256: str
    canonical_bytes: int

    @property
    def valid(self) -> bool:
        """Launchable under the strict schema. A flexible loader launches anything that parses."""
        return not self.issues


def resolve(layers: Sequence[tuple[str, Mapping]], pins: Mapping | None = None, *, strict: bool = True,
            pins_name: str = "pins") -> Resolution:
    """Merge `layers` in order (later wins), then `pins` on top of everything (pins always win).

    Strict: validate against the schema, normalize types losslessly, add the derived fields when
    the config is valid, and hash that. Flexible: hash the merged text as written; the issues are
    still reported, as what the run will silently do."""
    pins = pins or {}
    merged: dict = {}
    for _, layer in layers:
        merged = deep_merge(merged, layer)
    before = flatten(merged)
    flat_layers = [(name, flatten(layer)) for name, layer in layers]
    merged = deep_merge(merged, pins)
    prov = _provenance([*layers, (pins_name, pins)], merged)
    over = []
    for path, value in flatten(pins).items():
        for old_path in [p for p in before if _related(p, path)]:
            if before[old_path] != value:
                layer = next((n for n, flat in reversed(flat_layers) if old_path in flat), "?")
                over.append(PinOverride(old_path, layer, before[old_path], value))
    normalized, issues = validate(merged)
    if strict:
        config = normalized
        if not issues:
            config = {**config, "derived": derive(config)}
    else:
        config = merged
    text = canonical_json(config).encode("utf-8")
    return Resolution(
        config=config,
        provenance=prov,
        pinned_over=tuple(over),
        issues=tuple(issues),
        strict=strict,
        sha256=hashlib.sha256(text).hexdigest(),
        experiment_sha256=sha256_hex(drop_paths(config, LAYOUT_PATHS)),
        canonical_bytes=len(text),
    )


def scenario_layers(p: Params) -> list[tuple[str, dict]]:
    return [("base", BASE), ("experiment", EXPERIMENT), ("command line", cli_layer(p))]


def resolve_scenario(p: Params, strict: bool = True) -> Resolution:
    # Only the command-line layer varies, and only with the seven knobs it writes: resolving
    # (merge, validate, hash) is most of a solve, and a sweep over any other knob repeats it.
    return _resolve_cached(json.dumps(cli_layer(p)), strict)


@lru_cache(maxsize=64)
def _resolve_cached(cli_json: str, strict: bool) -> Resolution:
    layers = [("base", BASE), ("experiment", EXPERIMENT), ("command line", json.loads(cli_json))]
    return resolve(layers, PINS, strict=strict)


# ---------------------------------------------------------------------------------------------
# Sweeps


def sweep_axes(p: Params) -> dict[str, list]:
    """The scenario's sweep: learning rates in factor-of-2 steps around the experiment's, warmups
    in 500-step increments, and seeds 0..n-1."""
    lr0 = EXPERIMENT["optim"]["lr"]
    mid = (p.sweep_lr_values - 1) / 2
    lrs = [float(f"{lr0 * 2 ** (i - mid):.3g}") for i in range(p.sweep_lr_values)]
    warmups = [500 * (i + 1) for i in range(p.sweep_warmup_values)]
    return {"optim.lr": lrs, "optim.warmup_steps": warmups, "train.seed": list(range(p.sweep_seeds))}


def expand_sweep(axes: Mapping[str, Sequence]) -> list[dict]:
    """One nested override per point of the cartesian product, in axis order."""
    names = list(axes)
    runs = []
    for combo in itertools.product(*(axes[n] for n in names)):
        override: dict = {}
        for name, value in zip(names, combo):
            set_path(override, name, value)
        runs.append(override)
    return runs


# ---------------------------------------------------------------------------------------------


def _largest_fitting_dp(global_batch: int, micro: int, max_dp: int) -> int:
    """Largest d <= max_dp with global_batch divisible by micro x d (0 if none)."""
    for d in range(max_dp, 0, -1):
        if global_batch % (micro * d) == 0:
            return d
    return 0


def solve(p: Params) -> Derivation:
    d = Derivation(p)

    # --- numbers: the layout and the batch ---
    gpus = d.step("gpus", "GPUs the run occupies", p.data_parallel * p.tensor_parallel * p.pipeline_parallel,
                  "1", noun="GPUs", formula="{data_parallel} × {tensor_parallel} × {pipeline_parallel}")
    mp = d.step("model_parallel", "GPUs holding one model replica", p.tensor_parallel * p.pipeline_parallel, "1",
                noun="GPUs", formula="{tensor_parallel} × {pipeline_parallel}")
    per = d.step("sequences_per_microstep", "Sequences one micro-step runs across all replicas",
                 p.micro_batch * p.data_parallel, "1", noun="sequences", formula="{micro_batch} × {data_parallel}")
    d.step("batch_divisibility_remainder", "Global batch left over after whole micro-steps",
           p.global_batch % per, "1", noun="sequences", formula="{global_batch} − {sequences_per_microstep} × floor({global_batch} / {sequences_per_microstep})")
    d.step("grad_accum_steps", "Gradient-accumulation micro-steps per optimizer step", p.global_batch / per, "1",
           noun="micro-steps", formula="{global_batch} / ({micro_batch} × {data_parallel})")
    tps = d.step("tokens_per_step", "Tokens per optimizer step", p.global_batch * p.seq_len, "1", noun="tokens",
                 formula="{global_batch} × {seq_len}")
    d.step("total_steps", "Optimizer steps to train on every token", -(-int(round(p.train_tokens)) // tps), "1",
           noun="steps", formula="⌈{train_tokens} / {tokens_per_step}⌉")
    runs = d.step("sweep_runs", "Runs in the sweep: the product of its axes",
                  p.sweep_lr_values * p.sweep_warmup_values * p.sweep_seeds, "1", noun="runs",
                  formula="{sweep_lr_values} × {sweep_warmup_values} × {sweep_seeds}")
    sweep_h = d.step("sweep_gpu_hours", "GPU time the sweep costs", runs * p.sweep_gpus_per_run * p.sweep_run_hours,
                     "h", formula="{sweep_runs} × {sweep_gpus_per_run} GPUs × {sweep_run_hours} h", noun="GPU")

    # --- shape: resolve, validate, hash ---
    res = resolve_scenario(p)
    d.step("experiment_layer_keys", "Settings the experiment file writes", len(flatten(EXPERIMENT)), "1",
           noun="keys", formula="leaves of experiments/code-heavy.toml", kind="lookup")
    d.step("command_line_keys", "Settings the command line overrides", len(flatten(cli_layer(p))), "1",
           noun="keys", formula="one per --key=value", kind="lookup")
    d.step("pinned_keys", "Settings the launcher pins", len(flatten(PINS)), "1", noun="keys",
           formula="image digest, commit, data snapshot, manifest hash", kind="lookup")
    d.step("resolved_keys", "Settings in the resolved config (derived fields included)", len(flatten(res.config)),
           "1", noun="keys", formula="leaves after merge, normalization and derivation", kind="lookup")
    d.step("validation_errors", "Problems the strict schema finds", len(res.issues), "1",
           formula="unknown + missing + type + range + cross-field + pin checks", kind="lookup")
    d.step("config_valid", "Does the resolved config pass the schema?", "yes" if res.valid else "no",
           formula="{validation_errors} errors = 0")
    nbytes = d.step("resolved_config_bytes", "Canonical JSON of the resolved config", res.canonical_bytes, "B",
                    formula="len(json.dumps(config, sort_keys=True, separators=(',', ':')))", kind="lookup")
    d.step("config_sha256", "SHA-256 of the resolved config, pins included", res.sha256,
           formula="sha256(canonical JSON)")
    d.step("experiment_sha256", "SHA-256 without the layout (what a relaunch may change)", res.experiment_sha256,
           formula="sha256(canonical JSON without layout, micro batch, GPUs, accumulation)")

    # --- arithmetic: the same experiment relaunched on another machine ---
    max_dp = d.step("relaunch_max_dp", "Replicas the relaunch machine holds", p.relaunch_gpus // mp, "1",
                    noun="replicas", formula="⌊{relaunch_gpus} / {model_parallel}⌋")
    per_r = p.micro_batch * max_dp
    d.step("relaunch_remainder", "Global batch left over on every replica of that machine",
           p.global_batch % per_r, "1", noun="sequences",
           formula="{global_batch} − {micro_batch} × {relaunch_max_dp} × floor({global_batch} / ({micro_batch} × "
                   "{relaunch_max_dp}))")
    acc_floor = d.step("relaunch_accum_if_floored", "Micro-steps a trainer that rounds down would run",
                       max(1, p.global_batch // per_r), "1", noun="micro-steps",
                       formula="max(1, ⌊{global_batch} / ({micro_batch} × {relaunch_max_dp})⌋)")
    eff = d.step("relaunch_effective_batch_if_floored", "Sequences per step that trainer really uses",
                 acc_floor * per_r, "1", noun="sequences",
                 formula="{relaunch_accum_if_floored} × {micro_batch} × {relaunch_max_dp}")
    d.step("relaunch_silent_batch_change_pct", "Silent change of the global batch",
           100 * (eff - p.global_batch) / p.global_batch, "%",
           formula="({relaunch_effective_batch_if_floored} − {global_batch}) / {global_batch}")
    rdp = d.step("relaunch_dp", "Largest replica count that divides the global batch exactly",
                 _largest_fitting_dp(p.global_batch, p.micro_batch, max_dp), "1", noun="replicas",
                 formula="largest d ≤ {relaunch_max_dp} with {global_batch} a whole multiple of {micro_batch} × d",
                 kind="search")
    usable = d.step("relaunch_usable_gpus", "GPUs the exact relaunch uses", rdp * mp, "1", noun="GPUs",
                    formula="{relaunch_dp} × {model_parallel}")
    d.step("relaunch_idle_gpus", "GPUs left idle to keep the experiment exact", p.relaunch_gpus - usable, "1",
           noun="GPUs", formula="{relaunch_gpus} − {relaunch_usable_gpus}")
    d.step("relaunch_grad_accum_steps", "Accumulation on the relaunch",
           p.global_batch / (p.micro_batch * rdp) if rdp else 0.0, "1", noun="micro-steps",
           formula="{global_batch} / ({micro_batch} × {relaunch_dp})")

    # --- depth: what the flexible config costs, what the strict one costs ---
    typo_h = d.step("typo_cost_gpu_hours", "GPU time a silently ignored typo burns before anyone notices",
                    gpus * p.hours_to_notice_typo, "h", formula="{gpus} GPUs × {hours_to_notice_typo} h", noun="GPU")
    d.step("typo_cost_usd", "The same in money", typo_h * p.gpu_hour_usd, "USD",
           formula="{typo_cost_gpu_hours} × {gpu_hour_usd} / 1 h")
    d.step("sweep_distinct_runs_with_typo", "Runs that differ when the learning-rate axis key is misspelt",
           p.sweep_warmup_values * p.sweep_seeds, "1", noun="runs",
           formula="{sweep_runs} / {sweep_lr_values}")
    d.step("sweep_typo_wasted_gpu_hours", "Sweep GPU time spent on duplicates",
           sweep_h * (1 - 1 / p.sweep_lr_values), "h",
           formula="{sweep_gpu_hours} × (1 − 1 / {sweep_lr_values})", noun="GPU")
    per_year = d.step("configs_per_year", "Resolved configs stored per year", p.runs_per_day * 365, "1",
                      noun="configs", formula="{runs_per_day} × 365")
    d.step("config_store_bytes", "Storing every resolved config for a year", per_year * nbytes, "B",
           formula="{configs_per_year} × {resolved_config_bytes} B")
    return d


# ---------------------------------------------------------------------------------------------
# Starting points for the live resolver: each changes one thing and says what to look at.


@dataclass(frozen=True)
class Example:
    layers: dict[str, str]  # layer name -> text, in LAYER_NAMES order
    look: str


def resolver_examples(p: Params) -> dict[str, Example]:
    cli = cli_toml(p)
    plain = {"base": BASE_TOML, "experiment": EXPERIMENT_TOML, "command line": cli, "pins": PINS_TOML}
    relaunch_dp = max(1, p.relaunch_gpus // (p.tensor_parallel * p.pipeline_parallel))
    exact_dp = _largest_fitting_dp(p.global_batch, p.micro_batch, relaunch_dp)
    reordered = json.dumps({"train": {"seed": EXPERIMENT["train"]["seed"]},
                            "data": {"weights": EXPERIMENT["data"]["weights"],
                                     "sources": EXPERIMENT["data"]["sources"]},
                            "optim": {"warmup_steps": EXPERIMENT["optim"]["warmup_steps"],
                                      "lr": EXPERIMENT["optim"]["lr"]}}, indent=4)
    return {
        "As written": Example(dict(plain), "The scenario's four layers: the hash equals the page's config_sha256."),
        "Old key name": Example(
            {**plain, "experiment": EXPERIMENT_TOML.replace("lr = 1.5e-4", "learning_rate = 1.5e-4")},
            "The experiment uses the v1 name `learning_rate`. Strict: rejected, with the rename. Flexible: "
            "launches at the base's 3e-4, twice the rate the experiment asked for."),
        "Relaunch on the other machine": Example(
            {**plain, "command line": cli.replace(f"layout.data_parallel = {p.data_parallel}",
                                                  f"layout.data_parallel = {relaunch_dp}")},
            f"{p.relaunch_gpus} GPUs hold {relaunch_dp} replicas. If the batch check fails, set data_parallel to "
            f"{exact_dp}: the config hash moves, the experiment hash returns to the original's."),
        "Pin overridden": Example(
            {**plain, "command line": cli + 'data.snapshot = "latest"\n'},
            "The command line asks for the moving tag; the pin wins, and the page says whose value it replaced."),
        "1000.0 instead of 1000": Example(
            {**plain, "experiment": EXPERIMENT_TOML.replace("warmup_steps = 1000", "warmup_steps = 1000.0")},
            "Same value, another type. Strict normalizes it: same hash as written. Flexible: a new hash."),
        "Same experiment in JSON": Example(
            {**plain, "experiment": reordered},
            "JSON, keys in another order, other whitespace: the canonical JSON and the hash do not change."),
    }
