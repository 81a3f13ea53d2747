"""Multi-LoRA serving: one base model held once, hundreds of low-rank adapters beside it.

Teaching order: what a replica per variant costs (weights and GPUs, and how idle they sit), what
one adapter weighs (rank x the projections it targets x layers), what a mixed batch costs in
throughput, the shared fleet that results, the routing that keeps hot adapters resident, and the
two cases where a variant earns a replica of its own.

Modelling choices, all stated on the page:
- The base is the engine's model (Llama-3-70B in bf16 by default) on the engine's replica: its
  weight and KV bytes, its achieved HBM bandwidth and its decode step (bytes or FLOP, plus the
  tensor-parallel all-reduces and the fixed step cost) all come from models/engine. Adapters
  are bf16 whatever the base's format.
- LoRA on a projection W (d_in x d_out) adds A (d_in x r) and B (r x d_out): r x (d_in + d_out)
  parameters, the dimensions from the model's shape.
- A replica's decode is charged at the batch it holds when every sequence is served at the TPOT
  target (Little's law, as the engine's fleet does): busy share = tokens/s x step(b) / b with
  b = tokens/s x TPOT. A LoRA step is the base step x (1 + a kernel tax, SGMV/BGMV-style batched
  LoRA kernels) plus the bytes of every DISTINCT adapter in the batch. The taxed base step is the
  engine's StepLines with every intercept and slope scaled; the distinct adapters grow as
  N (1 - (1 - 1/N)^b), which no line in b follows, so the fleet search takes the step as a
  function. Prefill is left out: it costs the same per token in both designs, so it moves
  neither ratio.
- Distinct adapters in a batch assume uniform traffic over the variants, which maximises the
  count (skew only lowers it), so the overhead is an upper bound for a given batch.
- The dedicated design gives every variant its own replica and spreads traffic evenly; the seed's
  800 GPUs is one replica per variant.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Callable, Literal

from pydantic import model_validator

from models.catalog import LINKS
from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import EngineKnobs, accelerator, engine_values, llm, replica, subset, with_defaults, without
from models.engine.record import kv_formula
from models.engine.roofline import Replica, StepLines, floor_batch
from models.engine.serving_knobs import BatchKnobs, RequestKnobs, SloKnobs
from models.units import format_quantity

ADAPTER_BYTES = 2  # LoRA A and B are kept in bf16
PCIE = LINKS["PCIe Gen5 x16"]
NVME = LINKS["NVMe Gen5 SSD"]
# Engine defaults and one measurement, each from its source (the page's [[sources]]).
VLLM_MAX_LORAS = 1  # vllm.config.lora LoRAConfig.max_loras
SGLANG_MAX_LORAS_PER_BATCH = 8  # SGLang server argument max_loras_per_batch
LORAX_MEASURED_LOAD_S = 0.5  # predibase/lorax#433: "500ms ~ 1+s" to load one adapter, layer by layer

Targets = Literal["q,v", "q,k,v,o", "all seven"]
TARGET_SETS: dict[str, tuple[str, ...]] = {
    "q,v": ("q", "v"),
    "q,k,v,o": ("q", "k", "v", "o"),
    "all seven": ("q", "k", "v", "o", "gate", "up", "down"),
}


def projection_dims(p: Any) -> dict[str, tuple[int, int]]:
    """(d_in, d_out) of each projection one LoRA can target, for the model the knobs name."""
    m = llm(p)
    q_out = m.heads * m.head_dim  # Llama-3-70B: 8,192
    kv_out = m.kv_heads * m.head_dim  # 1,024 (GQA: 8 KV heads x 128)
    d, f = m.d_model, m.ffn_dim or 0
    return {"q": (d, q_out), "k": (d, kv_out), "v": (d, kv_out), "o": (q_out, d),
            "gate": (d, f), "up": (d, f), "down": (f, d)}


def lora_params_per_rank_per_layer(p: Any, targets: str) -> int:
    """Sum of (d_in + d_out) over the targeted projections: LoRA params per unit rank per layer."""
    dims = projection_dims(p)
    return sum(dims[name][0] + dims[name][1] for name in TARGET_SETS[targets])


def dims_formula(p: Any, targets: str) -> str:
    """The sum behind `lora_params_per_rank_per_layer`, written out: "(8,192 + 8,192) + ..."."""
    dims = projection_dims(p)
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


class _LoraKnobs(StrictModel):
    variants: Annotated[
        int,
        Knob("Fine-tuned variants", "", 1, 2000, 1, log=True,
             help="Customer or task variants of the same base model.", draw=(20, 500)),
    ] = 100
    lora_rank: Annotated[
        int,
        Knob("LoRA rank", "", 1, 256, 1, log=True,
             help="r: the inner width of each adapter's A (d_in x r) and B (r x d_out).", draw=(4, 64), draw_choices=(4, 8, 16, 32, 64)),
    ] = 8
    targets: Annotated[
        Targets,
        Knob("Projections the adapter targets",
             help="q,v is the original LoRA paper's choice; 'all seven' adds k, o and the MLP's gate, up, down."),
    ] = "q,v"
    heavy_rank: Annotated[
        int,
        Knob("Rank of the heavy comparison adapter", "", 1, 256, 1, log=True,
             help="A second adapter, on all seven projections, shown beside yours.", draw=(8, 64), draw_choices=(8, 16, 32, 64)),
    ] = 16
    total_tokens_per_s: Annotated[
        float,
        Knob("Output tokens/s, all variants", "tokens/s", 100, 10_000_000, log=True,
             help="Aggregate decode demand across every variant at peak.", draw=(5_000, 500_000)),
    ] = 30_000
    sgmv_overhead_fraction: Annotated[
        float,
        Knob("LoRA kernel tax", "", 0.0, 0.5, 0.01, percent=True,
             help="Fixed slowdown of a decode step from running batched LoRA kernels (SGMV/BGMV) on "
                  "the targeted projections, before counting adapter bytes.", draw=(0.02, 0.15)),
    ] = 0.05
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


# The seed's replica: the 70B base in bf16 on a tensor-parallel group of 8 ("800 GPUs" for 100).
_Engine = without(with_defaults(EngineKnobs, tp_degree=8), "prefill_mfu")  # the page sizes decode only
_RequestKnobs = subset(RequestKnobs, "_RequestKnobs", prompt_tokens=2000, output_tokens=400)


class Params(_Engine, BatchKnobs, SloKnobs, _RequestKnobs, _LoraKnobs):
    """The variants and adapters first, then the request, SLO, batch and the shared engine."""

    @model_validator(mode="after")
    def _fits(self) -> "Params":
        m = llm(self)
        if m.attention == "MLA":
            return _refuse(f"{m.name} projects keys and values through a latent (MLA); this page counts LoRA "
                           "on plain q, k, v and o projections. Pick a GQA or MHA model.")
        if self.targets == "all seven" and (m.is_moe or not m.ffn_dim):
            return _refuse(f"{m.name} is a mixture of experts: LoRA on its experts' MLPs is not modelled here. "
                           "Target q,v or q,k,v,o, or pick a dense model.")
        r = replica(self)
        ctx = self.prompt_tokens + self.output_tokens
        room = r.kv_room_bytes - self.adapter_budget_gb * 1e9
        if room < r.kv_bytes_per_token * ctx:
            return _refuse(f"After {r.weight_bytes / 1e9:,.0f} GB of base weights and the {self.adapter_budget_gb:g} GB "
                           f"adapter reserve, {self.tp_degree} × {r.hw.name} have no room for one sequence's KV. "
                           "Shrink the reserve or the context, or add GPUs per replica.")
        if self.given_batch and self.given_batch * r.kv_bytes_per_token * ctx > room:
            return _refuse(f"A batch of {self.given_batch} needs {self.given_batch * r.kv_bytes_per_token * ctx / 1e9:,.1f} "
                           f"GB of KV, but only {room / 1e9:,.1f} GB is left beside the base and the adapter reserve.")
        step = r.decode_step(1, self.prompt_tokens + self.output_tokens / 2).step_s
        if step > self.tpot_target_ms / 1000 and not self.given_batch:
            return _refuse(f"One decode step takes {step * 1000:,.1f} ms, more than the {self.tpot_target_ms:g} ms "
                           "TPOT target: loosen the target or add GPUs per replica.")
        return self


def _refuse(why: str):
    raise ValueError(why)


def _taxed(lines: StepLines, tax: float) -> StepLines:
    """The step with the batched-LoRA kernels' tax on all of it: each intercept and slope x (1 + tax)."""
    k = 1 + tax
    return StepLines((k * lines.memory[0], k * lines.memory[1]), (k * lines.compute[0], k * lines.compute[1]),
                     (k * lines.extra[0], k * lines.extra[1]))


