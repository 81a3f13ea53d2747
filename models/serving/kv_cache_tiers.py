"""KV cache tiers for long conversations: keep, park or recompute a conversation's prefix.

Teaching order: what one token and one conversation cost in KV bytes and why HBM cannot keep
them between turns; the three tiers with their capacities and reload bandwidths; reload against
recompute (prefill FLOPs with the attention term) and the two break-evens, in bandwidth and in
prefix length; then the traffic shape that decides whether the tiers pay: how long an idle
conversation survives in each tier (its residency) against how long users think.

Modelling choices, all stated on the page:
- The model, the accelerator, the formats and the prefill MFU are the engine's knobs (Llama-3-70B
  in bf16 on 8 x H100 by default); weights, KV bytes per token, usable HBM and the prefill time
  come from the engine's replica (models/engine).
- One replica is a tensor-parallel group of `tp_degree` accelerators; a node has 8, so
  8 / tp_degree replicas share a node's DRAM and SSD.
- DRAM reload runs over every GPU's own PCIe Gen5 x16 link at once (tensor parallelism shards
  the KV by head), at an achieved fraction of the link. SSD reload reads the node's NVMe Gen5
  drives at an achieved fraction of their rated sequential read, shared by the node's
  replicas, and can never beat the PCIe path it crosses.
- Recompute is the engine's prefill of the prefix: 2 x active params FLOP per token plus causal
  attention over a x n (n - 1) / 2 pairs (a = 4 x layers x heads x head_dim), at the prefill MFU,
  plus its tensor-parallel all-reduces. The break-evens and the simulation fold the all-reduces'
  per-token bytes and the exact pair count into an effective FLOP per token (`recompute_terms`),
  plus their fixed latency (160 x 6 us, about 1 ms a prefill) as a fixed cost per prefill.
- Residency (how long an idle conversation stays in a tier) is the age t at which the KV
  parked after it fills the tiers above and including that one:
      lambda x [ sum_{k<T} S_k x E[min(think, t)] + S_T x t ] = cumulative capacity,
  where S_k is the KV a conversation parks after turn k, returning conversations' entries leave
  when their user comes back, and the last turn's entry never does. A return after a think time
  below a tier's residency finds its KV in that tier or above (LRU across exclusive tiers). The
  simulation (models/sim/kv_tiers.py) checks the predicted shares.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated, Literal

from pydantic import model_validator

from models.catalog import GPUS_PER_NODE, LINKS
from models.core import Derivation, Knob, StrictModel
from models.units import format_number, format_quantity
from models.engine.knobs import EngineKnobs, accelerator, llm, replica, with_defaults, without
from models.engine.record import kv_formula
from models.engine.roofline import Replica
from models.sim import kv_tiers

PCIE = LINKS["PCIe Gen5 x16"]
NVME = LINKS["NVMe Gen5 SSD"]
TPOT_S = 0.03  # decode pace of a reply in the simulation: a common interactive target
SECONDS_PER_DAY = 86_400
SIM_MAX_TURNS = 40_000  # beyond this the page shortens the simulated window to stay interactive


# Anthropic's prompt cache: 5 minutes by default, refreshed by every hit, or 1 hour at a higher write
# price (platform.claude.com, prompt caching). OpenAI's in-memory retention is of the same order
# (5 to 10 idle minutes, an hour at most); the page cites both.
PROVIDER_TTL_DEFAULT_S = 300.0
PROVIDER_TTL_LONG_S = 3600.0


def _noun(n: float, word: str) -> str:
    return word if n == 1 else word + "s"


class _TierKnobs(StrictModel):
    """The conversation, the tiers and the traffic: this page's own knobs."""

    conversation_tokens: Annotated[
        int,
        Knob("Conversation length", "tokens", 1000, 128_000, 1000,
             help="Context at a conversation's last turn; the reload and recompute figures are for a prefix this long.",
             draw=(8000, 100_000)),
    ] = 30_000
    pcie_efficiency: Annotated[
        float,
        Knob("Achieved PCIe bandwidth", "", 0.3, 1.0, 0.05, percent=True,
             help="Fraction of PCIe Gen5 x16 a DRAM-to-HBM copy achieves (pinned memory, large blocks).",
             draw=(0.6, 0.9)),
    ] = 0.8
    ssd_drives_per_node: Annotated[
        int,
        Knob("NVMe drives for KV per node", "", 1, 16, 1,
             help="Gen5 drives the node's SSD tier stripes across; the node's replicas share them.", draw=(2, 8), draw_choices=(2, 4, 8)),
    ] = 1
    ssd_efficiency: Annotated[
        float,
        Knob("Achieved SSD read bandwidth", "", 0.1, 1.0, 0.05, percent=True,
             help="Fraction of the drives' rated sequential read a KV reload gets (scattered blocks, "
                  "concurrent demotion writes, a bounce through host memory).", draw=(0.3, 0.9)),
    ] = 0.5
    hbm_cache_gb: Annotated[
        float,
        Knob("HBM left for idle conversations", "GB", 0, 400, 5,
             help="Per replica, after weights and the running batch; capped at the replica's KV room.",
             draw=(10, 150)),
    ] = 50
    dram_per_node_gb: Annotated[
        float,
        Knob("Host DRAM for KV per node", "GB", 0, 4000, 50,
             help="CPU memory a node gives to parked KV (a DGX H100 has 2 TB in all).", draw=(250, 2000)),
    ] = 1000
    ssd_tb_per_node: Annotated[
        float,
        Knob("SSD for KV per node", "TB", 0, 64, 0.01,
             help="NVMe capacity a node gives to parked KV.", draw=(2, 30)),
    ] = 7.68
    conversations_per_min: Annotated[
        float,
        Knob("New conversations per replica", "per min", 0.5, 60, log=True,
             help="Conversations that start on one replica per minute (Poisson).", draw=(2, 15)),
    ] = 6
    turns: Annotated[
        int,
        Knob("Turns per conversation", "", 2, 40, 1, help="Every conversation has this many turns.", draw=(3, 16)),
    ] = 8
    first_turn_tokens: Annotated[
        int,
        Knob("First turn's prompt", "tokens", 100, 20_000, 100,
             help="System prompt plus the first message; the context then grows evenly to the conversation length.",
             draw=(500, 6000)),
    ] = 2000
    reply_tokens: Annotated[
        int,
        Knob("Reply per turn", "tokens", 50, 4000, 50,
             help="Tokens the model generates each turn (their KV is parked with the rest).", draw=(200, 1500)),
    ] = 500
    think_median_s: Annotated[
        float,
        Knob("Median think time", "s", 5, 3600, log=True,
             help="Median gap between a reply and the user's next message (lognormal).", draw=(20, 600)),
    ] = 60
    think_sigma: Annotated[
        float,
        Knob("Think-time spread (lognormal σ)", "", 0.2, 2.5, 0.1,
             help="Larger means a longer tail of users who come back much later.", draw=(0.8, 2.0)),
    ] = 1.5
    sim_minutes: Annotated[
        int,
        Knob("Simulated window", "min", 20, 480, 10,
             help="Conversations start during this window; the run ends when the last one finishes.",
             draw=(60, 240), simulation=True),
    ] = 120



