"""Long-running agent sessions: think on a GPU for a second, run a tool for a minute, repeat.

Teaching order: how long a session really lasts and how little of it touches a GPU; how big
its KV cache grows; what it costs to keep that KV across a tool call (hold it in HBM, park it
in host DRAM and reload, or drop it and recompute); the sandbox and its cold start; and what a
failure costs with and without a checkpoint at every step boundary.

Modelling choices, all stated on the page:
- The served model is the engine's (models/engine): Llama-3-70B in bf16 on eight H100s unless the
  knobs say otherwise; weights, KV bytes, the room for KV and the prefill rate are its Replica's.
- The context grows linearly: step i's think sees `initial + i x tokens_per_step` tokens
  (everything added up to and including this step's new input), so the final context is
  `initial + steps x tokens_per_step` and the per-step mean is `initial + tokens_per_step x (steps+1)/2`.
- Recompute is a full prefill of that context every step, the engine's prefill: 2 x active params
  FLOP per token plus attention over the n (n - 1) / 2 earlier-token pairs, at the prefill MFU,
  plus the tensor-parallel all-reduces of n tokens.
- The thinking is decoded at a batch per replica: the given one, or the one the TPOT target and
  the KV room allow at the mean context; replicas are sized at the target utilization.
- Reload moves the KV from host DRAM over every GPU's own PCIe Gen5 x16 link at once (tensor
  parallel shards the KV by head), at an achieved fraction of the link (a knob).
- Failures arrive at a constant rate (MTBF knob) and land uniformly within a session or a step.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import model_validator

from models.catalog import LINKS
from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import EngineKnobs, accelerator, replica, with_defaults
from models.engine.precision import ACTIVATION_BYTES
from models.engine.record import record_model
from models.engine.roofline import ALLREDUCES_PER_LAYER, Replica, floor_batch
from models.engine.serving_knobs import BatchKnobs, SloKnobs

# Text stored as UTF-8 runs about 4 bytes per token for English with a Llama-3-size vocabulary.
TEXT_BYTES_PER_TOKEN = 4
# Provider prompt caches (Anthropic's docs): a 5-minute lifetime refreshed on every hit, reads at 0.1x the
# input price and 5-minute writes at 1.25x. OpenAI's in-memory cache clears after 5 to 10 idle minutes.
PROVIDER_CACHE_TTL_S = 300
CACHE_READ_PRICE, CACHE_WRITE_PRICE = 0.1, 1.25
PCIE = LINKS["PCIe Gen5 x16"]
SECONDS_PER_HOUR = 3600


def _noun(n: float, word: str) -> str:
    """"1 replica", "23 replicas": the display noun agrees with the count."""
    if n == 1:
        return word
    return word + "es" if word.endswith(("s", "x")) else word + "s"


def _ceil(x: float) -> int:
    if math.isinf(x):
        return x  # type: ignore[return-value]
    return math.ceil(x - 1e-9)


class _AgentKnobs(StrictModel):
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
    action_tokens: Annotated[
        float,
        Knob("Tokens the model writes per step", "tokens", 5, 5000, log=True,
             help="What a think decodes: any reasoning plus the tool call (part of the tokens added per step).",
             draw=(20, 100)),
    ] = 30
    concurrent_sessions: Annotated[
        int,
        Knob("Concurrent sessions", "", 1, 1_000_000, 1, log=True,
             help="Sessions alive at once, each in a think or a tool call.", draw=(100, 20_000)),
    ] = 1000
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


class Params(with_defaults(EngineKnobs, tp_degree=8), BatchKnobs, SloKnobs, _AgentKnobs):
    """The agent's clock and state, then the batch and SLO, then the engine serving the thinks."""

    @model_validator(mode="after")
    def _thinks(self) -> "Params":
        r = replica(self)
        mean = self.initial_context_tokens + self.tokens_per_step * (self.steps + 1) / 2
        one = r.decode_step(1, mean).step_s
        fits = floor_batch(r.kv_batch_cap(mean))
        if fits < 1:
            raise ValueError(
                f"One session's KV at the mean context of {mean:,.0f} tokens is "
                f"{r.kv_bytes_per_token * mean / 1e9:,.1f} GB, more than the {r.kv_room_bytes / 1e9:,.0f} GB "
                f"{r.tp} × {r.hw.name} leave beside the weights. Shorten the session or add accelerators per replica.")
        if self.given_batch > fits:
            raise ValueError(
                f"A batch of {self.given_batch} thinks at the mean context of {mean:,.0f} tokens needs "
                f"{self.given_batch * r.kv_bytes_per_token * mean / 1e9:,.0f} GB of KV; beside the weights, "
                f"{r.tp} × {r.hw.name} hold {fits} such sessions.")
        if not self.given_batch and one > self.tpot_target_ms / 1000:
            raise ValueError(
                f"One decode step of {r.model.name} at the mean context of {mean:,.0f} tokens takes "
                f"{one * 1000:,.1f} ms on {r.tp} × {r.hw.name}, more than the {self.tpot_target_ms:,.0f} ms TPOT "
                f"target. Loosen the target, give the batch, or add accelerators per replica.")
        return self


