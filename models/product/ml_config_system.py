"""An ML configuration system for training runs (seed 001): layers, schema, resolve, hash, pin.

The seed names the parts (schemas, inheritance and overrides, validation, reproducibility made
concrete, the flexible-versus-strict trade-off) but no numbers, so the scenario is ours: a 7B
dense model trained on data-parallel x tensor-parallel x pipeline-parallel GPUs, one sweep of
small proxy runs, and one relaunch weeks later on a machine with a different GPU count.

The config machinery (parse, merge, validate, migrate, resolve, hash, sweep) is the library
`models.configlib`, tested on its own; the schema is `models.configlib.training_schema`. This
module holds the scenario: its four layers as text, the knobs (which are also the command-line
layer), the derivation, and the live resolver's starting points.

Modelling choices stated on the page: the command-line layer is the page's knobs; the hash
covers the whole resolved config, pins and derived fields included; a second hash leaves out the
layout (parallelism and micro batch), which a relaunch on other hardware may change without
changing the experiment; a relaunch keeps the micro batch (it is set by memory) and the global
batch (it is part of the experiment).
"""

from __future__ import annotations

from functools import lru_cache
import json
import tomllib
from dataclasses import dataclass
from typing import Annotated, Literal, Mapping, Sequence

from models import configlib
from models.configlib import Resolution, flatten
from models.configlib.training_schema import TRAINING_SCHEMA
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
        int, Knob("Sweep: GPUs per run", "GPUs", 1, 256, 1, log=True, help="A proxy run's size.", draw=(4, 64), draw_choices=(4, 8, 16, 32, 64)),
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
# Resolving the scenario


def resolve(layers: Sequence[tuple[str, Mapping]], pins: Mapping | None = None, *, strict: bool = True) -> Resolution:
    """The library's resolver under the training schema: what the page's live resolver runs."""
    return configlib.resolve(layers, pins, schema=TRAINING_SCHEMA, strict=strict)


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
# The scenario's sweep (expanded by configlib.expand_sweep)


def sweep_axes(p: Params) -> dict[str, list]:
    """The scenario's sweep: learning rates in factor-of-2 steps around the experiment's, warmups
    in 500-step increments, and seeds 0..n-1."""
    lr0 = EXPERIMENT["optim"]["lr"]
    mid = (p.sweep_lr_values - 1) / 2
    lrs = [float(f"{lr0 * 2 ** (i - mid):.3g}") for i in range(p.sweep_lr_values)]
    warmups = [500 * (i + 1) for i in range(p.sweep_warmup_values)]
    return {"optim.lr": lrs, "optim.warmup_steps": warmups, "train.seed": list(range(p.sweep_seeds))}


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
    d.step("relaunch_full_layout_verdict", "What the schema does with every replica of that machine",
           "rejects" if p.global_batch % per_r else "accepts", formula="{relaunch_remainder} = 0", kind="verdict")
    acc_floor = d.step("relaunch_accum_if_floored", "Micro-steps a trainer that rounds down would run",
                       max(1, p.global_batch // per_r), "1", noun="micro-steps",
                       formula="max(1, ⌊{global_batch} / ({micro_batch} × {relaunch_max_dp})⌋)")
    eff = d.step("relaunch_effective_batch_if_floored", "Sequences per step that trainer really uses",
                 acc_floor * per_r, "1", noun="sequences",
                 formula="{relaunch_accum_if_floored} × {micro_batch} × {relaunch_max_dp}")
    d.step("relaunch_silent_batch_change_fraction", "Silent change of the global batch",
           (eff - p.global_batch) / p.global_batch, "1", percent=True,
           formula="({relaunch_effective_batch_if_floored} − {global_batch}) / {global_batch}")
    rdp = d.step("relaunch_dp", "Largest replica count that divides the global batch exactly",
                 _largest_fitting_dp(p.global_batch, p.micro_batch, max_dp), "1", noun="replicas",
                 formula="largest d ≤ {relaunch_max_dp} with {global_batch} a whole multiple of {micro_batch} × d",
                 kind="search")
    usable = d.step("relaunch_usable_gpus", "GPUs the exact relaunch uses", rdp * mp, "1", noun="GPUs",
                    formula="{relaunch_dp} × {model_parallel}")
    d.step("relaunch_hash_effect", "What the exact relaunch does to the two hashes",
           "changes the first and keeps the second" if rdp != p.data_parallel
           else "runs the original layout, so it keeps both",
           formula="{relaunch_dp} ≠ {data_parallel}", kind="verdict")
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
