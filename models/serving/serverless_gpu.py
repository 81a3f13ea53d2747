"""Serverless GPUs: seconds to first token, billed by the second (seeds 000, 003, 004).

The promise is to run a customer's model within seconds of a request and to charge only for the
seconds it runs. Four pieces of arithmetic carry the answer:

    cold start       = image pull + container start + CUDA init + weight load + compile/graph capture
                       + warm-up + first prefill          (weight load = the engine's weight bytes / link B/s)
    snapshot start   = container start + restore overhead + snapshot bytes / (GPUs x restore B/s per GPU)
                       + first prefill (compile and imports skipped: the snapshot holds their result)
    idle capacity    = Little's law: slots refilling = scale-up rate x refill time, plus a Poisson
                       buffer of z x sqrt(mean) so the pool rarely runs dry. With cold refills the slots
                       are booted instances; with a restore inside the promise they are empty GPUs any
                       model's restore can use; booted instances only where the restore misses it
    long tail        = the models beyond the head share a given fraction of scale-ups; a pool per tail
                       model is at least one slot, against one shared pool of empty GPUs on the tail's rate
    margin           = billed GPU-seconds / provisioned GPU-seconds, per instance and for the fleet;
                       gross margin = 1 - cost per GPU-second / (price per GPU-second x fleet utilization)

Modelling choices (the page states them):
  * Stages run one after another. Real loaders overlap some (stream weights while CUDA initializes),
    so the sum is an upper bound the waterfall lets you attack stage by stage.
  * Weight load is limited by the slower of the source link at the stated efficiency and the
    host-to-GPU PCIe Gen5 links of the instance's GPUs.
  * The model, the GPU, the formats and the efficiencies are the engine's (models/engine): weight
    bytes from the parameters counted in the weight format, the first prefill at the prefill MFU
    with exact attention pairs, a batch-1 decode step from the roofline plus the fixed step cost.
  * A refill (or an unbilled boot) is the chain up to, not including, the first prefill: the
    prefill serves a customer and is billed.
  * Every GPU of an instance restores its own share of the snapshot over its own PCIe link, so the
    restore rate scales with the GPUs as the snapshot does with the model (a per-instance rate made a
    405B restore on eight GPUs slower than its cold start).
  * Tail models are taken to be the page's model in size and GPUs; the average tail model stands for all.
  * The snapshot lives on the node's local disk beside a cached image, and the engine frees its
    KV-cache pool before the checkpoint; the page shows what each assumption costs when it fails.
  * Packing: MIG gives a tenant whole memory slices (8 per GPU; floor(8 / tenants) each) and the
    matching share of HBM bandwidth and SMs; time-slicing shares all memory and bandwidth, so a tenant's
    decode step stretches by one step for every neighbour decoding at the same moment.
  * Margin: an instance is billed for its serving life (requests plus the idle window before
    scale-down), never for its boot; warm-pool slots and stranded capacity are never billed.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import model_validator

from models.catalog import MIG_MAX_INSTANCES, MIG_MEMORY_SLICES
from models.catalog import link as catalog_link
from models.core import Derivation, Knob, StrictModel
from models.units import format_quantity
from models.engine.knobs import EngineKnobs, accelerator, replica, with_defaults
from models.engine.record import record_model
from models.engine.serving_knobs import RequestKnobs

HOST_LINK = "PCIe Gen5 x16"  # host-to-GPU link of each GPU, for loading weights into HBM
SECONDS_PER_MONTH = 30 * 86_400  # a 30-day month

WeightSource = Literal["10GbE", "100GbE", "200GbE", "400GbE", "NVMe Gen4 SSD", "NVMe Gen5 SSD"]

# The cold-start chain in order: (step key, short label for the waterfall).
COLD_STAGES = (
    ("image_pull_s", "Image pull"),
    ("container_start_s", "Container start"),
    ("cuda_init_s", "CUDA init"),
    ("weight_load_s", "Weight load"),
    ("compile_s", "Compile + graphs"),
    ("warmup_s", "Warm-up"),
    ("first_prefill_s", "First prefill"),
)
SNAPSHOT_STAGES = (
    ("container_start_s", "Container start"),
    ("snapshot_overhead_s", "Restore overhead"),
    ("snapshot_restore_s", "Memory restore"),
    ("first_prefill_s", "First prefill"),
)


class _ServerlessKnobs(StrictModel):
    image_gb: Annotated[
        float,
        Knob("Container image, without weights", "GB", 0.5, 50, 0.5, log=True,
             help="CUDA libraries, PyTorch, the serving engine, the customer's code.", draw=(3, 20)),
    ] = 8
    image_pull_GBps: Annotated[
        float,
        Knob("Image pull rate", "GB/s", 0.05, 10, 0.05, log=True,
             help="Registry download plus layer decompression and unpacking: decompression, not the network, "
                  "usually sets it.", draw=(0.2, 2)),
    ] = 0.5
    container_start_s: Annotated[
        float,
        Knob("Container start", "s", 0.1, 30, 0.1, log=True, help="Sandbox, namespaces, mounts, GPU attach.",
             draw=(0.5, 5)),
    ] = 1.0
    cuda_init_s: Annotated[
        float,
        Knob("Runtime and CUDA init", "s", 0.5, 60, 0.5, log=True,
             help="Python imports, CUDA context, cuBLAS and NCCL handles.", draw=(2, 10)),
    ] = 4.0
    weight_source: Annotated[
        WeightSource,
        Knob("Where the weights come from", help="Object store over the node's NIC, or the node's local NVMe "
             "(catalog links)."),
    ] = "100GbE"
    weight_link_efficiency: Annotated[
        float,
        Knob("Share of that link a load achieves", "", 0.05, 1, 0.05, percent=True,
             help="Object stores give a fraction of line rate to one process unless reads are parallel and "
                  "ranged.", draw=(0.2, 0.8)),
    ] = 0.4
    compile_s: Annotated[
        float,
        Knob("Compile and graph capture", "s", 0, 600, 1,
             help="torch.compile, kernel autotuning, CUDA-graph capture per batch size.", draw=(10, 120)),
    ] = 30
    warmup_s: Annotated[
        float,
        Knob("Warm-up", "s", 0, 60, 0.5, help="Dummy requests that fault in allocator pools and caches.",
             draw=(1, 10)),
    ] = 3
    snapshot_restore_GBps: Annotated[
        float,
        Knob("Snapshot restore rate per GPU", "GB/s", 0.5, 60, 0.5, log=True,
             help="Each GPU restores its own share of the snapshot in parallel: local NVMe into host memory and "
                  "over that GPU's PCIe link into HBM, checksums included. An instance on n GPUs restores at n "
                  "times this.", draw=(5, 20)),
    ] = 10
    snapshot_overhead_s: Annotated[
        float,
        Knob("Restore overhead", "s", 0.1, 20, 0.1, log=True,
             help="Process restore and re-attaching the CUDA context to the GPU.", draw=(0.3, 3)),
    ] = 1.0
    cpu_snapshot_gb: Annotated[
        float,
        Knob("Host memory in the snapshot", "GB", 0.5, 200, 0.5, log=True,
             help="Python heap, imported libraries, tokenizer, pinned buffers.", draw=(2, 30)),
    ] = 6
    gpu_extra_snapshot_gb: Annotated[
        float,
        Knob("GPU memory beyond the weights", "GB", 0, 40, 0.5,
             help="CUDA graphs, allocator pools, workspaces; the KV-cache pool is freed before the checkpoint.",
             draw=(0.5, 5)),
    ] = 2
    ttft_budget_s: Annotated[
        float,
        Knob("First-token budget for a cold request", "s", 0.5, 120, 0.5, log=True,
             help="What 'within seconds' promises a request that finds no running instance.", draw=(2, 30)),
    ] = 5
    scale_ups_per_min: Annotated[
        float,
        Knob("Scale-ups at peak", "instances/min", 0.1, 10_000, 0.1, log=True,
             help="New instances the autoscaler starts per minute for this model at peak.", draw=(2, 200)),
    ] = 30
    pool_buffer_z: Annotated[
        float,
        Knob("Pool buffer", "σ", 0, 4, 0.1,
             help="Slots above the Little's-law mean, in standard deviations of the Poisson count refilling.",
             draw=(1, 3)),
    ] = 2
    tenants_per_gpu: Annotated[
        int,
        Knob("Tenants packed per GPU", "tenants", 1, MIG_MAX_INSTANCES, 1,
             help="Small models sharing one GPU (MIG allows at most 7 instances).", draw=(1, 4)),
    ] = 2
    kv_reserve_gb: Annotated[
        float,
        Knob("KV cache each tenant reserves", "GB", 0.5, 100, 0.5, log=True, help="Room for its batch's KV.",
             draw=(1, 16)),
    ] = 4
    neighbour_active_share: Annotated[
        float,
        Knob("Neighbour busy share", "", 0, 1, 0.05, percent=True,
             help="Chance a given neighbour is decoding at the same moment (time-slicing).", draw=(0.1, 0.7)),
    ] = 0.3
    instance_billed_s: Annotated[
        float,
        Knob("Billed life of an instance", "s", 10, 86_400, 10, log=True,
             help="Serving plus the idle window before scale-down; what the customer pays for per start.",
             draw=(60, 3_600)),
    ] = 300
    stranded_share: Annotated[
        float,
        Knob("Stranded capacity", "", 0, 0.6, 0.01, percent=True,
             help="Fleet share no one can buy: packing fragments, headroom for growth, draining nodes.",
             draw=(0.05, 0.3)),
    ] = 0.15
    price_per_gpu_s_usd: Annotated[
        float,
        Knob("Price per GPU-second", "USD", 0.0001, 0.01, 0.00005, log=True,
             help="What the customer pays per GPU-second billed.", draw=(0.0006, 0.0015)),
    ] = 0.0011
    gpu_cost_per_hour_usd: Annotated[
        float,
        Knob("Platform cost per GPU-hour", "USD", 0.5, 10, 0.1, log=True,
             help="All-in: the GPU's amortization or lease, power, network, staff.", draw=(1.2, 3.5)),
    ] = 2.0
    head_models: Annotated[
        int,
        Knob("Models as busy as this one", "models", 1, 50, 1, log=True,
             help="The head of the catalogue: models with this model's scale-up rate.", draw=(3, 30)),
    ] = 10
    catalog_models: Annotated[
        int,
        Knob("Models deployed on the platform", "models", 100, 100_000, 10, log=True,
             help="Every customer model with a deployment, busy or not.", draw=(200, 5_000)),
    ] = 1_000
    tail_traffic_share: Annotated[
        float,
        Knob("Tail's share of scale-ups", "", 0.01, 0.9, 0.01, percent=True,
             help="Share of all scale-ups that go to the models outside the head (a Zipf-like catalogue puts a "
                  "fifth to a half of traffic there).", draw=(0.1, 0.4)),
    ] = 0.2



# Llama 3 8B on one H100 is the seed's small customer model; the first request is a 1,000-token
# prompt on a fresh instance, whose prefix cache is empty.
_Engine = with_defaults(EngineKnobs, model="Llama-3-8B", tp_degree=1)
_Request = with_defaults(RequestKnobs, prompt_tokens=1_000, prefix_cache_hit=0.0)


class Params(_Engine, _Request, _ServerlessKnobs):
    """The platform's own knobs first, then the first request, then the engine's model and GPU."""

    @model_validator(mode="after")
    def _weights_fit(self) -> "Params":
        r = replica(self)
        need = r.weight_bytes + self.gpu_extra_snapshot_gb * 1e9
        if need > r.usable_hbm_bytes:
            raise ValueError(
                f"{r.model.name} in {self.weight_precision} is {r.weight_bytes / 1e9:,.0f} GB of weights, plus "
                f"{self.gpu_extra_snapshot_gb:g} GB of CUDA graphs and pools; {self.tp_degree} × {r.hw.name} hold "
                f"{r.usable_hbm_bytes / 1e9:,.0f} GB usable. Use more GPUs per instance, a smaller weight format "
                "or a smaller model.")
        return self


# NVIDIA Dynamo's Snapshot page: "Cold Start ~1 min", "Warm Start (restore from checkpoint) ~10 sec" for a
# vLLM or SGLang worker; restore time depends on storage bandwidth, GPU model and staying on the node.
DYNAMO_COLD_START_S, DYNAMO_RESTORE_S = 60.0, 10.0


def pool_slots(rate_per_s: float, refill_s: float, z: float) -> int:
    """Little's law mean of slots refilling plus z Poisson standard deviations, rounded up."""
    mean = rate_per_s * refill_s
    return max(1, math.ceil(mean + z * math.sqrt(mean) - 1e-9)) if mean > 0 else 0


