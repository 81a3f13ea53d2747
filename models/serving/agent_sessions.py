"""Long-running agent sessions: think on a GPU for a second, run a tool for a minute, repeat.

Teaching order: how long a session really lasts and how little of it touches a GPU; how big
its KV cache grows; what it costs to keep that KV across a tool call (hold it in HBM, park it
in host DRAM and reload, or drop it and recompute); the sandbox and its cold start; and what a
failure costs with and without a checkpoint at every step boundary.

Modelling choices, all stated on the page:
- The served model is Llama-3-70B in bf16 (catalog shape) on one tensor-parallel replica.
- The context grows linearly: step i's think sees `initial + i x tokens_per_step` tokens
  (everything added up to and including this step's new input), so the final context is
  `initial + steps x tokens_per_step` and the per-step mean is `initial + tokens_per_step x (steps+1)/2`.
- Recompute is a full prefill of that context every step: 2 x params FLOP per token plus the
  causal attention term 2 x layers x (heads x head_dim) x n^2, at a prefill MFU (a knob).
- Reload moves the KV from host DRAM over every GPU's own PCIe Gen5 x16 link at once (tensor
  parallel shards the KV by head), at an achieved fraction of the link (a knob).
- Failures arrive at a constant rate (MTBF knob) and land uniformly within a session or a step.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from models.catalog import GPUS, HBM_USABLE_FRACTION, INFER_FLOPS_PER_PARAM_TOKEN, LINKS, MODELS
from models.core import Derivation, Knob, StrictModel

MODEL = MODELS["Llama-3-70B"]
BF16_BYTES = 2
# Text stored as UTF-8 runs about 4 bytes per token for English with a Llama-3-size vocabulary.
TEXT_BYTES_PER_TOKEN = 4
PCIE = LINKS["PCIe Gen5 x16"]
SECONDS_PER_HOUR = 3600


def _noun(n: float, word: str) -> str:
    """"1 replica", "23 replicas": the display noun agrees with the count."""
    return word if n == 1 else word + "s"


def _ceil(x: float) -> int:
    if math.isinf(x):
        return x  # type: ignore[return-value]
    return math.ceil(x - 1e-9)


class Params(StrictModel):
    steps: Annotated[
        int,
        Knob("Steps per session", "", 1, 1000, 1, log=True,
             help="Think-then-tool rounds before the agent finishes.", draw=(20, 300)),
    ] = 100
    think_s: Annotated[
        float,
        Knob("Think time per step", "s", 0.1, 60, log=True,
             help="GPU time per step: prefill the new tokens and decode the next action.", draw=(0.5, 5)),
    ] = 1
    tool_s: Annotated[
        float,
        Knob("Tool time per step", "s", 0.5, 1800, log=True,
             help="Wall-clock of one tool call in the sandbox (tests, builds, browsing).", draw=(5, 300)),
    ] = 60
    initial_context_tokens: Annotated[
        float,
        Knob("Initial context", "tokens", 100, 100_000, log=True,
             help="System prompt, tool schemas and the task before step 1.", draw=(1000, 20_000)),
    ] = 4000
    tokens_per_step: Annotated[
        float,
        Knob("Tokens added per step", "tokens", 10, 20_000, log=True,
             help="The model's action plus the tool's output, appended every step.", draw=(100, 3000)),
    ] = 500
    concurrent_sessions: Annotated[
        int,
        Knob("Concurrent sessions", "", 1, 1_000_000, 1, log=True,
             help="Sessions alive at once, each in a think or a tool call.", draw=(100, 20_000)),
    ] = 1000
    gpu: Annotated[
        Literal["H100 SXM", "H200", "B200"],
        Knob("GPU", help="The part every serving replica uses."),
    ] = "H100 SXM"
    gpus_per_replica: Annotated[
        int,
        Knob("GPUs per replica", "", 2, 16, 1, help="Tensor-parallel group serving one copy of the model.",
             draw=(4, 8)),
    ] = 8
    decode_slots_per_replica: Annotated[
        int,
        Knob("Concurrent thinks per replica", "sequences", 1, 512, 1, log=True,
             help="Sequences one replica decodes at once (continuous batching).", draw=(16, 256)),
    ] = 64
    prefill_mfu: Annotated[
        float,
        Knob("Prefill MFU", "", 0.1, 0.8, 0.05, percent=True,
             help="Fraction of dense bf16 peak a long prefill achieves.", draw=(0.3, 0.6)),
    ] = 0.5
    pcie_efficiency: Annotated[
        float,
        Knob("Achieved PCIe bandwidth", "", 0.3, 1.0, 0.05, percent=True,
             help="Fraction of PCIe Gen5 x16 a KV reload achieves (pinned host memory, large copies).",
             draw=(0.6, 0.9)),
    ] = 0.8
    host_dram_per_node_gb: Annotated[
        float,
        Knob("Host DRAM per node for parked KV", "GB", 128, 8000, log=True,
             help="CPU memory one 8-GPU node can give to parked sessions (a DGX H100 has 2 TB in all).",
             draw=(500, 4000)),
    ] = 2000
    sandbox_cold_start_s: Annotated[
        float,
        Knob("Sandbox cold start", "s", 0.1, 300, log=True,
             help="From 'create' to a sandbox ready to run a tool (microVM boot, image, mounts).",
             draw=(0.5, 60)),
    ] = 2
    sandbox_diff_per_step_mb: Annotated[
        float,
        Knob("Sandbox snapshot per step", "MB", 0.1, 2000, log=True,
             help="Filesystem changes one step leaves behind, written with the step's checkpoint.",
             draw=(1, 200)),
    ] = 10
    mtbf_h: Annotated[
        float,
        Knob("Mean time between session-killing failures", "h", 1, 2000, log=True,
             help="Replica, sandbox host or orchestrator loss, as seen by one session.", draw=(6, 200)),
    ] = 24


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    g = GPUS[p.gpu]
    S = p.steps

    # --- the clock --------------------------------------------------------------------------
    period = d.step("step_period_s", "One step: think plus tool", p.think_s + p.tool_s, "s",
                    formula="{think_s} s + {tool_s} s")
    duration = d.step("session_duration_s", "One session, start to finish", S * period, "s",
                      formula="{steps} steps × {step_period_s} s")
    d.step("session_duration_h", "The same in hours", duration / SECONDS_PER_HOUR, "h",
           formula="{session_duration_s} s / 3,600 s")
    d.step("hour_undercount_factor", "Concurrent sessions an 'hour' estimate misses, as a factor",
           duration / SECONDS_PER_HOUR, "1", noun="×", formula="{session_duration_s} s / 3,600 s")
    in_hour = math.floor(SECONDS_PER_HOUR / period + 1e-9)
    d.step("steps_in_an_hour", "Whole steps that fit one hour", in_hour, "1",
           noun=_noun(in_hour, "step"), formula="floor(3,600 s / {step_period_s} s)")
    d.step("tool_s_for_an_hour", "Tool time that would fit every step into an hour",
           max(0.0, SECONDS_PER_HOUR / S - p.think_s), "s", formula="max(0, 3,600 s / {steps} − {think_s} s)")
    duty = d.step("gpu_duty_cycle", "Share of a session spent on a GPU", 100 * p.think_s / period, "%",
                  formula="100 × {think_s} s / {step_period_s} s")
    thinking = d.step("sessions_thinking", "Sessions on a GPU at any instant", p.concurrent_sessions * duty / 100,
                      "1", noun="sessions", formula="{concurrent_sessions} × {gpu_duty_cycle}%")

    # --- how big the state grows ------------------------------------------------------------
    final_tok = d.step("final_context_tokens", "Context at the last step", p.initial_context_tokens + S * p.tokens_per_step,
                       "1", noun="tokens", formula="{initial_context_tokens} + {steps} × {tokens_per_step}")
    mean_tok = d.step("mean_context_tokens", "Context averaged over the steps",
                      p.initial_context_tokens + p.tokens_per_step * (S + 1) / 2, "1", noun="tokens",
                      formula="{initial_context_tokens} + {tokens_per_step} × ({steps} + 1) / 2")
    kv_tok = d.step("kv_bytes_per_token", "KV cache per token (Llama-3-70B, bf16)", MODEL.kv_bytes_per_token(BF16_BYTES),
                    "B", formula=f"2 × {MODEL.layers} layers × {MODEL.kv_heads} KV heads × {MODEL.head_dim} × 2 B")
    kv_final = d.step("kv_bytes_final", "KV cache at the last step", final_tok * kv_tok, "B",
                      formula="{final_context_tokens} × {kv_bytes_per_token} B")
    kv_mean = d.step("kv_bytes_mean", "KV cache, session average", mean_tok * kv_tok, "B",
                     formula="{mean_context_tokens} × {kv_bytes_per_token} B")
    text_final = d.step("transcript_bytes_final", "The same session as text", final_tok * TEXT_BYTES_PER_TOKEN, "B",
                        formula="{final_context_tokens} × 4 B")
    d.step("kv_to_text_ratio", "KV bytes per text byte", kv_final / text_final, "1", noun="×",
           formula="{kv_bytes_final} B / {transcript_bytes_final} B")

    # --- option 1: hold every session's KV in HBM through the tool call ---------------------
    weights = d.step("weight_bytes", "Model weights in bf16", MODEL.weight_bytes(BF16_BYTES), "B",
                     formula=f"{MODEL.total_params / 1e9:g}e9 parameters × 2 B")
    kv_cap = d.step("kv_capacity_per_replica", "HBM left for KV on one replica",
                    max(0.0, p.gpus_per_replica * g.memory_bytes * HBM_USABLE_FRACTION - weights), "B",
                    formula=f"{{gpus_per_replica}} × {g.memory_GB:g} GB × {HBM_USABLE_FRACTION} − {{weight_bytes}} B")

    def replicas_for_kv(sessions: float) -> float:
        return _ceil(sessions * kv_mean / kv_cap) if kv_cap > 0 else math.inf

    n_compute = max(1, _ceil(thinking / p.decode_slots_per_replica), replicas_for_kv(thinking))
    compute = d.step(
        "replicas_for_compute", "Replicas the thinking alone needs (decode slots and its KV)",
        n_compute, "1", noun=_noun(n_compute, "replica"),
        formula="max(1, ceil({sessions_thinking} / {decode_slots_per_replica}), "
                "ceil({sessions_thinking} × {kv_bytes_mean} / {kv_capacity_per_replica}))",
    )
    n_hold = max(compute, replicas_for_kv(p.concurrent_sessions))
    hold = d.step(
        "replicas_to_hold_kv", "Replicas to keep every session's KV in HBM between steps",
        n_hold, "1", noun=_noun(n_hold, "replica"),
        formula="max({replicas_for_compute}, ceil({concurrent_sessions} × {kv_bytes_mean} B / {kv_capacity_per_replica} B))",
    )
    d.step("hold_over_compute_ratio", "Holding KV over what compute needs", hold / compute, "1", noun="×",
           formula="{replicas_to_hold_kv} / {replicas_for_compute}")

    # --- option 2: park in host DRAM and reload; option 3: drop and recompute ----------------
    pcie_Bps = d.step("reload_Bps", "Reload bandwidth: every GPU's PCIe Gen5 link at once",
                      p.gpus_per_replica * PCIE.Bps * p.pcie_efficiency, "B/s",
                      formula=f"{{gpus_per_replica}} × {PCIE.GBps:.1f} GB/s × {{pcie_efficiency}}")
    reload = d.step("reload_per_step_s", "Reload the average session's KV from DRAM", kv_mean / pcie_Bps, "s",
                    formula="{kv_bytes_mean} B / {reload_Bps} B/s")
    d.step("reload_final_step_s", "Reload at the last step", kv_final / pcie_Bps, "s",
           formula="{kv_bytes_final} B / {reload_Bps} B/s")
    flops_rate = d.step("prefill_flops_per_s", "Replica prefill rate",
                        p.gpus_per_replica * g.dense_bf16_flops * p.prefill_mfu, "FLOP/s",
                        formula=f"{{gpus_per_replica}} × {g.dense_bf16_TFLOPs:g} TFLOP/s × {{prefill_mfu}}")
    lin = INFER_FLOPS_PER_PARAM_TOKEN * MODEL.total_params
    attn_width = MODEL.heads * MODEL.head_dim
    attn = 2 * MODEL.layers * attn_width  # causal attention: QK^T and AV, half the square each

    def prefill_flops(n: float) -> float:
        return lin * n + attn * n * n

    a, b = p.initial_context_tokens, p.tokens_per_step
    sum_c = S * a + b * S * (S + 1) / 2
    sum_c2 = S * a * a + a * b * S * (S + 1) + b * b * S * (S + 1) * (2 * S + 1) / 6
    d.step("recompute_tokens_total", "Tokens prefilled over a session when every step recomputes", sum_c, "1",
           noun="tokens", formula="{steps} × {initial_context_tokens} + {tokens_per_step} × {steps} × ({steps} + 1) / 2")
    total_flops = d.step(
        "recompute_flops_total", "Prefill FLOPs over a session, recomputing every step",
        lin * sum_c + attn * sum_c2, "FLOP",
        formula=f"2 × {MODEL.total_params / 1e9:g}e9 × {{recompute_tokens_total}} + "
                f"2 × {MODEL.layers} × {attn_width:,} × Σ context²",
    )
    recompute = d.step("recompute_per_step_s", "Recompute per step, session average", total_flops / S / flops_rate, "s",
                       formula="{recompute_flops_total} FLOP / {steps} / {prefill_flops_per_s} FLOP/s")
    final_flops = d.step("prefill_flops_final", "Prefill FLOPs of the final context, once", prefill_flops(final_tok),
                         "FLOP", formula=f"2 × {MODEL.total_params / 1e9:g}e9 × {{final_context_tokens}} + "
                                         f"2 × {MODEL.layers} × {attn_width:,} × {{final_context_tokens}}²")
    d.step("recompute_final_step_s", "Recompute at the last step", final_flops / flops_rate, "s",
           formula="{prefill_flops_final} FLOP / {prefill_flops_per_s} FLOP/s")
    d.step("recompute_multiplier", "Tokens prefilled by recomputing over tokens prefilled once",
           sum_c / final_tok, "1", noun="×", formula="{recompute_tokens_total} / {final_context_tokens}")
    d.step("recompute_flop_multiplier", "The same in FLOPs (attention included)", total_flops / final_flops, "1",
           noun="×", formula="{recompute_flops_total} / {prefill_flops_final}")
    d.step("recompute_over_reload", "Recompute over reload, per step", recompute / reload, "1", noun="×",
           formula="{recompute_per_step_s} s / {reload_per_step_s} s")
    d.step("recompute_over_think", "Recompute per step over the think it delays", recompute / p.think_s, "1",
           noun="×", formula="{recompute_per_step_s} s / {think_s} s")
    n_re = _ceil(p.concurrent_sessions * recompute / period)
    d.step("replicas_for_recompute", "Replicas of prefill that recomputing every step keeps busy",
           n_re, "1", noun=_noun(n_re, "replica"),
           formula="ceil({concurrent_sessions} × {recompute_per_step_s} s / {step_period_s} s)")
    parked = d.step("parked_kv_bytes", "KV parked in host DRAM across all sessions", p.concurrent_sessions * kv_mean,
                    "B", formula="{concurrent_sessions} × {kv_bytes_mean} B")
    n_nodes = _ceil(parked / (p.host_dram_per_node_gb * 1e9))
    d.step("nodes_of_dram_for_parked_kv", "Nodes' DRAM the parked KV fills",
           n_nodes, "1", noun=_noun(n_nodes, "node"),
           formula="ceil({parked_kv_bytes} B / {host_dram_per_node_gb} GB)")

    d.step("parked_kv_outgrows_hosts", "Does parked KV outgrow the DRAM of the compute replicas' own hosts?",
           "yes" if n_nodes > compute else "no", "1",
           formula="{nodes_of_dram_for_parked_kv} > {replicas_for_compute}")

    # --- the sandbox --------------------------------------------------------------------------
    starts = d.step("session_starts_per_s", "New sessions per second (Little's law: sessions / duration)",
                    p.concurrent_sessions / duration, "1/s", noun="sessions",
                    formula="{concurrent_sessions} / {session_duration_s} s")
    pool = _ceil(starts * p.sandbox_cold_start_s)
    d.step("sandbox_warm_pool", "Pre-booted sandboxes that hide the cold start (Little's law)", pool, "1",
           noun=_noun(pool, "sandbox"), formula="ceil({session_starts_per_s}/s × {sandbox_cold_start_s} s)")
    d.step("sandbox_cold_start_budget_s", "Cold-start budget: what hides under the first think", p.think_s, "s",
           formula="{think_s} s")
    d.step("sandbox_wait_s", "Sandbox start the user sees, booting from cold during the first think",
           max(0.0, p.sandbox_cold_start_s - p.think_s), "s", formula="max(0, {sandbox_cold_start_s} s − {think_s} s)")
    per_step_boot = d.step("sandbox_boot_every_step_s", "Boot time added if a sandbox is created per step",
                           S * p.sandbox_cold_start_s, "s", formula="{steps} × {sandbox_cold_start_s} s")
    d.step("sandbox_boot_every_step_share", "That as a share of the session", 100 * per_step_boot / duration, "%",
           formula="100 × {sandbox_boot_every_step_s} s / {session_duration_s} s")

    # --- checkpoints and failures ---------------------------------------------------------------
    ckpt = d.step("checkpoint_bytes_per_step", "Checkpoint per step: new text plus the sandbox diff",
                  p.tokens_per_step * TEXT_BYTES_PER_TOKEN + p.sandbox_diff_per_step_mb * 1e6, "B",
                  formula="{tokens_per_step} × 4 B + {sandbox_diff_per_step_mb} MB")
    d.step("checkpoint_write_Bps", "Checkpoint writes across all sessions", p.concurrent_sessions * ckpt / period,
           "B/s", formula="{concurrent_sessions} × {checkpoint_bytes_per_step} B / {step_period_s} s")
    fails = d.step("failures_per_session", "Expected failures during one session",
                   duration / (p.mtbf_h * SECONDS_PER_HOUR), "1", noun="failures",
                   formula="{session_duration_s} s / ({mtbf_h} h × 3,600 s)")
    d.step("failure_probability_per_session", "Chance a session sees at least one failure",
           100 * (1 - math.exp(-fails)), "%", formula="100 × (1 − e^(−{failures_per_session}))")
    loss = d.step("expected_loss_per_failure_s", "Work lost per failure with no checkpoints (restart from step 1)",
                  duration / 2, "s", formula="{session_duration_s} s / 2")
    restore = d.step("restore_s", "Resume from a step checkpoint: new sandbox plus one re-prefill",
                     p.sandbox_cold_start_s + recompute, "s",
                     formula="{sandbox_cold_start_s} s + {recompute_per_step_s} s")
    loss_ckpt = d.step("expected_loss_per_failure_with_checkpoints_s",
                       "Work lost per failure with a checkpoint at every step boundary",
                       period / 2 + restore, "s", formula="{step_period_s} s / 2 + {restore_s} s")
    d.step("checkpoint_loss_ratio", "Loss without checkpoints over loss with them", loss / loss_ckpt, "1", noun="×",
           formula="{expected_loss_per_failure_s} s / {expected_loss_per_failure_with_checkpoints_s} s")
    d.step("lost_per_session_s", "Expected time lost per session, no checkpoints", fails * loss, "s",
           formula="{failures_per_session} × {expected_loss_per_failure_s} s")
    d.step("lost_per_session_with_checkpoints_s", "Expected time lost per session, step checkpoints",
           fails * loss_ckpt, "s",
           formula="{failures_per_session} × {expected_loss_per_failure_with_checkpoints_s} s")
    return d
