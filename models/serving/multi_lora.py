"""Multi-LoRA serving: one base model held once, hundreds of low-rank adapters beside it.

Teaching order: what a replica per variant costs (weights and GPUs, and how idle they sit), what
one adapter weighs (rank x the projections it targets x layers), what a mixed batch costs in
throughput, the shared fleet that results, the routing that keeps hot adapters resident, and the
two cases where a variant earns a replica of its own.

Modelling choices, all stated on the page:
- The base is Llama-3-70B in bf16 (catalog shape); adapters are bf16 too.
- LoRA on a projection W (d_in x d_out) adds A (d_in x r) and B (r x d_out): r x (d_in + d_out)
  parameters. Dimensions come from the catalog (d_model, heads x head_dim, kv_heads x head_dim)
  plus the MLP width below.
- Replica throughput is decode at the memory roofline: each step reads the base weights once,
  the batch's KV once, and the weights of every DISTINCT adapter in the batch once. Prefill is
  left out: it costs the same per token in both designs, so it moves neither ratio.
- Mixed-batch overhead = a fixed kernel tax (SGMV/BGMV-style batched LoRA kernels on every
  targeted projection, a knob) + the extra adapter bytes read per step.
- Distinct adapters in a batch assume uniform traffic over the variants, which maximises the
  count (skew only lowers it), so the overhead is an upper bound for a given batch.
- The dedicated design gives every variant its own replica and spreads traffic evenly; the seed's
  800 GPUs is one replica per variant.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from models.catalog import GPUS, HBM_USABLE_FRACTION, LINKS, LLAMA3_70B_FFN_DIM, MODELS
from models.core import Derivation, Knob, StrictModel

BASE = MODELS["Llama-3-70B"]


BF16_BYTES = 2
PCIE = LINKS["PCIe Gen5 x16"]
NVME = LINKS["NVMe Gen5 SSD"]

Targets = Literal["q,v", "q,k,v,o", "all seven"]


def projection_dims() -> dict[str, tuple[int, int]]:
    """(d_in, d_out) of each projection one LoRA can target, for the base model."""
    q_out = BASE.heads * BASE.head_dim  # 8,192
    kv_out = BASE.kv_heads * BASE.head_dim  # 1,024 (GQA: 8 KV heads x 128)
    d, f = BASE.d_model, LLAMA3_70B_FFN_DIM
    return {
        "q": (d, q_out),
        "k": (d, kv_out),
        "v": (d, kv_out),
        "o": (q_out, d),
        "gate": (d, f),
        "up": (d, f),
        "down": (f, d),
    }


TARGET_SETS: dict[str, tuple[str, ...]] = {
    "q,v": ("q", "v"),
    "q,k,v,o": ("q", "k", "v", "o"),
    "all seven": ("q", "k", "v", "o", "gate", "up", "down"),
}


def lora_params_per_rank_per_layer(targets: str) -> int:
    """Sum of (d_in + d_out) over the targeted projections: LoRA params per unit rank per layer."""
    dims = projection_dims()
    return sum(dims[name][0] + dims[name][1] for name in TARGET_SETS[targets])


def dims_formula(targets: str) -> str:
    """The sum behind `lora_params_per_rank_per_layer`, written out: "(8,192 + 8,192) + ..."."""
    dims = projection_dims()
    return " + ".join(f"({dims[n][0]:,} + {dims[n][1]:,})" for n in TARGET_SETS[targets])


def expected_distinct(adapters: float, batch: float) -> float:
    """Expected distinct adapters among `batch` requests drawn uniformly from `adapters`."""
    if adapters <= 1:
        return min(1.0, adapters)
    return adapters * (1 - (1 - 1 / adapters) ** batch)


def _noun(n: float, word: str) -> str:
    """"1 replica", "7 replicas": the display noun agrees with the count."""
    return word if n == 1 else word + "s"


def _ceil(x: float) -> int:
    # The epsilon keeps an exact 7.0000000001 from becoming 8 through float rounding.
    return math.ceil(x - 1e-9)


class Params(StrictModel):
    variants: Annotated[
        int,
        Knob("Fine-tuned variants", "", 1, 2000, 1, log=True,
             help="Customer or task variants of the same base model.", draw=(20, 500)),
    ] = 100
    gpu: Annotated[
        Literal["H100 SXM", "H200", "B200"],
        Knob("GPU", help="Every replica, dedicated or shared, uses this part."),
    ] = "H100 SXM"
    gpus_per_replica: Annotated[
        int,
        Knob("GPUs per replica", "", 2, 16, 1,
             help="Tensor-parallel group that serves one copy of the base (the seed's 8).", draw=(4, 8)),
    ] = 8
    lora_rank: Annotated[
        int,
        Knob("LoRA rank", "", 1, 256, 1, log=True,
             help="r: the inner width of each adapter's A (d_in x r) and B (r x d_out).", draw=(4, 64)),
    ] = 8
    targets: Annotated[
        Targets,
        Knob("Projections the adapter targets",
             help="q,v is the original LoRA paper's choice; 'all seven' adds k, o and the MLP's gate, up, down."),
    ] = "q,v"
    heavy_rank: Annotated[
        int,
        Knob("Rank of the heavy comparison adapter", "", 1, 256, 1, log=True,
             help="A second adapter, on all seven projections, shown beside yours.", draw=(8, 64)),
    ] = 16
    total_tokens_per_s: Annotated[
        float,
        Knob("Output tokens/s, all variants", "tokens/s", 100, 10_000_000, log=True,
             help="Aggregate decode demand across every variant at peak.", draw=(5_000, 500_000)),
    ] = 30_000
    decode_batch: Annotated[
        int,
        Knob("Decode batch per replica", "sequences", 1, 512, 1, log=True,
             help="Sequences in one decode step of one replica.", draw=(16, 256)),
    ] = 64
    mean_context_tokens: Annotated[
        float,
        Knob("Mean context per sequence", "tokens", 100, 128_000, log=True,
             help="Prompt plus generated tokens whose KV each decode step reads.", draw=(500, 16_000)),
    ] = 2000
    hbm_efficiency: Annotated[
        float,
        Knob("Achieved HBM bandwidth", "", 0.3, 1.0, 0.05, percent=True,
             help="Fraction of the datasheet HBM bandwidth a decode step achieves.", draw=(0.5, 0.85)),
    ] = 0.7
    sgmv_overhead_fraction: Annotated[
        float,
        Knob("LoRA kernel tax", "", 0.0, 0.5, 0.01, percent=True,
             help="Fixed slowdown of a decode step from running batched LoRA kernels (SGMV/BGMV) on "
                  "the targeted projections, before counting adapter bytes.", draw=(0.02, 0.15)),
    ] = 0.05
    target_utilization: Annotated[
        float,
        Knob("Target utilization", "", 0.3, 1.0, 0.05, percent=True,
             help="Busy fraction each replica may run at peak, leaving room for bursts.", draw=(0.5, 0.85)),
    ] = 0.7
    adapter_budget_gb: Annotated[
        float,
        Knob("HBM reserved for adapters per replica", "GB", 0.5, 200, log=True,
             help="Slots for resident adapters, summed over the replica's GPUs.", draw=(2, 40)),
    ] = 8
    replicas_per_adapter: Annotated[
        int,
        Knob("Replicas each adapter is routed to", "", 1, 16, 1,
             help="Adapter-affinity routing: each variant's traffic goes to this many replicas.", draw=(1, 4)),
    ] = 2
    top_variant_share: Annotated[
        float,
        Knob("Traffic share of the busiest variant", "", 0.0, 1.0, 0.01, percent=True,
             help="Used to test whether the hottest variant earns its own replica.", draw=(0.02, 0.4)),
    ] = 0.1


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    g = GPUS[p.gpu]

    # --- the dedicated design: a replica per variant --------------------------------------------
    d.step("base_params", "Base model parameters (Llama-3-70B)", BASE.total_params, "1", noun="parameters")
    base = d.step(
        "base_weight_bytes", "Base weights in bf16", BASE.total_params * BF16_BYTES, "B",
        formula="{base_params} parameters × 2 B",
    )
    d.step(
        "dedicated_weight_bytes", "Weights held by a replica per variant", p.variants * base, "B",
        formula="{variants} variants × {base_weight_bytes} B",
    )

    # --- one replica's decode throughput (memory roofline) --------------------------------------
    kv_tok = d.step(
        "kv_bytes_per_token", "KV cache per token (Llama-3-70B, bf16)", BASE.kv_bytes_per_token(BF16_BYTES), "B",
        formula=f"2 × {BASE.layers} layers × {BASE.kv_heads} KV heads × {BASE.head_dim} × 2 B",
    )
    kv_step = d.step(
        "kv_bytes_per_step", "KV read per decode step", p.decode_batch * p.mean_context_tokens * kv_tok, "B",
        formula="{decode_batch} sequences × {mean_context_tokens} tokens × {kv_bytes_per_token} B",
    )
    bw = d.step(
        "replica_hbm_Bps", "Replica HBM bandwidth achieved", p.gpus_per_replica * g.hbm_Bps * p.hbm_efficiency,
        "B/s", formula=f"{{gpus_per_replica}} GPUs × {g.hbm_TBps:g} TB/s × {{hbm_efficiency}}",
    )
    base_step = d.step(
        "base_step_s", "One decode step, base model only", (base + kv_step) / bw, "s",
        formula="({base_weight_bytes} B + {kv_bytes_per_step} B) / {replica_hbm_Bps} B/s",
    )
    cap = d.step(
        "replica_tokens_per_s", "One replica's decode throughput, base only", p.decode_batch / base_step, "1/s",
        noun="tokens", formula="{decode_batch} tokens / {base_step_s} s",
    )
    per_variant = d.step(
        "per_variant_tokens_per_s", "Demand per variant (even spread)", p.total_tokens_per_s / p.variants, "1/s",
        noun="tokens", formula="{total_tokens_per_s} tokens/s / {variants}",
    )
    n_ded = max(1, _ceil(per_variant / (cap * p.target_utilization)))
    ded_reps = d.step(
        "dedicated_replicas_per_variant", "Replicas per variant (at least one)", n_ded, "1",
        noun=_noun(n_ded, "replica"),
        formula="max(1, ceil({per_variant_tokens_per_s} / ({replica_tokens_per_s} × {target_utilization})))",
    )
    d.step(
        "dedicated_gpus", "GPUs with a replica per variant", p.variants * ded_reps * p.gpus_per_replica, "1",
        noun="GPUs", formula="{variants} × {dedicated_replicas_per_variant} × {gpus_per_replica} GPUs",
    )
    d.step(
        "dedicated_utilization", "Average busy fraction of a dedicated replica",
        100 * p.total_tokens_per_s / (p.variants * ded_reps * cap), "%",
        formula="100 × {total_tokens_per_s} / ({variants} × {dedicated_replicas_per_variant} × {replica_tokens_per_s})",
    )

    # --- what one adapter weighs ----------------------------------------------------------------
    per_rank = d.step(
        "lora_params_per_rank_per_layer", "LoRA params per unit rank per layer, chosen projections",
        lora_params_per_rank_per_layer(p.targets), "1", noun="parameters",
        formula=dims_formula(p.targets),
    )
    adapter_params = d.step(
        "adapter_params", "Parameters in one adapter", p.lora_rank * per_rank * BASE.layers, "1",
        noun="parameters", formula=f"{{lora_rank}} × {{lora_params_per_rank_per_layer}} × {BASE.layers} layers",
    )
    adapter = d.step(
        "adapter_bytes", "One adapter in bf16", adapter_params * BF16_BYTES, "B",
        formula="{adapter_params} × 2 B",
    )
    d.step(
        "adapter_to_base_ratio", "Adapter as a share of the base", 100 * adapter / base, "%",
        formula="100 × {adapter_bytes} B / {base_weight_bytes} B",
    )
    d.step(
        "adapters_total_bytes", "Every variant's adapter", p.variants * adapter, "B",
        formula="{variants} × {adapter_bytes} B",
    )
    heavy_per_rank = d.step(
        "heavy_params_per_rank_per_layer", "LoRA params per unit rank per layer, all seven projections",
        lora_params_per_rank_per_layer("all seven"), "1", noun="parameters",
        formula=dims_formula("all seven"),
    )
    heavy = d.step(
        "heavy_adapter_bytes", "Heavy adapter: all seven projections, bf16",
        p.heavy_rank * heavy_per_rank * BASE.layers * BF16_BYTES, "B",
        formula=f"{{heavy_rank}} × {{heavy_params_per_rank_per_layer}} × {BASE.layers} layers × 2 B",
    )
    d.step(
        "heavy_to_adapter_ratio", "Heavy adapter over yours", heavy / adapter, "1", noun="×",
        formula="{heavy_adapter_bytes} B / {adapter_bytes} B",
    )
    d.step(
        "heavy_adapters_total_bytes", "Every variant as a heavy adapter", p.variants * heavy, "B",
        formula="{variants} × {heavy_adapter_bytes} B",
    )

    # --- the throughput cost of a mixed batch ---------------------------------------------------
    distinct = d.step(
        "distinct_adapters_per_batch", "Distinct adapters in one batch (uniform traffic, the worst case)",
        expected_distinct(p.variants, p.decode_batch), "1", noun="adapters",
        formula="{variants} × (1 − (1 − 1/{variants})^{decode_batch})",
    )
    adapter_read = d.step(
        "adapter_bytes_per_step", "Adapter weights read per decode step", distinct * adapter, "B",
        formula="{distinct_adapters_per_batch} × {adapter_bytes} B",
    )
    lora_step = d.step(
        "lora_step_s", "One decode step with the mixed batch",
        base_step * (1 + p.sgmv_overhead_fraction) + adapter_read / bw, "s",
        formula="{base_step_s} s × (1 + {sgmv_overhead_fraction}) + {adapter_bytes_per_step} B / {replica_hbm_Bps} B/s",
    )
    overhead = d.step(
        "mixed_batch_overhead_fraction", "Throughput lost to the mixed batch", 100 * (1 - base_step / lora_step), "%",
        formula="100 × (1 − {base_step_s} s / {lora_step_s} s)",
    )
    heavy_step = base_step * (1 + p.sgmv_overhead_fraction) + distinct * heavy / bw
    d.step(
        "heavy_mixed_batch_overhead_fraction", "Throughput lost with heavy adapters in the batch",
        100 * (1 - base_step / heavy_step), "%",
        formula="100 × (1 − {base_step_s} / ({base_step_s} × (1 + {sgmv_overhead_fraction}) + "
                "{distinct_adapters_per_batch} × {heavy_adapter_bytes} / {replica_hbm_Bps}))",
    )
    lora_cap = d.step(
        "multi_lora_replica_tokens_per_s", "One shared replica's throughput with mixed batches",
        p.decode_batch / lora_step, "1/s", noun="tokens", formula="{decode_batch} tokens / {lora_step_s} s",
    )

    # --- the shared fleet -----------------------------------------------------------------------
    slots = d.step(
        "adapter_slots_per_replica", "Adapters that fit the reserved HBM",
        math.floor(p.adapter_budget_gb * 1e9 / adapter + 1e-9), "1", noun="adapters",
        formula="floor({adapter_budget_gb} GB / {adapter_bytes} B)",
    )
    resident = d.step(
        "adapters_resident_per_replica", "Adapters resident on each replica", min(p.variants, slots), "1",
        noun="adapters", formula="min({variants}, {adapter_slots_per_replica})",
    )
    replica_bytes = d.step(
        "multi_lora_replica_weight_bytes", "Weights on one shared replica: the base once plus resident adapters",
        base + resident * adapter, "B",
        formula="{base_weight_bytes} B + {adapters_resident_per_replica} × {adapter_bytes} B",
    )
    left = d.step(
        "replica_hbm_left_bytes", "HBM left after base, adapter reserve and the batch's KV",
        p.gpus_per_replica * g.memory_bytes * HBM_USABLE_FRACTION - base - p.adapter_budget_gb * 1e9 - kv_step, "B",
        formula=f"{{gpus_per_replica}} × {g.memory_GB:g} GB × {HBM_USABLE_FRACTION} − {{base_weight_bytes}} B − "
                "{adapter_budget_gb} GB − {kv_bytes_per_step} B",
    )
    d.step("replica_fits_in_hbm", "Does the shared replica fit its HBM?", "yes" if left >= 0 else "no", "1",
           formula="{replica_hbm_left_bytes} ≥ 0")
    n_ml = max(1, _ceil(p.total_tokens_per_s / (lora_cap * p.target_utilization)))
    ml_reps = d.step(
        "multi_lora_replicas", "Shared replicas for all the traffic", n_ml, "1", noun=_noun(n_ml, "replica"),
        formula="max(1, ceil({total_tokens_per_s} / ({multi_lora_replica_tokens_per_s} × {target_utilization})))",
    )
    ml_gpus = d.step(
        "multi_lora_gpus", "GPUs in the shared multi-LoRA fleet", ml_reps * p.gpus_per_replica, "1", noun="GPUs",
        formula="{multi_lora_replicas} × {gpus_per_replica} GPUs",
    )
    d.step(
        "multi_lora_utilization", "Busy fraction of a shared replica",
        100 * p.total_tokens_per_s / (ml_reps * lora_cap), "%",
        formula="100 × {total_tokens_per_s} / ({multi_lora_replicas} × {multi_lora_replica_tokens_per_s})",
    )
    d.step(
        "multi_lora_fleet_weight_bytes", "Weights across the shared fleet", ml_reps * replica_bytes, "B",
        formula="{multi_lora_replicas} × {multi_lora_replica_weight_bytes} B",
    )
    d.step(
        "gpu_saving_ratio", "Dedicated GPUs over shared GPUs", d.value("dedicated_gpus") / ml_gpus, "1", noun="×",
        formula="{dedicated_gpus} / {multi_lora_gpus}",
    )

    # --- routing that keeps hot adapters resident ------------------------------------------------
    routed = d.step(
        "adapters_routed_per_replica", "Adapters whose traffic lands on one replica (affinity routing)",
        min(p.variants, _ceil(p.variants * min(p.replicas_per_adapter, ml_reps) / ml_reps)), "1", noun="adapters",
        formula="min({variants}, ceil({variants} × min({replicas_per_adapter}, {multi_lora_replicas}) / {multi_lora_replicas}))",
    )
    d.step(
        "routed_adapters_fit", "Do the routed adapters all fit the slots?", "yes" if routed <= slots else "no", "1",
        formula="{adapters_routed_per_replica} ≤ {adapter_slots_per_replica}",
    )
    distinct_routed = d.step(
        "distinct_adapters_per_batch_routed", "Distinct adapters in one batch with affinity routing",
        expected_distinct(routed, p.decode_batch), "1", noun="adapters",
        formula="{adapters_routed_per_replica} × (1 − (1 − 1/{adapters_routed_per_replica})^{decode_batch})",
    )
    routed_step = base_step * (1 + p.sgmv_overhead_fraction) + distinct_routed * adapter / bw
    d.step(
        "mixed_batch_overhead_routed_fraction", "Throughput lost with affinity routing",
        100 * (1 - base_step / routed_step), "%",
        formula="100 × (1 − {base_step_s} / ({base_step_s} × (1 + {sgmv_overhead_fraction}) + "
                "{distinct_adapters_per_batch_routed} × {adapter_bytes} / {replica_hbm_Bps}))",
    )
    heavy_routed_step = base_step * (1 + p.sgmv_overhead_fraction) + distinct_routed * heavy / bw
    d.step(
        "heavy_mixed_batch_overhead_routed_fraction", "Throughput lost with heavy adapters and affinity routing",
        100 * (1 - base_step / heavy_routed_step), "%",
        formula="100 × (1 − {base_step_s} / ({base_step_s} × (1 + {sgmv_overhead_fraction}) + "
                "{distinct_adapters_per_batch_routed} × {heavy_adapter_bytes} / {replica_hbm_Bps}))",
    )
    heavy_slots = d.step(
        "heavy_adapter_slots_per_replica", "Heavy adapters that fit the same reserve",
        math.floor(p.adapter_budget_gb * 1e9 / heavy + 1e-9), "1", noun="adapters",
        formula="floor({adapter_budget_gb} GB / {heavy_adapter_bytes} B)",
    )
    d.step(
        "heavy_routed_adapters_fit", "Would heavy adapters all fit with the same routing?",
        "yes" if routed <= heavy_slots else "no", "1",
        formula="{adapters_routed_per_replica} ≤ {heavy_adapter_slots_per_replica}",
    )
    # Tensor parallel shards each adapter across the replica's GPUs, so a load uses every
    # GPU's own PCIe link at once.
    load = d.step(
        "adapter_load_from_dram_s", "Load one adapter from host DRAM (sharded over every GPU's PCIe Gen5)",
        adapter / (p.gpus_per_replica * PCIE.Bps), "s",
        formula=f"{{adapter_bytes}} B / ({{gpus_per_replica}} × {PCIE.GBps:.1f} GB/s)",
    )
    d.step(
        "heavy_adapter_load_from_dram_s", "Load one heavy adapter from host DRAM",
        heavy / (p.gpus_per_replica * PCIE.Bps), "s",
        formula=f"{{heavy_adapter_bytes}} B / ({{gpus_per_replica}} × {PCIE.GBps:.1f} GB/s)",
    )
    d.step(
        "adapter_load_from_nvme_s", "Load one adapter from one local NVMe Gen5 drive", adapter / NVME.Bps, "s",
        formula=f"{{adapter_bytes}} B / {NVME.GBps:g} GB/s",
    )
    d.step(
        "adapter_load_in_steps", "A DRAM load measured in decode steps", load / base_step, "1", noun="steps",
        formula="{adapter_load_from_dram_s} s / {base_step_s} s",
    )

    # --- when a variant earns its own replica ----------------------------------------------------
    threshold = d.step(
        "dedicate_threshold_tokens_per_s", "Steady demand that keeps a replica at target utilization",
        cap * p.target_utilization, "1/s", noun="tokens",
        formula="{replica_tokens_per_s} × {target_utilization}",
    )
    d.step(
        "dedicate_threshold_share", "The same as a share of all traffic",
        100 * threshold / p.total_tokens_per_s, "%",
        formula="100 × {dedicate_threshold_tokens_per_s} / {total_tokens_per_s}",
    )
    top = d.step(
        "top_variant_tokens_per_s", "Busiest variant's demand", p.total_tokens_per_s * p.top_variant_share, "1/s",
        noun="tokens", formula="{total_tokens_per_s} × {top_variant_share}",
    )
    d.step(
        "top_variant_earns_replica", "Does the busiest variant fill a replica of its own?",
        "yes" if top >= threshold else "no", "1",
        formula="{top_variant_tokens_per_s} ≥ {dedicate_threshold_tokens_per_s}",
    )
    d.step(
        "full_finetune_extra_gpus", "A full fine-tune (or another base): its own replica, however idle",
        p.gpus_per_replica, "1", noun="GPUs", formula="{gpus_per_replica} GPUs",
    )
    return d