# Recomputing evicted KV is a prefill: the decode efficiencies would move nothing here.
class Params(without(with_defaults(EngineKnobs, tp_degree=8), "hbm_efficiency", "decode_mfu", "step_overhead_ms"),
             _TierKnobs):
    """The page's own knobs first, then the shared engine (model, accelerator, formats, prefill MFU)."""

    @model_validator(mode="after")
    def _turns_can_grow(self) -> "Params":
        if self.tp_degree > GPUS_PER_NODE:
            raise ValueError(
                f"a replica of {self.tp_degree} spans nodes; this page keeps each replica inside one "
                f"{GPUS_PER_NODE}-accelerator node, whose DRAM and SSD its replicas share. Pick 8 or fewer.")
        if self.first_turn_tokens >= self.conversation_tokens:
            raise ValueError(
                f"the first turn's prompt ({self.first_turn_tokens:,} tokens) must be shorter than the "
                f"conversation ({self.conversation_tokens:,} tokens)")
        growth = (self.conversation_tokens - self.first_turn_tokens) / (self.turns - 1)
        if self.reply_tokens > growth:
            raise ValueError(
                f"each turn adds {growth:,.0f} tokens, fewer than the {self.reply_tokens:,}-token reply; "
                "lengthen the conversation, or use fewer turns or a shorter reply")
        return self


# --- formulas shared by solve, the charts and the simulation ------------------------------------


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def think_cdf(t: float, median_s: float, sigma: float) -> float:
    """P(think time <= t) for a lognormal with this median and sigma."""
    if t / median_s <= 0:  # also catches t so small the ratio underflows
        return 0.0
    if math.isinf(t):
        return 1.0
    return _phi(math.log(t / median_s) / sigma)


def expected_min_think(t: float, median_s: float, sigma: float) -> float:
    """E[min(think, t)]: how long, on average, an entry parked t seconds ago stayed parked."""
    if t / median_s <= 0:
        return 0.0
    mean = median_s * math.exp(sigma * sigma / 2)
    if math.isinf(t):
        return mean
    z = math.log(t / median_s) / sigma
    return mean * _phi(z - sigma) + t * (1.0 - _phi(z))


def residency_s(capacity_bytes: float, rate_per_s: float, returning_bytes: float, dead_bytes: float,
                median_s: float, sigma: float) -> float:
    """Age at which later KV fills `capacity_bytes` (see the module docstring); inf if never."""
    if capacity_bytes <= 0:
        return 0.0
    if math.isinf(capacity_bytes):
        return math.inf

    def pushed(t: float) -> float:
        return rate_per_s * (returning_bytes * expected_min_think(t, median_s, sigma) + dead_bytes * t)

    def pushed_per_s(t: float) -> float:  # d/dt E[min(think, t)] = P(think > t)
        still_parked = 1.0 - _phi(math.log(t / median_s) / sigma) if t / median_s > 0 else 1.0  # t can be denormal
        return rate_per_s * (returning_bytes * still_parked + dead_bytes)

    # Newton's method kept inside a bracket (pushed rises with t, so the root is unique): five or six
    # steps where halving took sixty, three times a solve, on every point of a sweep.
    lo, hi = 0.0, capacity_bytes / (rate_per_s * dead_bytes)  # the dead entries alone fill it by then
    t = hi / 2
    for _ in range(100):
        excess = pushed(t) - capacity_bytes
        if excess < 0:
            lo = t
        else:
            hi = t
        step = excess / pushed_per_s(t)
        nxt = t - step
        if not lo < nxt < hi:
            nxt = (lo + hi) / 2
        if abs(nxt - t) <= 1e-13 * max(t, 1e-300) or hi - lo <= 1e-13 * hi:
            return nxt
        t = nxt
    return t


def break_even_prefix_tokens(kv_bytes_per_token: float, bandwidth_Bps: float, flops_per_s: float,
                             weight_flops_per_token: float, attn_flops_per_position: float,
                             fixed_s: float = 0.0) -> float:
    """Prefix length above which reloading at this bandwidth beats recomputing; 0 if it always does.

    Reload kv n / B against recompute (w n + a n^2 / 2) / F + c, c the all-reduces' fixed latency:
    recompute − reload = a n^2 / (2F) − (kv / B − w / F) n + c, a parabola, and reload wins above its
    larger root, n = (g + sqrt(g^2 − 2 a c / F)) / (a / F) with g = kv / B − w / F; with c = 0 that is
    2 (kv F / B − w) / a. (Below the smaller root the latency alone makes recompute slower too, at a
    few tokens, where neither matters.) No real root: recompute is the slower at every length.
    """
    g = kv_bytes_per_token / bandwidth_Bps - weight_flops_per_token / flops_per_s
    k = attn_flops_per_position / flops_per_s
    disc = g * g - 2 * k * fixed_s
    if g <= 0 or disc < 0:
        return 0.0
    return max(0.0, (g + math.sqrt(disc)) / k)


def recompute_terms(r: Replica) -> tuple[float, float, float]:
    """(effective FLOP per token, attention FLOP per pair position, replica FLOP/s) such that
    (w n + a n^2 / 2) / F is the engine's prefill of n tokens less the all-reduce latency: the
    pair count n (n - 1) / 2 takes a / 2 off each token, the ring's bytes add their time x F."""
    F = r.peak_flops * r.prefill_mfu
    a = r.attention_flops_per_position
    ring_s_per_token = r.allreduce_s(1) - r.allreduce_s(0)
    return r.weight_flops_per_token - a / 2 + ring_s_per_token * F, a, F


def _ceil_div_floor(x: float) -> int:
    return max(0, math.floor(x + 1e-9))