def _root(excess: Callable[[float], float], lo: float, hi: float) -> float:
    """The smallest n in (lo, hi] with excess(n) <= 0, excess falling in n, to 1e-10 of n.

    Solved in x = 1 / n, where a replica's busy share is a straight line on each side of the step
    (tokens/s x step(b) / b with b proportional to 1 / n), by the Illinois method (a secant kept
    bracketed): a handful of evaluations where halving n took 40, which mattered at hundreds of
    fleets per slider move (sweeps, and the layout search at each point)."""
    g = lambda x: excess(1 / x)  # noqa: E731  (rising in x)
    x_ok, g_ok = 1 / hi, excess(hi)
    if lo > 0:
        x_over, g_over = 1 / lo, excess(lo)
    else:
        x_over = 2 * x_ok
        g_over = g(x_over)
        while g_over <= 0 and x_over < 1e12:
            x_ok, g_ok, x_over = x_over, g_over, 2 * x_over
            g_over = g(x_over)
    side = 0
    for _ in range(100):
        if x_over - x_ok <= 1e-10 * x_ok or g_over == g_ok:
            break
        x = (x_ok * g_over - x_over * g_ok) / (g_over - g_ok)
        if not x_ok < x < x_over:  # rounding at the ends: halve instead
            x = (x_ok + x_over) / 2
        gx = g(x)
        if gx == 0:  # the line through both ends met the root exactly: busy is linear in 1 / n here
            return 1 / x
        if gx <= 0:
            x_ok, g_ok = x, gx
            if side == -1:
                g_over /= 2
            side = -1
        else:
            x_over, g_over = x, gx
            if side == 1:
                g_ok /= 2
            side = 1
    return 1 / x_ok


def _fleet(tokens_per_s: float, step_of: Callable[[float], float], tpot_s: float, util: float,
           batch_cap: int) -> tuple[float, int, float, float, float]:
    """(replicas before the ceiling, replicas, held batch, its step, busy share) for `tokens_per_s`
    of decode: each replica holds b = its tokens/s x TPOT sequences (Little's law) and is busy
    tokens/s x step(b) / b, at least one rider. The engine's `fleet` with a step of the page's own
    (the LoRA step's adapter bytes are not linear in b, so no closed form on StepLines); the
    replicas also hold their sequences within the batch cap."""

    def busy(n: float) -> tuple[float, float, float]:
        t = tokens_per_s / n
        b = t * tpot_s
        step = step_of(max(1.0, b))
        return t * step / max(1.0, b), b, step

    lo, hi = 0.0, 1.0
    while busy(hi)[0] > util:
        lo, hi = hi, 2 * hi
        if hi > 1e9:
            break
    hi = _root(lambda n: busy(n)[0] - util, lo, hi)
    n = max(1, _ceil(hi))
    n = max(n, _ceil(tokens_per_s * tpot_s / batch_cap))  # every held sequence needs a slot
    share, b, step = busy(n)
    return hi, n, b, step, share


