"""Training a 1T-parameter mixture of experts: is 1T total or active? (seeds 000 and 004)

Storage follows total parameters, compute follows active ones. The catalog gives the model
(Kimi K2: 1T total, 32B active, 384 routed experts, top-8) and the GPU; the walkthrough derives,
in interview order:

    training state      18 B/param x total: bf16 weights 2 + fp32 gradient buffers 4 + fp32 master,
                        m, v 12, the layout Kimi K2's report describes (Megatron-LM's table,
                        models/engine/training.py; other rows are a knob)
    checkpoint          14 B/param x total (no gradients)
    FLOPs per token     6 x active; a 1T *active* model costs total / active times more
    GPU-hours           tokens x 6 x active / (dense BF16 peak x MFU)

    the layout          expert parallelism (EP) inside one 8-GPU NVLink node by default; pipeline
                        stages (PP) as few as fit the per-GPU state budget; data parallelism (DP)
                        over the rest, with ZeRO-1 sharding the optimizer state across DP replicas.
                        Always-on weights (attention, shared expert, dense layer, embeddings) are
                        replicated on each EP rank of a stage; routed experts are split across them:
                            state per GPU = (weights + grads) B x P_gpu + optimizer B x P_gpu / DP,
                            P_gpu = (always-on + routed / EP) / PP
    all-to-all          four per MoE layer per token (dispatch and combine forward, their gradients
                        backward), top-k copies of a d_model bf16 vector each, (EP - 1) / EP of them
                        leaving the GPU; rate = bytes per token x tokens/s per GPU at the MFU.
                        The a2a time as a share of compute time is that rate over the link rate.
    cross-node EP       when EP spans nodes (scale-up domains: 8 GPUs on an HGX board, 72 on an
                        NVL72 rack), one copy per destination node (forwarded over NVLink inside
                        it), at most M nodes per token (DeepSeek-V3's node-limited routing)
    imbalance           the hottest EP rank gets `router_imbalance` x the mean routed tokens; its
                        expert compute and its all-to-all stretch by that factor and every rank
                        waits for it (no overlap of all-to-all with compute: an upper bound)

Parameters are counted from the model's shape (models/engine/shape.py): a routed expert is its
gated MLP times the MoE layers, and everything else (attention, shared expert, dense layers,
router, embeddings) is always on.

Modelling choices stated on the page: Adam state even though Kimi K2 used Muon (one momentum
buffer, less state); uniform routing for the byte counts; activations at the selective level by
default, and full recomputation of just enough layers when they do not fit (each such layer runs
its forward, all-to-alls included, twice).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import model_validator

from models.catalog import LINKS, LLAMA3_INTERRUPTIONS, TRAIN_FLOPS_PER_PARAM_TOKEN
from models.core import Derivation, Knob, StrictModel
from models.engine.hardware import Hardware
from models.engine.knobs import AcceleratorKnobs, accelerator, llm, with_defaults, with_draws
from models.engine.shape import count
from models.engine.training import STATES, TrainingStateKnobs, state_bytes

A2A_BYTES_PER_ELEM = 2  # bf16 hidden vectors (FP8 dispatch would halve the dispatch half)
FULL_RECOMPUTE_BYTES = 2  # full recomputation keeps only each layer's bf16 input per hidden element
A2A_PER_MOE_LAYER = 4  # forward dispatch + combine, and the gradient of each in the backward pass
ZERO_PAPER = "bf16 weights and grads (ZeRO paper)"
SHARDING = "zero1"  # ZeRO-1 / Megatron's distributed optimizer, as Kimi K2 and DeepSeek-V3 trained

# DeepSeek-V3 Technical Report, arXiv 2412.19437: Table 1 (pre-training 2,664K H800 GPU-hours for
# 14.8T tokens) and section 3.2 (64-way expert parallelism over 8 nodes; node-limited routing,
# each token to at most 4 nodes). The H800 has the H100 SXM's dense BF16 peak (only NVLink and
# FP64 are cut).
DSV3_PRETRAIN_GPU_HOURS = 2.664e6
DSV3_PRETRAIN_TOKENS = 14.8e12
DSV3_GPU = "H800"
DSV3_EP = 64
K2_PP, K2_EP = 16, 16

ClusterSize = Literal[1024, 2048, 4096, 8192, 16384]
EPSize = Literal[4, 8, 16, 32, 64]
NIC = Literal["IB NDR 400G", "IB XDR 800G", "400GbE", "200GbE"]


class _TrainingKnobs(StrictModel):
    gpus: Annotated[
        ClusterSize, Knob("GPUs in the job", "GPUs", 1024, 16384, log=True, draw=(2048, 16384),
                          help="Whole 8-GPU nodes; a power of two so the layout divides it.")
    ] = 4096
    train_tokens_t: Annotated[
        float,
        Knob("Training tokens", "T tokens", 1, 100, 0.5, log=True,
             help="Pre-training tokens (Kimi K2: 15.5T; DeepSeek-V3: 14.8T).", draw=(5, 30)),
    ] = 15
    train_mfu: Annotated[
        float,
        Knob("Training MFU", "", 0.15, 0.7, 0.01, percent=True,
             help="Share of dense BF16 peak the whole training run achieves, counting 6 x active FLOPs per "
                  "token (not a serving engine's prefill or decode MFU).",
             draw=(0.25, 0.5)),
    ] = 0.4
    state_share_of_hbm: Annotated[
        float,
        Knob("HBM for training state", "", 0.2, 0.9, 0.05, percent=True,
             help="Share of each GPU's HBM given to weights, gradients and optimizer state; the rest holds "
                  "activations, communication buffers and fragmentation.", draw=(0.35, 0.7)),
    ] = 0.5
    ep_size: Annotated[
        EPSize, Knob("Expert-parallel size", "GPUs", 4, 64, draw=(8, 32),
                     help="GPUs that split one layer's routed experts; 8 fills one NVLink node.")
    ] = 8
    nic: Annotated[NIC, Knob("NIC per GPU", help="The scale-out port each GPU owns (catalog).")] = "IB NDR 400G"
    max_nodes_per_token: Annotated[
        int,
        Knob("Node limit per token", "nodes", 1, 16, 1,
             help="When expert parallelism spans nodes: the most nodes one token's experts may sit on "
                  "(DeepSeek-V3 used 4).", draw=(2, 4)),
    ] = 4
    router_imbalance: Annotated[
        float,
        Knob("Router imbalance", "×", 1, 4, 0.05,
             help="Routed tokens on the hottest expert-parallel rank over the mean (1 = perfectly balanced).",
             draw=(1.05, 2)),
    ] = 1.3
    capacity_factor: Annotated[
        float,
        Knob("Capacity factor", "×", 1, 4, 0.05,
             help="Most tokens an expert rank accepts, as a multiple of the mean; the overflow is dropped.",
             draw=(1, 2)),
    ] = 1.25
    global_batch_tokens: Annotated[
        float,
        Knob("Global batch", "tokens", 2**21, 2**28, 2**20, log=True,
             help="Tokens per optimizer step (an assumption; large MoE runs use tens of millions).",
             draw=(2**24, 2**27)),
    ] = 2**26
    microbatch_tokens: Annotated[
        float,
        Knob("Microbatch", "tokens", 1024, 65536, 1024, log=True,
             help="Tokens one pipeline microbatch carries per GPU (one 4,096-token sequence here).",
             draw=(2048, 16384)),
    ] = 4096
    virtual_stages: Annotated[
        int,
        Knob("Virtual stages per GPU", "", 1, 8, 1,
             help="Interleaved 1F1B: chunks of layers per GPU; the bubble shrinks by this factor.", draw=(1, 4)),
    ] = 1
    act_bytes_per_token_layer_over_h: Annotated[
        float,
        Knob("Activation bytes per hidden element", "B", 2, 80, 1,
             help="Bytes a layer keeps for backward per token, per element of d_model (an estimate: about 34 "
                  "for a dense layer with selective recomputation, 2 with full recomputation).",
             draw=(20, 50)),
    ] = 34


# A mock draws a trillion-scale MoE: the catalog's first four models leave Mixtral-8x7B (8 experts,
# so no expert ever leaves its node) as the only MoE the page accepts.
_Accelerator = with_draws(with_defaults(AcceleratorKnobs, model="Kimi-K2 1T"),
                          model={"draw_choices": ("Kimi-K2 1T", "DeepSeek-V3")})


class Params(_Accelerator, TrainingStateKnobs, _TrainingKnobs):
    """The job and its layout, the training-state convention, then the model and accelerator."""

    @model_validator(mode="after")
    def _layout_fits(self) -> "Params":
        why = problem(self)
        if why:
            raise ValueError(why)
        return self


def problem(p: Params) -> str | None:
    """Why this scenario has no layout on the page, in a sentence, or None."""
    m = llm(p)
    if not m.is_moe:
        return f"{m.name} is dense: this page lays out a mixture of experts. Pick an MoE model or give the custom one routed experts."
    if m.moe_experts % p.ep_size:
        return (f"{m.name}'s {m.moe_experts} routed experts do not split evenly over {p.ep_size} expert-parallel "
                f"GPUs; pick an expert-parallel size that divides them.")
    if m.experts_per_token >= m.moe_experts:
        return f"{m.name} routes each token to all of its experts; a mixture of experts routes to fewer."
    hw = accelerator(p)
    if p.ep_size > hw.scale_up_domain and p.ep_size % hw.scale_up_domain:
        return (f"An expert-parallel group of {p.ep_size} does not cut into whole scale-up domains of "
                f"{hw.scale_up_domain} {hw.name}s.")
    if layout(p) is None:
        deepest = 1
        while deepest * 2 <= min(m.layers, p.gpus // p.ep_size):
            deepest *= 2
        return (
            f"{m.name}'s training state does not fit {p.gpus:,} × {hw.name} with "
            f"{p.state_share_of_hbm:.0%} of {hw.hbm_bytes / 1e9:g} GB for state at expert-parallel size "
            f"{p.ep_size}: even {deepest} pipeline stages leave too much per GPU. "
            "Use more GPUs, a larger HBM share, a larger expert-parallel size or a leaner training state."
        )
    return None


def domain(hw: Hardware) -> int:
    """GPUs in one NVLink node: the all-to-all inside it rides the scale-up fabric."""
    return hw.scale_up_domain


@dataclass(frozen=True)
class Layout:
    expert_params: float  # one routed expert, summed over the MoE layers
    always_on_params: float  # attention, shared expert, dense layers, router, embeddings
    routed_params: float  # every routed expert
    budget_bytes: float
    pp: int
    mp: int
    dp: int
    params_per_gpu: float
    weights_grads_bytes: float
    optimizer_bytes: float

    @property
    def state_bytes(self) -> float:
        return self.weights_grads_bytes + self.optimizer_bytes


def split_params(p: Params) -> tuple[float, float, float]:
    """(one routed expert over the MoE layers, always-on, all routed), counted from the shape."""
    m = llm(p)
    c = count(m)
    expert = (c.moe_per_layer - m.moe_experts * m.d_model) / (m.moe_experts + m.shared_experts) * c.moe_layers
    routed = m.moe_experts * expert
    return expert, m.total_params - routed, routed


def _per_gpu(p: Params, always_on: float, routed: float, pp: int, dp: int) -> tuple[float, float, float]:
    s = state_bytes(p)
    params = (always_on + routed / p.ep_size) / pp
    return params, s.replicated(SHARDING) * params, s.sharded(SHARDING) * params / dp


def layout(p: Params) -> Layout | None:
    """The smallest power-of-two pipeline depth whose per-GPU state fits the budget, or None."""
    m, hw = llm(p), accelerator(p)
    expert, always_on, routed = split_params(p)
    budget = hw.hbm_bytes * p.state_share_of_hbm
    pp = 1
    while pp <= m.layers and pp * p.ep_size <= p.gpus:
        dp = p.gpus // (pp * p.ep_size)
        params, wg, opt = _per_gpu(p, always_on, routed, pp, dp)
        if wg + opt <= budget:
            return Layout(expert, always_on, routed, budget, pp, pp * p.ep_size, dp, params, wg, opt)
        pp *= 2
    return None


def remote_node_copies(experts: int, top_k: int, nodes: int, node_limit: int) -> float:
    """Expected copies of one token that cross the NIC in one all-to-all when expert parallelism spans
    `nodes` nodes, with one copy per destination node and at most `node_limit` nodes per token.

    Uniform routing: the token's nodes are `min(limit, nodes)` drawn at random, its top-k experts are
    drawn among their experts; a chosen node is touched unless none of the k land on it, and a
    touched node is the token's own with probability 1 / nodes.
    """
    if nodes <= 1:
        return 0.0
    per_node = experts // nodes
    # A limit too tight to hold k distinct experts is widened to the fewest nodes that can.
    chosen = min(nodes, max(node_limit, -(-top_k // per_node)))
    pool = chosen * per_node
    untouched = math.comb(pool - per_node, top_k) / math.comb(pool, top_k)
    return chosen * (1 - untouched) * (nodes - 1) / nodes


def untouched_share_formula(experts: int, top_k: int, nodes: int, node_limit: int) -> str:
    """The chance one of a token's chosen nodes gets none of its top-k experts, as the product it is:
    each of the k draws (without replacement, from the chosen nodes' experts) misses that node's."""
    per_node = experts // max(1, nodes)
    chosen = min(nodes, max(node_limit, -(-top_k // per_node)))
    pool = chosen * per_node
    if pool - per_node < top_k:
        return "0"
    return " × ".join(f"{pool - per_node - i}/{pool - i}" for i in range(top_k))


def untouched_share(experts: int, top_k: int, nodes: int, node_limit: int) -> float:
    """`untouched` of remote_node_copies: C(pool - per_node, k) / C(pool, k)."""
    per_node = experts // max(1, nodes)
    chosen = min(nodes, max(node_limit, -(-top_k // per_node)))
    pool = chosen * per_node
    return math.comb(pool - per_node, top_k) / math.comb(pool, top_k)


def nodes_per_token(experts: int, top_k: int, nodes: int, node_limit: int) -> int:
    """The nodes a token's experts are drawn among (a limit too tight for k experts is widened)."""
    per_node = experts // max(1, nodes)
    return min(nodes, max(node_limit, -(-top_k // per_node)))


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    m, hw, lay = llm(p), accelerator(p), layout(p)
    assert lay is not None  # the validator guarantees it
    k = m.experts_per_token
    sb = state_bytes(p)
    node = domain(hw)

    # --- numbers: storage follows total, compute follows active ---
    total = d.step("total_params", f"{m.name}: every parameter, all experts (counted from its shape)",
                   m.total_params, "1", noun="parameters")
    active = d.step("active_params", "Parameters one token passes through (counted from its shape)",
                    m.active_params, "1", noun="parameters")
    d.step("weight_bytes_per_param", "Working weights per parameter", sb.weights, "B")
    d.step("grad_bytes_per_param", "Gradient buffer per parameter", sb.grads, "B")
    d.step("optimizer_bytes_per_param", "Optimizer state per parameter (fp32 master, Adam m and v)",
           sb.optimizer, "B")
    d.step("adam_bytes_per_param", f"Training state per parameter ({p.training_state})", sb.total, "B",
           formula="{weight_bytes_per_param} + {grad_bytes_per_param} + {optimizer_bytes_per_param}",
           note=sb.source)
    state = d.step("state_TB", "Training state: every parameter, expert or not",
                   total * sb.total / 1e12, "TB",
                   formula="{total_params} × {adam_bytes_per_param}")
    d.step("state_zero_paper_TB", "The same at the ZeRO paper's 16 B (bf16 gradients)",
           total * STATES[ZERO_PAPER].total / 1e12, "TB", formula=f"{{total_params}} × {STATES[ZERO_PAPER].total:g} B")
    d.step("state_if_dense_active_TB", "The state of a dense model with the same per-token compute",
           active * sb.total / 1e12, "TB",
           formula="{active_params} × {adam_bytes_per_param}")
    d.step("checkpoint_bytes_per_param", "Checkpoint per parameter: weights and fp32 optimizer state, no gradients",
           sb.checkpoint, "B",
           formula=f"{{weight_bytes_per_param}} + {sb.checkpoint_optimizer:g} B",
           note="The fp32 optimizer state (master weights, m and v); gradients are not saved.")
    ckpt = d.step("checkpoint_TB", "One resumable checkpoint", total * sb.checkpoint / 1e12, "TB",
                  formula="{total_params} × {checkpoint_bytes_per_param}")
    fpt = d.step("train_flops_per_token", "Training FLOPs per token: forward 2 + backward 4, active only",
                 TRAIN_FLOPS_PER_PARAM_TOKEN * active, "FLOP",
                 formula=f"{TRAIN_FLOPS_PER_PARAM_TOKEN} FLOP × {{active_params}}")
    d.step("dense_flops_per_token", "The same, if every parameter were active",
           TRAIN_FLOPS_PER_PARAM_TOKEN * total, "FLOP", formula=f"{TRAIN_FLOPS_PER_PARAM_TOKEN} FLOP × {{total_params}}")
    ratio = d.step("compute_ratio_if_active", "Compute multiple if 'total' meant 'active'", total / active, "1",
                   noun="×", formula="{total_params} / {active_params}")
    tokens = d.step("train_tokens", "Training tokens", p.train_tokens_t * 1e12, "1", noun="tokens",
                    formula="{train_tokens_t} × 10¹²")
    run_flops = d.step("run_flops", "FLOPs for the whole run", fpt * tokens, "FLOP",
                       formula="{train_flops_per_token} × {train_tokens}")
    peak = d.step("gpu_peak_flops", f"{hw.name} dense BF16 peak", hw.peak("bf16"), "FLOP/s")
    per_gpu = d.step("achieved_flops_per_gpu", "What one GPU delivers at the training MFU", peak * p.train_mfu,
                     "FLOP/s", formula="{gpu_peak_flops} × {train_mfu}")
    gpu_h = d.step("gpu_hours", "GPU-hours for the run", run_flops / per_gpu / 3600, "h",
                   formula="{run_flops} / {achieved_flops_per_gpu}", noun="GPU")
    days = d.step("training_days", "Wall clock on the job's GPUs", gpu_h / p.gpus / 24, "d",
                  formula="{gpu_hours} / {gpus}")
    d.step("gpu_hours_if_active", "GPU-hours if every parameter were active", gpu_h * ratio, "h",
           formula="{gpu_hours} × {compute_ratio_if_active}", noun="GPU")
    d.step("training_days_if_active", "Wall clock if every parameter were active", days * ratio, "d",
           formula="{training_days} × {compute_ratio_if_active}")
    dsv3 = llm(p.model_copy(update={"model": "DeepSeek-V3"}))
    dsv3_peak = accelerator(p.model_copy(update={"gpu": DSV3_GPU})).peak("bf16")
    d.step("dsv3_active_params", "DeepSeek-V3 parameters one token passes through (counted from its shape)",
           dsv3.active_params, "1", noun="parameters")
    d.step("dsv3_pretrain_tokens", "DeepSeek-V3 pre-training tokens (its report)", DSV3_PRETRAIN_TOKENS, "1",
           noun="tokens")
    d.step("dsv3_pretrain_gpu_hours", f"DeepSeek-V3 pre-training {DSV3_GPU} GPU-hours (its report)",
           DSV3_PRETRAIN_GPU_HOURS, "h", noun="GPU")
    d.step("dsv3_gpu_peak_flops", f"{DSV3_GPU} dense BF16 peak", dsv3_peak, "FLOP/s")
    dsv3_mfu = d.step(
        "dsv3_implied_mfu", "MFU DeepSeek-V3's reported pre-training implies on H800s",
        TRAIN_FLOPS_PER_PARAM_TOKEN * dsv3.active_params * DSV3_PRETRAIN_TOKENS
        / (DSV3_PRETRAIN_GPU_HOURS * 3600 * dsv3_peak), "1", percent=True,
        formula=(f"{TRAIN_FLOPS_PER_PARAM_TOKEN} FLOP × {{dsv3_active_params}} × {{dsv3_pretrain_tokens}} / "
                 "({dsv3_pretrain_gpu_hours} × {dsv3_gpu_peak_flops})"))
    d.step("gpu_hours_at_dsv3_mfu", "This run at that MFU", run_flops / (peak * dsv3_mfu) / 3600, "h",
           formula="{run_flops} / ({gpu_peak_flops} × {dsv3_implied_mfu})", noun="GPU")

    # --- shape: the state budget per GPU and the layout that falls out ---
    d.step("hbm_GB", f"{hw.name} HBM", hw.hbm_bytes / 1e9, "GB")
    budget_gb = d.step("state_budget_per_gpu_GB", "HBM one GPU gives to training state",
                       lay.budget_bytes / 1e9, "GB", formula="{hbm_GB} × {state_share_of_hbm}")
    d.step("min_gpus_for_state", "GPUs the state needs if sharded perfectly at that budget",
           math.ceil(state * 1000 / budget_gb - 1e-9), "1", noun="GPUs",
           formula="ceil({state_TB} / {state_budget_per_gpu_GB})")
    d.step("perfect_shard_per_gpu_GB", "State per GPU if every GPU held an equal slice", state * 1000 / p.gpus,
           "GB", formula="{state_TB} / {gpus} GPUs")
    d.step("routed_experts", "Routed experts per MoE layer (catalog)", m.moe_experts, "1", noun="routed experts")
    d.step("experts_per_token", "Routed experts each token picks (catalog)", k, "1", noun="experts")
    d.step("expert_params", "One routed expert, summed over the MoE layers", lay.expert_params, "1",
           noun="parameters",
           formula="({total_params} − {active_params}) / ({routed_experts} − {experts_per_token})")
    d.step("always_on_params", "Always-on weights: attention, shared expert, dense layer, embeddings",
           lay.always_on_params, "1", noun="parameters",
           formula="{active_params} − {experts_per_token} × {expert_params}")
    d.step("routed_params", "All routed experts", lay.routed_params, "1", noun="parameters",
           formula="{routed_experts} × {expert_params}")
    d.step("expert_share_of_compute", "Routed experts' share of a token's FLOPs",
           k * lay.expert_params / active, "1", percent=True,
           formula="{experts_per_token} × {expert_params} / {active_params}")
    d.step("experts_per_gpu", "Routed experts per GPU per layer", m.moe_experts // p.ep_size, "1", noun="experts",
           formula="{routed_experts} / {ep_size}")
    d.step("gpus_per_node", f"GPUs per NVLink node ({hw.name} scale-up domain)", node, "1", noun="GPUs")
    d.step("ep_nodes", "Nodes one expert-parallel group spans", max(1, p.ep_size // node), "1",
           noun="nodes", formula="max(1, {ep_size} / {gpus_per_node})")
    d.step("ep_placement", "Where the expert-parallel group sits",
           "inside one NVLink domain" if p.ep_size <= node
           else "across several NVLink domains, so part of its all-to-all crosses the NIC",
           formula="{ep_size} ≤ {gpus_per_node}")
    d.step("optimizer_per_gpu_GB", "Optimizer state per GPU, ZeRO-1 over the data-parallel replicas",
           lay.optimizer_bytes / 1e9, "GB",
           formula="{optimizer_bytes_per_param} × ({always_on_params} × {ep_size} + {routed_params}) / {gpus}",
           note="(always-on + routed / EP) / PP parameters per GPU, sharded over DP replicas: PP × DP × EP = GPUs.")
    pp = d.step("pp_size", "Pipeline stages: the smallest power of two whose state fits the budget", lay.pp, "1",
                noun="stages",
                formula="smallest PP = 2ⁿ with ({weight_bytes_per_param} + {grad_bytes_per_param}) × "
                        "({always_on_params} + {routed_params} / {ep_size}) / PP + {optimizer_per_gpu_GB} ≤ "
                        "{state_budget_per_gpu_GB}", kind="search")
    lean = layout(p.model_copy(update={"training_state": ZERO_PAPER}))
    d.step("pp_size_bf16_grads", "Pipeline stages the same search gives with bf16 gradients (ZeRO paper's 16 B)",
           lean.pp if lean else float("nan"), "1", noun="stages")
    d.step("model_parallel_gpus", "GPUs holding one copy of the weights", lay.mp, "1", noun="GPUs",
                formula="{pp_size} × {ep_size}")
    d.step("dp_size", "Data-parallel replicas", lay.dp, "1", noun="replicas",
           formula="{gpus} / {model_parallel_gpus}")
    d.step("layers_per_stage", "Transformer layers per pipeline stage", m.layers / pp, "1", noun="layers",
           formula=f"{m.layers} layers / {{pp_size}}")
    d.step("params_per_gpu", "Parameters resident on one GPU", lay.params_per_gpu, "1", noun="parameters",
           formula="({always_on_params} + {routed_params} / {ep_size}) / {pp_size}")
    d.step("weights_grads_per_gpu_GB", "Weights and gradients per GPU", lay.weights_grads_bytes / 1e9, "GB",
           formula="({weight_bytes_per_param} + {grad_bytes_per_param}) × {params_per_gpu}")
    per_gpu_state = d.step("state_per_gpu_GB", "Training state per GPU in this layout", lay.state_bytes / 1e9,
                           "GB", formula="{weights_grads_per_gpu_GB} + {optimizer_per_gpu_GB}")
    d.step("activation_room_GB", "HBM left for activations and buffers", hw.hbm_bytes / 1e9 - per_gpu_state, "GB",
           formula="{hbm_GB} − {state_per_gpu_GB}")
    d.step("layout_copies_of_state", "State held by the job over one copy", per_gpu_state * p.gpus / (state * 1000),
           "1", noun="×", formula="{state_per_gpu_GB} × {gpus} / {state_TB}")
    # Kimi K2's report (arXiv 2507.20534, section 2.4): 16 pipeline stages × 16-way EP, ZeRO-1; "bf16
    # parameters and their fp32 gradient accumulation buffer ... approximately 6 TB ... over a model-parallel
    # group of 256 GPUs", "approximately 30 GB of GPU memory for all states" per GPU.
    k2_dp = max(1, p.gpus // (K2_PP * K2_EP))
    k2_params = (lay.always_on_params + lay.routed_params / K2_EP) / K2_PP
    d.step("weights_grads_one_copy_TB", "Weights and gradients of every parameter once",
           sb.replicated(SHARDING) * total / 1e12, "TB",
           formula="({weight_bytes_per_param} + {grad_bytes_per_param}) × {total_params}")
    d.step("k2_layout_weights_grads_TB", "Weights and gradients over one 16 × 16 model-parallel group (Kimi K2's layout)",
           sb.replicated(SHARDING) * k2_params * K2_PP * K2_EP / 1e12, "TB",
           formula=f"({{weight_bytes_per_param}} B + {{grad_bytes_per_param}} B) × ({{always_on_params}} × {K2_EP} + "
                   "{routed_params})")
    d.step("k2_layout_state_per_gpu_GB", "State per GPU in that layout, optimizer sharded over the rest",
           sb.per_rank(SHARDING, k2_dp) * k2_params / 1e9, "GB",
           formula=f"({{weight_bytes_per_param}} B + {{grad_bytes_per_param}} B + {{optimizer_bytes_per_param}} B / "
                   f"({{gpus}} / {K2_PP * K2_EP})) × ({{always_on_params}} + {{routed_params}} / {K2_EP}) / {K2_PP}")

    # --- arithmetic: the all-to-all against NVLink and the NIC ---
    tps = d.step("tokens_per_s_per_gpu", "Tokens one GPU trains per second at the MFU", per_gpu / fpt, "1/s",
                 noun="tokens", formula="{achieved_flops_per_gpu} / {train_flops_per_token}")
    moe_layers = d.step("moe_layers", "MoE layers", m.layers - m.dense_layers, "1", noun="layers",
                        formula=f"{m.layers} layers − {m.dense_layers} dense")
    d.step("hidden_size", "Hidden vector per routed copy (catalog d_model)", m.d_model, "1", noun="elements")
    copy_b = d.step("copy_bytes", "One routed copy of a token in bf16", m.d_model * A2A_BYTES_PER_ELEM, "B",
                    formula=f"{{hidden_size}} × {A2A_BYTES_PER_ELEM} B")
    remote = d.step("remote_copies_per_token", "Copies per token per all-to-all that leave the GPU",
                    k * (p.ep_size - 1) / p.ep_size, "1", noun="copies",
                    formula="{experts_per_token} × ({ep_size} − 1) / {ep_size}")
    per_tok = d.step("a2a_bytes_per_token", "All-to-all bytes one token sends off its GPU, per training step",
                     A2A_PER_MOE_LAYER * moe_layers * remote * copy_b, "B",
                     formula=f"{A2A_PER_MOE_LAYER} all-to-alls × {{moe_layers}} × {{remote_copies_per_token}} × "
                             "{copy_bytes}")
    egress = d.step("a2a_egress_per_gpu_GBps", "All-to-all egress per GPU, averaged over the step",
                    per_tok * tps / 1e9, "GB/s", formula="{a2a_bytes_per_token} × {tokens_per_s_per_gpu}")
    nvl = d.step("nvlink_GBps", f"{hw.name} scale-up link (NVLink), one direction", hw.link_Bps_per_direction / 1e9,
                 "GB/s")
    nic_gbps = d.step("nic_GBps", f"{p.nic}, one direction (catalog)", LINKS[p.nic].GBps, "GB/s")
    d.step("nvlink_over_nic", "NVLink over the NIC", nvl / nic_gbps, "1", noun="×",
           formula="{nvlink_GBps} / {nic_GBps}")
    d.step("a2a_share_if_all_nvlink", "All-to-all time over compute time, all of it on NVLink",
           egress / nvl, "1", percent=True, formula="{a2a_egress_per_gpu_GBps} / {nvlink_GBps}")
    nic_all = d.step("a2a_share_if_all_nic", "The same traffic through the NIC", egress / nic_gbps, "1",
                     percent=True,
                     formula="{a2a_egress_per_gpu_GBps} / {nic_GBps}")

    # This layout: copies to GPUs in the same node ride NVLink; copies to other nodes go once per node.
    nodes = max(1, p.ep_size // node)
    in_node = min(p.ep_size, node)
    # A copy that crossed to another node is forwarded over that node's NVLink to the GPU holding
    # the expert, unless it landed on it: counted in full (an upper bound; NVLink has the headroom).
    d.step("ep_gpus_per_node", "GPUs of one expert-parallel group inside one node", in_node, "1", noun="GPUs",
           formula="min({ep_size}, {gpus_per_node})")
    nvl_copies = d.step(
        "nvlink_copies_per_token", "Copies per all-to-all on NVLink: same-node experts, plus forwarding",
        k * (in_node - 1) / p.ep_size + k * (p.ep_size - in_node) / p.ep_size * (in_node - 1) / in_node, "1",
        noun="copies",
        formula="{experts_per_token} × ({ep_gpus_per_node} − 1) / {ep_size} + {experts_per_token} × "
                "({ep_size} − {ep_gpus_per_node}) / {ep_size} × ({ep_gpus_per_node} − 1) / {ep_gpus_per_node}")
    d.step("experts_per_node", "Routed experts of one layer on each node of the group", m.moe_experts // nodes, "1",
           noun="experts", formula="floor({routed_experts} / {ep_nodes})")
    d.step("nodes_per_token", "Nodes a token's experts are drawn among (the limit, widened if it cannot hold k)",
           nodes_per_token(m.moe_experts, k, nodes, p.max_nodes_per_token), "1", noun="nodes",
           formula="min({ep_nodes}, max({max_nodes_per_token}, ceil({experts_per_token} / {experts_per_node})))")
    d.step("node_untouched_share", "Chance one of those nodes gets none of the token's experts",
           untouched_share(m.moe_experts, k, nodes, p.max_nodes_per_token), "1", percent=True,
           formula=untouched_share_formula(m.moe_experts, k, nodes, p.max_nodes_per_token),
           note="Each of the k experts, drawn without replacement among the chosen nodes' experts, misses it.")
    nic_copies = d.step(
        "nic_copies_per_token", "Copies per all-to-all to other nodes (one per node, node-limited)",
        remote_node_copies(m.moe_experts, k, nodes, p.max_nodes_per_token), "1", noun="copies",
        formula="{nodes_per_token} × (1 − {node_untouched_share}) × ({ep_nodes} − 1) / {ep_nodes}",
        note="Each touched node gets one copy; it is the token's own node one time in {ep_nodes}.")
    scale = A2A_PER_MOE_LAYER * moe_layers * copy_b * tps / 1e9
    nvl_rate = d.step("a2a_nvlink_GBps", "All-to-all egress on NVLink in this layout", nvl_copies * scale, "GB/s",
                      formula=f"{A2A_PER_MOE_LAYER} × {{moe_layers}} × {{nvlink_copies_per_token}} × {{copy_bytes}} "
                              "× {tokens_per_s_per_gpu}")
    nic_rate = d.step("a2a_nic_GBps", "All-to-all egress on the NIC in this layout", nic_copies * scale, "GB/s",
                      formula=f"{A2A_PER_MOE_LAYER} × {{moe_layers}} × {{nic_copies_per_token}} × {{copy_bytes}} "
                              "× {tokens_per_s_per_gpu}")
    share_nvl = d.step("a2a_share_nvlink", "NVLink all-to-all time over compute time", nvl_rate / nvl, "1",
                       percent=True,
                       formula="{a2a_nvlink_GBps} / {nvlink_GBps}")
    share_nic = d.step("a2a_share_nic", "NIC all-to-all time over compute time", nic_rate / nic_gbps, "1",
                       percent=True,
                       formula="{a2a_nic_GBps} / {nic_GBps}")
    r = d.step("a2a_share", "All-to-all time over compute time: the slower link sets it",
               max(share_nvl, share_nic), "1", percent=True, formula="max({a2a_share_nvlink}, {a2a_share_nic})")

    # --- depth: expert parallelism across nodes, DeepSeek-V3 style ---
    # 64-way, or every expert its own GPU where the model has fewer routed experts.
    wide = min(DSV3_EP, m.moe_experts)
    w_nodes = max(1, wide // node)
    w_in_node = min(wide, node)
    d.step("wide_ep_size", "A wide layout: DeepSeek-V3's expert-parallel size", wide, "1", noun="GPUs")
    d.step("wide_ep_nodes", "Nodes it spans", w_nodes, "1", noun="nodes",
           formula="max(1, floor({wide_ep_size} / {gpus_per_node}))")
    naive = d.step("wide_nic_copies_naive", "NIC copies per token per all-to-all, every expert its own copy",
                   k * (wide - w_in_node) / wide, "1", noun="copies",
                   formula="{experts_per_token} × ({wide_ep_size} − min({wide_ep_size}, {gpus_per_node})) / "
                           "{wide_ep_size}")
    d.step("wide_experts_per_node", "Routed experts of one layer on each node of the wide layout",
           m.moe_experts // w_nodes, "1", noun="experts", formula="floor({routed_experts} / {wide_ep_nodes})")
    d.step("wide_node_untouched_share_dedup", "Chance a node of the wide layout gets none of a token's experts",
           untouched_share(m.moe_experts, k, w_nodes, w_nodes), "1", percent=True,
           formula=untouched_share_formula(m.moe_experts, k, w_nodes, w_nodes),
           note="Each of the k experts, drawn without replacement among all of them, misses that node's.")
    dedup = d.step("wide_nic_copies_dedup", "One copy per destination node, forwarded over NVLink inside it",
                   remote_node_copies(m.moe_experts, k, w_nodes, w_nodes), "1", noun="copies",
                   formula="{wide_ep_nodes} × (1 − {wide_node_untouched_share_dedup}) × "
                           "({wide_ep_nodes} − 1) / {wide_ep_nodes}")
    d.step("wide_nodes_per_token", "Nodes a token's experts are drawn among under the node limit",
           nodes_per_token(m.moe_experts, k, w_nodes, p.max_nodes_per_token), "1", noun="nodes",
           formula="min({wide_ep_nodes}, max({max_nodes_per_token}, ceil({experts_per_token} / {wide_experts_per_node})))")
    d.step("wide_node_untouched_share", "Chance one of those nodes gets none of the token's experts",
           untouched_share(m.moe_experts, k, w_nodes, p.max_nodes_per_token), "1", percent=True,
           formula=untouched_share_formula(m.moe_experts, k, w_nodes, p.max_nodes_per_token))
    limited = d.step("wide_nic_copies_limited", "And each token limited to a few nodes",
                     remote_node_copies(m.moe_experts, k, w_nodes, p.max_nodes_per_token), "1", noun="copies",
                     formula="{wide_nodes_per_token} × (1 − {wide_node_untouched_share}) × "
                             "({wide_ep_nodes} − 1) / {wide_ep_nodes}")
    d.step("wide_nic_share_naive", "Wide layout, NIC time over compute, no routing limit",
           naive * scale / nic_gbps, "1", percent=True,
           formula=f"{A2A_PER_MOE_LAYER} × {{moe_layers}} × {{wide_nic_copies_naive}} × {{copy_bytes}} × "
                   "{tokens_per_s_per_gpu} / {nic_GBps}")
    d.step("wide_nic_share_dedup", "Wide layout, one copy per node", dedup * scale / nic_gbps, "1",
           percent=True,
           formula=f"{A2A_PER_MOE_LAYER} × {{moe_layers}} × {{wide_nic_copies_dedup}} × {{copy_bytes}} × "
                   "{tokens_per_s_per_gpu} / {nic_GBps}")
    d.step("wide_nic_share_limited", "Wide layout, node-limited routing", limited * scale / nic_gbps, "1",
           percent=True,
           formula=f"{A2A_PER_MOE_LAYER} × {{moe_layers}} × {{wide_nic_copies_limited}} × {{copy_bytes}} × "
                   "{tokens_per_s_per_gpu} / {nic_GBps}")

    # --- failure modes: router imbalance and all-to-all congestion ---
    s = k * lay.expert_params / active
    imb = p.router_imbalance
    slow = d.step("step_slowdown_from_imbalance", "Step time over the balanced step: every rank waits for the hottest",
                  (1 + (imb - 1) * s + imb * r) / (1 + r), "1", noun="×",
                  formula="(1 + ({router_imbalance} − 1) × {expert_share_of_compute} + {router_imbalance} × "
                          "{a2a_share}) / (1 + {a2a_share})")
    d.step("gpu_hours_lost_to_imbalance", "GPU-hours the imbalance adds to the run", gpu_h * (slow - 1), "h",
           formula="{gpu_hours} × ({step_slowdown_from_imbalance} − 1)", noun="GPU")
    capped = d.step("hot_rank_load_capped", "Load on the hottest rank under the capacity factor",
                    min(imb, p.capacity_factor), "1", noun="×",
                    formula="min({router_imbalance}, {capacity_factor})")
    d.step("step_slowdown_capped", "Step slowdown with the cap",
           (1 + (capped - 1) * s + capped * r) / (1 + r), "1", noun="×",
           formula="(1 + ({hot_rank_load_capped} − 1) × {expert_share_of_compute} + {hot_rank_load_capped} × "
                   "{a2a_share}) / (1 + {a2a_share})")
    d.step("dropped_share_hot_rank", "Routed tokens the hottest rank drops under the cap",
           max(0.0, 1 - p.capacity_factor / imb), "1", percent=True,
           formula="max(0, 1 − {capacity_factor} / {router_imbalance})")
    d.step("hot_rank_ingress_GBps", "Bytes/s the hottest rank receives", imb * egress, "GB/s",
           formula="{router_imbalance} × {a2a_egress_per_gpu_GBps}")
    d.step("hot_rank_nic_load", "The hottest rank's load on its NIC if this all-to-all crossed it",
           imb * nic_all, "1", percent=True, formula="{router_imbalance} × {a2a_share_if_all_nic}")
    d.step("step_slowdown_if_a2a_on_nic", "Balanced step if this all-to-all crossed the NIC instead",
           (1 + nic_all) / (1 + r), "1", noun="×",
           formula="(1 + {a2a_share_if_all_nic}) / (1 + {a2a_share})")


    # --- what crosses InfiniBand, the pipeline bubble, and activation memory ---
    step_s = d.step("step_s", "One optimizer step", p.global_batch_tokens / (p.gpus * tps), "s",
                    formula="{global_batch_tokens} / ({gpus} × {tokens_per_s_per_gpu})")
    dp_bytes = d.step(
        "dp_bytes_per_gpu_per_step", "Data-parallel bytes per GPU per step: reduce-scatter fp32 grads, all-gather "
        "bf16 weights (ZeRO-1)", (lay.dp - 1) / lay.dp * lay.params_per_gpu * (sb.grads + sb.weights) / 1e9, "GB",
        formula="({dp_size} − 1) / {dp_size} × {params_per_gpu} × ({grad_bytes_per_param} + {weight_bytes_per_param})")
    dp_rate = d.step("dp_GBps", "Data-parallel traffic per GPU, averaged over the step", dp_bytes / step_s, "GB/s",
                     formula="{dp_bytes_per_gpu_per_step} / {step_s}")
    pp_rate = d.step(
        "pp_GBps", "Pipeline traffic per GPU: activations forward, their gradients back, at each stage boundary",
        tps * lay.pp * 2 * m.d_model * A2A_BYTES_PER_ELEM / 1e9 * (lay.pp - 1) / lay.pp, "GB/s",
        formula="{tokens_per_s_per_gpu} × ({pp_size} − 1) × 2 × {copy_bytes}")
    ib = d.step("ib_GBps", "Everything on the NIC per GPU: data parallel + pipeline + all-to-all off the node",
                dp_rate + pp_rate + nic_rate, "GB/s", formula="{dp_GBps} + {pp_GBps} + {a2a_nic_GBps}")
    d.step("ib_share_of_nic", "That traffic over the NIC's bandwidth", ib / nic_gbps, "1", percent=True,
           formula="{ib_GBps} / {nic_GBps}")
    mbs = d.step("microbatches", "Microbatches per pipeline per step (rounded down to whole microbatches)",
                 max(1, math.floor(p.global_batch_tokens / (lay.dp * p.ep_size * p.microbatch_tokens))), "1",
                 noun="microbatches",
                 formula="max(1, floor({global_batch_tokens} / ({dp_size} × {ep_size} × {microbatch_tokens})))")
    d.require("pipeline_fills", mbs >= lay.pp,
              lambda: (f"The pipeline never fills: {mbs:,} microbatch(es) per step for {lay.pp} stages, so most "
                       "stages idle most of the step. Raise the global batch or shrink the microbatch until there "
                       "are at least as many microbatches as stages."))
    bubble = d.step("bubble_share", "Pipeline bubble as a share of the step (1F1B, interleaved)",
                    (lay.pp - 1) / (p.virtual_stages * mbs + lay.pp - 1), "1", percent=True,
                    formula="({pp_size} − 1) / ({virtual_stages} × {microbatches} + {pp_size} − 1)",
                    note="Idle time over idle plus compute: (p − 1) / (v × m) of compute, as a share of the whole step.")
    mbs16 = d.step("microbatches_at_16", "Microbatches per pipeline at 16 stages (data parallel doubles as stages halve)",
                   max(1, math.floor(mbs * 16 / lay.pp)), "1", noun="microbatches",
                   formula="max(1, floor({microbatches} × 16 / {pp_size}))")
    bubble16 = d.step("bubble_share_at_16", "The bubble at 16 stages, Kimi K2's depth, as a share of the step",
                      15 / (p.virtual_stages * mbs16 + 15), "1", percent=True,
                      formula="15 / ({virtual_stages} × {microbatches_at_16} + 15)")
    d.step("bubble_depth_verdict", "Does the stage count move the bubble?",
           "the stage count barely matters" if abs(bubble - bubble16) <= 0.25 * max(bubble, bubble16)
           else ("16 stages would shrink it" if bubble16 < bubble else "16 stages would grow it"),
           formula="|{bubble_share} − {bubble_share_at_16}| ≤ 25% of the larger", kind="verdict")
    in_flight = d.step("in_flight_microbatches", "Microbatches the first stage holds under 1F1B",
                       min(lay.pp, mbs), "1", noun="microbatches", formula="min({pp_size}, {microbatches})")
    act = d.step("activation_GB", "Activations the first stage holds",
                 in_flight * p.microbatch_tokens * (m.layers / lay.pp) * p.act_bytes_per_token_layer_over_h
                 * m.d_model / 1e9, "GB",
                 formula="{in_flight_microbatches} × {microbatch_tokens} × {layers_per_stage} × "
                         "{act_bytes_per_token_layer_over_h} × {hidden_size}")
    d.step("activations_fit", "Do they fit in the HBM left over?",
           "yes" if act <= hw.hbm_bytes / 1e9 - per_gpu_state else "no: recompute more or shrink the microbatch",
           formula="{activation_GB} ≤ {activation_room_GB}")
    room = hw.hbm_bytes / 1e9 - per_gpu_state
    act_per_byte = in_flight * p.microbatch_tokens * (m.layers / lay.pp) * m.d_model / 1e9
    d.step("act_bytes_fit_max", "Most activation bytes per hidden element the room allows (sets the recompute level)",
           room / act_per_byte, "B",
           formula="{activation_room_GB} / ({in_flight_microbatches} × {microbatch_tokens} × {layers_per_stage} × "
                   "{hidden_size})")
    d.step("microbatch_tokens_fit", "Largest microbatch whose activations fit, at this recompute level and in-flight count",
           room / (act / p.microbatch_tokens), "1", noun="tokens",
           formula="{microbatch_tokens} × {activation_room_GB} / {activation_GB}")

    # What the plan does about activations: keep the selective level if it fits; else fully recompute
    # (keep only each layer's bf16 input, 2 B per hidden element) the smallest share of layers that
    # brings the in-flight activations into the room; if even every layer is not enough, also shrink
    # the microbatch. A fully recomputed layer runs its forward twice: +2 of its 6 FLOPs per token.
    full_act = act * FULL_RECOMPUTE_BYTES / p.act_bytes_per_token_layer_over_h
    d.step("activation_GB_full_recompute", "Activations with every layer fully recomputed (its input kept, 2 B)",
           full_act, "GB", formula=f"{{activation_GB}} × {FULL_RECOMPUTE_BYTES:g} B / {{act_bytes_per_token_layer_over_h}}")
    if act <= room:
        share = 0.0
    elif full_act >= act or full_act > room:
        share = 1.0
    else:
        share = (act - room) / (act - full_act)
    share = d.step("recompute_layer_share", "Share of layers to recompute in full so the activations fit",
                   share, "1", percent=True,
                   formula="min(1, max(0, ({activation_GB} − {activation_room_GB}) / ({activation_GB} − "
                           "{activation_GB_full_recompute})))")
    planned = d.step("activation_GB_planned", "Activations the first stage holds under that plan",
                     act - share * (act - full_act), "GB",
                     formula="{activation_GB} − {recompute_layer_share} × ({activation_GB} − {activation_GB_full_recompute})")
    shrink = full_act > room
    d.step("microbatch_tokens_planned", "Microbatch under the plan (shrunk only if full recomputation is not enough)",
           p.microbatch_tokens * min(1.0, room / planned) if shrink else p.microbatch_tokens, "1", noun="tokens",
           formula="{microbatch_tokens} × min(1, {activation_room_GB} / {activation_GB_planned})" if shrink
           else "{microbatch_tokens}")
    d.step("recompute_extra_compute", "Extra compute the recomputation costs: one more forward (2 of 6 FLOPs) on those layers",
           share * 2 / TRAIN_FLOPS_PER_PARAM_TOKEN, "1", percent=True,
           formula=f"{{recompute_layer_share}} × 2 / {TRAIN_FLOPS_PER_PARAM_TOKEN:g}")
    d.step("activation_plan", "What the plan does about activations",
           "keep selective recomputation: it fits" if share == 0
           else ("fully recompute every layer and shrink the microbatch" if shrink
                 else "fully recompute part of the layers, the rest stay selective"),
           formula="{activation_GB} ≤ {activation_room_GB}, else {activation_GB_full_recompute} ≤ {activation_room_GB}",
           kind="verdict")

    # --- the checkpoint, and how often the run will need it ---
    d.step("checkpoint_per_gpu_GB", "Checkpoint bytes each GPU writes if all write in parallel",
           ckpt * 1000 / p.gpus, "GB", formula="{checkpoint_TB} / {gpus} GPUs")
    rate = LLAMA3_INTERRUPTIONS.per_gpu_day
    per_day = d.step("interruptions_per_day", "Unexpected interruptions per day at the Llama 3 rate",
                     rate * p.gpus, "1", noun="per day",
                     formula=(f"{LLAMA3_INTERRUPTIONS.unexpected_interruptions} interruptions / "
                              f"({LLAMA3_INTERRUPTIONS.days:g} × {LLAMA3_INTERRUPTIONS.gpus:,} GPU-days) × {{gpus}}"))
    d.step("job_mtbf_h", "Mean time between interruptions of the whole job", 24 / per_day, "h",
           formula="24 h / {interruptions_per_day}")
    d.step("expected_interruptions", "Interruptions over the run", per_day * days, "1", noun="interruptions",
           formula="{training_days} / {job_mtbf_h}")
    return d
