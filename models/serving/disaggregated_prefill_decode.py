"""Disaggregated prefill and decode: two pools, a KV hand-off between them, and the load where the
split beats one pool of monolithic replicas (seed 004).

The per-node engine (decode batch, decode step with its all-reduces and fixed cost, prefill time)
is the shared engine's (models/engine), so this page and the other serving pages cannot disagree
about a replica. On top of it:

    arithmetic intensity   prefill: prefill FLOP / (weights + the prompt's KV)       (one prompt per pass)
                           decode:  batch x FLOP per token / (weights + batch x KV read per sequence)
    pool ratio             prefill node-seconds per request / decode node-seconds per request
    KV hand-off            KV bytes per token x prompt tokens; per prefill node, that times its request rate
    goodput                requests/s per GPU within the TTFT and the TPOT target at once, flat out
                           (`record_goodput`): the split counts in full when an idle prefill node meets
                           the TTFT target; a chunked monolith holds the largest batch that meets the
                           TTFT target, refills as fast as it retires and fits its KV room
    disaggregated node     1 / (prefill node-s + decode node-s) per request, each pool also capped by its NIC
    monolith node          prefill and decode take turns on one node, and co-scheduled prefill costs decode
                           a share `interference x prefill share of the node's time` of its throughput
                           (that share taken at the full batch)
    the fleets             the engine's (models/engine/serving.py): the decode pool and the monolith are
                           the fewest nodes whose busy share, decode charged at the batch each node then
                           holds, stays within the target utilization and whose decode slots hold the
                           sequences in flight; interference divides the monolith's decode throughput.
                           The prefill pool is prefill busy / target utilization. The NICs cap both pools.
                           A node's busy share depends only on the requests it carries, so each fleet
                           before its ceiling is proportional to the load: a slope, the node-seconds it
                           provisions per request
    one node saved         the load where the split's smaller slope adds up to one whole node:
                           1 / (monolith slope - prefill slope - decode slope)
    crossover load         the lowest load from which the split's two pools, each rounded up, never need
                           more nodes than the monolith rounded up: the split can be larger only below the
                           one-node load, so the monolith's sizes below it are checked from the top down
                           and the first where the split is larger ends the search; with no saving the
                           crossover never comes.

Modelling choices, each stated on the page: the decode node's KV arrives over the scale-out NICs
(RDMA, GPU memory to GPU memory) without costing GPU time; the hand-off carries the whole prompt's KV
(a prefix-cache hit saves prefill compute, not transfer); both pools use the same node type.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Annotated, Literal

import numpy as np

from models.catalog import LINKS
from models.core import Derivation, Knob, StrictModel
from models.units import format_quantity
from models.engine import serving as sv
from models.engine.knobs import with_defaults
from models.engine.record import record_served
from models.engine.serving import Served
from models.engine.serving_knobs import ServingKnobs
from models.serving.serving_platform import record_trtllm_anchor

KVLink = Literal["100GbE", "200GbE", "400GbE", "IB NDR 400G", "IB XDR 800G"]


class _SplitKnobs(StrictModel):
    request_rate: Annotated[
        float,
        Knob("Load", "req/s", 1, 10_000, log=True, help="Requests per second at peak.", draw=(20, 2000)),
    ] = 400
    interference: Annotated[
        float,
        Knob("Prefill interference on decode", "", 0, 1, 0.01, percent=True,
             help="The page's interference model: a monolith node whose time is a share s in prefill loses "
                  "interference × s of its decode throughput (the batch it can run at the TPOT target "
                  "while prefill chunks share the step). 0% = perfect overlap: a node at the full batch "
                  "carries as much in either design.",
             draw=(0.1, 0.5)),
    ] = 0.3
    ttft_target_ms: Annotated[
        float,
        Knob("TTFT target", "ms", 10, 10_000, log=True,
             help="Time to first token each request must meet, beside the TPOT target; a request that misses "
                  "either does not count toward goodput (DistServe's term: requests/s within both targets).",
             draw=(100, 1000)),
    ] = 200
    kv_link: Annotated[
        KVLink,
        Knob("KV hand-off NIC", help="Scale-out NIC that carries the KV from prefill to decode (catalog)."),
    ] = "IB NDR 400G"
    kv_nics_per_node: Annotated[
        int,
        Knob("KV NICs per node", "NICs", 1, 8, 1,
             help="NICs a node uses for the hand-off; an 8-GPU H100 or B200 node has one backend NIC per GPU "
                  "(mock interviews keep that standard 8).",
             draw=(8, 8)),
    ] = 8


# A node is one tensor-parallel replica of eight GPUs; both pools use it. Prompts arrive cold (no
# prefix-cache hit), so the hand-off and the prefill cost describe the same tokens.
class Params(with_defaults(ServingKnobs, tp_degree=8, prefix_cache_hit=0.0), _SplitKnobs):
    """The load, the interference assumption and the hand-off NICs, then the shared serving knobs."""


# Monolith sizes the crossover search checks, from the top down, before it settles for a load that
# is sufficient but perhaps not the lowest: a split that saves under a thousandth of the monolith
# rarely needs a few hundred, so only a split that saves a sliver gets that far.
MAX_MONOLITH_SIZES = 4096
CEIL_SLACK = 1e-9  # the engine's fleet forgives a round-off's worth of a node before its ceiling


def _nodes(continuous: float) -> int:
    return max(1, math.ceil(continuous - CEIL_SLACK))


def crossover_load(prefill_s: float, decode_s: float, monolith_s: float) -> float:
    """The load from which the split (two pools, each rounded up) never needs more nodes than the
    monolith (rounded up), given each fleet's provisioned node-seconds per request; inf when the
    split saves nothing.

    The split is larger only where ceil(aL) + ceil(bL) >= ceil(cL) + 1 >= cL + 1, and ceil(aL) +
    ceil(bL) < (a + b) L + 2, so only below 1 / (c - a - b). While the monolith has m nodes, on
    ((m - 1) / c, m / c], the split only grows with the load, so it is larger somewhere there exactly
    when it is at m / c: walking m down from the top, the first such m is the crossover (m = 1
    always is: two pools need two nodes)."""
    a, b, c = prefill_s, decode_s, monolith_s
    saving = c - a - b
    if saving <= 1e-12:
        return math.inf
    top = math.floor(c / saving) + 2  # one past the last span that can hold a larger split
    bottom = max(0, top - MAX_MONOLITH_SIZES)
    loads = np.arange(top, bottom, -1, dtype=float) / c
    ceil = lambda x: np.maximum(1, np.ceil(x - CEIL_SLACK))  # noqa: E731  (as _nodes, on every size at once)
    larger = np.flatnonzero(ceil(a * loads) + ceil(b * loads) > ceil(c * loads))
    # just past the span's top: the fleets' own ceilings forgive 1e-9 of a node, so a margin of the
    # same size would land inside that band and still see the monolith one node smaller
    last = float(loads[larger[0]]) if larger.size else bottom / c  # else: every size above it checked
    return last * (1 + 1e-8)


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    e = record_served(d, p)
    r = e.replica
    # The prefill time splits into its FLOP and its all-reduces: on eight GPUs a prompt's hidden
    # states cross NVLink twice per layer, which the hand-off arithmetic below must not forget.
    d.step("prefill_compute_s", "Prefill FLOP per request at the prefill MFU",
           e.prefill_flops_per_request / (r.peak_flops * r.prefill_mfu), "s",
           formula="{prefill_flops_per_request} FLOP / {replica_prefill_flops} FLOP/s")

    # --- arithmetic intensity against the ridge ---
    ridge = d.step("ridge_flops_per_byte", f"{p.gpu} ridge: dense {p.compute_precision} FLOP/s over HBM B/s",
                   d.value("gpu_peak_flops") / d.value("gpu_hbm_Bps"), "FLOP/B",
                   formula="{gpu_peak_flops} FLOP/s / {gpu_hbm_Bps} B/s")
    prompt_kv = d.step("kv_transfer_bytes_per_request", "KV of one prompt: what the hand-off carries",
                       r.kv_bytes_per_token * p.prompt_tokens, "B",
                       formula="{kv_bytes_per_token} B × {prompt_tokens}")
    pf_ai = d.step("prefill_arithmetic_intensity", "Prefill: FLOP per byte moved (weights read once, KV written)",
                   e.prefill_flops_per_request / (r.weight_bytes + prompt_kv), "FLOP/B",
                   formula="{prefill_flops_per_request} FLOP / ({weight_bytes} B + {kv_transfer_bytes_per_request} B)")
    d.step("prefill_over_ridge", "Prefill intensity over the ridge", pf_ai / ridge, "1", noun="×",
           formula="{prefill_arithmetic_intensity} / {ridge_flops_per_byte}")
    kv_read = d.step("kv_read_per_sequence_bytes", "KV one sequence reads per decode step",
                     r.kv_bytes_per_token * e.decode_context_tokens, "B", formula="{kv_bytes_per_token} B × {decode_context_tokens}")
    dec_flops = r.decode_flops_per_token(e.decode_context_tokens)
    d.step("decode_ai_batch_1", "Decode at batch 1: FLOP per byte",
           dec_flops / (r.weight_bytes + kv_read), "FLOP/B",
           formula="{decode_flops_per_token} FLOP / ({weight_bytes} B + {kv_read_per_sequence_bytes} B)")
    dec_ai = d.step("decode_arithmetic_intensity", "Decode at the operating batch: FLOP per byte",
                    e.batch * dec_flops / (r.weight_bytes + e.batch * kv_read), "FLOP/B",
                    formula="{decode_batch} × {decode_flops_per_token} FLOP / "
                            "({weight_bytes} B + {decode_batch} × {kv_read_per_sequence_bytes} B)")
    d.step("decode_over_ridge", "Decode intensity over the ridge", dec_ai / ridge, "1", noun="×",
           formula="{decode_arithmetic_intensity} / {ridge_flops_per_byte}")
    d.step("decode_ai_ceiling", "Decode at an infinite batch: the KV read alone sets the intensity",
           dec_flops / kv_read, "FLOP/B", formula="{decode_flops_per_token} FLOP / {kv_read_per_sequence_bytes} B")

    # --- work per request in each pool, the pool ratio ---
    dec_node_s = d.step("decode_node_s_per_request", "Decode node-seconds per request",
                        p.output_tokens / e.decode_tokens_per_s, "s",
                        formula="{output_tokens} / {decode_tokens_per_s} tokens/s")
    pf_node_s = e.prefill_s_per_request
    share = d.step("prefill_share", "Prefill's share of a request's node time",
                   pf_node_s / (pf_node_s + dec_node_s), "1", percent=True,
                   formula="{prefill_s_per_request} / ({prefill_s_per_request} + {decode_node_s_per_request})")

    # --- the hand-off and the link it needs ---
    link = LINKS[p.kv_link]
    d.step("kv_link_Bps", f"{p.kv_link}, one direction (catalog)", link.Bps, "B/s")
    node_link = d.step("kv_node_link_Bps", "Hand-off bandwidth per node", p.kv_nics_per_node * link.Bps, "B/s",
                       formula="{kv_nics_per_node} × {kv_link_Bps} B/s")
    egress = d.step("kv_egress_per_prefill_node_Bps", "KV a busy prefill node must send per second",
                    prompt_kv / pf_node_s, "B/s",
                    formula="{kv_transfer_bytes_per_request} B / {prefill_s_per_request} s")
    d.step("kv_egress_link_utilization", "That egress against the node's hand-off NICs",
           egress / node_link, "1", percent=True, formula="{kv_egress_per_prefill_node_Bps} / {kv_node_link_Bps}")
    d.require("kv_egress_link_utilization", egress <= node_link, lambda: (
        f"The hand-off link cannot carry it: a busy prefill node sends {format_quantity(egress, 'B/s')} of KV "
        f"through {format_quantity(node_link, 'B/s')} of NICs ({format_quantity(100 * egress / node_link, '%')}), "
        "so prefill waits on the network. Add NICs per node or a faster link."))
    xfer = d.step("kv_transfer_s", "One request's KV over the node's NICs", prompt_kv / node_link, "s",
                  formula="{kv_transfer_bytes_per_request} B / {kv_node_link_Bps} B/s")
    m_layers = r.model.layers
    d.step("kv_transfer_exposed_s", f"Added to TTFT if layer i ships while layer i+1 computes ({m_layers} layers)",
           max(xfer / m_layers, xfer - pf_node_s), "s",
           formula=f"max({{kv_transfer_s}} s / {m_layers}, {{kv_transfer_s}} s − {{prefill_s_per_request}} s)")

    # --- capacity per node, each design ---
    cap_p = d.step("prefill_node_capacity", "Requests/s one prefill node finishes (compute, or its NICs if slower)",
                   min(1 / pf_node_s, node_link / prompt_kv), "1/s", noun="requests",
                   formula="min(1 / {prefill_s_per_request} s, {kv_node_link_Bps} B/s / {kv_transfer_bytes_per_request} B)")
    cap_d = d.step("decode_node_capacity", "Requests/s one decode node finishes (HBM, or its NICs if slower)",
                   min(1 / dec_node_s, node_link / prompt_kv), "1/s", noun="requests",
                   formula="min(1 / {decode_node_s_per_request} s, {kv_node_link_Bps} B/s / {kv_transfer_bytes_per_request} B)")
    ratio = d.step("prefill_to_decode_node_ratio", "Prefill nodes per decode node", cap_d / cap_p, "1",
                   formula="{decode_node_capacity} / {prefill_node_capacity}")
    d.step("kv_ingress_per_decode_node_Bps", "KV a busy decode node must receive per second",
           prompt_kv * cap_d, "B/s", formula="{kv_transfer_bytes_per_request} B × {decode_node_capacity} req/s")
    d.step("kv_ingress_link_utilization", "Share of a decode node's hand-off links that KV fills",
           prompt_kv * cap_d / node_link, "1", percent=True,
           formula="{kv_ingress_per_decode_node_Bps} / {kv_node_link_Bps}")
    cap_dis = d.step("disaggregated_capacity_per_node", "Disaggregated: requests/s per node, pools in ratio",
                     1 / (1 / cap_p + 1 / cap_d), "1/s", noun="requests",
                     formula="1 / (1 / {prefill_node_capacity} + 1 / {decode_node_capacity})")
    loss = d.step("monolith_decode_loss", "Monolith: decode throughput lost to co-scheduled prefill",
                  p.interference * share, "1", percent=True,
                  formula="{interference} × {prefill_share}")
    d.step("monolith_decode_tokens_per_s", "Decode tokens/s a monolith node keeps while prefill shares it",
           e.decode_tokens_per_s * (1 - loss), "1/s", noun="tokens",
           formula="{decode_tokens_per_s} tokens/s × (1 − {monolith_decode_loss})")
    cap_m = d.step("monolith_capacity_per_node", "Monolith: requests/s per node (turns, with interference)",
                   1 / (pf_node_s + dec_node_s / (1 - loss)), "1/s", noun="requests",
                   formula="1 / ({prefill_s_per_request} s + {decode_node_s_per_request} s / (1 − {monolith_decode_loss}))")
    d.step("capacity_gain", "Disaggregated over monolith, per node", cap_dis / cap_m - 1, "1", percent=True,
           formula="{disaggregated_capacity_per_node} / {monolith_capacity_per_node} − 1")
    # The perfect-overlap roofline: prefill chunks ride in the tensor time a memory-bound decode step
    # leaves idle, so part of the prefill costs the monolith nothing at all.
    idle = d.step("decode_idle_compute_fraction", "Tensor time a decode step leaves idle",
                  max(0.0, 1 - e.decode.compute_s / e.decode_step_s), "1", percent=True,
                  formula="max(0, 1 − {decode_step_compute_s} / {decode_step_s})")
    hidden = d.step("prefill_hidden_s_per_request", "Prefill a perfect-overlap monolith hides in that idle time",
                    min(pf_node_s, idle * dec_node_s), "s",
                    formula="min({prefill_s_per_request} s, {decode_idle_compute_fraction} × {decode_node_s_per_request} s)")
    d.step("roofline_monolith_capacity_per_node", "Monolith under a perfect-overlap roofline",
           1 / (pf_node_s - hidden + dec_node_s), "1/s", noun="requests",
           formula="1 / ({prefill_s_per_request} s − {prefill_hidden_s_per_request} s + {decode_node_s_per_request} s)")

    # --- goodput: both latency targets at once on a monolith node holding the full batch ---
    # An unchunked prompt lands in one step: every stream in the batch waits for it. Chunked to keep
    # the step within the TPOT target, a prompt gets only the step's slack, so its prefill stretches.
    d.step("monolith_spike_step_s", "Monolith: the step an unchunked prompt lands in (every stream's TPOT)",
           e.decode_step_s + pf_node_s, "s", formula="{decode_step_s} s + {prefill_s_per_request} s")
    slack = d.step("monolith_prefill_slack_share", "Share of each full-batch step left for prefill within the TPOT target",
                   max(0.0, 1 - e.decode_step_s / e.tpot_s), "1", percent=True,
                   formula="max(0, 1 − {decode_step_s} / {tpot_target_s})")
    d.step("monolith_chunked_prefill_s", "Monolith: one prompt's prefill spread over that slack (its TTFT, no queue)",
           pf_node_s / slack if slack > 0 else math.inf, "s",
           formula="{prefill_s_per_request} s / {monolith_prefill_slack_share}" if slack > 0 else "",
           note="" if slack > 0 else "The full batch already fills the TPOT target: no prompt can start.")
    d.step("monolith_admit_rate_full_batch", "Prompts/s a full-batch monolith node can prefill within the TPOT target",
           slack / pf_node_s, "1/s", noun="requests",
           formula="{monolith_prefill_slack_share} / {prefill_s_per_request} s")
    spike = d.value("monolith_spike_step_s")
    d.step("monolith_spike_verdict", "The unchunked step against the TPOT target",
           "misses the TPOT target" if spike > e.tpot_s else "still meets the TPOT target",
           formula="{monolith_spike_step_s} against {tpot_target_s}", kind="verdict")
    d.step("chunk_trade_verdict", "Does the chunk size have to trade TTFT against TPOT here?",
           "One chunk size trades one target against the other" if spike > e.tpot_s else
           "Here even the unchunked step meets the TPOT target, so the trade only bites at longer prompts or "
           "fuller batches",
           formula="{monolith_spike_step_s} against {tpot_target_s}", kind="verdict")
    d.step("monolith_chunked_ttft_verdict", "That TTFT against the TTFT target",
           "over the TTFT target" if d.value("monolith_chunked_prefill_s") > p.ttft_target_ms / 1000
           else "within the TTFT target",
           formula="{monolith_chunked_prefill_s} against {ttft_target_ms}", kind="verdict")
    admit = d.value("monolith_admit_rate_full_batch")
    # Every step padded to the TPOT target: a full batch retires batch / (output x TPOT) requests/s.
    retire = d.step("monolith_full_batch_retire_rate", "Requests/s a full-batch monolith node retires, steps at the TPOT target",
                    e.batch / (p.output_tokens * e.tpot_s), "1/s", noun="requests",
                    formula="{decode_batch} / ({output_tokens} × {tpot_target_s} s)")
    d.step("monolith_refill_verdict", "Can a full-batch monolith node admit prompts as fast as its batch retires them?",
           "cannot refill its batch: the batch must shrink" if admit < retire else "can refill its batch at full size",
           formula="{monolith_admit_rate_full_batch} against {monolith_full_batch_retire_rate}", kind="verdict")
    split_ttft = d.step("split_ttft_s", "Split: TTFT on an idle prefill node (prefill plus the exposed hand-off)",
                        pf_node_s + d.value("kv_transfer_exposed_s"), "s",
                        formula="{prefill_s_per_request} s + {kv_transfer_exposed_s} s")
    record_goodput(d, p, e, cap_dis, split_ttft)

    # --- the fleets: the engine's, decode charged at the batch each node holds ---
    lam, u = p.request_rate, p.target_utilization
    d.step("prefill_nodes_continuous", "Prefill pool before rounding up: prefill busy / target utilization",
           lam / (cap_p * u), "1", noun="nodes",
           formula="{request_rate} req/s / ({prefill_node_capacity} req/s × {target_utilization})")
    d.step("decode_nodes_linear", "Decode pool sized at the full batch, before rounding up",
           lam / (cap_d * u), "1", noun="nodes",
           formula="{request_rate} req/s / ({decode_node_capacity} req/s × {target_utilization})")
    decode_fleet = sv.fleet(e, lam, u, prefill_s_per_request=0.0)
    d.step("decode_nodes_for_busy", "Decode pool the engine's fleet needs, before rounding up",
           decode_fleet.replicas_continuous, "1", noun="nodes", kind="search",
           formula="the fewest R with decode busy at the batch each holds ≤ {target_utilization} and "
                   "slots for the sequences in flight")
    d.step("decode_nodes_for_nics", "Decode pool its hand-off NICs need, before rounding up",
           lam * prompt_kv / (node_link * u), "1", noun="nodes",
           formula="{request_rate} × {kv_transfer_bytes_per_request} / ({kv_node_link_Bps} × {target_utilization})")
    d.step("decode_nodes_continuous", "Decode pool before rounding up (the engine's fleet, or the NICs)",
           max(decode_fleet.replicas_continuous, lam * prompt_kv / (node_link * u)), "1", noun="nodes",
           formula="max({decode_nodes_for_busy}, {decode_nodes_for_nics})")
    d.step("monolith_nodes_linear", "Monolith sized at the full batch, before rounding up",
           lam / (cap_m * u), "1", noun="nodes",
           formula="{request_rate} req/s / ({monolith_capacity_per_node} req/s × {target_utilization})")
    # Interference divides the monolith's decode throughput by (1 - loss): the engine's fleet carries
    # that exactly when both its prefill cost and its target shrink by (1 - loss), since
    # prefill + decode / (1 - loss) <= u is prefill x (1 - loss) + decode <= u x (1 - loss). Its own slot
    # check then forgets the slowdown, so the slots are checked here: flat out at the full batch,
    # a node carries the monolith's capacity per node.
    # (rounded to 1e-12, far below anything shown, so that a hair more interference can never come out
    # a hair fewer monolith nodes through the round-off of the scaled inputs)
    keep = round(1 - loss, 12)
    mono_fleet = sv.fleet(e, lam, u * keep, prefill_s_per_request=pf_node_s * keep)
    d.step("monolith_nodes_for_busy", "Monolith the engine's fleet needs, with interference, before rounding up",
           mono_fleet.replicas_continuous, "1", noun="nodes", kind="search",
           formula="the fewest R with {prefill_s_per_request} s × {request_rate} req/s / R + decode busy at "
                   "the batch each holds / (1 − {monolith_decode_loss}) ≤ {target_utilization}, and "
                   "slots for the sequences in flight")
    mono_cont = d.step("monolith_nodes_continuous", "Monolith before rounding up (the engine's fleet, with interference)",
                       max(mono_fleet.replicas_continuous, lam / cap_m), "1", noun="nodes",
                       formula="max({monolith_nodes_for_busy}, {request_rate} / {monolith_capacity_per_node})",
                       note="The second term is the slots: flat out at the full batch, a node carries the "
                            "monolith's capacity per node.")
    d.step("monolith_held_batch", "Sequences a monolith node decodes at once at that size",
           lam / mono_cont * p.output_tokens * e.tpot_s, "1", noun="sequences",
           formula="{request_rate} req/s / {monolith_nodes_continuous} × {output_tokens} × {tpot_target_s} s")
    # The fleets are sized at the TPOT target; the TTFT target is checked on the chunked-step arithmetic
    # at the batch a monolith node of that fleet holds.
    held = d.value("monolith_held_batch")
    held_step = d.step("monolith_held_step_s", "Decode step at the batch a monolith node of the fleet holds",
                       e.step_s(max(1.0, held)), "s", kind="search",
                       formula="the decode step at max(1, {monolith_held_batch})")
    fleet_ttft = d.step("monolith_fleet_ttft_s", "Monolith fleet: a chunked prompt's TTFT at the batch each node holds",
                        pf_node_s / (1 - held_step / e.tpot_s), "s",
                        formula="{prefill_s_per_request} s / (1 − {monolith_held_step_s} s / {tpot_target_s} s)")
    d.step("monolith_fleet_ttft_verdict", "Does that fleet meet the TTFT target?",
           "meets the TTFT target" if fleet_ttft <= d.value("ttft_target_s") else
           ("misses the TTFT target, so the monolith needs more nodes than this" if d.value("monolith_goodput_batch") > 0
            else "misses the TTFT target, and no monolith fleet of any size meets it"),
           formula="{monolith_fleet_ttft_s} against {ttft_target_s}", kind="verdict")

    # --- the crossover ---
    a = d.step("prefill_fleet_s_per_request", "Prefill pool provisioned per request (node-seconds)",
               d.value("prefill_nodes_continuous") / lam, "s",
               formula="{prefill_nodes_continuous} / {request_rate} req/s")
    b = d.step("decode_fleet_s_per_request", "Decode pool provisioned per request (node-seconds)",
               d.value("decode_nodes_continuous") / lam, "s", formula="{decode_nodes_continuous} / {request_rate} req/s")
    c = d.step("monolith_fleet_s_per_request", "Monolith provisioned per request (node-seconds)", mono_cont / lam, "s",
               formula="{monolith_nodes_continuous} / {request_rate} req/s")
    saving = d.step("node_s_saved_per_request", "Node-seconds the split saves per request", c - a - b, "s",
                    formula="{monolith_fleet_s_per_request} s − {prefill_fleet_s_per_request} s − "
                            "{decode_fleet_s_per_request} s")
    d.step("one_node_saving_load", "Load where the saving adds up to one whole node",
           math.inf if saving <= 1e-12 else 1 / saving, "1/s", noun="requests",
           formula="1 / {node_s_saved_per_request} s" if saving > 1e-12 else "",
           note="" if saving > 1e-12 else "The split saves nothing per request, so no load saves a node.")
    cross = crossover_load(a, b, c)
    d.step("crossover_load", "Load from which the split never needs more nodes (both fleets rounded up)",
           cross, "1/s", noun="requests",
           formula="lowest load from which ceil(load × {prefill_fleet_s_per_request} s) + ceil(load × "
                   "{decode_fleet_s_per_request} s) ≤ ceil(load × {monolith_fleet_s_per_request} s) at every "
                   "higher load (a search below {one_node_saving_load})", kind="search")
    d.step("crossover_monolith_nodes", "Monolith fleet size at the crossover",
           cross * c if math.isfinite(cross) else math.inf, "1", noun="nodes",
           formula="{crossover_load} req/s × {monolith_fleet_s_per_request} s")

    # --- the fleets at the scenario's load ---
    n_m = d.step("monolith_nodes", "Monolith nodes at the load", _nodes(mono_cont), "1", noun="nodes",
                 formula="ceil({monolith_nodes_continuous})")
    n_p = d.step("prefill_nodes", "Prefill pool at the load", _nodes(d.value("prefill_nodes_continuous")), "1",
                 noun="nodes", formula="ceil({prefill_nodes_continuous})")
    n_d = d.step("decode_nodes", "Decode pool at the load", _nodes(d.value("decode_nodes_continuous")), "1",
                 noun="nodes", formula="ceil({decode_nodes_continuous})")
    n_dis = d.step("disaggregated_nodes", "Disaggregated nodes at the load", n_p + n_d, "1", noun="nodes",
                   formula="{prefill_nodes} + {decode_nodes}")
    d.step("nodes_saved", "Nodes disaggregation saves at the load", n_m - n_dis, "1", noun="nodes",
           formula="{monolith_nodes} − {disaggregated_nodes}")
    d.step("gpus_saved", "GPUs saved", (n_m - n_dis) * p.tp_degree, "1", noun="GPUs",
           formula="{nodes_saved} × {tp_degree}")
    d.step("verdict", "At this load",
           "disaggregate" if n_dis < n_m else ("a tie: keep the simpler monolith" if n_dis == n_m else "stay monolithic"),
           formula="{disaggregated_nodes} against {monolith_nodes}", kind="verdict")

    # --- the router and what a stall costs ---
    d.step("decode_accept_rate", "Hand-offs one decode node accepts per second at the target",
           1 / b, "1/s", noun="requests", formula="1 / {decode_fleet_s_per_request} s")
    park = d.step("prefill_park_requests", "Finished prompts a prefill node can hold if decode stops accepting",
                  max(0, math.floor(r.kv_room_bytes / prompt_kv)), "1", noun="prompts",
                  formula="floor({kv_room_bytes} B / {kv_transfer_bytes_per_request} B)")
    d.step("prefill_park_s", "How long a prefill node keeps working into that room",
           park * pf_node_s, "s", formula="{prefill_park_requests} × {prefill_s_per_request} s")
    d.step("ratio_at_double_output", "Pool ratio if outputs double",
           _ratio(p, e, 2 * p.output_tokens), "1",
           formula="same arithmetic at 2 × {output_tokens} output tokens", kind="variant")
    # The same efficiencies on TensorRT-LLM's published 70B FP8 setup, beside what it measured.
    record_trtllm_anchor(d, p)
    return d


def record_goodput(d: Derivation, p: Params, e: Served, cap_dis: float, split_ttft: float) -> None:
    """Goodput per GPU, each design: requests/s that meet the TTFT and the TPOT target at once, flat out
    and before any queueing (both designs alike), zero where a target cannot be met.

    The split: its decode batch is set by the TPOT target, so it counts in full when an idle prefill
    node meets the TTFT target. The monolith chunks prefill into every step: with b sequences each
    step is step(b) of decode padded with prefill to the TPOT target, so prefill gets the share
    1 - step(b) / TPOT and a prompt's TTFT is prefill / that share. Three limits on b: the TTFT
    (step(b) <= TPOT x (1 - prefill / TTFT)), the refill (prompts admitted as fast as the batch retires
    them, b / (output x TPOT) = (1 - step(b) / TPOT) / prefill, a line per side of the step) and the
    KV room (the full batch). The node carries b / (output x TPOT) requests/s at the smallest."""
    pf, tpot, out, ttft = e.prefill_s_per_request, e.tpot_s, p.output_tokens, p.ttft_target_ms / 1000
    lines, tp = e.lines, p.tp_degree
    d.step("ttft_target_s", "TTFT target", ttft, "s", formula="{ttft_target_ms}")
    split_ok = split_ttft <= ttft and e.decode_step_s <= tpot
    d.step("split_goodput_per_gpu", "Split: requests/s per GPU that meet both targets",
           cap_dis / tp if split_ok else 0.0, "1/s", noun="requests",
           formula="{disaggregated_capacity_per_node} / {tp_degree}" if split_ok else "",
           note="" if split_ok else "An idle prefill node already misses the TTFT target.")
    one = d.step("monolith_step_one_s", "Decode step at one sequence", lines.step_s(1), "s", kind="search",
                 formula="the decode step at 1 sequence")
    d.step("monolith_ttft_floor_s", "Monolith: the best chunked TTFT while it decodes even one sequence",
           pf / (1 - one / tpot), "s",
           formula="{prefill_s_per_request} s / (1 − {monolith_step_one_s} s / {tpot_target_s} s)")
    budget = tpot * (1 - pf / ttft)
    cap_ttft = max(0.0, min(lines.caps(budget))) if budget > 0 else 0.0
    d.step("monolith_ttft_batch_cap", "Monolith: the most sequences whose step leaves prefill room for the TTFT target",
           cap_ttft, "1", noun="sequences", kind="search",
           formula="the b with step(b) = {tpot_target_s} s × (1 − {prefill_s_per_request} s / {ttft_target_s} s)")
    refill = max(0.0, min((tpot - c) / (pf / out + k) for c, k in lines.sides))
    d.step("monolith_refill_batch", "Monolith: the batch whose prefill slack admits prompts as fast as it retires them",
           refill, "1", noun="sequences", kind="search",
           formula="(TPOT − step(0)) / ({prefill_s_per_request} s / {output_tokens} + step's s per sequence), "
                   "the smaller over the step's sides")
    ok = cap_ttft >= 1
    b = min(cap_ttft, refill, e.batch) if ok else 0.0
    d.step("monolith_goodput_batch", "Monolith: the batch it holds to meet both targets", b, "1", noun="sequences",
           formula="min({monolith_ttft_batch_cap}, {monolith_refill_batch}, {decode_batch})" if ok else "",
           note="" if ok else "Not one sequence leaves prefill enough of the step to meet the TTFT target.")
    step_b = d.step("monolith_goodput_step_s", "Decode step at that batch", lines.step_s(b), "s", kind="search",
                    formula="the decode step at {monolith_goodput_batch}")
    d.step("monolith_goodput_ttft_s", "Monolith: a chunked prompt's TTFT at that batch",
           pf / (1 - step_b / tpot) if ok else math.inf, "s",
           formula="{prefill_s_per_request} s / (1 − {monolith_goodput_step_s} s / {tpot_target_s} s)" if ok else "")
    limits = {"the TTFT target": cap_ttft, "prefill admission": refill, "its KV room": e.batch}
    d.step("monolith_goodput_limit", "What holds the monolith's batch down",
           min(limits, key=limits.get) if ok else "the TTFT target at any batch",
           formula="smallest of {monolith_ttft_batch_cap}, {monolith_refill_batch}, {decode_batch}", kind="verdict")
    floor = d.value("monolith_ttft_floor_s")
    d.step("ttft_floor_verdict", "Which design stops meeting a tighter TTFT target first",
           "the monolith gives out first" if floor > split_ttft else "the split gives out first (its hand-off shows in TTFT)",
           formula="{monolith_ttft_floor_s} against {split_ttft_s}", kind="verdict")
    mono = b / (out * tpot) / tp
    d.step("monolith_goodput_per_gpu", "Monolith: requests/s per GPU that meet both targets", mono, "1/s",
           noun="requests", formula="{monolith_goodput_batch} / ({output_tokens} × {tpot_target_s} s) / {tp_degree}")
    split = d.value("split_goodput_per_gpu")
    d.step("goodput_ratio", "Split's goodput per GPU over the monolith's",
           split / mono if mono > 0 else math.inf, "1", noun="×",
           formula="{split_goodput_per_gpu} / {monolith_goodput_per_gpu}" if mono > 0 else "",
           note="" if mono > 0 else "The monolith meets both targets at no load.")
    d.step("goodput_verdict", "Which design has more goodput per GPU",
           ("neither: prefill alone misses the TTFT target, so widen the prefill replica" if split == 0 and mono == 0
            else "only the split meets both targets" if mono == 0
            else "only the monolith meets both targets" if split == 0
            else "the split" if split > mono * (1 + 1e-9) else "the monolith" if mono > split * (1 + 1e-9)
            else "a tie"),
           formula="{split_goodput_per_gpu} against {monolith_goodput_per_gpu}", kind="verdict")


def _ratio(p: Params, s: Served, output_tokens: float) -> float:
    """Prefill nodes per decode node for another output length (same hardware, prompt and NICs)."""
    e = replace(s, output_tokens=output_tokens)
    kv = e.replica.kv_bytes_per_token * p.prompt_tokens
    node_link = p.kv_nics_per_node * LINKS[p.kv_link].Bps
    cap_p = min(1 / e.prefill_s_per_request, node_link / kv)
    cap_d = min(e.decode_tokens_per_s / output_tokens, node_link / kv)
    return cap_d / cap_p
