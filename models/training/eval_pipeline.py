"""Evaluate every training checkpoint: 2,000 evals x 5,000 prompts = ten million prompts a run.

The teaching order is the interview's: count the prompts and the tokens; size one replica with
the shared engine (models/engine: a decode step from HBM bytes or FLOPs plus its tensor-parallel
all-reduces and fixed cost, prefill from FLOPs, the batch HBM allows); turn tokens into GPU-hours;
size the fleet
for a four-hour and a two-day turnaround; then the three things that make the number real:
a content-addressed result cache (which a new checkpoint misses entirely), shards cut by tokens
rather than by eval (or the longest eval sets the makespan), and the statistics that say how
small a regression one run can see.

Modelling choices (stated on the page):
  * The pipeline is an offline batch job: the decode batch grows until HBM is full (the TPOT
    target is loose), prefill and decode take turns on a replica (an upper bound: chunked prefill
    would ride in decode steps).
  * Replica-seconds per prompt = prefill + output tokens / replica decode rate. Blended tokens
    per GPU-second follow from that; GPU-hours = tokens to run / that rate.
  * A replica spends `replica_startup_min` pulling and loading the checkpoint before it works;
    the rest of the turnaround at `target_utilization` does the work.
  * Sharding by eval: the makespan is at least the larger of the average load per replica and
    the largest eval on one replica (longest-first scheduling reaches that bound when the other
    evals are many and small). Sharding by tokens: the average load plus one shard.
  * Statistics: each prompt is an independent pass/fail with probability p; the two checkpoints
    are compared as two independent samples (a paired test on the same prompts does better).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Annotated

from pydantic import model_validator

from models.core import Derivation, Knob, StrictModel
from models.units import format_number
from models.engine.knobs import with_defaults
from models.engine.record import record_served
from models.engine.serving_knobs import ServingKnobs, served

SECONDS_PER_HOUR = 3600
# A published run to check the engine against: TensorRT-LLM's perf overview, Llama 3.3 70B (Llama 3 70B's
# shape) in FP8 with tensor parallelism 2 on H100 SXM, 1,000 tokens in and 1,000 out, total output
# throughput 4,205 tokens/s on the two GPUs. The table does not say which format the KV cache used.
BENCH_OUTPUT_TOKENS_PER_S = 4205.0
BENCH_GPUS = 2
BENCH_SHAPE = dict(model="Llama-3-70B", gpu="H100 SXM", tp_degree=BENCH_GPUS, weight_precision="fp8",
                   compute_precision="fp8", prompt_tokens=1000, output_tokens=1000, prefix_cache_hit=0.0)
HOURS_PER_DAY = 24
# A stored result: the completion text (about 4 bytes of UTF-8 per BPE token for English,
# OpenAI's tokenizer rule of thumb) plus the 32-byte key, scores and metadata.
TEXT_BYTES_PER_TOKEN = 4
RESULT_OVERHEAD_BYTES = 256
ALPHA = 0.05  # two-sided false-alarm rate per comparison
POWER = 0.80  # chance of catching a real regression of the stated size
Z_ALPHA = NormalDist().inv_cdf(1 - ALPHA / 2)  # 1.96
Z_POWER = NormalDist().inv_cdf(POWER)  # 0.8416

# Series for the sharding chart.
MAKESPAN_SERIES = ("makespan_by_eval_s", "makespan_by_tokens_s", "fast_target_s")


class _EvalKnobs(StrictModel):
    evals: Annotated[
        int,
        Knob("Evals per checkpoint", "evals", 10, 20_000, 1, log=True,
             help="Distinct benchmarks and internal test sets run against every checkpoint.",
             draw=(500, 5000)),
    ] = 2000
    prompts_per_eval: Annotated[
        int,
        Knob("Prompts per eval", "prompts", 100, 100_000, 1, log=True,
             help="Average prompts in one eval (the seed's ~5,000).", draw=(1000, 20_000)),
    ] = 5000
    fast_turnaround_h: Annotated[
        float,
        Knob("Fast turnaround", "h", 0.5, 48, 0.5, log=True,
             help="Checkpoint written to scores on the dashboard, the fast option.", draw=(2, 8)),
    ] = 4
    slow_turnaround_h: Annotated[
        float,
        Knob("Slow turnaround", "h", 4, 336, 1, log=True,
             help="The same, the slow option (the seed's two days).", draw=(24, 96)),
    ] = 48
    replica_startup_min: Annotated[
        float,
        Knob("Replica start-up", "min", 1, 60, 1,
             help="Fetch the checkpoint, load it into HBM, warm the engine: paid once per replica per run.",
             draw=(3, 20)),
    ] = 10
    checkpoints_per_day: Annotated[
        float,
        Knob("Checkpoints evaluated per day", "", 0.1, 24, 0.1, log=True,
             help="How often training hands the pipeline a new checkpoint.", draw=(0.5, 6)),
    ] = 1
    largest_eval_x_mean: Annotated[
        float,
        Knob("Largest eval / mean eval", "×", 1, 1000, 1, log=True,
             help="Work in the biggest eval over the average one (a long-context or agentic suite).",
             draw=(10, 300)),
    ] = 100
    shard_tokens: Annotated[
        int,
        Knob("Shard size", "tokens", 10_000, 1_000_000_000, 1, log=True,
             help="Prompt plus expected output tokens per work unit handed to a replica.",
             draw=(100_000, 10_000_000)),
    ] = 1_000_000
    result_cache_hit: Annotated[
        float,
        Knob("Result-cache hit", "", 0, 0.99, 0.01, percent=True,
             help="Share of (checkpoint, prompt, sampling, harness, tokenizer) keys already scored: "
                  "0 for a new checkpoint.",
             draw=(0, 0.5)),
    ] = 0.0
    pass_rate: Annotated[
        float,
        Knob("Pass rate", "", 0.01, 0.99, 0.01, percent=True,
             help="An eval's score; the noise is largest at 50%.", draw=(0.2, 0.9)),
    ] = 0.5
    regression_to_detect: Annotated[
        float,
        Knob("Regression to detect", "", 0.001, 0.2, 0.001, log=True, percent=True,
             help="Drop in pass rate (percentage points) that should be caught.", draw=(0.005, 0.05)),
    ] = 0.01

    passage_cluster_size: Annotated[
        float,
        Knob("Questions per passage", "", 1, 50, 1, log=True,
             help="Questions that share one passage or context in a reading-comprehension eval (1: independent).",
             draw=(2, 20)),
    ] = 5
    intra_cluster_corr: Annotated[
        float,
        Knob("Intra-passage correlation", "", 0, 0.9, 0.01,
             help="Correlation of pass/fail between questions on the same passage (an estimate: misread the "
                  "passage and several answers fall together).", draw=(0.05, 0.5)),
    ] = 0.3
    judge_share: Annotated[
        float,
        Knob("Prompts scored by an LLM judge", "", 0, 1, 0.01, percent=True,
             help="Share of prompts whose answer a judge model grades (open-ended evals); the rest are scored "
                  "by exact match or unit tests on CPU.", draw=(0.05, 0.4)),
    ] = 0.2
    judge_tokens_per_prompt: Annotated[
        float,
        Knob("Judge tokens per graded answer", "tokens", 200, 10_000, 50, log=True,
             help="Rubric, question and answer read, verdict written (an estimate).", draw=(800, 3000)),
    ] = 1500
    naive_throughput_share: Annotated[
        float,
        Knob("Naive script's throughput", "", 0.05, 1, 0.01, percent=True,
             help="Share of the batch engine's tokens/s a one-script-per-eval harness gets (static batches, "
                  "no prefix cache; an estimate).", draw=(0.15, 0.5)),
    ] = 0.3

    @model_validator(mode="after")
    def _starts(self) -> "_EvalKnobs":
        if self.replica_startup_min >= 60 * self.fast_turnaround_h:
            raise ValueError(
                f"The fast turnaround ({self.fast_turnaround_h:g} h) must be longer than a replica's "
                f"start-up ({self.replica_startup_min:g} min), or no replica ever does any work."
            )
        return self


# The eval job's request shape: a 1,000-token prompt (30% of it a shared few-shot preamble), 250
# tokens generated, a 100 ms TPOT ceiling nobody watches (so the batch fills HBM), replicas busy
# 80% of the window (the rest is retries, stragglers and scoring). The efficiencies are the engine's.
_EVAL_JOB = dict(tp_degree=8, prompt_tokens=1000, prefix_cache_hit=0.3, output_tokens=250, tpot_target_ms=100,
                 target_utilization=0.8)


class Params(with_defaults(ServingKnobs, **_EVAL_JOB), _EvalKnobs):
    """The evals, the turnarounds and the statistics first, then the shared serving knobs."""


def _replicas(work_h: float, window_h: float, utilization: float) -> int:
    return max(1, math.ceil(work_h / (window_h * utilization) - 1e-9))


def solve(p: Params) -> Derivation:
    d = Derivation(p)

    # --- numbers: prompts and tokens ---
    prompts = d.step("prompts_per_checkpoint", "Prompts per checkpoint", p.evals * p.prompts_per_eval, "1",
                     noun="prompts", formula="{evals} evals × {prompts_per_eval} prompts")
    per_prompt = d.step("tokens_per_prompt", "Tokens per prompt, read and written", p.prompt_tokens + p.output_tokens,
                        "1", noun="tokens", formula="{prompt_tokens} + {output_tokens}")
    tokens = d.step("tokens_per_checkpoint", "Tokens per checkpoint", prompts * per_prompt, "1", noun="tokens",
                    formula="{prompts_per_checkpoint} × {tokens_per_prompt}")
    d.step("output_tokens_per_checkpoint", "Generated tokens per checkpoint", prompts * p.output_tokens, "1",
           noun="tokens", formula="{prompts_per_checkpoint} × {output_tokens}")

    # --- one replica, from the shared serving arithmetic ---
    e = record_served(d, p)
    weight_bytes = e.replica.weight_bytes
    decode_s = d.step("decode_s_per_prompt", "Replica time decoding one prompt's output (its share of the batch)",
                      p.output_tokens / e.decode_tokens_per_s, "s",
                      formula="{output_tokens} / {decode_tokens_per_s} tokens/s")
    replica_s = d.step("replica_s_per_prompt", "Replica time per prompt: prefill, then its share of decode",
                       e.prefill_s_per_request + decode_s, "s",
                       formula="{prefill_s_per_request} s + {decode_s_per_prompt} s")
    d.step("prefill_share", "Share of replica time spent in prefill", e.prefill_s_per_request / replica_s, "1", percent=True,
           formula="{prefill_s_per_request} / {replica_s_per_prompt}")
    # What a bare roofline (no all-reduces, no fixed cost) would charge, to show what they add.
    step = e.decode
    d.step("decode_step_extras_share", "Share of the decode step spent in all-reduces and the fixed cost",
           (step.allreduce_s + step.overhead_s) / step.step_s, "1", percent=True,
           formula="({decode_step_allreduce_s} + {step_overhead_s}) / {decode_step_s}")
    roofline_s = d.step("roofline_s_per_prompt", "Replica time per prompt on a bare roofline (no all-reduces or "
                        "fixed cost)",
                        e.prefill_flops_per_request / d.value("replica_prefill_flops")
                        + p.output_tokens * step.roofline_s / e.batch, "s",
                        formula="{prefill_flops_per_request} FLOP / {replica_prefill_flops} FLOP/s + "
                                "{output_tokens} × max({decode_step_memory_s} s, {decode_step_compute_s} s) / "
                                "{decode_batch}")
    d.step("over_roofline", "GPU-hours over what a bare roofline would size", replica_s / roofline_s, "1", noun="×",
           formula="{replica_s_per_prompt} s / {roofline_s_per_prompt} s")
    per_replica = d.step("tokens_per_s_per_replica", "Tokens per second one replica gets through",
                         per_prompt / replica_s, "1/s", noun="tokens",
                         formula="{tokens_per_prompt} / {replica_s_per_prompt} s")
    per_gpu = d.step("tokens_per_s_per_gpu", "Tokens per second per GPU", per_replica / p.tp_degree, "1/s",
                     noun="tokens", formula="{tokens_per_s_per_replica} tokens/s / {tp_degree}")

    # --- the engine against a published run, with this page's efficiencies ---
    d.step("bench_measured_out_tokens_per_s_per_gpu", "Measured: TensorRT-LLM, Llama 3.3 70B FP8 on 2 × H100, "
           "1,000 in / 1,000 out, output tokens per second per GPU", BENCH_OUTPUT_TOKENS_PER_S / BENCH_GPUS, "1/s",
           noun="tokens", formula="4,205 tokens/s / 2 GPUs", kind="lookup")

    def _bench(kv: str) -> float:
        q = p.model_copy(update=dict(BENCH_SHAPE, kv_precision=kv))
        sb = served(q)
        per_request_s = sb.prefill_s_per_request + q.output_tokens / sb.decode_tokens_per_s
        return q.output_tokens / per_request_s / q.tp_degree

    measured = BENCH_OUTPUT_TOKENS_PER_S / BENCH_GPUS
    fp8kv = d.step("bench_engine_out_tokens_per_s_per_gpu_fp8kv", "This engine at that run's shape, FP8 KV cache",
                   _bench("fp8"), "1/s", noun="tokens", kind="variant",
                   formula="same arithmetic as {tokens_per_s_per_gpu}, output tokens only, at Llama 3 70B on 2 × "
                           "H100 SXM, FP8 weights and KV cache, 1,000 tokens in and 1,000 out, no prefix hits")
    bf16kv = d.step("bench_engine_out_tokens_per_s_per_gpu_bf16kv", "This engine at that run's shape, bf16 KV cache",
                    _bench("bf16"), "1/s", noun="tokens", kind="variant",
                    formula="the same with a bf16 KV cache")
    d.step("bench_fp8kv_over_measured", "Engine (FP8 KV) over the measurement", fp8kv / measured, "1", noun="×",
           formula="{bench_engine_out_tokens_per_s_per_gpu_fp8kv} / {bench_measured_out_tokens_per_s_per_gpu}")
    d.step("bench_bf16kv_over_measured", "Engine (bf16 KV) over the measurement", bf16kv / measured, "1", noun="×",
           formula="{bench_engine_out_tokens_per_s_per_gpu_bf16kv} / {bench_measured_out_tokens_per_s_per_gpu}")
    lo, hi = min(fp8kv, bf16kv), max(fp8kv, bf16kv)
    d.step("bench_verdict", "Where the measurement falls against the engine's two estimates",
           "between the two: the engine's efficiencies sit in the measured range" if lo <= measured <= hi
           else ("below both: the engine is optimistic here, so size the fleet up" if measured < lo
                 else "above both: the engine is pessimistic here, so the fleet has slack"),
           formula="{bench_engine_out_tokens_per_s_per_gpu_bf16kv} ≤ {bench_measured_out_tokens_per_s_per_gpu} ≤ "
                   "{bench_engine_out_tokens_per_s_per_gpu_fp8kv}", kind="verdict")

    # --- GPU-hours ---
    to_run = d.step("tokens_to_run", "Tokens the cache cannot answer", tokens * (1 - p.result_cache_hit), "1",
                    noun="tokens", formula="{tokens_per_checkpoint} × (1 − {result_cache_hit})")
    gpu_h = d.step("gpu_hours_per_checkpoint", "GPU-hours per checkpoint",
                   to_run / per_gpu / SECONDS_PER_HOUR, "h",
                   formula="{tokens_to_run} / {tokens_per_s_per_gpu} tokens/s / 3,600 s/h", noun="GPU")
    replica_h = d.step("replica_hours_per_checkpoint", "Replica-hours per checkpoint", gpu_h / p.tp_degree,
                       "h", formula="{gpu_hours_per_checkpoint} / {tp_degree}")

    # --- the fleet for each turnaround ---
    startup_h = d.step("startup_h", "Start-up per replica, in hours", p.replica_startup_min / 60, "h",
                       formula="{replica_startup_min}")
    fast_window = d.step("fast_window_h", "Working window, fast option", p.fast_turnaround_h - startup_h, "h",
                         formula="{fast_turnaround_h} h − {startup_h} h")
    slow_window = d.step("slow_window_h", "Working window, slow option", p.slow_turnaround_h - startup_h, "h",
                         formula="{slow_turnaround_h} h − {startup_h} h")
    d.step("replicas_fast_continuous", "Replicas for the fast turnaround, before rounding up",
           replica_h / (fast_window * p.target_utilization), "1", noun="replicas",
           formula="{replica_hours_per_checkpoint} h / ({fast_window_h} h × {target_utilization})")
    r_fast = d.step("replicas_fast", "Replicas for the fast turnaround",
                    _replicas(replica_h, fast_window, p.target_utilization), "1", noun="replicas",
                    formula="ceil({replicas_fast_continuous})")
    g_fast = d.step("gpus_fast", "GPUs for the fast turnaround", r_fast * p.tp_degree, "1", noun="GPUs",
                    formula="{replicas_fast} × {tp_degree}")
    d.step("replicas_slow_continuous", "Replicas for the slow turnaround, before rounding up",
           replica_h / (slow_window * p.target_utilization), "1", noun="replicas",
           formula="{replica_hours_per_checkpoint} h / ({slow_window_h} h × {target_utilization})")
    r_slow = d.step("replicas_slow", "Replicas for the slow turnaround",
                    _replicas(replica_h, slow_window, p.target_utilization), "1", noun="replicas",
                    formula="ceil({replicas_slow_continuous})")
    g_slow = d.step("gpus_slow", "GPUs for the slow turnaround", r_slow * p.tp_degree, "1", noun="GPUs",
                    formula="{replicas_slow} × {tp_degree}")
    d.step("fast_over_slow_gpus", "Fast fleet over slow fleet", g_fast / g_slow, "1", noun="×",
           formula="{gpus_fast} / {gpus_slow}")
    d.step("replicas_for_cadence_continuous", "Replicas that keep up with the cadence, before rounding up",
           replica_h * p.checkpoints_per_day / (HOURS_PER_DAY * p.target_utilization), "1", noun="replicas",
           formula="{replica_hours_per_checkpoint} h × {checkpoints_per_day} / (24 h × {target_utilization})")
    r_cadence = d.step("replicas_for_cadence", "Replicas that keep up with the checkpoint cadence at all",
                       _replicas(replica_h * p.checkpoints_per_day, HOURS_PER_DAY, p.target_utilization), "1",
                       noun="replicas", formula="ceil({replicas_for_cadence_continuous})")
    d.step("gpus_for_cadence", "GPUs that keep up with the cadence", r_cadence * p.tp_degree, "1",
           noun="GPUs", formula="{replicas_for_cadence} × {tp_degree}")
    d.step("slow_fleet_keeps_up", "Does the slow fleet keep up with the cadence?",
           "yes" if r_slow >= r_cadence else "no", formula="{replicas_slow} ≥ {replicas_for_cadence}")
    d.step("fast_fleet_keeps_up", "Does the fast fleet keep up with the cadence?",
           "yes" if r_fast >= r_cadence else "no", formula="{replicas_fast} ≥ {replicas_for_cadence}")
    # A turnaround-sized fleet that falls behind is no option: its queue grows every day, so the slow
    # option on offer is the larger of its own sizing and the cadence's.
    r_slow_ok = d.step("replicas_slow_keeping_up", "Replicas for the slow option that also keeps up",
                       max(r_slow, r_cadence), "1", noun="replicas",
                       formula="max({replicas_slow}, {replicas_for_cadence})")
    g_slow_ok = d.step("gpus_slow_keeping_up", "GPUs for the slow option that also keeps up",
                       r_slow_ok * p.tp_degree, "1", noun="GPUs", formula="{replicas_slow_keeping_up} × {tp_degree}")
    d.step("fast_over_slow_keeping_up", "Fast fleet over the slow option that keeps up", g_fast / g_slow_ok, "1",
           noun="×", formula="{gpus_fast} / {gpus_slow_keeping_up}")
    d.require("fast_fleet_keeps_up", r_fast >= r_cadence, lambda: (
        f"The fast fleet cannot keep up: {format_number(p.checkpoints_per_day)} checkpoints a day of "
        f"{format_number(replica_h)} replica-hours each need {format_number(r_cadence)} replicas busy "
        f"{format_number(100 * p.target_utilization)}% of the day, and a {format_number(p.fast_turnaround_h)} h "
        f"turnaround sizes only {format_number(r_fast)}, so the wait for results grows without bound."))
    d.step("backlog_checkpoints_per_day", "Checkpoints the slow fleet falls behind each day",
           max(0.0, p.checkpoints_per_day - r_slow * HOURS_PER_DAY * p.target_utilization / replica_h), "1",
           noun="checkpoints",
           formula="max(0, {checkpoints_per_day} − {replicas_slow} × 24 h × {target_utilization} / "
                   "{replica_hours_per_checkpoint} h)")
    d.step("fast_fleet_busy_share", "Share of the day the fast fleet has work",
           min(1.0, replica_h * p.checkpoints_per_day / (r_fast * HOURS_PER_DAY)), "1", percent=True,
           formula="min(100%, {replica_hours_per_checkpoint} × {checkpoints_per_day} / ({replicas_fast} × 24 h))")


    # --- the slow option's verdict, and what a fleet that keeps up really delivers ---
    d.step("slow_option_verdict", "Is the slow turnaround, sized for its latency alone, a real option?",
           "keeps up" if r_slow >= r_cadence else "falls behind: not an option",
           formula="{replicas_slow} ≥ {replicas_for_cadence}")
    d.step("slow_ok_turnaround_h", "Turnaround the slow option delivers once sized to keep up",
           min(p.slow_turnaround_h, startup_h + replica_h / (r_slow_ok * p.target_utilization)), "h",
           formula="min({slow_turnaround_h}, {startup_h} + {replica_hours_per_checkpoint} / "
                   "({replicas_slow_keeping_up} × {target_utilization}))")
    d.step("checkpoints_during_slow_wait", "Checkpoints trained while the slow option's result is pending",
           d.value("slow_ok_turnaround_h") / HOURS_PER_DAY * p.checkpoints_per_day, "1", noun="checkpoints",
           formula="{slow_ok_turnaround_h} / 24 h × {checkpoints_per_day}")
    d.step("cache_hit_reading", "What the result-cache hit set here means",
           "matches that case" if p.result_cache_hit == 0
           else "assumes part of the run repeats earlier work, such as old checkpoints or unchanged evals",
           formula="{result_cache_hit} = 0")

    # --- LLM-as-judge scoring: a GPU stage after generation ---
    judge_h = d.step("judge_gpu_hours", "GPU-hours an LLM judge spends grading one checkpoint",
                     prompts * p.judge_share * p.judge_tokens_per_prompt / per_gpu / SECONDS_PER_HOUR, "h",
                     noun="GPU", formula="{prompts_per_checkpoint} × {judge_share} × {judge_tokens_per_prompt} / "
                                         "{tokens_per_s_per_gpu}")
    d.step("judge_share_of_generation", "Judge GPU-hours against generation's", judge_h / gpu_h, "1", percent=True,
           formula="{judge_gpu_hours} / {gpu_hours_per_checkpoint}")

    d.step("startup_fetch_bytes", "Checkpoint bytes the fast fleet reads at start-up", r_fast * weight_bytes, "B",
           formula="{replicas_fast} × {weight_bytes} B")
    d.step("startup_read_Bps", "Read rate that start-up needs from the checkpoint store",
           r_fast * weight_bytes / (p.replica_startup_min * 60),
           "B/s", formula="{startup_fetch_bytes} / {replica_startup_min}")

    # --- the content-addressed result cache ---
    d.step("cache_entries_per_checkpoint", "Cache entries a checkpoint adds", prompts, "1", noun="entries",
           formula="{prompts_per_checkpoint}")
    d.step("cache_bytes_per_checkpoint", "Cache bytes a checkpoint adds (text + key + scores)",
           prompts * (p.output_tokens * TEXT_BYTES_PER_TOKEN + RESULT_OVERHEAD_BYTES), "B",
           formula="{prompts_per_checkpoint} × ({output_tokens} × 4 B + 256 B)")

    # --- sharding: by eval versus by tokens, on the fast fleet ---
    replica_s_total = d.step("replica_s_to_run", "Replica-seconds of work in this run",
                             replica_h * SECONDS_PER_HOUR, "s", formula="{replica_hours_per_checkpoint}")
    mean_eval = d.step("mean_eval_replica_s", "One average eval on one replica", replica_s_total / p.evals, "s",
                       formula="{replica_s_to_run} s / {evals}")
    largest = d.step("largest_eval_replica_s", "The largest eval on one replica (no more than the whole run)",
                     min(replica_s_total, mean_eval * p.largest_eval_x_mean), "s",
                     formula="min({replica_s_to_run} s, {mean_eval_replica_s} s × {largest_eval_x_mean})")
    avg_load = d.step("avg_load_fast_s", "Average work per replica on the fast fleet", replica_s_total / r_fast,
                      "s", formula="{replica_s_to_run} s / {replicas_fast}")
    startup_s = p.replica_startup_min * 60
    by_eval = d.step("makespan_by_eval_s", "Makespan, one eval per work unit", startup_s + max(avg_load, largest),
                     "s", formula="{replica_startup_min} + max({avg_load_fast_s}, {largest_eval_replica_s})")
    shard_s = d.step("shard_replica_s", "One shard on one replica", p.shard_tokens / per_replica, "s",
                     formula="{shard_tokens} tokens / {tokens_per_s_per_replica} tokens/s")
    d.step("shard_count", "Shards per checkpoint", math.ceil(to_run / p.shard_tokens - 1e-9), "1", noun="shards",
           formula="ceil({tokens_to_run} / {shard_tokens} − 1e-9)")
    d.step("prompts_per_shard", "Prompts per shard", p.shard_tokens / per_prompt, "1", noun="prompts",
           formula="{shard_tokens} / {tokens_per_prompt}")
    by_tokens = d.step("makespan_by_tokens_s", "Makespan, shards cut by tokens", startup_s + avg_load + shard_s, "s",
                       formula="{replica_startup_min} + {avg_load_fast_s} + {shard_replica_s}")
    target = d.step("fast_target_s", "The fast turnaround, in seconds", p.fast_turnaround_h * SECONDS_PER_HOUR, "s",
                    formula="{fast_turnaround_h}")
    d.step("by_eval_meets_target", "Does sharding by eval meet the fast turnaround?",
           "yes" if by_eval <= target else "no", formula="{makespan_by_eval_s} s ≤ {fast_target_s} s")
    d.step("by_tokens_meets_target", "Does sharding by tokens meet it?",
           "yes" if by_tokens <= target else "no", formula="{makespan_by_tokens_s} s ≤ {fast_target_s} s")
    d.step("idle_gpu_hours_by_eval", "GPU-hours the fast fleet sits idle waiting on the largest eval",
           (r_fast * max(avg_load, largest) - replica_s_total) * p.tp_degree / SECONDS_PER_HOUR, "h",
           formula="({replicas_fast} × max({avg_load_fast_s}, {largest_eval_replica_s}) − {replica_s_to_run}) × "
                   "{tp_degree}", noun="GPU")

    # --- the naive design: one script per eval, each loading the model ---
    naive_load = d.step("naive_load_replica_h", "Replica-hours spent loading the model, one load per eval",
                        p.evals * startup_h, "h", formula="{evals} × {startup_h}")
    naive_h = d.step("naive_replica_h", "Replica-hours per checkpoint, one script per eval",
                     naive_load + replica_h / p.naive_throughput_share, "h",
                     formula="{naive_load_replica_h} + {replica_hours_per_checkpoint} / {naive_throughput_share}")
    naive_fleet_h = d.step("naive_fleet_h", "The naive design's load spread over the fast fleet's replicas",
                           naive_h / (r_fast * p.target_utilization), "h",
                           formula="{naive_replica_h} / ({replicas_fast} × {target_utilization})")
    naive_tail_h = d.step("naive_largest_eval_h", "The largest eval as one naive script",
                          startup_h + largest / p.naive_throughput_share / SECONDS_PER_HOUR, "h",
                          formula="{startup_h} + {largest_eval_replica_s} / {naive_throughput_share}")
    d.step("naive_turnaround_h", "Turnaround of the naive design on the fast fleet's replicas",
           max(naive_fleet_h, naive_tail_h), "h", formula="max({naive_fleet_h}, {naive_largest_eval_h})")

    # --- reproducibility: how small a regression one run can see ---
    pq = p.pass_rate * (1 - p.pass_rate)
    se = d.step("pass_rate_se", "Standard error of one eval's pass rate", math.sqrt(pq / p.prompts_per_eval),
                "1", percent=True, formula="sqrt({pass_rate} × (1 − {pass_rate}) / {prompts_per_eval})")
    d.step("z_alpha", "z for a 5% two-sided false-alarm rate (normal table)", Z_ALPHA, "1",
           formula="Φ⁻¹(1 − 0.05 / 2)", kind="lookup")
    d.step("z_power", "z for 80% power (normal table)", Z_POWER, "1", formula="Φ⁻¹(0.80)", kind="lookup")
    d.step("ci95_half_width", "95% confidence interval, half-width", Z_ALPHA * se, "1", percent=True,
           formula="{z_alpha} × {pass_rate_se}")
    diff_se = d.step("difference_se", "Standard error of the difference between two checkpoints",
                     math.sqrt(2) * se, "1", percent=True, formula="sqrt(2) × {pass_rate_se}")
    d.step("significant_drop", "Smallest drop that is significant at 95%", Z_ALPHA * diff_se, "1", percent=True,
           formula="{z_alpha} × {difference_se}")
    d.step("min_detectable_regression", "Smallest regression caught 80% of the time at 95% confidence",
           (Z_ALPHA + Z_POWER) * diff_se, "1", percent=True, formula="({z_alpha} + {z_power}) × {difference_se}")
    d.step("prompts_needed", "Prompts per eval to catch the target regression (80% power)",
           math.ceil(2 * (Z_ALPHA + Z_POWER) ** 2 * pq / p.regression_to_detect ** 2 - 1e-9), "1", noun="prompts",
           formula="ceil(2 × ({z_alpha} + {z_power})² × {pass_rate} × (1 − {pass_rate}) / {regression_to_detect}²)")
    deff = d.step("design_effect", "Variance inflation when questions share a passage (design effect)",
                  1 + (p.passage_cluster_size - 1) * p.intra_cluster_corr, "1", noun="×",
                  formula="1 + ({passage_cluster_size} − 1) × {intra_cluster_corr}")
    d.step("effective_prompts", "Independent prompts those clustered questions are worth",
           p.prompts_per_eval / deff, "1", noun="prompts", formula="{prompts_per_eval} / {design_effect}")
    cse = d.step("clustered_se", "Standard error clustered by passage", se * math.sqrt(deff), "1", percent=True,
                 formula="{pass_rate_se} × sqrt({design_effect})")
    d.step("clustered_min_detectable", "Smallest regression caught with clustered errors",
           (Z_ALPHA + Z_POWER) * math.sqrt(2) * cse, "1", percent=True,
           formula="({z_alpha} + {z_power}) × sqrt(2) × {clustered_se}")
    d.step("false_alarms_per_comparison", "Evals flagged by chance alone when nothing changed", p.evals * ALPHA,
           "1", noun="evals", formula="{evals} × 0.05")
    z_family = d.step("bonferroni_z", "z for a 5% false-alarm rate across all evals (Bonferroni)",
                      NormalDist().inv_cdf(1 - ALPHA / (2 * p.evals)), "1",
                      formula="Φ⁻¹(1 − 0.05 / (2 × {evals}))", kind="lookup")
    d.step("significant_drop_all_evals", "Smallest significant drop with that correction", z_family * diff_se, "1", percent=True,
           formula="{bonferroni_z} × {difference_se}")
    return d