# The layouts a dedicated variant may take depend on the engine and the request alone, not on the
# traffic: a sweep over the variants or the rate re-sizes the fleet at each point and reuses them.
_layouts_seen: dict[tuple, tuple] = {}


def _dedicated_layouts(p: Any, ctx: float, tpot_s: float, change: tuple) -> tuple[tuple[int, Any, int], ...]:
    """(tensor-parallel degree, decode step's lines at `ctx`, batch cap) of every power-of-two degree
    up to eight that holds the base and one sequence's KV and steps one sequence within `tpot_s`."""
    key = (engine_values(p), p.prompt_tokens, p.output_tokens, ctx, tpot_s, change)
    found = _layouts_seen.get(key)
    if found is not None:
        return found
    out = []
    kv_seq_tokens = p.prompt_tokens + p.output_tokens
    for tp in (1, 2, 4, 8):
        q = p.model_copy(update={"tp_degree": tp, **dict(change)})
        hw = accelerator(q)
        if tp > hw.scale_up_domain:
            continue
        r = Replica(llm(q), hw, tp, weight_fmt=q.weight_precision, kv_fmt=q.kv_precision,
                    compute_fmt=q.compute_precision, hbm_efficiency=q.hbm_efficiency, decode_mfu=q.decode_mfu,
                    usable_hbm_fraction=q.usable_hbm_fraction, step_overhead_s=q.step_overhead_ms / 1000,
                    allreduce_latency_s=q.allreduce_latency_us / 1e6)
        kv_seq = r.kv_bytes_per_token * kv_seq_tokens
        if r.kv_room_bytes < kv_seq:
            continue
        lines = r.step_lines(ctx)
        if lines.step_s(1) > tpot_s:
            continue
        out.append((tp, lines, max(1, math.floor(r.kv_room_bytes / kv_seq))))
    if len(_layouts_seen) > 256:
        _layouts_seen.clear()
    _layouts_seen[key] = found = tuple(out)
    return found


def _smallest_dedicated(p: Any, per_variant: float, tpot_s: float, util: float, ctx: float,
                        **change: Any) -> tuple[int, int]:
    """(GPUs per variant, tensor-parallel degree) of the cheapest dedicated deployment of one variant
    on the part and format `change` names (the page's own when empty): every power-of-two degree up
    to eight that holds the base and one sequence's KV and steps one sequence within the TPOT
    target, sized by the same fleet as the seed's replica. No adapter reserve: a dedicated variant
    runs its adapter merged."""
    changed = tuple(sorted(change.items()))
    # A dedicated variant carries no adapter: its fleet does not move with the LoRA knobs, so a sweep
    # over the rank or the kernels' tax (and a move of either) finds it here.
    key = (engine_values(p), p.prompt_tokens, p.output_tokens, ctx, tpot_s, changed, per_variant, util)
    found = _dedicated_seen.get(key)
    if found is not None:
        return found
    best: tuple[int, int] | None = None
    for tp, lines, cap in _dedicated_layouts(p, ctx, tpot_s, changed):
        _cont, n, _b, _step, _share = _fleet(per_variant, lines.step_s, tpot_s, util, cap)
        if best is None or n * tp < best[0]:
            best = (n * tp, tp)
    if len(_dedicated_seen) > 1024:
        _dedicated_seen.clear()
    _dedicated_seen[key] = found = best if best is not None else (0, 0)
    return found