# --- the derivation -------------------------------------------------------------------------------


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    r, hw, m = replica(p), accelerator(p), llm(p)
    tp = p.tp_degree

    # --- Numbers: bytes per token, per conversation, and what HBM can hold -------------------
    # The shape the KV drill quotes, as steps: a drawn model is not always Llama-3-70B.
    d.step("model_attention", f"{m.name}'s attention", m.attention, "1", kind="lookup")
    d.step("model_layers", f"{m.name}'s layers", m.layers, "1", noun="layers", kind="lookup")
    d.step("model_kv_heads", f"{m.name}'s KV heads per layer", m.kv_heads, "1", noun="KV heads", kind="lookup")
    d.step("model_head_dim", f"{m.name}'s head dimension", m.head_dim, "1", kind="lookup")
    kv_tok = d.step("kv_bytes_per_token", f"KV cache per token ({m.name}, {p.kv_precision})",
                    r.kv_bytes_per_token, "B",
                    formula=kv_formula(p).replace("{bytes_per_kv_element}", f"{r.bytes_per_kv_element:g} B"))
    d.step("kv_kib_per_token", "The same in binary kilobytes", kv_tok / 1024, "KiB",
           formula="{kv_bytes_per_token}")
    conv_kv = d.step("conversation_kv_bytes", "KV of one conversation at full length",
                     p.conversation_tokens * kv_tok, "B", formula="{conversation_tokens} × {kv_bytes_per_token} B")
    d.step("model_params", f"{m.name} parameters (counted from its shape)", m.total_params, "1", noun="parameters")
    weights = d.step("weight_bytes", f"Model weights in {p.weight_precision}", r.weight_bytes, "B",
                     formula=f"{{model_params}} × {r.bytes_per_weight:g} B")
    d.step("gpu_memory_bytes", f"{hw.name} HBM (catalog)", hw.hbm_bytes, "B")
    usable = d.step("replica_usable_hbm_bytes", "HBM an engine can use on one replica", r.usable_hbm_bytes, "B",
                    formula="{usable_hbm_fraction} × {tp_degree} × {gpu_memory_bytes} B")
    room = d.step("hbm_kv_room_bytes", "HBM left for all KV after the weights", max(0.0, usable - weights), "B",
                  formula="max(0, {replica_usable_hbm_bytes} − {weight_bytes})")
    n_room = _ceil_div_floor(room / conv_kv)
    d.step("hbm_room_conversations", "Full-length conversations that room holds, running batch included",
           n_room, "1", noun=_noun(n_room, "conversation"),
           formula="floor({hbm_kv_room_bytes} B / {conversation_kv_bytes} B)")
    # Every tier below parks conversations that HBM runs: a replica that cannot hold one has nothing
    # to park, and the page's reload arithmetic would describe a server that cannot serve.
    d.require("hbm_room_conversations", n_room >= 1, lambda: (
        f"One conversation does not fit this replica: its KV at {format_number(p.conversation_tokens)} tokens is "
        f"{format_quantity(conv_kv, 'B')}, and {format_quantity(room, 'B')} of HBM is left after "
        f"{format_quantity(weights, 'B')} of weights. Give the replica more GPUs, or shorten the conversations."))
    hbm = d.step("hbm_cache_bytes", "HBM for idle conversations (capped at the room)",
                 min(p.hbm_cache_gb * 1e9, room), "B", formula="min({hbm_cache_gb} GB, {hbm_kv_room_bytes} B)")
    n = _ceil_div_floor(hbm / conv_kv)
    d.step("hbm_cache_conversations", "Full-length conversations parked in HBM", n, "1",
           noun=_noun(n, "conversation"), formula="floor({hbm_cache_bytes} B / {conversation_kv_bytes} B)")
    per_node = d.step("replicas_per_node", "Replicas sharing one node's DRAM and SSD", GPUS_PER_NODE // tp, "1",
                      noun=_noun(GPUS_PER_NODE // tp, "replica"), formula="8 GPUs / {tp_degree}")
    dram = d.step("dram_cache_bytes", "DRAM tier per replica", p.dram_per_node_gb * 1e9 / per_node, "B",
                  formula="{dram_per_node_gb} GB / {replicas_per_node}")
    n = _ceil_div_floor(dram / conv_kv)
    d.step("dram_cache_conversations", "Full-length conversations parked in DRAM", n, "1",
           noun=_noun(n, "conversation"), formula="floor({dram_cache_bytes} B / {conversation_kv_bytes} B)")
    ssd = d.step("ssd_cache_bytes", "SSD tier per replica", p.ssd_tb_per_node * 1e12 / per_node, "B",
                 formula="{ssd_tb_per_node} TB / {replicas_per_node}")
    n = _ceil_div_floor(ssd / conv_kv)
    d.step("ssd_cache_conversations", "Full-length conversations parked on SSD", n, "1",
           noun=_noun(n, "conversation"), formula="floor({ssd_cache_bytes} B / {conversation_kv_bytes} B)")

    d.step("pcie_link_Bps", "PCIe Gen5 x16, one direction (catalog)", PCIE.Bps, "B/s")
    dram_Bps = d.step("dram_reload_Bps", "DRAM → HBM: every GPU's own PCIe link at once",
                      tp * PCIE.Bps * p.pcie_efficiency, "B/s",
                      formula="{tp_degree} × {pcie_link_Bps} B/s × {pcie_efficiency}")
    d.step("ssd_drive_Bps", "One NVMe Gen5 drive, rated sequential read (catalog)", NVME.Bps, "B/s")
    ssd_Bps = d.step("ssd_reload_Bps", "SSD → HBM for one replica",
                     min(p.ssd_drives_per_node * NVME.Bps * p.ssd_efficiency / per_node, dram_Bps), "B/s",
                     formula="min({ssd_drives_per_node} × {ssd_drive_Bps} B/s × {ssd_efficiency} / "
                             "{replicas_per_node}, {dram_reload_Bps} B/s)")

    # --- Arithmetic: reload against recompute ---------------------------------------------------
    r_dram = d.step("reload_s_dram", "Reload a full conversation from DRAM", conv_kv / dram_Bps, "s",
                    formula="{conversation_kv_bytes} B / {dram_reload_Bps} B/s")
    r_ssd = d.step("reload_s_ssd", "Reload a full conversation from SSD", conv_kv / ssd_Bps, "s",
                   formula="{conversation_kv_bytes} B / {ssd_reload_Bps} B/s")
    d.step("gpu_peak_flops", f"{hw.name} dense {p.compute_precision} peak (catalog)", hw.peak(p.compute_precision),
           "FLOP/s")
    F = d.step("replica_flops", "Replica prefill rate at the prefill MFU", r.peak_flops * r.prefill_mfu,
               "FLOP/s", formula="{tp_degree} × {gpu_peak_flops} FLOP/s × {prefill_mfu}")
    d.step("active_params", "Parameters each token runs through", m.active_params, "1", noun="parameters",
           note="All of them for a dense model; the shared part plus the routed experts for a mixture of experts.")
    w = d.step("weight_flops_per_token", "FLOP per token through the weights", r.weight_flops_per_token, "FLOP",
               formula="2 FLOP × {active_params}")
    if not r.attention_flops:
        attention_formula = "0 FLOP (attention FLOP not counted)"
    elif m.attention == "MLA":
        attention_formula = (f"2 FLOP × {m.layers} layers × {m.heads} heads × ({m.head_dim + (m.qk_rope_head_dim or 0)} "
                             f"query-key + {m.v_head_dim or m.head_dim} value)")
    else:
        attention_formula = f"2 matmuls × 2 FLOP × {m.layers} layers × {m.heads} heads × {m.head_dim}"
    a = d.step("attention_flops_per_position", "Attention FLOP per token per earlier token",
               r.attention_flops_per_position, "FLOP", formula=attention_formula)
    n_tok = p.conversation_tokens
    lin = d.step("recompute_weight_flops", "Prefill FLOP through the weights", w * n_tok, "FLOP",
                 formula="{weight_flops_per_token} FLOP × {conversation_tokens}")
    att = d.step("recompute_attention_flops", "Prefill FLOP in causal attention", a * n_tok * (n_tok - 1) / 2, "FLOP",
                 formula="{attention_flops_per_position} FLOP × {conversation_tokens} × ({conversation_tokens} − 1) / 2")
    flops = d.step("recompute_flops", "Prefill FLOP to recompute the conversation", r.prefill_flops(n_tok), "FLOP",
                   formula="{recompute_weight_flops} FLOP + {recompute_attention_flops} FLOP")
    d.step("attention_share", "Attention's share of that prefill", att / flops, "1", percent=True,
           formula="{recompute_attention_flops} / {recompute_flops}")
    # With the attention term switched off the page says so and shows what counting it would add: a
    # figure of 0 FLOP read as a fact about causal attention would be false.
    a_on = dataclasses.replace(r, attention_flops=True).attention_flops_per_position
    if a == 0:
        on_formula = (f"2 FLOP × {m.layers} layers × {m.heads} heads × ({m.head_dim + (m.qk_rope_head_dim or 0)} "
                      f"query-key + {m.v_head_dim or m.head_dim} value)" if m.attention == "MLA"
                      else f"2 matmuls × 2 FLOP × {m.layers} layers × {m.heads} heads × {m.head_dim}")
        d.step("attention_flops_per_position_if_counted", "Attention FLOP per token per earlier token, if counted",
               a_on, "FLOP", formula=on_formula)
        att_on = d.step("recompute_attention_flops_if_counted", "Prefill FLOP in causal attention, if counted",
                        a_on * n_tok * (n_tok - 1) / 2, "FLOP",
                        formula="{attention_flops_per_position_if_counted} FLOP × {conversation_tokens} × "
                                "({conversation_tokens} − 1) / 2")
        clause = (f"Causal attention is not counted in this scenario (the attention term is off); counted, it "
                  f"would add {format_quantity(att_on, 'FLOP')}, growing with the square of the length")
    else:
        clause = (f"Causal attention adds {format_quantity(att, 'FLOP')}, a {format_number(100 * att / flops)}% "
                  "share that grows with the square of the length")
    d.step("attention_clause", "What causal attention adds to the recompute", clause, "1",
           formula="{recompute_attention_flops} against {recompute_flops}", kind="verdict")
    d.step("link_Bps_per_direction", f"{hw.name} scale-up link, each way (catalog)", hw.link_Bps_per_direction, "B/s",
           kind="lookup")
    none = "None on one accelerator." if tp == 1 else ""
    d.step("allreduce_fixed_s", "Tensor-parallel all-reduces of one prefill, latency part", r.allreduce_s(0), "s",
           formula=f"{m.layers} layers × 2 × {{allreduce_latency_us}}" if tp > 1 else "", note=none)
    d.step("allreduce_per_token_s", "Tensor-parallel all-reduces of one prefill, per token (the ring's bytes)",
           r.allreduce_s(1) - r.allreduce_s(0), "s",
           formula=(f"{m.layers} layers × 2 × 2 × ({tp} − 1) / {tp} × {m.d_model} × 2 B / "
                    "{link_Bps_per_direction}") if tp > 1 else "", note=none)
    d.step("recompute_allreduce_s", "Its tensor-parallel all-reduces (2 a layer, every token's hidden state)",
           r.allreduce_s(n_tok), "s",
           formula="{allreduce_fixed_s} + {allreduce_per_token_s} × {conversation_tokens}")
    rc = d.step("recompute_s", "Recompute the conversation on the replica", r.prefill_s(n_tok), "s",
                formula="{recompute_flops} FLOP / {replica_flops} FLOP/s + {recompute_allreduce_s} s")
    d.step("recompute_gpu_seconds", "GPU-seconds one recompute burns", rc * tp, "s",
           formula="{recompute_s} s × {tp_degree} GPUs")
    # The closed forms below and the simulation take the prefill as (w n + a n^2 / 2) / F.
    w_eff, a, F = recompute_terms(r)
    d.step("recompute_flops_per_token_effective", "FLOP per token the break-evens charge (weights, the ring's bytes)",
           w_eff, "FLOP",
           formula="{weight_flops_per_token} − {attention_flops_per_position} / 2 + {allreduce_per_token_s} × "
                   "{replica_flops}")
    d.step("dram_speedup", "Recompute over DRAM reload", rc / r_dram, "1", noun="×",
           formula="{recompute_s} s / {reload_s_dram} s")
    d.step("ssd_speedup", "Recompute over SSD reload", rc / r_ssd, "1", noun="×",
           formula="{recompute_s} s / {reload_s_ssd} s")
    d.step("break_even_bandwidth_Bps", "Reload beats recompute above this bandwidth (at this length)",
           conv_kv / rc, "B/s", formula="{conversation_kv_bytes} B / {recompute_s} s")
    short = d.step("break_even_bandwidth_short_Bps", "… and at the shortest prefixes (no attention term)",
                   kv_tok * F / w_eff, "B/s", formula="{kv_bytes_per_token} B × {replica_flops} FLOP/s / "
                                                     "{recompute_flops_per_token_effective} FLOP")

    def crossing(key: str, tier: str, bw: float, bw_key: str) -> None:
        if bw >= short:
            d.step(key, f"Prefix above which {tier} reload beats recompute",
                   f"none ({tier} reload wins at every prefix length)", "1",
                   formula=f"{{{bw_key}}} B/s ≥ {{break_even_bandwidth_short_Bps}} B/s", kind="verdict")
        elif a == 0:  # attention FLOP not counted: recompute stays linear and never falls behind
            n_on = break_even_prefix_tokens(kv_tok, bw, F, w_eff - a_on / 2, a_on)
            d.step(f"{key}_if_counted", f"Prefix above which {tier} reload would beat recompute, attention counted",
                   n_on, "1", noun="tokens",
                   formula=f"max(0, 2 × ({{kv_bytes_per_token}} B × {{replica_flops}} FLOP/s / {{{bw_key}}} B/s − "
                           "({recompute_flops_per_token_effective} FLOP − {attention_flops_per_position_if_counted} "
                           "FLOP / 2)) / {attention_flops_per_position_if_counted} FLOP)")
            d.step(key, f"Prefix above which {tier} reload beats recompute",
                   "never without the attention term, which this scenario leaves out (recompute stays linear); "
                   f"with it, above {format_number(n_on)} tokens", "1",
                   formula=f"{{{bw_key}}} B/s < {{break_even_bandwidth_short_Bps}} B/s and no attention FLOP",
                   kind="verdict")
        else:
            n_star = break_even_prefix_tokens(kv_tok, bw, F, w_eff, a, r.allreduce_s(0))
            g = f"({{kv_bytes_per_token}} B / {{{bw_key}}} B/s − {{recompute_flops_per_token_effective}} FLOP / {{replica_flops}} FLOP/s)"
            d.step(key, f"Prefix above which {tier} reload beats recompute", n_star, "1", noun="tokens",
                   formula=f"({g} + sqrt({g}² − 2 × {{attention_flops_per_position}} FLOP / {{replica_flops}} FLOP/s × "
                           "{allreduce_fixed_s} s)) / ({attention_flops_per_position} FLOP / {replica_flops} FLOP/s)",
                   note="The larger root of recompute − reload = 0, the all-reduces' fixed latency counted; "
                        "without it, 2 × (kv × F / B − w) / a.")

    crossing("break_even_prefix_tokens_ssd", "SSD", ssd_Bps, "ssd_reload_Bps")
    crossing("break_even_prefix_tokens_dram", "DRAM", dram_Bps, "dram_reload_Bps")
    drives = math.ceil(short * per_node / (NVME.Bps * p.ssd_efficiency) - 1e-9)
    d.step("ssd_drives_to_always_win", "Drives per node for SSD reload to win at every length", drives, "1",
           noun=_noun(drives, "drive"),
           formula="ceil({break_even_bandwidth_short_Bps} B/s × {replicas_per_node} / ({ssd_drive_Bps} B/s × "
                   "{ssd_efficiency}))")
    d.step("recompute_first_turn_s", "Recompute of a first-turn-sized prompt",
           r.prefill_s(p.first_turn_tokens), "s",
           formula="({weight_flops_per_token} × {first_turn_tokens} + {attention_flops_per_position} × "
                   "{first_turn_tokens} × ({first_turn_tokens} − 1) / 2) / {replica_flops} + {allreduce_fixed_s} + "
                   "{allreduce_per_token_s} × {first_turn_tokens}")
    d.step("faster_at_this_length", "At this length, SSD reload or recompute?",
           "SSD reload" if r_ssd < rc else "recompute", "1", formula="{reload_s_ssd} s against {recompute_s} s",
           kind="verdict")
    if ssd_Bps >= short:
        ssd_word = "wins at every prefix length"
    elif a == 0:
        n_on = break_even_prefix_tokens(kv_tok, ssd_Bps, F, w_eff - a_on / 2, a_on)
        ssd_word = ("never wins without the attention term, which this scenario leaves out; with it, it wins "
                    f"above {format_number(n_on)} tokens")
    else:
        ssd_word = "wins only above the crossing"
    d.step("ssd_verdict", "SSD reload against recompute, at this drive count", ssd_word, "1",
           formula="{ssd_reload_Bps} B/s against {break_even_bandwidth_short_Bps} B/s", kind="verdict")
    d.step("reload_s_dram_shared_uplink", "DRAM reload if two GPUs share one PCIe switch uplink", 2 * r_dram, "s",
           formula="2 × {reload_s_dram} s")

    # --- Depth: the traffic shape and how long an idle conversation survives per tier ---------
    lam = d.step("conversations_per_s", "New conversations per second per replica", p.conversations_per_min / 60,
                 "1/s", noun="conversations", formula="{conversations_per_min} / 60 s")
    d.step("think_mean_s", "Mean think time (lognormal)", p.think_median_s * math.exp(p.think_sigma ** 2 / 2), "s",
           formula="{think_median_s} s × exp({think_sigma}² / 2)")
    growth = d.step("turn_growth_tokens", "Tokens each turn adds (message + reply)",
                    kv_tiers.growth_tokens(p.first_turn_tokens, p.conversation_tokens, p.turns), "1",
                    noun="tokens", formula="({conversation_tokens} − {first_turn_tokens}) / ({turns} − 1)")
    m_tok = d.step("message_tokens", "New message a returning turn prefills", growth - p.reply_tokens, "1",
                   noun="tokens", formula="{turn_growth_tokens} − {reply_tokens}")
    # TTFT of a returning turn with a full-length prefix: reload then prefill, or the two overlapped
    # layer by layer (layer i + 1's KV copies while layer i computes: a pipeline of `layers` stages).
    msg_s = d.step("message_prefill_s", "Prefill of that message on top of a full-length prefix",
                   r.prefill_s(m_tok, n_tok), "s",
                   formula="({weight_flops_per_token} × {message_tokens} + {attention_flops_per_position} × "
                           "{message_tokens} × ({conversation_tokens} + ({message_tokens} − 1) / 2)) / "
                           "{replica_flops} + {allreduce_fixed_s} + {allreduce_per_token_s} × {message_tokens}")
    d.step("ttft_miss_s", "First token on a miss: recompute prefix and message in one prefill",
           r.prefill_s(n_tok + m_tok), "s", formula="{recompute_s} + {message_prefill_s} − {allreduce_fixed_s}")
    d.step("ttft_ssd_serial_s", "First token from SSD: whole reload, then the message", r_ssd + msg_s, "s",
           formula="{reload_s_ssd} + {message_prefill_s}")
    L = m.layers
    for tier, r_t in (("ssd", r_ssd), ("dram", r_dram)):
        d.step(f"ttft_{tier}_layerwise_s", f"First token from {tier.upper()}: reload overlapped layer by layer",
               max(r_t, msg_s) + min(r_t, msg_s) / L, "s",
               formula=f"max({{reload_s_{tier}}}, {{message_prefill_s}}) + min({{reload_s_{tier}}}, "
                       "{message_prefill_s}) / {model_layers}")
    T = p.turns
    ctx = [kv_tiers.context_tokens(p.first_turn_tokens, p.conversation_tokens, T, k) for k in range(1, T + 1)]
    stored = [(c + p.reply_tokens) * kv_tok for c in ctx]  # parked after turn k = prefix of turn k + 1
    ret_bytes = sum(stored[:-1])
    prefixes = [c + p.reply_tokens for c in ctx[:-1]]  # what each returning turn finds parked (or recomputes)
    d.step("returning_prefix_tokens", "Prefix tokens a conversation parks across its returning gaps",
           sum(prefixes), "1", noun="tokens",
           formula=f"{' + '.join(f'{c:,}' for c in ctx[:-1])} + ({{turns}} − 1) × {{reply_tokens}}",
           note="The context of each turn but the last (whole tokens), plus the reply it parks with it.")
    d.step("returning_prefix_pairs", "Causal-attention pairs in recomputing all of those prefixes",
           sum(n * (n - 1) / 2 for n in prefixes), "1", noun="pairs",
           formula=f"({' + '.join(f'{n:,}²' for n in prefixes)} − {{returning_prefix_tokens}}) / 2",
           note="A prefix of n tokens (context plus reply) attends over n (n − 1) / 2 earlier positions.")
    d.step("returning_kv_bytes", "KV one conversation parks across its returning gaps", ret_bytes, "B",
           formula="{returning_prefix_tokens} × {kv_bytes_per_token}")
    dead = d.step("dead_kv_bytes", "KV left parked after the last turn (the user has gone)", stored[-1], "B",
                  formula="({conversation_tokens} + {reply_tokens}) × {kv_bytes_per_token} B")
    d.step("kv_inflow_Bps", "KV put into the cache per second", lam * (ret_bytes + dead), "B/s",
           formula="{conversations_per_s} × ({returning_kv_bytes} + {dead_kv_bytes})")
    d.step("dead_kv_inflow_Bps", "… of which never returns", lam * dead, "B/s",
           formula="{conversations_per_s} × {dead_kv_bytes}")

    def res(cap: float) -> float:
        return residency_s(cap, lam, ret_bytes, dead, p.think_median_s, p.think_sigma)

    pushed = "{conversations_per_s} × ({returning_kv_bytes} B × E[min(think, t)] + {dead_kv_bytes} B × t)"
    t_h = d.step("hbm_residency_s", "HBM residency: an idle conversation's life in HBM", res(hbm), "s",
                 formula=f"t where {pushed} = {{hbm_cache_bytes}} B", kind="search")
    t_d = d.step("dram_residency_s", "… in HBM or DRAM", res(hbm + dram), "s",
                 formula=f"t where {pushed} = {{hbm_cache_bytes}} B + {{dram_cache_bytes}} B", kind="search")
    t_s = d.step("ssd_residency_s", "… in any tier", res(hbm + dram + ssd), "s",
                 formula=f"t where {pushed} = {{hbm_cache_bytes}} B + {{dram_cache_bytes}} B + {{ssd_cache_bytes}} B",
                 kind="search")
    d.step("think_over_hbm_residency", "Median think time over HBM residency",
           p.think_median_s / t_h if t_h > 0 else math.inf, "1", noun="×",
           formula="{think_median_s} s / {hbm_residency_s} s" if t_h > 0 else "",
           note="" if t_h > 0 else "Nothing stays in HBM: every think time outlasts it.")
    f_h, f_d, f_s = (think_cdf(t, p.think_median_s, p.think_sigma) for t in (t_h, t_d, t_s))
    normal = "The lognormal's CDF: Φ, the standard normal table, at ln(t / median) / σ."
    for key, tier, t_key, f in (("hbm", "HBM", "hbm_residency_s", f_h), ("dram", "HBM or DRAM", "dram_residency_s", f_d),
                                ("ssd", "any tier", "ssd_residency_s", f_s)):
        d.step(f"returns_within_{key}_residency", f"Returning users whose think time is below the {tier} residency",
               f, "1", formula=f"Φ(ln({{{t_key}}} / {{think_median_s}}) / {{think_sigma}})", kind="lookup", note=normal)
    d.step("predicted_hit_share_hbm", "Returning turns that find their KV in HBM", f_h, "1", percent=True,
           formula="{returns_within_hbm_residency}")
    d.step("predicted_hit_share_dram", "… in DRAM", f_d - f_h, "1", percent=True,
           formula="{returns_within_dram_residency} − {returns_within_hbm_residency}")
    d.step("predicted_hit_share_ssd", "… on SSD", f_s - f_d, "1", percent=True,
           formula="{returns_within_ssd_residency} − {returns_within_dram_residency}")
    d.step("predicted_miss_share", "… nowhere: recompute", 1 - f_s, "1", percent=True,
           formula="1 − {returns_within_ssd_residency}")
    d.step("predicted_hit_rate", "Returning turns served from some tier", f_s, "1", percent=True,
           formula="1 − {predicted_miss_share}")
    shares = {"HBM": f_h, "DRAM": f_d - f_h, "SSD": f_s - f_d, "recompute": 1 - f_s}
    d.step("busiest_tier", "Where most returning turns find their KV", max(shares, key=shares.get), "1",
           formula="the largest of {predicted_hit_share_hbm}, {predicted_hit_share_dram}, "
                   "{predicted_hit_share_ssd}, {predicted_miss_share}", kind="verdict")
    # What hosted APIs promise instead of a residency: a prompt-cache TTL after the last use.
    ttl_short = d.step("provider_ttl_default_s", "A hosted prompt cache's default lifetime after its last use "
                       "(Anthropic's 5-minute TTL)", PROVIDER_TTL_DEFAULT_S, "s", kind="lookup")
    ttl_long = d.step("provider_ttl_long_s", "… and its longer option (Anthropic's 1-hour TTL)",
                      PROVIDER_TTL_LONG_S, "s", kind="lookup")
    d.step("returns_within_ttl_default", "Returning turns that come back within the default TTL",
           think_cdf(ttl_short, p.think_median_s, p.think_sigma), "1", percent=True,
           formula="Φ(ln({provider_ttl_default_s} / {think_median_s}) / {think_sigma})", kind="lookup", note=normal)
    d.step("returns_within_ttl_long", "Returning turns that come back within the longer TTL",
           think_cdf(ttl_long, p.think_median_s, p.think_sigma), "1", percent=True,
           formula="Φ(ln({provider_ttl_long_s} / {think_median_s}) / {think_sigma})", kind="lookup", note=normal)
    d.step("dram_keeps_default_ttl", "Does HBM plus DRAM keep an idle conversation as long as the default TTL?",
           "yes: HBM and DRAM honour it without the SSD" if t_d >= ttl_short
           else "no: honouring it needs the SSD tier or more DRAM",
           formula="{dram_residency_s} against {provider_ttl_default_s}", kind="verdict")
    recompute_conv = sum(r.prefill_s(n) for n in (c + p.reply_tokens for c in ctx[:-1]))
    d.step("recompute_s_per_conversation", "Replica time to recompute every returning turn's prefix",
           recompute_conv, "s",
           formula="({weight_flops_per_token} × {returning_prefix_tokens} + {attention_flops_per_position} × "
                   "{returning_prefix_pairs}) / {replica_flops} + ({turns} − 1) × {allreduce_fixed_s} + "
                   "{allreduce_per_token_s} × {returning_prefix_tokens}",
           note="Every returning turn's prefix prefilled from scratch, each prefill with its all-reduces.")
    d.step("recompute_only_load", "Replica time re-prefilling history with no tier at all",
           lam * recompute_conv, "1", percent=True, formula="{conversations_per_s} × {recompute_s_per_conversation}")
    d.step("gpu_seconds_avoided_per_conversation", "GPU-seconds of recompute the tiers save per conversation",
           recompute_conv * tp * f_s, "s",
           formula="{recompute_s_per_conversation} s × {tp_degree} × {predicted_hit_rate}")
    d.step("gpu_seconds_avoided_per_hour", "GPU-seconds of recompute the tiers save per replica-hour",
           3600 * lam * recompute_conv * tp * f_s, "s",
           formula="3,600 s × {conversations_per_s} × {recompute_s_per_conversation} × {tp_degree} × "
                   "{predicted_hit_rate}")
    d.step("ssd_hits_gpu_seconds_per_hour", "GPU-seconds per replica-hour the SSD tier's hits save",
           3600 * lam * recompute_conv * tp * (f_s - f_d), "s",
           formula="3,600 s × {conversations_per_s} × {recompute_s_per_conversation} × {tp_degree} × "
                   "{predicted_hit_share_ssd}")
    ssd_util = d.step("ssd_link_utilization", "Share of time the SSD link spends reloading",
                      lam * (f_s - f_d) * ret_bytes / ssd_Bps, "1", percent=True,
                      formula="{conversations_per_s} × {predicted_hit_share_ssd} × {returning_kv_bytes} / "
                              "{ssd_reload_Bps}")
    d.require("ssd_link_utilization", ssd_util <= 1, lambda: (
        f"The SSD link cannot do it: the conversations the SSD tier serves would keep it busy "
        f"{format_quantity(100 * ssd_util, '%')} of the time, so reloads queue without bound. Give the SSD tier more "
        "bandwidth or keep more of the history in DRAM."))

    # --- Failure modes: what the SSD tier writes, and a restart ---------------------------------
    demoted = lam * (ret_bytes * (1 - f_d) + dead) if ssd > 0 else 0.0
    wr = d.step("ssd_write_Bps", "KV demoted onto SSD per replica (entries that outlive DRAM)", demoted, "B/s",
                formula="{conversations_per_s} × ({returning_kv_bytes} × (1 − {returns_within_dram_residency}) + "
                        "{dead_kv_bytes})" if ssd > 0 else "0 B/s (no SSD tier)")
    daily = d.step("ssd_writes_per_day_bytes", "Written to one node's SSD tier per day",
                   wr * per_node * SECONDS_PER_DAY, "B",
                   formula="{ssd_write_Bps} B/s × {replicas_per_node} × 86,400 s")
    d.step("ssd_drive_writes_per_day", "Full-capacity writes per day of the node's SSD tier",
           daily / (p.ssd_tb_per_node * 1e12) if p.ssd_tb_per_node > 0 else 0.0, "1", noun="× per day",
           formula="{ssd_writes_per_day_bytes} / {ssd_tb_per_node}" if p.ssd_tb_per_node > 0 else "0 (no SSD tier)")
    if 0 < t_d / p.think_median_s < math.inf:  # the ratio, not t_d: a denormal residency underflows to 0
        shifted = _phi(math.log(t_d / p.think_median_s) / p.think_sigma - p.think_sigma)
    else:
        shifted = 0.0 if t_d <= 0 else 1.0
    d.step("dram_partial_mean_share", "Part of the mean think time spent by users back within the HBM or DRAM "
           "residency", shifted, "1", formula="Φ(ln({dram_residency_s} / {think_median_s}) / {think_sigma} − "
           "{think_sigma})", kind="lookup",
           note="A lognormal's partial mean: E[think; think < t] = mean × Φ(ln(t / median) / σ − σ).")
    idle_d = d.step("expected_dram_idle_s", "How long a parked entry stays parked within that residency, on average",
                    expected_min_think(t_d, p.think_median_s, p.think_sigma), "s",
                    formula="{think_mean_s} × {dram_partial_mean_share} + {dram_residency_s} × "
                            "(1 − {returns_within_dram_residency})",
                    note="E[min(think, t)]: the users who come back sooner, plus t for those who come back later.")
    lost = d.step("restart_lost_conversations", "Live conversations parked in HBM and DRAM at any moment",
                  lam * (T - 1) * idle_d, "1",
                  noun="conversations",
                  formula="{conversations_per_s} × ({turns} − 1) × {expected_dram_idle_s}")
    d.step("restart_recompute_s", "Replica time to recompute them after a restart", lost * recompute_conv / (T - 1),
           "s", formula="{restart_lost_conversations} × {recompute_s_per_conversation} s / ({turns} − 1)")
    return d


# --- the simulation hook ------------------------------------------------------------------------


def sim_config(p: Params, **overrides) -> kv_tiers.Config:
    """The simulation's config for this scenario (capacities and bandwidths per replica)."""
    r = replica(p)
    tp = p.tp_degree
    per_node = GPUS_PER_NODE // tp
    room = max(0.0, r.kv_room_bytes)
    dram_Bps = tp * PCIE.Bps * p.pcie_efficiency
    w_eff, a, F = recompute_terms(r)
    values = dict(
        kv_bytes_per_token=int(round(r.kv_bytes_per_token)),
        weight_flops_per_token=w_eff,
        attn_flops_per_position=a,
        replica_flops=F,
        prefill_fixed_s=r.allreduce_s(0),
        gpus=tp,
        hbm_bytes=min(p.hbm_cache_gb * 1e9, room),
        dram_bytes=p.dram_per_node_gb * 1e9 / per_node,
        ssd_bytes=p.ssd_tb_per_node * 1e12 / per_node,
        dram_Bps=dram_Bps,
        ssd_Bps=min(p.ssd_drives_per_node * NVME.Bps * p.ssd_efficiency / per_node, dram_Bps),
        conversations_per_s=p.conversations_per_min / 60,
        turns=p.turns,
        first_turn_tokens=p.first_turn_tokens,
        conversation_tokens=p.conversation_tokens,
        reply_tokens=p.reply_tokens,
        think_median_s=p.think_median_s,
        think_sigma=p.think_sigma,
        tpot_s=TPOT_S,
        horizon_s=p.sim_minutes * 60.0,
    )
    values.update(overrides)
    return kv_tiers.Config(**values)


def sim_window_minutes(p: Params) -> float:
    """The simulated window, shortened if the scenario would exceed SIM_MAX_TURNS turns."""
    per_min = p.conversations_per_min * p.turns
    return float(min(p.sim_minutes, max(10, math.floor(SIM_MAX_TURNS / per_min))))


def simulate(p: Params, seed: int = 0) -> kv_tiers.KVTiersResult:
    """One seeded run of this scenario on one replica (window capped by `sim_window_minutes`)."""
    return kv_tiers.run(sim_config(p, horizon_s=sim_window_minutes(p) * 60.0), seed=seed)


def ttft_floor_s(p: Params, prefix_tokens: list[float]) -> dict[int, list[float]]:
    """TTFT with no queueing, per outcome, for returning turns with these prefixes.

    HBM: prefill the new message on top of the prefix; DRAM / SSD: reload the prefix first;
    miss: prefill prefix and message from scratch. The sim's points sit on or above these.
    """
    cfg = sim_config(p)
    m = cfg.growth_tokens - cfg.reply_tokens
    out: dict[int, list[float]] = {kv_tiers.HBM: [], kv_tiers.DRAM: [], kv_tiers.SSD: [], kv_tiers.MISS: []}
    for n in prefix_tokens:
        msg = (cfg.flops(n + m) - cfg.flops(n)) / cfg.replica_flops
        out[kv_tiers.HBM].append(msg)
        out[kv_tiers.DRAM].append(n * cfg.kv_bytes_per_token / cfg.dram_Bps + msg)
        out[kv_tiers.SSD].append(n * cfg.kv_bytes_per_token / cfg.ssd_Bps + msg)
        out[kv_tiers.MISS].append(cfg.recompute_s(n + m))
    return out


# The run's figures as steps (issue 19): the panel's cards, table, captions and replay read these,
# each beside the estimate it is held to, so no figure is formatted by hand.
OUTCOME_KEYS = ((kv_tiers.HBM, "hbm", "predicted_hit_share_hbm"), (kv_tiers.DRAM, "dram", "predicted_hit_share_dram"),
                (kv_tiers.SSD, "ssd", "predicted_hit_share_ssd"), (kv_tiers.MISS, "miss", "predicted_miss_share"))
STEADY_AFTER = 1 / 3  # shares skip the first third of the window, while the tiers are still filling
NO_TURNS = "none in this run"


def _quantile(x, q: float) -> float | str:
    import numpy as np  # the model's arithmetic needs no numpy; only the run's samples do

    return float(np.quantile(x, q)) if x.size else NO_TURNS


def simulation_steps(p: Params, r: kv_tiers.KVTiersResult) -> Derivation:
    d = Derivation(p)
    solved = solve(p)
    window_s = float(r.grid_s[-1])
    shares = r.shares_between(window_s * STEADY_AFTER, window_s)
    d.step("sim_window_min", "Simulated window", sim_window_minutes(p), "min", kind="given",
           note=f"The asked window, shortened where it would exceed {SIM_MAX_TURNS:,} turns.")
    d.step("sim_max_turns", "Turns a run may hold and stay interactive", SIM_MAX_TURNS, "1", noun="turns",
           kind="given")
    d.step("sim_end_s", "The run ends (the last returning user has finished)", r.end_s, "s", kind="simulated")
    d.step("sim_conversations", "Conversations simulated", r.conversations, "1", noun="conversations",
           kind="simulated")
    d.step("sim_turns", "Turns simulated", int(r.outcome.size), "1", noun="turns", kind="simulated")
    d.step("sim_demotions", "Demotions to a lower tier", r.demotions, "1", noun="demotions", kind="simulated")
    d.step("sim_drops", "Entries evicted from the last tier", r.drops, "1", noun="entries", kind="simulated")
    d.step("sim_tpot_s", "Replies stream at", TPOT_S, "s", kind="given", note="A token every TPOT.")
    d.step("sim_hit_rate", "Simulated hit rate", 1 - shares[3], "1", percent=True, kind="simulated",
           note="Returning turns served from a tier, after the first third of the window.")
    for o, name, _ in OUTCOME_KEYS:
        tier = kv_tiers.OUTCOMES[o]
        d.step(f"sim_share_{name}", f"{tier}: share of returning turns", shares[OUTCOME_KEYS.index((o, name, _))],
               "1", percent=True, kind="simulated", note="After the first third of the window.")
        d.step(f"sim_ttft_median_{name}_s", f"Median TTFT, {tier}", _quantile(r.ttft_s[r.outcome == o], 0.5), "s",
               kind="simulated", note="Every turn with this outcome.")
        d.step(f"sim_ttft_p95_{name}_s", f"p95 TTFT, {tier}", _quantile(r.ttft_s[r.outcome == o], 0.95), "s",
               kind="simulated", note="The 95th percentile over every turn with this outcome.")
        last = (r.turn == p.turns) & (r.outcome == o)
        d.step(f"sim_last_ttft_median_{name}_s", f"Median TTFT of a last turn, {tier}", _quantile(r.ttft_s[last], 0.5),
               "s", kind="simulated")
    last_prefix = p.conversation_tokens - solved.value("message_tokens")
    d.step("last_prefix_tokens", "Prefix a last turn restores", last_prefix, "1", noun="tokens", kind="lookup",
           note="The conversation less the new message.")
    floors = ttft_floor_s(p, [last_prefix])
    for o, name, _ in OUTCOME_KEYS:
        d.step(f"last_ttft_floor_{name}_s", f"Model TTFT of a last turn, {kv_tiers.OUTCOMES[o]}, no queueing",
               floors[o][0], "s", kind="lookup",
               note="The reload or recompute plus the new message's prefill, with no one ahead in any queue.")
    d.step("sim_gpu_hours_avoided", "Recompute avoided", r.gpu_seconds_avoided / 3600, "h", noun="GPU",
           kind="simulated", note="GPU time the hits did not spend recomputing their prefix, over the whole run.")
    d.step("avoided_per_conversation_gpu_s", "Recompute avoided per conversation (estimate)",
           solved.value("gpu_seconds_avoided_per_conversation"), "s", noun="GPU", kind="lookup")
    d.step("gpu_hours_avoided_estimate", "Recompute avoided for as many conversations (estimate)",
           solved.value("gpu_seconds_avoided_per_conversation") * r.conversations / 3600, "h", noun="GPU",
           formula="{avoided_per_conversation_gpu_s} × {sim_conversations}")
    return d


def replay_steps(p: Params, r: kv_tiers.KVTiersResult, t_s: float) -> Derivation:
    """The replica's tiers at one instant of the run: the replay's caption."""
    import numpy as np

    d = Derivation(p)
    j = int(np.clip(np.searchsorted(r.grid_s, t_s), 0, r.grid_s.size - 1))
    d.step("replay_minute", "Minute of the run", t_s / 60, "min", kind="given")
    for tier, name in enumerate(kv_tiers.TIER_NAMES):
        d.step(f"replay_{name.lower()}_bytes", f"{name} in use", float(r.occupancy_bytes[tier, j]), "B",
               kind="simulated")
        d.step(f"replay_{name.lower()}_entries", f"Conversations parked in {name}", int(r.entries[tier, j]), "1",
               noun="conversations", kind="simulated")
    d.step("replay_thinking", "Users thinking between turns", int(r.thinking[j]), "1", noun="users", kind="simulated")
    return d