def mig_tenants_fit(slot_need_bytes: float, gpu_bytes: float, usable_fraction: float) -> int:
    """Most tenants n (<= 7) whose MIG slice of floor(8 / n) memory slices holds one tenant."""
    best = 0
    for n in range(1, MIG_MAX_INSTANCES + 1):
        slice_bytes = (MIG_MEMORY_SLICES // n) / MIG_MEMORY_SLICES * gpu_bytes * usable_fraction
        if slot_need_bytes <= slice_bytes:
            best = n
    return best


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    r, hw = replica(p), accelerator(p)
    src, host = catalog_link(p.weight_source), catalog_link(HOST_LINK)

    # --- the cold-start chain ---
    d.step("image_pull_s", "Image pull: image / pull rate", p.image_gb / p.image_pull_GBps, "s",
           formula="{image_gb} GB / {image_pull_GBps} GB/s")
    d.step("container_start_s", "Container start", p.container_start_s, "s")
    d.step("cuda_init_s", "Runtime and CUDA init", p.cuda_init_s, "s")
    record_model(d, p)
    weights = r.weight_bytes
    d.step("source_link_Bps", f"{p.weight_source} (catalog)", src.Bps, "B/s")
    d.step("host_link_Bps", f"{HOST_LINK} per GPU (catalog)", host.Bps, "B/s")
    load_bw = d.step("weight_load_Bps", "Load rate: the slower of the source at its efficiency and the PCIe links",
                     min(src.Bps * p.weight_link_efficiency, host.Bps * p.tp_degree), "B/s",
                     formula="min({source_link_Bps} B/s × {weight_link_efficiency}, "
                             "{tp_degree} × {host_link_Bps} B/s)")
    d.step("weight_load_s", "Weight load", weights / load_bw, "s", formula="{weight_bytes} B / {weight_load_Bps} B/s")
    d.step("compile_s", "Compile and CUDA-graph capture", p.compile_s, "s")
    d.step("warmup_s", "Warm-up", p.warmup_s, "s")
    new = d.step("uncached_prompt_tokens", "First prompt's tokens to prefill (a fresh instance's cache is empty)",
                 p.prompt_tokens * (1 - p.prefix_cache_hit), "1", noun="tokens",
                 formula="{prompt_tokens} × (1 − {prefix_cache_hit})")
    cached = d.step("cached_prompt_tokens", "First prompt's tokens already cached", p.prompt_tokens - new, "1",
                    noun="tokens", formula="{prompt_tokens} − {uncached_prompt_tokens}")
    d.step("attention_flops_per_position", "Attention FLOP per token per earlier token (QK^T and AV)",
           r.attention_flops_per_position, "FLOP",
           note="0 when attention FLOP are not counted (the textbook 2 × parameters per token).")
    d.step("first_prefill_flops", "First prefill FLOP (2 × active params per token + attention over earlier tokens)",
           r.prefill_flops(new, cached), "FLOP",
           formula="{uncached_prompt_tokens} × 2 FLOP × {active_params} + {attention_flops_per_position} × "
                   "({uncached_prompt_tokens} × {cached_prompt_tokens} + {uncached_prompt_tokens} × "
                   "({uncached_prompt_tokens} − 1) / 2)")
    d.step("gpu_peak_flops", f"{hw.name} dense {p.compute_precision} peak", hw.peak(p.compute_precision), "FLOP/s")
    d.step("instance_flops", "Instance compute at the prefill MFU", r.peak_flops * r.prefill_mfu, "FLOP/s",
           formula="{tp_degree} × {gpu_peak_flops} FLOP/s × {prefill_mfu}")
    d.step("first_prefill_allreduce_s", "Its tensor-parallel all-reduces", r.allreduce_s(new) if new > 0 else 0.0,
           "s", note="None on one GPU.")
    prefill = d.step("first_prefill_s", "First prefill", r.prefill_s(new, cached), "s",
                     formula="{first_prefill_flops} FLOP / {instance_flops} FLOP/s + {first_prefill_allreduce_s} s")
    cold = d.step("cold_start_s", "Cold start: request to first token, every stage in series",
                  sum(d.value(k) for k, _ in COLD_STAGES), "s",
                  formula=" + ".join(f"{{{k}}}" for k, _ in COLD_STAGES) + " s")
    boot = d.step("boot_s", "Boot: the chain before the first prefill (refill time, unbilled)", cold - prefill, "s",
                  formula="{cold_start_s} s − {first_prefill_s} s")
    d.step("weight_load_share", "Weight load's share of the cold start", d.value("weight_load_s") / cold, "1",
           percent=True, formula="{weight_load_s} / {cold_start_s}")
    d.step("compile_share", "Compile's share of the cold start", p.compile_s / cold, "1", percent=True,
           formula="{compile_s} / {cold_start_s}")
    wshare = d.value("weight_load_s") / cold
    d.step("cold_start_lever_verdict", "What dominates the cold start: the weights or the fixed work?",
           "the fixed work outweighs the weights, so skip work (snapshot, cache the compile) rather than buy bandwidth"
           if wshare < 0.5 else
           "the weights dominate, so a faster pull or a local weight cache pays before skipping work",
           formula="{weight_load_share} against 50%", kind="verdict")
    d.step("instance_gpus", "GPUs in one instance", p.tp_degree, "1", noun="GPU" if p.tp_degree == 1 else "GPUs",
           formula="{tp_degree}")

    # --- the snapshot ---
    d.step("cpu_snapshot_bytes", "Host memory in the snapshot", p.cpu_snapshot_gb * 1e9, "B",
           formula="{cpu_snapshot_gb} GB")
    d.step("gpu_extra_snapshot_bytes", "GPU memory beyond the weights", p.gpu_extra_snapshot_gb * 1e9, "B",
           formula="{gpu_extra_snapshot_gb} GB")
    snap = d.step("snapshot_bytes", "Snapshot: weights + other GPU state + host memory",
                  weights + p.gpu_extra_snapshot_gb * 1e9 + p.cpu_snapshot_gb * 1e9, "B",
                  formula="{weight_bytes} B + {gpu_extra_snapshot_bytes} B + {cpu_snapshot_bytes} B")
    restore_bw = d.step("snapshot_restore_Bps", "Restore rate: every GPU of the instance restores its share at once",
                        p.tp_degree * p.snapshot_restore_GBps * 1e9, "B/s",
                        formula="{tp_degree} × {snapshot_restore_GBps} GB/s")
    d.step("snapshot_overhead_s", "Restore overhead", p.snapshot_overhead_s, "s")
    d.step("snapshot_restore_s", "Memory restore", snap / restore_bw, "s",
           formula="{snapshot_bytes} B / {snapshot_restore_Bps} B/s")
    ss = d.step("snapshot_start_s", "Snapshot start: no pull, no init, no compile",
                sum(d.value(k) for k, _ in SNAPSHOT_STAGES), "s",
                formula=" + ".join(f"{{{k}}}" for k, _ in SNAPSHOT_STAGES) + " s")
    snap_boot = d.step("snapshot_boot_s", "Snapshot boot (refill time)", ss - prefill, "s",
                       formula="{snapshot_start_s} s − {first_prefill_s} s")
    d.step("snapshot_speedup", "Cold start over snapshot start", cold / ss, "1", noun="×",
           formula="{cold_start_s} s / {snapshot_start_s} s")
    d.step("cold_start_meets_budget", "Does a cold start meet the first-token budget?",
           "yes" if cold <= p.ttft_budget_s else "no", formula="{cold_start_s} s ≤ {ttft_budget_s} s")
    d.step("snapshot_meets_budget", "Does a snapshot start meet it?", "yes" if ss <= p.ttft_budget_s else "no",
           formula="{snapshot_start_s} s ≤ {ttft_budget_s} s")
    # Assumption 1 failing: the snapshot is not on this node and streams over the weight link.
    d.step("snapshot_start_remote_s", "Snapshot start when the snapshot is not on the node",
           p.container_start_s + p.snapshot_overhead_s + snap / min(load_bw, restore_bw) + prefill, "s",
           formula="{container_start_s} + {snapshot_overhead_s} + {snapshot_bytes} / "
                   "min({weight_load_Bps}, {snapshot_restore_Bps}) + {first_prefill_s}")
    d.step("snapshot_remote_penalty_s", "What a snapshot off the node adds", d.value("snapshot_start_remote_s") - ss,
           "s", formula="{snapshot_start_remote_s} s − {snapshot_start_s} s")
    # Assumption 2 failing: the engine's KV pool (all free HBM) is checkpointed with the weights.
    d.step("gpu_memory_bytes", f"{hw.name} HBM", hw.hbm_bytes, "B")
    usable = d.step("usable_hbm_bytes", "HBM the engine claims on the instance", r.usable_hbm_bytes, "B",
                    formula="{usable_hbm_fraction} × {tp_degree} × {gpu_memory_bytes} B")
    kv_pool = d.step("kv_pool_bytes", "Its KV-cache pool", max(0.0, usable - weights - p.gpu_extra_snapshot_gb * 1e9),
                     "B", formula="{usable_hbm_bytes} B − {weight_bytes} B − {gpu_extra_snapshot_bytes} B")
    d.step("snapshot_start_with_kv_pool_s", "Snapshot start when the KV pool is checkpointed too",
           p.container_start_s + p.snapshot_overhead_s + (snap + kv_pool) / restore_bw + prefill, "s",
           formula="{container_start_s} s + {snapshot_overhead_s} s + ({snapshot_bytes} B + {kv_pool_bytes} B) / "
                   "{snapshot_restore_Bps} B/s + {first_prefill_s} s")

    # --- the warm pool, by Little's law ---
    rate = d.step("scale_up_rate", "Scale-ups per second at peak", p.scale_ups_per_min / 60, "1/s", noun="instances",
                  formula="{scale_ups_per_min}")
    d.step("warm_slots_refilling", "Slots refilling at any moment (Little's law)", rate * boot, "1",
                  noun="slots", formula="{scale_up_rate} × {boot_s}")
    d.step("warm_pool_slots", "Booted pool with cold refills: the mean plus a Poisson buffer", pool_slots(rate, boot, p.pool_buffer_z),
           "1", noun="slots", formula="max(1, ceil({warm_slots_refilling} + {pool_buffer_z} × sqrt({warm_slots_refilling})))")
    d.step("warm_slots_refilling_with_snapshot", "Slots busy restoring at any moment (Little's law)",
                    rate * snap_boot, "1", noun="slots", formula="{scale_up_rate} × {snapshot_boot_s}")
    d.step("warm_pool_slots_with_snapshot", "Idle slots with snapshots: the restores in flight plus the same buffer",
           pool_slots(rate, snap_boot, p.pool_buffer_z), "1", noun="slots",
           formula="max(1, ceil({warm_slots_refilling_with_snapshot} + {pool_buffer_z} × "
                   "sqrt({warm_slots_refilling_with_snapshot})))")
    d.step("snapshot_pool_holds", "What those slots hold",
           "empty GPUs, shared by every model" if ss <= p.ttft_budget_s else "booted instances of this model",
           formula="{snapshot_start_s} s ≤ {ttft_budget_s} s", kind="verdict")
    # Measured: NVIDIA Dynamo's Snapshot page, a vLLM or SGLang worker, about a minute cold and about 10 s restored.
    dyn_cold = d.step("dynamo_cold_start_s", "Dynamo Snapshot: cold start of a vLLM or SGLang worker, reported",
                      DYNAMO_COLD_START_S, "s", kind="lookup", note="NVIDIA Dynamo docs, Snapshot: ~1 min.")
    dyn = d.step("dynamo_restore_s", "Dynamo Snapshot: restore from a checkpoint, reported", DYNAMO_RESTORE_S, "s",
                 kind="lookup", note="NVIDIA Dynamo docs, Snapshot: ~10 s.")
    d.step("dynamo_speedup", "Its cold start over its restore", dyn_cold / dyn, "1", noun="×",
           formula="{dynamo_cold_start_s} s / {dynamo_restore_s} s")
    d.step("snapshot_vs_dynamo", "This page's snapshot start against Dynamo's restore", ss / dyn, "1", percent=True,
           formula="{snapshot_start_s} s / {dynamo_restore_s} s")
    n_dyn = pool_slots(rate, dyn, p.pool_buffer_z)
    d.step("warm_pool_slots_at_dynamo_restore", "Booted slots refilled by restores at Dynamo's restore time", n_dyn,
           "1", noun="slots", formula="max(1, ceil({scale_up_rate} × {dynamo_restore_s} + {pool_buffer_z} × "
                                      "sqrt({scale_up_rate} × {dynamo_restore_s})))")
    d.step("dynamo_restore_consequence", "What a restore at Dynamo's figure means for the idle slots",
           "inside the promise too, so the empty GPUs still suffice" if dyn <= p.ttft_budget_s
           else "outside the promise, so the idle slots would again be booted instances of each model, refilled "
                "by restores", formula="{dynamo_restore_s} s ≤ {ttft_budget_s} s", kind="verdict")

    # --- isolation and packing ---
    tenant = d.step("tenant_bytes", "One tenant's memory: weights plus KV reserve", weights + p.kv_reserve_gb * 1e9,
                    "B", formula="{weight_bytes} B + {kv_reserve_gb} GB")
    d.step("whole_gpu_memory_used", "Share of one GPU's memory a tenant uses alone",
           tenant / (p.tp_degree * hw.hbm_bytes), "1", percent=True,
           formula="{tenant_bytes} / ({tp_degree} × {gpu_memory_bytes})")
    room = p.tp_degree * hw.hbm_bytes * p.usable_hbm_fraction
    d.require("tenant_fits_its_gpus", tenant <= room, lambda: (
        f"One tenant does not fit its own accelerators: weights plus its KV reserve are "
        f"{format_quantity(tenant, 'B')}, and {p.tp_degree} × {hw.name} hold {format_quantity(room, 'B')} usable. "
        "Shrink the KV reserve or use more accelerators per tenant."))
    d.step("tenants_fit_time_sliced", "Tenants whose memory fits one shared GPU (time-slicing)",
           math.floor(p.usable_hbm_fraction * hw.hbm_bytes / tenant), "1", noun="tenants",
           formula="floor({usable_hbm_fraction} × {gpu_memory_bytes} B / {tenant_bytes} B)")
    d.step("tenants_fit_mig", "Tenants that fit as MIG instances (whole memory slices each)",
           mig_tenants_fit(tenant, hw.hbm_bytes, p.usable_hbm_fraction), "1", noun="tenants",
           formula=f"largest n ≤ {MIG_MAX_INSTANCES} with floor({MIG_MEMORY_SLICES} / n) / {MIG_MEMORY_SLICES} × "
                   "{usable_hbm_fraction} × {gpu_memory_bytes} ≥ {tenant_bytes}", kind="search")
    d.step("gpu_hbm_Bps", f"{hw.name} HBM bandwidth", hw.hbm_Bps, "B/s")
    d.step("replica_hbm_Bps", "Instance HBM bandwidth at the decode MBU", r.achieved_hbm_Bps, "B/s",
           formula="{tp_degree} × {gpu_hbm_Bps} B/s × {hbm_efficiency}")
    ctx = d.step("decode_context_tokens", "Average context a decode step reads", p.prompt_tokens + p.output_tokens / 2,
                 "1", noun="tokens", formula="{prompt_tokens} + {output_tokens} / 2")
    one = r.decode_step(1, ctx)
    d.step("decode_step_memory_s", "Batch-1 decode step, bytes side: every weight and the sequence's KV", one.memory_s,
           "s", formula="({weight_bytes} B + {kv_bytes_per_token} B × {decode_context_tokens}) / {replica_hbm_Bps} B/s")
    d.step("decode_step_compute_s", "Batch-1 decode step, FLOP side", one.compute_s, "s",
           formula="(2 FLOP × {active_params} + {attention_flops_per_position} × {decode_context_tokens}) / "
                   "({tp_degree} × {gpu_peak_flops} × {decode_mfu})")
    d.step("decode_step_allreduce_s", "Batch-1 decode step, tensor-parallel all-reduces", one.allreduce_s, "s",
           note="None on one GPU." if r.tp == 1 else "")
    d.step("step_overhead_s", "Fixed cost per step (launches, sampling)", one.overhead_s, "s",
           formula="{step_overhead_ms}")
    alone = d.step("tpot_whole_gpu_s", "Decode step with the instance's GPUs to itself (batch 1)", one.step_s, "s",
                   formula="max({decode_step_memory_s} s, {decode_step_compute_s} s) + {decode_step_allreduce_s} s + "
                           "{step_overhead_s} s")
    fit_ts = math.floor(p.usable_hbm_fraction * hw.hbm_bytes / tenant)
    fit_mig = mig_tenants_fit(tenant, hw.hbm_bytes, p.usable_hbm_fraction)
    # The packing figures use the tenants actually packed: the knob's count, capped by what fits.
    n = max(1, min(p.tenants_per_gpu, fit_ts))
    n_mig = max(1, min(p.tenants_per_gpu, fit_mig))
    d.step("tenants_time_sliced", "Tenants packed time-sliced (the knob, capped by what fits)", n, "1",
           noun="tenant" if n == 1 else "tenants", formula="max(1, min({tenants_per_gpu}, {tenants_fit_time_sliced}))")
    d.step("tenants_mig", "Tenants packed as MIG instances (the knob, capped by what fits)", n_mig, "1",
           noun="tenant" if n_mig == 1 else "tenants", formula="max(1, min({tenants_per_gpu}, {tenants_fit_mig}))")
    d.step("packing_verdict", "Does either scheme share a GPU here?",
           "with one tenant a GPU neither scheme shares it, so both step at the whole-GPU figure"
           if n == 1 and n_mig == 1 else "one shared fault domain for the time-sliced ones",
           formula="{tenants_time_sliced} and {tenants_mig} against 1", kind="verdict")
    share = d.step("mig_bandwidth_share", "HBM bandwidth and SM share of one MIG slice",
                   (MIG_MEMORY_SLICES // n_mig) / MIG_MEMORY_SLICES, "1", percent=True,
                   formula=f"floor({MIG_MEMORY_SLICES} / {{tenants_mig}}) / {MIG_MEMORY_SLICES}")
    d.step("tpot_mig_s", "Decode step in a MIG slice: always, busy neighbours or not",
           one.roofline_s / share + one.allreduce_s + one.overhead_s, "s",
           formula="max({decode_step_memory_s}, {decode_step_compute_s}) / {mig_bandwidth_share} + "
                   "{decode_step_allreduce_s} + {step_overhead_s}")
    d.step("tpot_time_sliced_mean_s", "Decode step time-sliced, on average",
           alone * (1 + (n - 1) * p.neighbour_active_share), "s",
           formula="{tpot_whole_gpu_s} s × (1 + ({tenants_time_sliced} − 1) × {neighbour_active_share})")
    d.step("tpot_time_sliced_worst_s", "Decode step time-sliced, every neighbour decoding", alone * n, "s",
           formula="{tpot_whole_gpu_s} s × {tenants_time_sliced}")

    # --- the margin ---
    d.step("billed_fraction", "Billed share of an instance's GPU-seconds (boot unbilled)",
           p.instance_billed_s / (p.instance_billed_s + boot), "1", percent=True,
           formula="{instance_billed_s} / ({instance_billed_s} + {boot_s})")
    d.step("billed_fraction_with_snapshot", "The same with snapshot boots",
           p.instance_billed_s / (p.instance_billed_s + snap_boot), "1", percent=True,
           formula="{instance_billed_s} / ({instance_billed_s} + {snapshot_boot_s})")
    billed = d.step("billed_instances", "Instances billing at peak (Little's law)", rate * p.instance_billed_s, "1",
                    noun="instances", formula="{scale_up_rate} × {instance_billed_s}")
    fleet_cont = d.step("fleet_slots_continuous", "Fleet before rounding up to whole slots",
                        (billed + d.value("warm_pool_slots")) / (1 - p.stranded_share), "1", noun="slots",
                        formula="({billed_instances} + {warm_pool_slots}) / (1 − {stranded_share})")
    fleet = d.step("fleet_slots", "Fleet: billing instances + warm pool, grossed up for stranded capacity",
                   math.ceil(fleet_cont - 1e-9), "1", noun="slots", formula="ceil({fleet_slots_continuous})")
    d.step("fleet_gpus", "Fleet GPUs", fleet * p.tp_degree, "1", noun="GPUs",
           formula="{fleet_slots} × {tp_degree}")
    util = d.step("fleet_billed_utilization", "Fleet GPU-seconds that are billed", billed / fleet, "1", percent=True,
                  formula="{billed_instances} / {fleet_slots}")
    fleet_s = d.step("fleet_slots_with_snapshot", "Fleet with snapshot refills",
                     math.ceil((billed + d.value("warm_pool_slots_with_snapshot")) / (1 - p.stranded_share) - 1e-9),
                     "1", noun="slots",
                     formula="ceil(({billed_instances} + {warm_pool_slots_with_snapshot}) / (1 − {stranded_share}))")
    util_s = d.step("fleet_billed_utilization_with_snapshot", "Billed share of the fleet with snapshots",
                    billed / fleet_s, "1", percent=True,
                    formula="{billed_instances} / {fleet_slots_with_snapshot}")
    booting = d.step("booting_instances_no_pool", "Instances booting at once with no pool (cold start on the request)",
                     rate * boot, "1", noun="instances", formula="{scale_up_rate} × {boot_s}")
    fleet_np = d.step("fleet_slots_no_pool", "Fleet with no warm pool",
                      math.ceil((billed + booting) / (1 - p.stranded_share) - 1e-9), "1", noun="slots",
                      formula="ceil(({billed_instances} + {booting_instances_no_pool}) / (1 − {stranded_share}))")
    d.step("fleet_billed_utilization_no_pool", "Billed share of the fleet with no pool", billed / fleet_np, "1",
           percent=True, formula="{billed_instances} / {fleet_slots_no_pool}")
    d.step("pool_premium_slots", "Slots the warm pool holds beyond the boots it replaces",
           d.value("warm_pool_slots") - booting, "1", noun="slots",
           formula="{warm_pool_slots} − {booting_instances_no_pool}")
    d.step("price_per_gpu_hour_usd", "Price per GPU-hour", p.price_per_gpu_s_usd * 3600, "USD",
           formula="{price_per_gpu_s_usd} USD × 3,600")

    # --- the long tail: many models, each with little traffic ---
    tail_n = d.step("tail_models", "Tail models: the catalogue beyond the head", p.catalog_models - p.head_models,
                    "1", noun="models", formula="{catalog_models} − {head_models}")
    platform = d.step("platform_scale_up_rate", "Scale-ups per second across the platform",
                      p.head_models * rate / (1 - p.tail_traffic_share), "1/s", noun="instances",
                      formula="{head_models} × {scale_up_rate} / (1 − {tail_traffic_share})")
    tail_rate = d.step("tail_scale_up_rate", "Scale-ups per second across the tail", platform * p.tail_traffic_share,
                       "1/s", noun="instances", formula="{platform_scale_up_rate} × {tail_traffic_share}")
    one_rate = d.step("tail_model_scale_up_rate", "Scale-ups per second of an average tail model", tail_rate / tail_n,
                      "1/s", noun="instances", formula="{tail_scale_up_rate} / {tail_models}")
    d.step("tail_model_restarts_apart_s", "Time between an average tail model's scale-ups", 1 / one_rate, "s",
           formula="1 / {tail_model_scale_up_rate}")
    d.step("tail_model_slots_refilling", "An average tail model's slots refilling (Little's law)", one_rate * boot,
           "1", noun="slots", formula="{tail_model_scale_up_rate} × {boot_s}")
    own = d.step("tail_model_pool_slots", "An average tail model's own warm pool (cold refills)",
                 pool_slots(one_rate, boot, p.pool_buffer_z), "1", noun="slots",
                 formula="max(1, ceil({tail_model_slots_refilling} + {pool_buffer_z} × "
                         "sqrt({tail_model_slots_refilling})))")
    own_all = d.step("tail_own_pool_slots", "Every tail model with its own pool", tail_n * own, "1", noun="slots",
                     formula="{tail_models} × {tail_model_pool_slots}")
    tail_billed = d.step("tail_billed_instances", "Tail instances billing at peak (Little's law)",
                         tail_rate * p.instance_billed_s, "1", noun="instances",
                         formula="{tail_scale_up_rate} × {instance_billed_s}")
    revenue_h = d.step("tail_revenue_per_hour_usd", "Tail revenue per peak hour",
                       tail_billed * p.tp_degree * p.price_per_gpu_s_usd * 3600, "USD",
                       formula="{tail_billed_instances} × {tp_degree} × {price_per_gpu_hour_usd}")
    idle_h = d.step("tail_own_pool_cost_per_hour_usd", "Idle GPU-hours of the tail's own pools, per hour, at cost",
                    own_all * p.tp_degree * p.gpu_cost_per_hour_usd, "USD",
                    formula="{tail_own_pool_slots} × {tp_degree} × {gpu_cost_per_hour_usd}")
    d.step("tail_own_pool_cost_over_revenue", "Those idle pools' cost over the tail's revenue", idle_h / revenue_h,
           "1", percent=True, formula="{tail_own_pool_cost_per_hour_usd} / {tail_revenue_per_hour_usd}")
    shared = d.step("tail_shared_pool_slots", "One pool of empty GPUs for the whole tail (restores on the request)",
                    pool_slots(tail_rate, snap_boot, p.pool_buffer_z), "1", noun="slots",
                    formula="max(1, ceil({tail_scale_up_rate} × {snapshot_boot_s} + {pool_buffer_z} × "
                            "sqrt({tail_scale_up_rate} × {snapshot_boot_s})))")
    shared_h = d.step("tail_shared_pool_cost_per_hour_usd", "The shared pool's idle GPU-hours, per hour, at cost",
                      shared * p.tp_degree * p.gpu_cost_per_hour_usd, "USD",
                      formula="{tail_shared_pool_slots} × {tp_degree} × {gpu_cost_per_hour_usd}")
    d.step("tail_shared_pool_cost_over_revenue", "The shared pool's cost over the tail's revenue", shared_h / revenue_h,
           "1", percent=True, formula="{tail_shared_pool_cost_per_hour_usd} / {tail_revenue_per_hour_usd}")
    d.step("tail_snapshot_bytes", "Every tail model's snapshot, staged on one node", tail_n * d.value("snapshot_bytes"),
           "B", formula="{tail_models} × {snapshot_bytes} B")
    cost_s = d.step("cost_per_gpu_s_usd", "Cost per GPU-second", p.gpu_cost_per_hour_usd / 3600, "USD",
                    formula="{gpu_cost_per_hour_usd} USD / 3,600")
    d.step("breakeven_utilization", "Fleet utilization at which revenue equals cost",
           cost_s / p.price_per_gpu_s_usd, "1", percent=True,
           formula="{cost_per_gpu_s_usd} / {price_per_gpu_s_usd}")
    d.step("gross_margin", "Gross margin", 1 - cost_s / (p.price_per_gpu_s_usd * util), "1", percent=True,
           formula="1 − {cost_per_gpu_s_usd} / ({price_per_gpu_s_usd} × {fleet_billed_utilization})")
    d.step("gross_margin_with_snapshot", "Gross margin with snapshots",
           1 - cost_s / (p.price_per_gpu_s_usd * util_s), "1", percent=True,
           formula="1 − {cost_per_gpu_s_usd} / ({price_per_gpu_s_usd} × {fleet_billed_utilization_with_snapshot})")
    d.step("revenue_per_month_usd", "Revenue per month at this peak, held all month",
           billed * p.tp_degree * p.price_per_gpu_s_usd * SECONDS_PER_MONTH, "USD",
           formula="{billed_instances} × {tp_degree} × {price_per_gpu_s_usd} × 2,592,000 (seconds a month)")
    d.step("cost_per_month_usd", "Fleet cost per month", d.value("fleet_gpus") * cost_s * SECONDS_PER_MONTH, "USD",
           formula="{fleet_gpus} × {cost_per_gpu_s_usd} × 2,592,000 (seconds a month)")
    return d