def thinking_batch(r: Replica, p: Params, context_tokens: float) -> tuple[float, float, int]:
    """(memory cap before the floor, TPOT cap before the floor, derived batch) at `context_tokens`."""
    memory = r.kv_batch_cap(context_tokens)
    tpot = r.tpot_batch_cap(p.tpot_target_ms / 1000, context_tokens)
    return memory, tpot, max(1, min(floor_batch(memory), floor_batch(tpot)))


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    r = replica(p)
    S = p.steps

    # --- the clock --------------------------------------------------------------------------
    period = d.step("step_period_s", "One step: think plus tool", p.think_s + p.tool_s, "s",
                    formula="{think_s} + {tool_s}")
    duration = d.step("session_duration_s", "One session, start to finish", S * period, "s",
                      formula="{steps} × {step_period_s}")
    d.step("session_duration_h", "The same in hours", duration / SECONDS_PER_HOUR, "h",
           formula="{session_duration_s}")
    d.step("hour_undercount_factor", "Concurrent sessions an 'hour' estimate misses, as a factor",
           duration / SECONDS_PER_HOUR, "1", noun="×", formula="{session_duration_s} / 1 h")
    d.step("hour_count_verdict", "Does an 'hour' estimate under- or overcount the concurrent sessions?",
           "undercounts" if duration > SECONDS_PER_HOUR else ("overcounts" if duration < SECONDS_PER_HOUR
                                                              else "counts exactly"),
           formula="{session_duration_s} against 1 h", kind="verdict")
    in_hour = math.floor(SECONDS_PER_HOUR / period + 1e-9)
    d.step("steps_in_an_hour", "Whole steps that fit one hour", in_hour, "1",
           noun=_noun(in_hour, "step"), formula="floor(1 h / {step_period_s})")
    d.step("tool_s_for_an_hour", "Tool time that would fit every step into an hour",
           max(0.0, SECONDS_PER_HOUR / S - p.think_s), "s", formula="max(0 s, 1 h / {steps} − {think_s})")
    duty = d.step("gpu_duty_cycle", "Share of a session spent on a GPU", p.think_s / period, "1", percent=True,
                  formula="{think_s} / {step_period_s}")
    thinking = d.step("sessions_thinking", "Sessions on a GPU at any instant", p.concurrent_sessions * duty,
                      "1", noun="sessions", formula="{concurrent_sessions} × {gpu_duty_cycle}")

    # --- how big the state grows ------------------------------------------------------------
    final_tok = d.step("final_context_tokens", "Context at the last step", p.initial_context_tokens + S * p.tokens_per_step,
                       "1", noun="tokens", formula="{initial_context_tokens} + {steps} × {tokens_per_step}")
    mean_tok = d.step("mean_context_tokens", "Context averaged over the steps",
                      p.initial_context_tokens + p.tokens_per_step * (S + 1) / 2, "1", noun="tokens",
                      formula="{initial_context_tokens} + {tokens_per_step} × ({steps} + 1) / 2")
    record_model(d, p)
    kv_tok = d.value("kv_bytes_per_token")
    kv_final = d.step("kv_bytes_final", "KV cache at the last step", final_tok * kv_tok, "B",
                      formula="{final_context_tokens} × {kv_bytes_per_token}")
    kv_mean = d.step("kv_bytes_mean", "KV cache, session average", mean_tok * kv_tok, "B",
                     formula="{mean_context_tokens} × {kv_bytes_per_token}")
    text_final = d.step("transcript_bytes_final", "The same session as text", final_tok * TEXT_BYTES_PER_TOKEN, "B",
                        formula="{final_context_tokens} × 4 B")
    d.step("kv_to_text_ratio", "KV bytes per text byte", kv_final / text_final, "1", noun="×",
           formula="{kv_bytes_final} / {transcript_bytes_final}")

    # --- option 1: hold every session's KV in HBM through the tool call ---------------------
    hw = accelerator(p)
    d.step("gpu_memory_bytes", f"{hw.name} HBM", hw.hbm_bytes, "B")
    d.step("replica_gpus", "GPUs in one replica", p.tp_degree, "1", noun=_noun(p.tp_degree, "GPU"),
           formula="{tp_degree}")
    d.step("usable_hbm_bytes", "HBM usable per replica", r.usable_hbm_bytes, "B",
           formula="{tp_degree} × {gpu_memory_bytes} × {usable_hbm_fraction}")
    kv_cap = d.step("kv_capacity_per_replica", "HBM left for KV on one replica", r.kv_room_bytes, "B",
                    formula="{usable_hbm_bytes} − {weight_bytes}")

    def replicas_for_kv(sessions: float) -> float:
        return _ceil(sessions * kv_mean / kv_cap)

    memory_cap, tpot_cap, derived = thinking_batch(r, p, mean_tok)
    d.step("tpot_target_s", "TPOT target", p.tpot_target_ms / 1000, "s", formula="{tpot_target_ms}")
    d.step("batch_memory_cap_continuous", "Thinks whose KV fits a replica at the mean context, before the floor",
           memory_cap, "1", noun="sequences", formula="{kv_capacity_per_replica} / {kv_bytes_mean}")
    # The engine's decode step at the mean context, as lines in the batch: the bytes side, the FLOP
    # side, and the all-reduces plus the fixed cost that add to whichever binds.
    m = r.model
    d.step("gpu_hbm_Bps", f"{hw.name} HBM bandwidth", hw.hbm_Bps, "B/s")
    d.step("replica_hbm_Bps", "Replica HBM bandwidth at the decode MBU", r.achieved_hbm_Bps, "B/s",
           formula="{tp_degree} × {gpu_hbm_Bps} × {hbm_efficiency}")
    d.step("weight_read_s", "Reading every weight once (the floor of any decode step)",
           r.weight_bytes / r.achieved_hbm_Bps, "s", formula="{weight_bytes} / {replica_hbm_Bps}")
    d.step("kv_read_per_sequence_s", "Reading one think's KV at the mean context",
           r.kv_bytes_per_token * mean_tok / r.achieved_hbm_Bps, "s",
           formula="{kv_bytes_per_token} × {mean_context_tokens} / {replica_hbm_Bps}")
    d.step("gpu_peak_flops", f"{hw.name} dense {p.compute_precision} peak", hw.peak(p.compute_precision), "FLOP/s")
    d.step("replica_decode_flops", "Replica decode compute at the decode MFU", r.peak_flops * r.decode_mfu,
           "FLOP/s", formula="{tp_degree} × {gpu_peak_flops} × {decode_mfu}")
    pair = r.attention_flops_per_position  # one token attending to one earlier token, every layer and head
    d.step("attention_flops_per_position", "Attention FLOP per token per earlier token (QK^T and AV)", pair, "FLOP",
           note="0 when attention FLOP are not counted (the textbook 2 × parameters per token).")
    mla = m.attention == "MLA" and r.attention_flops
    d.step("decode_attention_flops_per_position", "Attention FLOP per cached token when decoding",
           r.decode_attention_flops_per_position, "FLOP",
           formula=(f"2 FLOP × {m.layers} layers × {m.heads} heads × (2 × {m.kv_lora_rank} latent + "
                    f"{m.qk_rope_head_dim or 0} RoPE)") if mla else "{attention_flops_per_position}")
    d.step("decode_flops_per_token", "FLOP per decoded token at the mean context (2 × active params + attention)",
           r.decode_flops_per_token(mean_tok), "FLOP",
           formula="2 FLOP × {active_params} + {decode_attention_flops_per_position} × {mean_context_tokens}")
    d.step("compute_per_sequence_s", "FLOP side per think in the batch",
           r.decode_flops_per_token(mean_tok) / (r.peak_flops * r.decode_mfu), "s",
           formula="{decode_flops_per_token} / {replica_decode_flops}")
    d.step("step_overhead_s", "Fixed cost per step (launches, sampling)", r.step_overhead_s, "s",
           formula="{step_overhead_ms}")
    d.step("link_Bps_per_direction", f"{hw.name} scale-up link, each way", hw.link_Bps_per_direction, "B/s",
           kind="lookup")
    ar_fixed, ar_per_token = r.allreduce_s(0), r.allreduce_s(1) - r.allreduce_s(0)
    d.step("allreduce_fixed_s", "Tensor-parallel all-reduces per pass, latency part", ar_fixed, "s",
           formula=f"{m.layers} layers × {ALLREDUCES_PER_LAYER} × {{allreduce_latency_us}}" if r.tp > 1 else "",
           note="None on one accelerator." if r.tp == 1 else "")
    d.step("allreduce_per_token_s", "Tensor-parallel all-reduces per pass, per token (one per think when decoding)",
           ar_per_token, "s",
           formula=(f"{m.layers} layers × {ALLREDUCES_PER_LAYER} × 2 × ({{tp_degree}} − 1) / {{tp_degree}} × "
                    f"{m.d_model} × {ACTIVATION_BYTES:g} B / {{link_Bps_per_direction}}") if r.tp > 1 else "",
           note="None on one accelerator." if r.tp == 1 else "")
    d.step("batch_tpot_cap_continuous", "Largest batch whose decode step meets the TPOT target, before the floor",
           tpot_cap, "1", noun="sequences",
           formula="max(0, min(({tpot_target_s} − {step_overhead_s} − {allreduce_fixed_s} − {weight_read_s}) / "
                   "({kv_read_per_sequence_s} + {allreduce_per_token_s}), ({tpot_target_s} − {step_overhead_s} − "
                   "{allreduce_fixed_s}) / ({compute_per_sequence_s} + {allreduce_per_token_s})))")
    d.step("derived_batch", "Thinks a replica could decode at once: the tighter cap", derived, "1", noun="sequences",
           formula="max(1, min(floor({batch_memory_cap_continuous}), floor({batch_tpot_cap_continuous})))")
    batch = p.given_batch or derived
    d.step("decode_batch", "Thinks each replica decodes at once", batch, "1", noun="sequences",
           formula="{given_batch} (given)" if p.given_batch else "{derived_batch}")
    d.step("think_decode_step_s", "Decode step at that batch and the mean context",
           r.decode_step(batch, mean_tok).step_s, "s",
           formula="max({weight_read_s} + {decode_batch} × {kv_read_per_sequence_s}, {decode_batch} × "
                   "{compute_per_sequence_s}) + {allreduce_fixed_s} + {decode_batch} × {allreduce_per_token_s} + "
                   "{step_overhead_s}")
    tpot = r.decode_step(batch, mean_tok).step_s
    d.step("think_tokens_per_s", "One session's decode rate at that batch", 1 / tpot, "1/s", noun="tokens",
           formula="1 / {think_decode_step_s}")
    d.step("think_token_budget", "Tokens a think of the given length can decode", p.think_s / tpot, "1",
           noun="tokens", formula="{think_s} / {think_decode_step_s}")
    need = d.step("think_decode_s", "Decoding the step's action at that rate", p.action_tokens * tpot, "s",
                  formula="{action_tokens} × {think_decode_step_s}")
    d.step("think_fits", "Does the action decode within the think time?", "yes" if need <= p.think_s else "no", "1",
           formula="{think_decode_s} ≤ {think_s}", kind="verdict")
    # --- a hosted API instead: its prompt cache across the tool call ---
    d.step("provider_cache_ttl_s", "Provider prompt-cache lifetime when idle (Anthropic's default; OpenAI clears "
           "idle caches after 5 to 10 minutes)", PROVIDER_CACHE_TTL_S, "s", kind="lookup")
    warm = p.tool_s < PROVIDER_CACHE_TTL_S
    d.step("prefix_stays_warm", "Is the cached prefix still there when the tool returns?", "yes" if warm else "no",
           "1", formula="{tool_s} < {provider_cache_ttl_s}", kind="verdict")
    new_tok = min(p.tokens_per_step, mean_tok)
    share = ((mean_tok - new_tok) * CACHE_READ_PRICE + new_tok * CACHE_WRITE_PRICE) / mean_tok if warm \
        else CACHE_WRITE_PRICE
    d.step("think_input_cost_share", "A hosted API's input bill per think over list price (Anthropic's 5-minute "
           "cache: reads 0.1x, writes 1.25x)", share, "1", percent=True,
           formula=("(({mean_context_tokens} − {tokens_per_step}) × 0.1 + {tokens_per_step} × 1.25) / "
                    "{mean_context_tokens}") if warm else "1.25")
    by_slots = thinking / (batch * p.target_utilization)
    d.step("replicas_for_slots_continuous", "Replicas the thinks' decode slots need, before rounding up", by_slots,
           "1", noun="replicas", formula="{sessions_thinking} / ({decode_batch} × {target_utilization})")
    n_compute = max(1, _ceil(by_slots), replicas_for_kv(thinking))
    compute = d.step(
        "replicas_for_compute", "Replicas the thinking alone needs (decode slots and its KV)",
        n_compute, "1", noun=_noun(n_compute, "replica"),
        formula="max(1, ceil({replicas_for_slots_continuous}), "
                "ceil({sessions_thinking} × {kv_bytes_mean} / {kv_capacity_per_replica}))",
    )
    d.step("replicas_to_hold_kv_continuous", "Replicas of KV room every session's average KV fills",
           p.concurrent_sessions * kv_mean / kv_cap, "1", noun="replicas",
           formula="{concurrent_sessions} × {kv_bytes_mean} / {kv_capacity_per_replica}")
    n_hold = max(compute, replicas_for_kv(p.concurrent_sessions))
    hold = d.step(
        "replicas_to_hold_kv", "Replicas to keep every session's KV in HBM between steps",
        n_hold, "1", noun=_noun(n_hold, "replica"),
        formula="max({replicas_for_compute}, ceil({replicas_to_hold_kv_continuous}))",
    )
    d.step("hold_over_compute_ratio", "Holding KV over what compute needs", hold / compute, "1", noun="×",
           formula="{replicas_to_hold_kv} / {replicas_for_compute}")

    # --- option 2: park in host DRAM and reload; option 3: drop and recompute ----------------
    d.step("pcie_Bps", f"{PCIE.name}, one GPU's link to host memory, each way", PCIE.Bps, "B/s", kind="lookup")
    pcie_Bps = d.step("reload_Bps", "Reload bandwidth: every GPU's PCIe Gen5 link at once",
                      p.tp_degree * PCIE.Bps * p.pcie_efficiency, "B/s",
                      formula="{tp_degree} × {pcie_Bps} × {pcie_efficiency}")
    reload = d.step("reload_per_step_s", "Reload the average session's KV from DRAM", kv_mean / pcie_Bps, "s",
                    formula="{kv_bytes_mean} / {reload_Bps}")
    d.step("reload_final_step_s", "Reload at the last step", kv_final / pcie_Bps, "s",
           formula="{kv_bytes_final} / {reload_Bps}")
    flops_rate = d.step("prefill_flops_per_s", "Replica prefill rate", r.peak_flops * r.prefill_mfu, "FLOP/s",
                        formula="{tp_degree} × {gpu_peak_flops} × {prefill_mfu}")
    lin = r.weight_flops_per_token
    # A full prefill of n tokens: n x lin + pair x n (n - 1) / 2, plus all-reduces linear in n.
    a, b = p.initial_context_tokens, p.tokens_per_step
    sum_c = S * a + b * S * (S + 1) / 2
    sum_c2 = S * a * a + a * b * S * (S + 1) + b * b * S * (S + 1) * (2 * S + 1) / 6
    d.step("recompute_tokens_total", "Tokens prefilled over a session when every step recomputes", sum_c, "1",
           noun="tokens", formula="{steps} × {initial_context_tokens} + {tokens_per_step} × {steps} × ({steps} + 1) / 2")
    d.step("recompute_attention_pairs_total", "Earlier-token pairs attention scores over those prefills "
           "(each context c has c (c − 1) / 2)", (sum_c2 - sum_c) / 2, "1", noun="pairs",
           formula="({steps} × {initial_context_tokens}² + {initial_context_tokens} × {tokens_per_step} × {steps} × "
                   "({steps} + 1) + {tokens_per_step}² × {steps} × ({steps} + 1) × (2 × {steps} + 1) / 6 − "
                   "{recompute_tokens_total}) / 2")
    total_flops = d.step(
        "recompute_flops_total", "Prefill FLOPs over a session, recomputing every step",
        lin * sum_c + pair * (sum_c2 - sum_c) / 2, "FLOP",
        formula="2 FLOP × {active_params} × {recompute_tokens_total} + {attention_flops_per_position} × "
                "{recompute_attention_pairs_total}",
    )
    total_ar = S * ar_fixed + ar_per_token * sum_c
    d.step("recompute_allreduce_total_s", "Tensor-parallel all-reduces of those prefills", total_ar, "s",
           formula="{steps} × {allreduce_fixed_s} + {allreduce_per_token_s} × {recompute_tokens_total}"
           if r.tp > 1 else "",
           note="None on one accelerator." if r.tp == 1 else "")
    recompute = d.step("recompute_per_step_s", "Recompute per step, session average",
                       (total_flops / flops_rate + total_ar) / S, "s",
                       formula="({recompute_flops_total} / {prefill_flops_per_s} + "
                               "{recompute_allreduce_total_s}) / {steps}")
    final_flops = d.step("prefill_flops_final", "Prefill FLOPs of the final context, once", r.prefill_flops(final_tok),
                         "FLOP", formula="2 FLOP × {active_params} × {final_context_tokens} + {attention_flops_per_position}"
                                         " × {final_context_tokens} × ({final_context_tokens} − 1) / 2")
    d.step("recompute_final_step_s", "Recompute at the last step", r.prefill_s(final_tok), "s",
           formula="{prefill_flops_final} / {prefill_flops_per_s} + {allreduce_fixed_s} + {final_context_tokens} × "
                   "{allreduce_per_token_s}")
    d.step("recompute_multiplier", "Tokens prefilled by recomputing over tokens prefilled once",
           sum_c / final_tok, "1", noun="×", formula="{recompute_tokens_total} / {final_context_tokens}")
    d.step("recompute_flop_multiplier", "The same in FLOPs (attention included)", total_flops / final_flops, "1",
           noun="×", formula="{recompute_flops_total} / {prefill_flops_final}")
    d.step("recompute_flop_basis", "What the FLOP count includes in this scenario",
           "with the attention term" if r.attention_flops else "with the attention term switched off (weights only)",
           formula="{attention_flops_per_position}", kind="verdict")
    d.step("recompute_over_reload", "Recompute over reload, per step", recompute / reload, "1", noun="×",
           formula="{recompute_per_step_s} / {reload_per_step_s}")
    d.step("recompute_over_think", "Recompute per step over the think it delays", recompute / p.think_s, "1",
           noun="×", formula="{recompute_per_step_s} / {think_s}")
    n_re = _ceil(p.concurrent_sessions * recompute / period)
    d.step("replicas_for_recompute", "Replicas of prefill that recomputing every step keeps busy",
           n_re, "1", noun=_noun(n_re, "replica"),
           formula="ceil({concurrent_sessions} × {recompute_per_step_s} / {step_period_s})")
    parked = d.step("parked_kv_bytes", "KV parked in host DRAM across all sessions", p.concurrent_sessions * kv_mean,
                    "B", formula="{concurrent_sessions} × {kv_bytes_mean}")
    n_nodes = _ceil(parked / (p.host_dram_per_node_gb * 1e9))
    d.step("nodes_of_dram_for_parked_kv", "Nodes' DRAM the parked KV fills",
           n_nodes, "1", noun=_noun(n_nodes, "node"),
           formula="ceil({parked_kv_bytes} / {host_dram_per_node_gb})")

    d.step("parked_kv_outgrows_hosts", "Does parked KV outgrow the DRAM of the compute replicas' own hosts?",
           "yes" if n_nodes > compute else "no", "1",
           formula="{nodes_of_dram_for_parked_kv} > {replicas_for_compute}", kind="verdict")
    d.step("parked_kv_hosts_verdict", "Parked KV against the compute replicas' hosts, in words",
           "it outgrows them" if n_nodes > compute else "they hold it",
           formula="{nodes_of_dram_for_parked_kv} > {replicas_for_compute}", kind="verdict")

    # --- the sandbox --------------------------------------------------------------------------
    starts = d.step("session_starts_per_s", "New sessions per second (Little's law: sessions / duration)",
                    p.concurrent_sessions / duration, "1/s", noun="sessions",
                    formula="{concurrent_sessions} / {session_duration_s}")
    pool = _ceil(starts * p.sandbox_cold_start_s)
    d.step("sandbox_warm_pool", "Pre-booted sandboxes that hide the cold start (Little's law)", pool, "1",
           noun=_noun(pool, "sandbox"), formula="ceil({concurrent_sessions} × {sandbox_cold_start_s} / {session_duration_s})")
    d.step("sandbox_cold_start_budget_s", "Cold-start budget: what hides under the first think", p.think_s, "s",
           formula="{think_s}")
    d.step("sandbox_wait_s", "Sandbox start the user sees, booting from cold during the first think",
           max(0.0, p.sandbox_cold_start_s - p.think_s), "s", formula="max(0 s, {sandbox_cold_start_s} − {think_s})")
    per_step_boot = d.step("sandbox_boot_every_step_s", "Boot time added if a sandbox is created per step",
                           S * p.sandbox_cold_start_s, "s", formula="{steps} × {sandbox_cold_start_s}")
    d.step("sandbox_boot_every_step_share", "That as a share of the session", per_step_boot / duration, "1", percent=True,
           formula="{sandbox_boot_every_step_s} / {session_duration_s}")

    # --- checkpoints and failures ---------------------------------------------------------------
    ckpt = d.step("checkpoint_bytes_per_step", "Checkpoint per step: new text plus the sandbox diff",
                  p.tokens_per_step * TEXT_BYTES_PER_TOKEN + p.sandbox_diff_per_step_mb * 1e6, "B",
                  formula="{tokens_per_step} × 4 B + {sandbox_diff_per_step_mb}")
    d.step("checkpoint_write_Bps", "Checkpoint writes across all sessions", p.concurrent_sessions * ckpt / period,
           "B/s", formula="{concurrent_sessions} × {checkpoint_bytes_per_step} / {step_period_s}")
    fails = d.step("failures_per_session", "Expected failures during one session",
                   duration / (p.mtbf_h * SECONDS_PER_HOUR), "1", noun="failures",
                   formula="{session_duration_s} / {mtbf_h}")
    d.step("failure_probability_per_session", "Chance a session sees at least one failure",
           1 - math.exp(-fails), "1", percent=True, formula="1 − exp(−{failures_per_session})")
    loss = d.step("expected_loss_per_failure_s", "Work lost per failure with no checkpoints (restart from step 1)",
                  duration / 2, "s", formula="{session_duration_s} / 2")
    restore = d.step("restore_s", "Resume from a step checkpoint: new sandbox plus one re-prefill",
                     p.sandbox_cold_start_s + recompute, "s",
                     formula="{sandbox_cold_start_s} + {recompute_per_step_s}")
    loss_ckpt = d.step("expected_loss_per_failure_with_checkpoints_s",
                       "Work lost per failure with a checkpoint at every step boundary",
                       period / 2 + restore, "s", formula="{step_period_s} / 2 + {restore_s}")
    d.step("checkpoint_loss_ratio", "Loss without checkpoints over loss with them", loss / loss_ckpt, "1", noun="×",
           formula="{expected_loss_per_failure_s} / {expected_loss_per_failure_with_checkpoints_s}")
    d.step("lost_per_session_s", "Expected time lost per session, no checkpoints", fails * loss, "s",
           formula="{failures_per_session} × {expected_loss_per_failure_s}")
    d.step("lost_per_session_with_checkpoints_s", "Expected time lost per session, step checkpoints",
           fails * loss_ckpt, "s",
           formula="{failures_per_session} × {expected_loss_per_failure_with_checkpoints_s} s")
    return d