_dedicated_seen: dict[tuple, tuple[int, int]] = {}


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    m, hw = llm(p), accelerator(p)
    r: Replica = replica(p)
    tpot = p.tpot_target_ms / 1000
    ctx = p.prompt_tokens + p.output_tokens / 2

    # --- the dedicated design: a replica per variant --------------------------------------------
    d.step("base_params", f"Base model parameters ({m.name}, counted from its shape)", m.total_params, "1",
           noun="parameters")
    base = d.step(
        "base_weight_bytes", f"Base weights in {p.weight_precision}", r.weight_bytes, "B",
        formula=f"{{base_params}} parameters × {r.bytes_per_weight:g} B",
    )
    d.step(
        "dedicated_weight_bytes", "Weights held by a replica per variant", p.variants * base, "B",
        formula="{variants} variants × {base_weight_bytes}",
    )

    # --- one replica's decode: the engine's step ----------------------------------------------
    kv_tok = d.step(
        "kv_bytes_per_token", f"KV cache per token ({p.kv_precision}, all layers)", r.kv_bytes_per_token, "B",
        formula=kv_formula(p).replace("{bytes_per_kv_element}", f"{r.bytes_per_kv_element:g} B"),
    )
    d.step("decode_context_tokens", "Average context a decode step reads per sequence", ctx, "1", noun="tokens",
           formula="{prompt_tokens} + {output_tokens} / 2")
    bw = d.step(
        "replica_hbm_Bps", "Replica HBM bandwidth at the decode MBU", r.achieved_hbm_Bps, "B/s",
        formula=f"{{tp_degree}} × {hw.hbm_Bps / 1e12:g} TB/s × {{hbm_efficiency}}",
    )
    reserve = p.adapter_budget_gb * 1e9
    kv_seq = kv_tok * (p.prompt_tokens + p.output_tokens)
    mem_cap = d.step(
        "batch_memory_cap_continuous", "Sequences whose KV fits beside the base and the adapter reserve",
        (r.kv_room_bytes - reserve) / kv_seq, "1", noun="sequences",
        formula=f"({{tp_degree}} × {hw.hbm_bytes / 1e9:g} GB × {{usable_hbm_fraction}} − {{base_weight_bytes}} B − "
                "{adapter_budget_gb}) / ({kv_bytes_per_token} × ({prompt_tokens} + {output_tokens}))",
    )
    d.step("batch_memory_cap", "Whole sequences whose KV fits", floor_batch(mem_cap), "1", noun="sequences",
           formula="floor({batch_memory_cap_continuous})")
    # The engine's decode step as lines in the batch: each piece at b = 0 and per sequence.
    lines = r.step_lines(ctx)
    d.step("active_params", "Parameters each token runs through", m.active_params, "1", noun="parameters")
    d.step("gpu_peak_flops", f"{hw.name} dense {p.compute_precision} peak", hw.peak(p.compute_precision), "FLOP/s")
    d.step("replica_decode_flops", "Replica decode compute at the decode MFU", r.peak_flops * r.decode_mfu, "FLOP/s",
           formula="{tp_degree} × {gpu_peak_flops} × {decode_mfu}")
    d.step("decode_attention_flops_per_position", "Attention FLOP per cached token when decoding",
           r.decode_attention_flops_per_position, "FLOP",
           note="0 when attention FLOP are not counted (the textbook 2 × parameters per token).")
    d.step("decode_flops_per_token", "FLOP per decoded token (2 × active params + attention)",
           r.decode_flops_per_token(ctx), "FLOP",
           formula="2 FLOP × {active_params} + {decode_attention_flops_per_position} × {decode_context_tokens}")
    d.step("weight_read_s", "Reading every base weight once (the floor of any decode step)", lines.memory[0], "s",
           formula="{base_weight_bytes} / {replica_hbm_Bps}")
    d.step("kv_read_per_sequence_s", "Reading one sequence's KV at that context", lines.memory[1], "s",
           formula="{kv_bytes_per_token} × {decode_context_tokens} / {replica_hbm_Bps}")
    d.step("compute_per_sequence_s", "FLOP side per sequence in the batch", lines.compute[1], "s",
           formula="{decode_flops_per_token} / {replica_decode_flops}")
    d.step("step_overhead_s", "Fixed cost per step (launches, sampling)", r.step_overhead_s, "s",
           formula="{step_overhead_ms}")
    d.step("link_Bps_per_direction", f"{hw.name} scale-up link, each way", hw.link_Bps_per_direction, "B/s")
    tp_many = r.tp > 1
    d.step("allreduce_fixed_s", "Tensor-parallel all-reduces per step, latency part", r.allreduce_s(0), "s",
           formula=f"{m.layers} layers × 2 × {{allreduce_latency_us}}" if tp_many else "",
           note="" if tp_many else "None on one accelerator.")
    d.step("allreduce_per_sequence_s", "Tensor-parallel all-reduces per step, per sequence in the batch",
           r.allreduce_s(1) - r.allreduce_s(0), "s",
           formula=(f"{m.layers} layers × 2 × 2 × ({r.tp} − 1) / {r.tp} × {m.d_model} × 2 B / "
                    "{link_Bps_per_direction}") if tp_many else "",
           note="" if tp_many else "None on one accelerator.")

    def cap_formula(budget: str) -> str:
        """The batch at which each side of the step, all-reduces and fixed cost included, reaches `budget`."""
        return (f"max(0, min(({budget} − {{step_overhead_s}} − {{allreduce_fixed_s}} − {{weight_read_s}}) / "
                f"({{kv_read_per_sequence_s}} + {{allreduce_per_sequence_s}}), ({budget} − {{step_overhead_s}} − "
                "{allreduce_fixed_s}) / ({compute_per_sequence_s} + {allreduce_per_sequence_s})))")

    def step_formula(b: str) -> str:
        """The base model's decode step at batch `b` (a placeholder)."""
        return (f"max({{weight_read_s}} + {b} × {{kv_read_per_sequence_s}}, {b} × {{compute_per_sequence_s}}) + "
                f"{{allreduce_fixed_s}} + {b} × {{allreduce_per_sequence_s}} + {{step_overhead_s}}")

    tpot_cap = d.step(
        "batch_tpot_cap_continuous", "Largest base-only batch whose step meets the TPOT target, before the floor",
        r.tpot_batch_cap(tpot, ctx), "1", noun="sequences",
        formula=cap_formula("{tpot_target_ms}"),
    )
    d.step("batch_tpot_cap", "Whole sequences whose step meets the TPOT target", floor_batch(tpot_cap), "1",
           noun="sequences", formula="floor({batch_tpot_cap_continuous})")
    derived = d.step("derived_batch", "Decode batch the caps allow: the tighter one",
                     max(1, min(floor_batch(mem_cap), floor_batch(tpot_cap))), "1", noun="sequences",
                     formula="max(1, min({batch_memory_cap}, {batch_tpot_cap}))")
    batch = d.step("decode_batch", "Most sequences one replica may hold", p.given_batch or derived, "1",
                   noun="sequences", formula="{given_batch}" if p.given_batch else "{derived_batch}")
    kv_step = d.step(
        "kv_bytes_per_step", "KV read by a step at that batch", batch * ctx * kv_tok, "B",
        formula="{decode_batch} × {decode_context_tokens} × {kv_bytes_per_token}",
    )

    base_step = lines.step_s

    full = r.decode_step(batch, ctx)
    base_full = d.step(
        "base_step_s", "One decode step at that batch, base model only", full.step_s, "s",
        formula="max(({base_weight_bytes} + {kv_bytes_per_step}) / {replica_hbm_Bps}, {decode_batch} × "
                "{compute_per_sequence_s}) + {allreduce_fixed_s} + {decode_batch} × {allreduce_per_sequence_s} + "
                "{step_overhead_s}",
    )
    d.step(
        "replica_tokens_per_s", "One replica's decode throughput at that batch, base only", batch / base_full,
        "1/s", noun="tokens", formula="{decode_batch} / {base_step_s}",
    )
    per_variant = d.step(
        "per_variant_tokens_per_s", "Demand per variant (even spread)", p.total_tokens_per_s / p.variants, "1/s",
        noun="tokens", formula="{total_tokens_per_s} / {variants}",
    )
    ded_cont, n_ded, ded_b, ded_step, ded_busy = _fleet(per_variant, base_step, tpot, p.target_utilization, batch)
    d.step(
        "dedicated_replicas_continuous", "Replicas per variant the work needs, before rounding up", ded_cont, "1",
        noun="replicas", kind="search",
        formula="the fewest R with {per_variant_tokens_per_s} / R × base step / batch held ≤ {target_utilization}",
    )
    ded_reps = d.step(
        "dedicated_replicas_per_variant", "Replicas per variant (at least one)", n_ded, "1",
        noun=_noun(n_ded, "replica"),
        formula="max(1, ceil({dedicated_replicas_continuous}), ceil({per_variant_tokens_per_s} × {tpot_target_ms} / "
                "{decode_batch}))",
        note="At least one, and enough that the sequences held fit the batch each replica may hold.",
    )
    d.step(
        "dedicated_held_batch", "Sequences a dedicated replica holds, each served at the TPOT target",
        ded_b, "1", noun="sequences",
        formula="{per_variant_tokens_per_s} / {dedicated_replicas_per_variant} × {tpot_target_ms}",
    )
    d.step("dedicated_stepped_batch", "Sequences a dedicated replica's step carries (at least one)",
           max(1.0, ded_b), "1", noun="sequences", formula="max(1, {dedicated_held_batch})")
    d.step("dedicated_step_s", "A dedicated replica's decode step at that batch", ded_step, "s",
           formula=step_formula("{dedicated_stepped_batch}"))
    d.step(
        "dedicated_gpus", "GPUs with a replica per variant", p.variants * ded_reps * p.tp_degree, "1",
        noun="GPUs", formula="{variants} × {dedicated_replicas_per_variant} × {tp_degree}",
    )
    d.step(
        "dedicated_utilization", "Average busy share of a dedicated replica", ded_busy, "1", percent=True,
        formula="{per_variant_tokens_per_s} / {dedicated_replicas_per_variant} × {dedicated_step_s} / "
                "{dedicated_stepped_batch}",
    )

    # --- the seed's 800 holds only at its replica of eight: the cheapest replica per variant ----
    small, small_tp = _smallest_dedicated(p, per_variant, tpot, p.target_utilization, ctx)
    d.step("dedicated_smallest_gpus_per_variant",
           f"GPUs per variant on the smallest {hw.name} replica that holds it ({small_tp}-way)",
           small, "1", noun="GPUs", kind="search",
           formula="the fewest GPUs (1, 2, 4 or 8 per replica, replicas sized like the seed's) that hold "
                   "{base_weight_bytes} plus one sequence's KV and step within {tpot_target_ms}")
    d.step("dedicated_gpus_smallest", "A replica per variant on that smallest replica", p.variants * small, "1",
           noun="GPUs", formula="{variants} × {dedicated_smallest_gpus_per_variant}")
    h200, h200_tp = _smallest_dedicated(p, per_variant, tpot, p.target_utilization, ctx,
                                        gpu="H200", weight_precision="fp8")
    d.step("fp8_h200_gpus_per_variant", f"GPUs per variant with the base in fp8 on H200 ({h200_tp}-way)",
           h200, "1", noun="GPUs", kind="search",
           formula="the same search on H200 with the weights in fp8")
    d.step("dedicated_gpus_fp8_h200", "A replica per variant, fp8 on H200", p.variants * h200, "1", noun="GPUs",
           formula="{variants} × {fp8_h200_gpus_per_variant}")

    # --- what one adapter weighs ----------------------------------------------------------------
    # The shape the adapter drill quotes, as steps: a drawn model is not always Llama-3-70B.
    dims = projection_dims(p)
    d.step("model_layers", f"{m.name}'s layers", m.layers, "1", noun="layers", kind="lookup")
    d.step("model_d_model", f"{m.name}'s d_model", m.d_model, "1", kind="lookup")
    d.step("q_projection_width", "q projects to (heads × head dimension)", dims["q"][1], "1", kind="lookup")
    d.step("kv_projection_width", "k and v project to (KV heads × head dimension)", dims["k"][1], "1",
           kind="lookup")
    # An MoE model has no dense MLP (its experts' width is what a LoRA there would see); "all seven"
    # is refused on one, so this width only matters where it is the dense one.
    d.step("mlp_width", f"{m.name}'s MLP width", m.ffn_dim or m.moe_ffn_dim or 0, "1", kind="lookup")
    per_rank = d.step(
        "lora_params_per_rank_per_layer", "LoRA params per unit rank per layer, chosen projections",
        lora_params_per_rank_per_layer(p, p.targets), "1", noun="parameters",
        formula=dims_formula(p, p.targets),
    )
    adapter_params = d.step(
        "adapter_params", "Parameters in one adapter", p.lora_rank * per_rank * m.layers, "1",
        noun="parameters", formula=f"{{lora_rank}} × {{lora_params_per_rank_per_layer}} × {m.layers} layers",
    )
    adapter = d.step(
        "adapter_bytes", "One adapter in bf16", adapter_params * ADAPTER_BYTES, "B",
        formula="{adapter_params} × 2 B",
    )
    d.step(
        "adapter_to_base_ratio", "Adapter as a share of the base", adapter / base, "1", percent=True,
        formula="{adapter_bytes} / {base_weight_bytes}",
    )
    d.step(
        "adapters_total_bytes", "Every variant's adapter", p.variants * adapter, "B",
        formula="{variants} × {adapter_bytes}",
    )
    heavy_targets = "all seven" if m.ffn_dim and not m.is_moe else "q,k,v,o"
    heavy_per_rank = d.step(
        "heavy_params_per_rank_per_layer", f"LoRA params per unit rank per layer, {heavy_targets} projections",
        lora_params_per_rank_per_layer(p, heavy_targets), "1", noun="parameters",
        formula=dims_formula(p, heavy_targets),
    )
    heavy = d.step(
        "heavy_adapter_bytes", f"Heavy adapter: {heavy_targets} projections, bf16",
        p.heavy_rank * heavy_per_rank * m.layers * ADAPTER_BYTES, "B",
        formula=f"{{heavy_rank}} × {{heavy_params_per_rank_per_layer}} × {m.layers} layers × 2 B",
    )
    d.step(
        "heavy_to_adapter_ratio", "Heavy adapter over yours", heavy / adapter, "1", noun="×",
        formula="{heavy_adapter_bytes} / {adapter_bytes}",
    )
    d.step(
        "heavy_adapters_total_bytes", "Every variant as a heavy adapter", p.variants * heavy, "B",
        formula="{variants} × {heavy_adapter_bytes}",
    )

    # --- the shared fleet, each step carrying a mixed batch --------------------------------------
    taxed = _taxed(lines, p.sgmv_overhead_fraction)

    def lora_step(b: float, adapters: float = p.variants, size: float = adapter) -> float:
        return taxed.step_s(b) + expected_distinct(adapters, b) * size / bw

    cont, n_ml, held, held_lora_step, ml_busy = _fleet(p.total_tokens_per_s, lora_step, tpot,
                                                       p.target_utilization, batch)
    d.step(
        "multi_lora_replicas_continuous", "Shared replicas the work needs, before rounding up", cont, "1",
        noun="replicas",
        formula="the fewest R with {total_tokens_per_s} / R × LoRA step / batch held ≤ {target_utilization}",
        kind="search",
    )
    ml_reps = d.step(
        "multi_lora_replicas", "Shared replicas for all the traffic", n_ml, "1", noun=_noun(n_ml, "replica"),
        formula="max(1, ceil({multi_lora_replicas_continuous}), ceil({total_tokens_per_s} × {tpot_target_ms} / "
                "{decode_batch}))",
        note="At least one, and enough that the sequences held fit the batch each replica may hold.",
    )
    held = d.step(
        "held_batch", "Sequences each shared replica holds, each served at the TPOT target", held, "1",
        noun="sequences", formula="{total_tokens_per_s} / {multi_lora_replicas} × {tpot_target_ms}",
    )
    riders = d.step("stepped_batch", "Sequences a shared replica's step carries (at least one)", max(1.0, held), "1",
                    noun="sequences", formula="max(1, {held_batch})")
    held_base = d.step(
        "held_batch_base_step_s", "A base-only step at that batch", base_step(riders), "s",
        formula=step_formula("{stepped_batch}"),
    )
    distinct = d.step(
        "distinct_adapters_per_batch", "Distinct adapters in one batch (uniform traffic, the worst case)",
        expected_distinct(p.variants, riders), "1", noun="adapters",
        formula="{variants} × (1 − (1 − 1/{variants})^{stepped_batch})",
    )
    adapter_read = d.step(
        "adapter_bytes_per_step", "Adapter weights read per decode step", distinct * adapter, "B",
        formula="{distinct_adapters_per_batch} × {adapter_bytes}",
    )
    lora_s = d.step(
        "lora_step_s", "One decode step with the mixed batch", held_base * (1 + p.sgmv_overhead_fraction)
        + adapter_read / bw, "s",
        formula="{held_batch_base_step_s} × (1 + {sgmv_overhead_fraction}) + {adapter_bytes_per_step} / "
                "{replica_hbm_Bps} B/s",
    )
    d.step(
        "mixed_batch_overhead_fraction", "Throughput lost to the mixed batch", 1 - held_base / lora_s, "1",
        percent=True,
        formula="1 − {held_batch_base_step_s} / {lora_step_s}",
    )
    heavy_step = lora_step(riders, size=heavy)
    d.step(
        "heavy_mixed_batch_overhead_fraction", "Throughput lost with heavy adapters in the batch",
        1 - held_base / heavy_step, "1", percent=True,
        formula="1 − {held_batch_base_step_s} / ({held_batch_base_step_s} × (1 + {sgmv_overhead_fraction}) + "
                "{distinct_adapters_per_batch} × {heavy_adapter_bytes} / {replica_hbm_Bps})",
    )
    d.step(
        "multi_lora_replica_tokens_per_s", "Tokens per second one shared replica carries",
        p.total_tokens_per_s / ml_reps, "1/s", noun="tokens", formula="{total_tokens_per_s} / {multi_lora_replicas}",
    )
    slots = d.step(
        "adapter_slots_per_replica", "Adapters that fit the reserved HBM",
        math.floor(p.adapter_budget_gb * 1e9 / adapter + 1e-9), "1", noun="adapters",
        formula="floor({adapter_budget_gb} / {adapter_bytes})",
    )
    resident = d.step(
        "adapters_resident_per_replica", "Adapters resident on each replica", min(p.variants, slots), "1",
        noun="adapters", formula="min({variants}, {adapter_slots_per_replica})",
    )
    replica_bytes = d.step(
        "multi_lora_replica_weight_bytes", "Weights on one shared replica: the base once plus resident adapters",
        base + resident * adapter, "B",
        formula="{base_weight_bytes} + {adapters_resident_per_replica} × {adapter_bytes}",
    )
    left = d.step(
        "replica_hbm_left_bytes", "HBM left after base, adapter reserve and a full batch's KV",
        r.kv_room_bytes - reserve - batch * kv_seq, "B",
        formula=f"{{tp_degree}} × {hw.hbm_bytes / 1e9:g} GB × {{usable_hbm_fraction}} − {{base_weight_bytes}} B − "
                "{adapter_budget_gb} − {decode_batch} × {kv_bytes_per_token} × ({prompt_tokens} + {output_tokens})",
    )
    d.step("replica_fits_in_hbm", "Does the shared replica fit its HBM?", "yes" if left >= -1e-6 else "no", "1",
           formula="{replica_hbm_left_bytes} ≥ 0", kind="verdict")
    ml_gpus = d.step(
        "multi_lora_gpus", "GPUs in the shared multi-LoRA fleet", ml_reps * p.tp_degree, "1", noun="GPUs",
        formula="{multi_lora_replicas} × {tp_degree}",
    )
    d.step(
        "multi_lora_utilization", "Busy share of a shared replica", ml_busy, "1", percent=True,
        formula="{multi_lora_replica_tokens_per_s} × {lora_step_s} / {stepped_batch}",
    )
    d.step(
        "multi_lora_fleet_weight_bytes", "Weights across the shared fleet", ml_reps * replica_bytes, "B",
        formula="{multi_lora_replicas} × {multi_lora_replica_weight_bytes}",
    )
    d.step(
        "gpu_saving_ratio", "Dedicated GPUs over shared GPUs", d.value("dedicated_gpus") / ml_gpus, "1", noun="×",
        formula="{dedicated_gpus} / {multi_lora_gpus}",
    )
    fewest = min(d.value("dedicated_gpus"), d.value("dedicated_gpus_smallest"), d.value("dedicated_gpus_fp8_h200"))
    d.step(
        "dedicated_gpus_fewest", "The fewest GPUs of the three dedicated deployments", fewest, "1", noun="GPUs",
        formula="min({dedicated_gpus}, {dedicated_gpus_smallest}, {dedicated_gpus_fp8_h200})",
    )
    d.step(
        "gpu_saving_ratio_fewest", "The fewest dedicated GPUs over shared GPUs", fewest / ml_gpus, "1", noun="×",
        formula="{dedicated_gpus_fewest} / {multi_lora_gpus}",
    )

    # --- routing that keeps hot adapters resident ------------------------------------------------
    routed = d.step(
        "adapters_routed_per_replica", "Adapters whose traffic lands on one replica (affinity routing)",
        min(p.variants, _ceil(p.variants * min(p.replicas_per_adapter, ml_reps) / ml_reps)), "1", noun="adapters",
        formula="min({variants}, ceil({variants} × min({replicas_per_adapter}, {multi_lora_replicas}) / {multi_lora_replicas}))",
    )
    d.step(
        "routed_adapters_fit", "Do the routed adapters all fit the slots?", "yes" if routed <= slots else "no", "1",
        formula="{adapters_routed_per_replica} ≤ {adapter_slots_per_replica}", kind="verdict",
    )
    distinct_routed = d.step(
        "distinct_adapters_per_batch_routed", "Distinct adapters in one batch with affinity routing",
        expected_distinct(routed, riders), "1", noun="adapters",
        formula="{adapters_routed_per_replica} × (1 − (1 − 1/{adapters_routed_per_replica})^{stepped_batch})",
    )
    routed_step = held_base * (1 + p.sgmv_overhead_fraction) + distinct_routed * adapter / bw
    d.step(
        "mixed_batch_overhead_routed_fraction", "Throughput lost with affinity routing",
        1 - held_base / routed_step, "1", percent=True,
        formula="1 − {held_batch_base_step_s} / ({held_batch_base_step_s} × (1 + {sgmv_overhead_fraction}) + "
                "{distinct_adapters_per_batch_routed} × {adapter_bytes} / {replica_hbm_Bps})",
    )
    heavy_routed_step = held_base * (1 + p.sgmv_overhead_fraction) + distinct_routed * heavy / bw
    d.step(
        "heavy_mixed_batch_overhead_routed_fraction", "Throughput lost with heavy adapters and affinity routing",
        1 - held_base / heavy_routed_step, "1", percent=True,
        formula="1 − {held_batch_base_step_s} / ({held_batch_base_step_s} × (1 + {sgmv_overhead_fraction}) + "
                "{distinct_adapters_per_batch_routed} × {heavy_adapter_bytes} / {replica_hbm_Bps})",
    )
    heavy_slots = d.step(
        "heavy_adapter_slots_per_replica", "Heavy adapters that fit the same reserve",
        math.floor(p.adapter_budget_gb * 1e9 / heavy + 1e-9), "1", noun="adapters",
        formula="floor({adapter_budget_gb} / {heavy_adapter_bytes})",
    )
    d.step(
        "heavy_routed_adapters_fit", "Would heavy adapters all fit with the same routing?",
        "yes" if routed <= heavy_slots else "no", "1",
        formula="{adapters_routed_per_replica} ≤ {heavy_adapter_slots_per_replica}", kind="verdict",
    )
    # Tensor parallel shards each adapter across the replica's GPUs, so a load uses every
    # GPU's own PCIe link at once.
    d.step("pcie_Bps", "PCIe Gen5 x16, one direction (catalog)", PCIE.Bps, "B/s")
    d.step("nvme_Bps", "One NVMe Gen5 SSD's read rate (catalog)", NVME.Bps, "B/s")
    load = d.step(
        "adapter_load_from_dram_s", "Load one adapter from host DRAM (sharded over every GPU's PCIe Gen5)",
        adapter / (p.tp_degree * PCIE.Bps), "s",
        formula="{adapter_bytes} / ({tp_degree} × {pcie_Bps})",
    )
    d.step(
        "heavy_adapter_load_from_dram_s", "Load one heavy adapter from host DRAM",
        heavy / (p.tp_degree * PCIE.Bps), "s",
        formula="{heavy_adapter_bytes} / ({tp_degree} × {pcie_Bps})",
    )
    d.step(
        "adapter_load_from_nvme_s", "Load one adapter from one local NVMe Gen5 drive", adapter / NVME.Bps, "s",
        formula="{adapter_bytes} / {nvme_Bps}",
    )
    d.step(
        "adapter_load_in_steps", "A DRAM load measured in decode steps", load / lora_s, "1", noun="steps",
        formula="{adapter_load_from_dram_s} / {lora_step_s}",
    )
    # What an engine measured, beside the bandwidth floor: LoRAX copied each layer's A and B to the
    # GPU on its own, about 20 ms a layer and 500 ms to over 1 s an adapter (predibase/lorax#433).
    measured = d.step(
        "lorax_measured_load_s", "An adapter load LoRAX measured (the low end, before its fix)",
        LORAX_MEASURED_LOAD_S, "s", kind="lookup", note="predibase/lorax issue 433: 500 ms to over 1 s",
    )
    d.step(
        "measured_load_over_floor", "That measurement over this page's bandwidth floor", measured / load, "1",
        noun="×", formula="{lorax_measured_load_s} / {adapter_load_from_dram_s}",
    )
    d.step(
        "measured_load_in_steps", "That measurement in decode steps of a shared replica", measured / lora_s, "1",
        noun="steps", formula="{lorax_measured_load_s} / {lora_step_s}",
    )
    # The engines' per-batch adapter caps, against what a routed batch carries.
    d.step("vllm_max_loras", "vLLM's default max_loras (adapters in one batch)", VLLM_MAX_LORAS, "1",
           noun="adapters", kind="lookup", note="vllm.config.lora LoRAConfig")
    d.step("sglang_max_loras_per_batch", "SGLang's default max_loras_per_batch", SGLANG_MAX_LORAS_PER_BATCH, "1",
           noun="adapters", kind="lookup", note="SGLang docs, LoRA serving")
    d.step(
        "engine_cap_clause", "The engines' default per-batch caps against the adapters a batch carries",
        "Both defaults are below the {0} a batch carries here, and below the {1} it carries with affinity "
        "routing: left alone, requests wait for a slot while the GPU has room".format(
            format_quantity(distinct, "1", noun="adapters"), format_quantity(distinct_routed, "1", noun="adapters"))
        if distinct_routed > SGLANG_MAX_LORAS_PER_BATCH else
        "vLLM's default is below the {0} a batch carries here; SGLang's covers the {1} a batch carries with "
        "affinity routing, but not a random mix".format(
            format_quantity(distinct, "1", noun="adapters"), format_quantity(distinct_routed, "1", noun="adapters"))
        if distinct > SGLANG_MAX_LORAS_PER_BATCH else
        "Even SGLang's default covers the {0} a batch carries here; vLLM's single adapter does not".format(
            format_quantity(distinct, "1", noun="adapters")),
        "1", formula="{distinct_adapters_per_batch_routed} against {sglang_max_loras_per_batch}", kind="verdict",
    )

    # --- when a variant earns its own replica ----------------------------------------------------
    # A replica alone at b = tokens/s x TPOT is busy step(b) / TPOT: it reaches the target when its
    # step takes target x TPOT, which is the engine's TPOT cap at that shorter time.
    util_cap = d.step(
        "batch_at_target_utilization_continuous", "Batch whose base step takes target utilization × the TPOT target",
        r.tpot_batch_cap(p.target_utilization * tpot, ctx), "1", noun="sequences",
        formula=cap_formula("{target_utilization} × {tpot_target_ms}"),
    )
    full_b = min(float(batch), util_cap)
    threshold = d.step(
        "dedicate_threshold_tokens_per_s", "Steady demand that keeps a replica at target utilization",
        full_b / tpot, "1/s", noun="tokens",
        formula="min({decode_batch}, {batch_at_target_utilization_continuous}) / {tpot_target_ms}",
    )
    d.step(
        "dedicate_threshold_share", "The same as a share of all traffic",
        threshold / p.total_tokens_per_s, "1", percent=True,
        formula="{dedicate_threshold_tokens_per_s} / {total_tokens_per_s}",
    )
    top = d.step(
        "top_variant_tokens_per_s", "Busiest variant's demand", p.total_tokens_per_s * p.top_variant_share, "1/s",
        noun="tokens", formula="{total_tokens_per_s} × {top_variant_share}",
    )
    if threshold > 0:
        top_reps = max(1, math.ceil(top / threshold - 1e-9))
        top_formula = "max(1, ceil({top_variant_tokens_per_s} / {dedicate_threshold_tokens_per_s}))"
    else:  # no batch keeps a replica within the target: count replicas at the full batch instead
        top_reps = max(1, math.ceil(top * tpot / batch - 1e-9))
        top_formula = "max(1, ceil({top_variant_tokens_per_s} × {tpot_target_ms} / {decode_batch}))"
    d.step(
        "top_variant_dedicated_replicas", "Dedicated replicas the busiest variant alone needs at the target",
        top_reps, "1", noun="replicas", formula=top_formula,
    )
    d.step(
        "top_variant_earns_replica", "Does the busiest variant fill a replica of its own?",
        "yes" if top >= threshold else "no", "1",
        formula="{top_variant_tokens_per_s} ≥ {dedicate_threshold_tokens_per_s}", kind="verdict",
    )
    d.step(
        "full_finetune_extra_gpus", "A full fine-tune (or another base): its own replica, however idle",
        p.tp_degree, "1", noun="GPUs", formula="{tp_degree} GPUs",
    )
    d.step(
        "full_finetune_load_from_nvme_s", "A scaled-to-zero full fine-tune's weights back from one local NVMe drive",
        base / NVME.Bps, "s", formula="{base_weight_bytes} / {nvme_Bps}",
    )
    return d
