"""The schema of one training run: a dense transformer on a data x tensor x pipeline-parallel
layout. The ml-config-system question resolves its layers against it.

Version 2 renamed two keys; the cross-field rules are the ones a launcher can check before a
job waits in the queue (sharding divides the model, the batch divides the replicas, the data
mix adds up, the data is pinned to a version)."""

from __future__ import annotations

from typing import Any, Mapping

from models.configlib.schema import Field, Issue, Schema

HEX64 = r"[0-9a-f]{64}"
FIELDS: dict[str, Field] = {
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

# Schema v2 renamed two keys. A strict loader names the rename; a flexible one ignores the old key.
SCHEMA_VERSION = 2
RENAMED = {"optim.learning_rate": "optim.lr", "batch.micro_batch_size": "batch.micro_batch"}

# Tags that move: a config naming one of them is not pinned, whatever else it says.
MOVING_TAGS = ("latest", "main", "head", "current", "stable", "")

# Paths a relaunch on other hardware may change without changing the experiment.
LAYOUT_PATHS = ("layout", "batch.micro_batch", "derived.gpus", "derived.grad_accum_steps")


def cross_checks(v: Mapping[str, Any]) -> list[Issue]:
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


TRAINING_SCHEMA = Schema(FIELDS, version=SCHEMA_VERSION, renamed=RENAMED, cross_checks=cross_checks, derive=derive,
                         computed="derived", layout_paths=LAYOUT_PATHS)
