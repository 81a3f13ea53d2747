"""Fair share on a shared research cluster (seeds 000 and 004).

The scenario is a Monday morning on a 512-GPU cluster owned through a quota tree: the org
splits into two divisions, Models (Pretraining, Post-training) and Research (Interpretability,
Evals), and each team's share is a guarantee. Last week Interpretability was away and
Pretraining borrowed its GPUs; Evals held its whole guarantee although it used a quarter of it.
This morning Post-training submits a sweep. The walkthrough computes, in interview order:

- the guarantees, and the decayed usage each team carries from last week (steady state: a team
  that ran `a` GPUs for many half-lives carries `a x tick / (1 - 2^(-tick / half_life))`
  GPU-hours, about `a x half_life / ln 2`);
- Slurm's classic fair-share factor F = 2^(-u / s) with u the normalized usage and s the
  normalized share;
- the water-filling allocation of the idle GPUs between the two teams that want them, weighted
  by share x F;
- the preemption when Interpretability returns, and the work it costs with and without a
  checkpoint on the preemption signal;
- what hoarding buys Evals and what it costs.

Modelling choices stated on the page: last week Post-training was quiet, running
`history_posttrain` x its share (or its demand, if lower), and Pretraining borrowed whatever else
was idle (the only borrower, so no weights are involved); Research never borrows this morning
(Evals' real use is capped at its share), so division weights drop out of the hand arithmetic.
Allocations are whole gangs: the water-filled targets are rounded to whole jobs (largest
remainder), and borrowed, free and preempted GPUs are counted in those gangs. A borrower loses at
most its borrowed gangs to preemption, which sets how the least-work-lost victims split. The
simulation (`models.sim.fair_share`) starts from this morning's whole gangs with last week's
ledger, and its first tick reproduces the water-filling figures.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Annotated, Literal

from models.core import Derivation, Knob, StrictModel
from models.units import format_number, format_quantity
from models.sim import fair_share as fs

TEAMS = ("Pretraining", "Post-training", "Interpretability", "Evals")
DIVISIONS = ("Models", "Models", "Research", "Research")
HOURS_PER_WEEK = 168
VICTIM_POLICIES = {"least work lost": "checkpoint", "random": "random"}
K8S_DEFAULT_GRACE_S = 30.0  # PodSpec terminationGracePeriodSeconds when unset (Kubernetes API reference)


class Params(StrictModel):
    total_gpus: Annotated[
        int,
        Knob("GPUs in the cluster", "GPUs", 64, 8192, step=8, log=True,
             help="Every GPU the quota tree divides; whole jobs are placed on them.", draw=(512, 4096), draw_choices=(512, 1024, 1536, 2048, 3072, 4096)),
    ] = 512
    share_pretrain: Annotated[
        float,
        Knob("Pretraining share", "", 0.05, 0.9, 0.005, percent=True,
             help="Weight in the quota tree (Models division). Shares are normalized to sum to 100%.",
             draw=(0.3, 0.6)),
    ] = 0.5
    share_posttrain: Annotated[
        float,
        Knob("Post-training share", "", 0.05, 0.9, 0.005, percent=True,
             help="Weight in the quota tree (Models division).", draw=(0.15, 0.35)),
    ] = 0.25
    share_interp: Annotated[
        float,
        Knob("Interpretability share", "", 0.02, 0.5, 0.005, percent=True,
             help="Weight in the quota tree (Research division). This team was away last week.",
             draw=(0.05, 0.2)),
    ] = 0.125
    share_evals: Annotated[
        float,
        Knob("Evals share", "", 0.02, 0.5, 0.005, percent=True,
             help="Weight in the quota tree (Research division). This team is the one that may hoard.",
             draw=(0.05, 0.2)),
    ] = 0.125
    guaranteed_fraction: Annotated[
        float,
        Knob("Guaranteed part of each share", "", 0.0, 1.0, 0.05, percent=True,
             help="The rest of the cluster is a pool lent by fair share only, never reclaimed by preemption.",
             draw=(0.6, 1.0)),
    ] = 1.0
    demand_pretrain: Annotated[
        float,
        Knob("Pretraining demand", "× share", 0.0, 4.0, 0.05,
             help="GPUs its running plus queued jobs ask for, as a multiple of its share of the cluster.",
             draw=(1.1, 2.5)),
    ] = 1.5
    demand_posttrain: Annotated[
        float,
        Knob("Post-training demand with the sweep", "× share", 0.0, 4.0, 0.05,
             help="Last week it ran at its share (or its demand, if lower); this morning's sweep asks for this.",
             draw=(1.0, 2.0)),
    ] = 1.5
    history_posttrain: Annotated[
        float,
        Knob("Post-training last week", "× share", 0.0, 1.0, 0.05,
             help="GPUs it ran last week, before the sweep, as a multiple of its share (a quiet week: low).",
             draw=(0.1, 1.0)),
    ] = 0.25
    demand_interp: Annotated[
        float,
        Knob("Interpretability demand on return", "× share", 0.0, 4.0, 0.05,
             help="What the returning team submits at once, and its offered load afterwards.",
             draw=(0.5, 1.5)),
    ] = 1.0
    demand_evals: Annotated[
        float,
        Knob("Evals real use", "× share", 0.0, 1.0, 0.05,
             help="GPUs Evals' jobs actually run on, as a multiple of its share (at most its share).",
             draw=(0.1, 0.5)),
    ] = 0.25
    evals_hold_fraction: Annotated[
        float,
        Knob("Evals holds", "", 0.0, 1.0, 0.05, percent=True,
             help="Part of its guarantee Evals keeps allocated whether or not anything runs on it (hoarding).",
             draw=(0.6, 1.0)),
    ] = 1.0
    half_life_hours: Annotated[
        float,
        Knob("Usage half-life", "h", 0.5, 720, 0.5, log=True,
             help="A GPU-hour used this long ago counts half. A week (168 h) forgives slowly, a day quickly.",
             draw=(6, 336)),
    ] = 24
    tick_minutes: Annotated[
        float,
        Knob("Scheduler tick", "min", 1, 30, 1,
             help="How often the scheduler recomputes factors, targets and preemptions.", draw=(1, 15)),
    ] = 5
    job_gpus: Annotated[
        int,
        Knob("GPUs per job", "GPUs", 8, 128, 8,
             help="Every job is gang-scheduled on whole 8-GPU nodes; one size for all teams.", draw=(8, 32), draw_choices=(8, 16, 32)),
    ] = 16
    job_hours: Annotated[
        float,
        Knob("Mean job length", "h", 0.5, 72, 0.5, log=True,
             help="Durations are exponential with this mean (simulation only).", draw=(2, 24), simulation=True),
    ] = 8
    checkpoint_minutes: Annotated[
        float,
        Knob("Checkpoint interval", "min", 5, 480, 5, log=True,
             help="Minutes of training between periodic checkpoints.", draw=(15, 120)),
    ] = 60
    save_minutes: Annotated[
        float,
        Knob("Save on signal", "min", 0.1, 30, 0.1, log=True,
             help="Time a job needs to write a checkpoint after the preemption signal (the grace period).",
             draw=(0.5, 10)),
    ] = 2
    return_hour: Annotated[
        float,
        Knob("Interpretability returns at", "h", 1, 336, 1,
             help="Hours after the start of the simulation; its whole guarantee is claimed at once.",
             draw=(6, 48), simulation=True),
    ] = 24
    sim_days: Annotated[
        float,
        Knob("Simulated days", "days", 1, 14, 0.5, help="Length of the simulation.", draw=(2, 5), simulation=True),
    ] = 3
    victim_policy: Annotated[
        Literal["least work lost", "random"],
        Knob("Preemption victims", help="Which borrowed jobs go first when an owner returns (simulation).", simulation=True),
    ] = "least work lost"
    checkpoint_on_signal: Annotated[
        bool,
        Knob("Checkpoint on the preemption signal",
             help="On: a victim saves during the grace period and loses only the save. Off: it loses the work "
                  "since its last periodic checkpoint (simulation; the page shows both numbers).", simulation=True),
    ] = True
    charge_by_allocation: Annotated[
        bool,
        Knob("Charge usage by allocation",
             help="On: a team pays fair-share usage for every GPU it holds, busy or idle. Off: only for GPUs "
                  "running jobs, which makes hoarding free for the hoarder."),
    ] = True


# ---------------------------------------------------------------------------------------------


def _shares(p: Params) -> list[float]:
    raw = [p.share_pretrain, p.share_posttrain, p.share_interp, p.share_evals]
    total = sum(raw)
    return [s / total for s in raw]


def _memory_h(p: Params) -> float:
    tick_h = p.tick_minutes / 60
    return tick_h / (1 - 2 ** (-tick_h / p.half_life_hours))


def _factors(usage: list[float], shares: list[float]) -> list[float]:
    """F = 2^(-u/s) on plain floats (the same formula as `fair_share.fair_share_factors`)."""
    total = sum(usage)
    if total <= 0:
        return [1.0] * len(usage)
    return [2.0 ** (-(u / total) / s) for u, s in zip(usage, shares)]


def _split_formula(team: str, other: str, weight: str = "", other_weight: str = "") -> dict[str, str]:
    """Formulas for a two-team water-fill, keyed by which cap binds (`weight`s default to the
    teams' share × F steps)."""
    weight = weight or f"{{weight_{team}}}"
    other_weight = other_weight or f"{{weight_{other}}}"
    return {
        "none": f"{{guarantee_{team}_gpus}} + {{idle_gpus}} × {weight} / ({weight} + {other_weight})",
        "self": f"{{demand_{team}_gpus}} (its whole demand fits in its guarantee plus its part of the idle GPUs)",
        "other": f"min({{demand_{team}_gpus}}, {{guarantee_{team}_gpus}} + {{idle_gpus}} − "
                 f"({{demand_{other}_gpus}} − {{guarantee_{other}_gpus}}))",
        "alone": f"{{guarantee_{team}_gpus}} + {{idle_gpus}} (the only team above its guarantee)",
        "below": f"{{demand_{team}_gpus}} (below its guarantee, nothing to borrow)",
    }


def _case(dem: float, guar: float, got: float, other_dem: float, other_guar: float, other_got: float) -> str:
    """Which cap binds a team in a two-team water-fill (the key of `_split_formula`)."""
    if dem <= guar + 1e-9:
        return "below"
    if got >= dem - 1e-9:
        return "self"
    if other_dem <= other_guar + 1e-9:
        return "alone"
    if other_got >= other_dem - 1e-9:
        return "other"
    return "none"


def _possessive(name: str) -> str:
    return "'" if name.endswith("s") else "'s"


def _whole_gangs(job: int, room: float, targets: tuple[float, ...], demands: tuple[float, ...],
                 factors: tuple[float, ...]) -> list[int]:
    """Whole jobs per team: each team's floor of its target, then every whole gang still free in
    `room` to the team furthest below its target that still has a whole job queued."""
    n = [math.floor(t / job + 1e-9) for t in targets]
    wants = [math.floor(dem / job + 1e-9) for dem in demands]
    free = room - job * sum(n)
    while free >= job - 1e-9:
        open_ = [i for i in range(len(n)) if n[i] < wants[i]]
        if not open_:
            break
        i = max(open_, key=lambda i: (targets[i] - job * n[i], factors[i], -i))
        n[i] += 1
        free -= job
    return n


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    s_p, s_q, s_i, s_e = _shares(p)
    G = p.total_gpus

    # --- numbers: the tree ---------------------------------------------------------------------
    share_total = d.step(
        "share_total", "Shares as given (the tree normalizes them to 100%)",
        p.share_pretrain + p.share_posttrain + p.share_interp + p.share_evals, "1",
        formula="{share_pretrain} + {share_posttrain} + {share_interp} + {share_evals}",
    )
    gf = p.guaranteed_fraction
    g_p = d.step("guarantee_pretrain_gpus", "Pretraining's guarantee", G * gf * s_p, "1", noun="GPUs",
                 formula="{total_gpus} GPUs × {guaranteed_fraction} × {share_pretrain} / {share_total}")
    g_q = d.step("guarantee_posttrain_gpus", "Post-training's guarantee", G * gf * s_q, "1", noun="GPUs",
                 formula="{total_gpus} GPUs × {guaranteed_fraction} × {share_posttrain} / {share_total}")
    g_i = d.step("guarantee_interp_gpus", "Interpretability's guarantee", G * gf * s_i, "1", noun="GPUs",
                 formula="{total_gpus} GPUs × {guaranteed_fraction} × {share_interp} / {share_total}")
    g_e = d.step("guarantee_evals_gpus", "Evals' guarantee", G * gf * s_e, "1", noun="GPUs",
                 formula="{total_gpus} GPUs × {guaranteed_fraction} × {share_evals} / {share_total}")
    d.step("pool_gpus", "Unguaranteed pool, lent by fair share alone", G - (g_p + g_q + g_i + g_e), "1",
           noun="GPUs",
           formula="{total_gpus} − {guarantee_pretrain_gpus} − {guarantee_posttrain_gpus} − "
                   "{guarantee_interp_gpus} − {guarantee_evals_gpus}")
    d_p = d.step("demand_pretrain_gpus", "Pretraining's demand (running + queued)", p.demand_pretrain * G * s_p, "1",
                 noun="GPUs", formula="{demand_pretrain} × {total_gpus} × {share_pretrain} / {share_total}")
    d_q = d.step("demand_posttrain_gpus", "Post-training's demand with the sweep", p.demand_posttrain * G * s_q,
                 "1", noun="GPUs", formula="{demand_posttrain} × {total_gpus} × {share_posttrain} / {share_total}")
    use_e = d.step("evals_use_gpus", "GPUs Evals' jobs actually run on", p.demand_evals * G * s_e, "1", noun="GPUs",
                   formula="{demand_evals} × {total_gpus} × {share_evals} / {share_total}")
    hold_e = d.step("evals_hold_gpus", "GPUs Evals keeps allocated", p.evals_hold_fraction * g_e, "1", noun="GPUs",
                    formula="{evals_hold_fraction} × {guarantee_evals_gpus}")
    hoard = d.step("hoard_gpus", "Held but idle: the hoard", max(0.0, hold_e - use_e), "1", noun="GPUs",
                   formula="max(0, {evals_hold_gpus} − {evals_use_gpus})")
    evals_alloc = max(hold_e, use_e)
    interp_back = d.step("interp_return_gpus", "Interpretability's demand when it returns",
                         p.demand_interp * G * s_i, "1", noun="GPUs",
                         formula="{demand_interp} × {total_gpus} × {share_interp} / {share_total}")

    # --- decay ---------------------------------------------------------------------------------
    d.step("tick_s", "One scheduler tick", p.tick_minutes * 60, "s", formula="{tick_minutes} min × 60 s/min")
    decay = d.step("decay_per_tick", "Weight left on a GPU-hour after one tick",
                   2 ** (-(p.tick_minutes / 60) / p.half_life_hours), "1",
                   formula="2^(−{tick_minutes} / {half_life_hours})")
    memory = d.step("usage_memory_h", "Hours of a steady rate that decayed usage remembers",
                    _memory_h(p), "h", formula="{tick_minutes} / (1 − {decay_per_tick})")
    d.step("continuous_memory_h", "The same in continuous time: half-life / ln 2",
           p.half_life_hours / math.log(2), "h", formula="{half_life_hours} / ln(2)")
    d.step("weight_of_last_week", "What a GPU-hour from a week ago still counts",
           2 ** (-HOURS_PER_WEEK / p.half_life_hours), "1", formula="2^(−168 h / {half_life_hours} h)")
    del decay

    # --- last week: Interpretability away, only Pretraining borrows ------------------------------
    hist_q = d.step("history_posttrain_gpus", "Post-training last week, before the sweep",
                    min(p.history_posttrain * G * s_q, d_q), "1", noun="GPUs",
                    formula="min({history_posttrain} × {total_gpus} × {share_posttrain} / {share_total}, "
                            "{demand_posttrain_gpus})")
    hist_demand_others = hist_q + evals_alloc  # Interpretability: nothing
    idle_hist = d.step(
        "history_idle_gpus", "Left for Pretraining to borrow last week",
        G - min(d_p, g_p) - hist_demand_others, "1", noun="GPUs",
        formula="{total_gpus} − min({demand_pretrain_gpus}, {guarantee_pretrain_gpus}) − "
                "{history_posttrain_gpus} − max({evals_hold_gpus}, {evals_use_gpus})",
    )
    hist_p = d.step(
        "history_pretrain_gpus", "Pretraining's allocation last week (it borrowed the idle GPUs)",
        min(d_p, min(d_p, g_p) + idle_hist), "1", noun="GPUs",
        formula="min({demand_pretrain_gpus}, min({demand_pretrain_gpus}, {guarantee_pretrain_gpus}) + "
                "{history_idle_gpus})",
    )
    d.step("history_pretrain_limit", "What capped Pretraining's borrowing last week",
           "up to its whole demand" if d_p <= min(d_p, g_p) + idle_hist else "every idle GPU, short of its demand",
           formula="{demand_pretrain_gpus} ≤ min({demand_pretrain_gpus}, {guarantee_pretrain_gpus}) + "
                   "{history_idle_gpus}", kind="verdict")
    d.step("evals_charged_for", "What Evals is charged for",
           "for what it holds" if p.charge_by_allocation else "only for what it runs", kind="lookup")
    charged_e = evals_alloc if p.charge_by_allocation else use_e
    hist_total = d.step(
        "history_charged_gpus", "GPUs charged last week, all teams",
        hist_p + hist_q + charged_e, "1", noun="GPUs",
        formula="{history_pretrain_gpus} + {history_posttrain_gpus} + "
                + ("max({evals_hold_gpus}, {evals_use_gpus})" if p.charge_by_allocation else "{evals_use_gpus}"),
    )
    u_hist = d.step(
        "decayed_usage_gpu_hours", "Pretraining's decayed usage this morning",
        hist_p * memory, "h", formula="{history_pretrain_gpus} GPUs × {usage_memory_h} h", noun="GPU")
    d.step("total_decayed_usage_gpu_hours", "Decayed usage of the whole cluster", hist_total * memory, "h",
           formula="{history_charged_gpus} GPUs × {usage_memory_h} h", noun="GPU")
    u_p = d.step("normalized_usage_pretrain", "Pretraining's normalized usage u",
                 hist_p / hist_total if hist_total > 0 else 0.0, "1",
                 formula="{decayed_usage_gpu_hours} / {total_decayed_usage_gpu_hours}")
    d.step("normalized_share_pretrain", "Pretraining's normalized share s", s_p, "1",
           formula="{share_pretrain} / {share_total}")
    usage = [hist_p, hist_q, 0.0, charged_e]
    factors = _factors(usage, [s_p, s_q, s_i, s_e])
    f_p = d.step("fair_share_factor", "Pretraining's fair-share factor F = 2^(−u/s)", factors[0], "1",
                 formula="2^(−{normalized_usage_pretrain} / {normalized_share_pretrain})")
    f_q = d.step("fair_share_factor_posttrain", "Post-training's fair-share factor", factors[1], "1",
                 formula="2^(−({history_posttrain_gpus} / "
                         "{history_charged_gpus}) / ({share_posttrain} / {share_total}))")
    d.step("fair_share_factor_interp", "Interpretability's factor (no usage: the top)", factors[2], "1",
           formula="2^(−0 / ({share_interp} / {share_total}))")
    f_e = d.step(
        "fair_share_factor_evals", "Evals' fair-share factor, as charged", factors[3], "1",
        formula=("2^(−(max({evals_hold_gpus}, {evals_use_gpus}) / {history_charged_gpus}) / "
                 "({share_evals} / {share_total}))") if p.charge_by_allocation else
                "2^(−({evals_use_gpus} / {history_charged_gpus}) / ({share_evals} / {share_total}))",
    )
    del u_hist, u_p

    # --- this morning: Post-training's sweep; the idle GPUs are water-filled ---------------------
    w_p = d.step("weight_pretrain", "Pretraining's weight for idle GPUs: share × F", s_p * f_p, "1",
                 formula="{normalized_share_pretrain} × {fair_share_factor}")
    w_q = d.step("weight_posttrain", "Post-training's weight: share × F", s_q * f_q, "1",
                 formula="({share_posttrain} / {share_total}) × {fair_share_factor_posttrain}")
    idle = d.step(
        "idle_gpus", "Idle this morning: unused guarantees plus the pool",
        G - min(d_p, g_p) - min(d_q, g_q) - evals_alloc, "1", noun="GPUs",
        formula="{total_gpus} − min({demand_pretrain_gpus}, {guarantee_pretrain_gpus}) − "
                "min({demand_posttrain_gpus}, {guarantee_posttrain_gpus}) − max({evals_hold_gpus}, {evals_use_gpus})",
    )
    extra = fs.waterfill_list(idle, [max(0.0, d_p - g_p), max(0.0, d_q - g_q)], [w_p, w_q])
    a_p = min(d_p, g_p) + extra[0]
    a_q = min(d_q, g_q) + extra[1]

    d.step("allocation_gpus", "Pretraining's allocation: guarantee plus its water-filled part", a_p, "1",
           noun="GPUs",
           formula=_split_formula("pretrain", "posttrain")[_case(d_p, g_p, a_p, d_q, g_q, a_q)])
    d.step("allocation_posttrain_gpus", "Post-training's allocation", a_q, "1", noun="GPUs",
           formula=_split_formula("posttrain", "pretrain")[_case(d_q, g_q, a_q, d_p, g_p, a_p)])
    # Jobs are gangs: a target of 296.1 GPUs runs 18 jobs of 16. The scheduler starts whole jobs up
    # to each target, then backfills any whole gang still free to the team furthest below its target
    # (largest remainder, ties to the higher factor), as the simulation's admission step does.
    n_p, n_q = _whole_gangs(p.job_gpus, G - evals_alloc, (a_p, a_q), (d_p, d_q), (f_p, f_q))
    d.step("allocation_jobs", "Pretraining's jobs: whole gangs up to its target, then backfill", n_p, "1",
           noun="jobs", formula="⌊{allocation_gpus} / {job_gpus}⌋, plus a free gang by largest remainder",
           kind="search")
    d.step("allocation_whole_gpus", "Pretraining's GPUs in whole gangs", n_p * p.job_gpus, "1", noun="GPUs",
           formula="{allocation_jobs} × {job_gpus} GPUs")
    d.step("allocation_posttrain_jobs", "Post-training's jobs: whole gangs up to its target, then backfill", n_q,
           "1", noun="jobs", formula="⌊{allocation_posttrain_gpus} / {job_gpus}⌋, plus a free gang by largest "
                                     "remainder", kind="search")
    d.step("allocation_posttrain_whole_gpus", "Post-training's GPUs in whole gangs", n_q * p.job_gpus, "1",
           noun="GPUs", formula="{allocation_posttrain_jobs} × {job_gpus} GPUs")
    # A guarantee smaller than one job can never run a job on its own GPUs, and preempting for it
    # frees GPUs it cannot use.
    gangs = {"Pretraining": g_p, "Post-training": g_q, "Interpretability": g_i, "Evals": g_e}
    small = [team for team, g in gangs.items() if 0 < g < p.job_gpus - 1e-9]
    d.require("guarantee_holds_a_gang", not small, lambda: (
        f"Jobs are gangs of {format_number(p.job_gpus)} GPUs, but "
        + ", ".join(f"{team}{_possessive(team)} guarantee is {format_number(gangs[team])} GPUs" for team in small)
        + ": such a team cannot run one job on its guarantee, so preempting for it frees GPUs it cannot use."))
    plain = fs.waterfill_list(idle, [max(0.0, d_p - g_p), max(0.0, d_q - g_q)], [s_p, s_q])
    plain_p, plain_q = min(d_p, g_p) + plain[0], min(d_q, g_q) + plain[1]
    d.step("allocation_without_factor_gpus", "Pretraining's allocation if idle GPUs followed shares alone",
           plain_p, "1", noun="GPUs",
           formula=_split_formula("pretrain", "posttrain", "{normalized_share_pretrain}",
                                  "{share_posttrain} / {share_total}")[_case(d_p, g_p, plain_p, d_q, g_q, plain_q)])
    whole_p, whole_q = n_p * p.job_gpus, n_q * p.job_gpus
    d.step("factor_shift_gpus", "Idle GPUs the factor moves from Pretraining to Post-training",
           plain_p - a_p, "1", noun="GPUs", formula="{allocation_without_factor_gpus} − {allocation_gpus}")
    d.step("factor_shift_share", "That move as a share of the idle GPUs", (plain_p - a_p) / idle if idle > 0 else 0.0,
           "1", percent=True, formula="{factor_shift_gpus} / {idle_gpus}" if idle > 0 else "0 (nothing idle)")
    plain_n_p, _plain_n_q = _whole_gangs(p.job_gpus, G - evals_alloc, (plain_p, plain_q), (d_p, d_q), (s_p, s_q))
    d.step("allocation_without_factor_whole_gpus", "Pretraining's whole gangs if idle GPUs followed shares alone",
           plain_n_p * p.job_gpus, "1", noun="GPUs",
           formula="{job_gpus} GPUs × (⌊{allocation_without_factor_gpus} / {job_gpus}⌋, plus a free gang by "
                   "largest remainder)", kind="search")
    borrowed = d.step(
        "borrowed_gpus", "GPUs running above their owners' guarantees, in whole gangs",
        max(0.0, whole_p - g_p) + max(0.0, whole_q - g_q), "1", noun="GPUs",
        formula="max(0, {allocation_whole_gpus} − {guarantee_pretrain_gpus}) + "
                "max(0, {allocation_posttrain_whole_gpus} − {guarantee_posttrain_gpus})",
    )
    free_now = d.step("free_gpus", "GPUs in no gang this morning", max(0.0, G - evals_alloc - whole_p - whole_q),
                      "1", noun="GPUs",
                      formula="{total_gpus} − max({evals_hold_gpus}, {evals_use_gpus}) − {allocation_whole_gpus} − "
                              "{allocation_posttrain_whole_gpus}")

    # --- the owner returns ----------------------------------------------------------------------
    claim = d.step("interp_claim_gpus", "What Interpretability may claim by preemption",
                   min(interp_back, g_i), "1", noun="GPUs",
                   formula="min({interp_return_gpus}, {guarantee_interp_gpus})")
    reclaim = d.step("reclaim_gpus", "GPUs that must come back from borrowers",
                     min(borrowed, max(0.0, claim - free_now)), "1", noun="GPUs",
                     formula="min({borrowed_gpus}, max(0, {interp_claim_gpus} − {free_gpus}))")
    victims = d.step("victim_jobs", "Jobs preempted (whole jobs)", math.ceil(reclaim / p.job_gpus - 1e-9), "1",
                     noun="jobs", formula="⌈{reclaim_gpus} / {job_gpus}⌉")
    pre = d.step("preempted_gpus", "GPUs preempted", victims * p.job_gpus, "1", noun="GPUs",
                 formula="{victim_jobs} × {job_gpus} GPUs")
    borrowing = [(n, key) for n, g, key in ((n_p, g_p, "allocation_jobs"), (n_q, g_q, "allocation_posttrain_jobs"))
                 if n * p.job_gpus > g + 1e-9]
    cands = d.step("candidate_jobs", "Running jobs of the teams above their guarantee",
                   sum(n for n, _ in borrowing), "1", noun="jobs",
                   formula=" + ".join(f"{{{key}}}" for _, key in borrowing) or "0",
                   note="" if borrowing else "No team runs above its guarantee.")
    ckpt_h = p.checkpoint_minutes / 60
    d.step("lost_gpu_hours_without_warning", "Work lost, killed without warning (random victims)",
           pre * ckpt_h / 2, "h", formula="{preempted_gpus} GPUs × {checkpoint_minutes} / 2", noun="GPU")
    # Victims come from a team only while it stays at or above its guarantee: at most its borrowed
    # gangs. Least-work-lost picks spread over the borrowers in proportion to their jobs until a
    # team's cap binds; each team then gives the v smallest of its n checkpoint phases, whose mean
    # is (v + 1) / (2(n + 1)) of an interval.
    job = p.job_gpus
    b_p = math.floor((n_p * job - g_p) / job + 1e-9) if n_p * job > g_p + 1e-9 else 0
    b_q = math.floor((n_q * job - g_q) / job + 1e-9) if n_q * job > g_q + 1e-9 else 0
    d.step("borrowed_jobs_pretrain", "Pretraining's jobs above its guarantee (most it can lose)", b_p, "1",
           noun="jobs", formula="⌊({allocation_whole_gpus} − {guarantee_pretrain_gpus}) / {job_gpus}⌋" if b_p else
           "0 (at or below its guarantee)")
    d.step("borrowed_jobs_posttrain", "Post-training's jobs above its guarantee (most it can lose)", b_q, "1",
           noun="jobs", formula="⌊({allocation_posttrain_whole_gpus} − {guarantee_posttrain_gpus}) / {job_gpus}⌋"
           if b_q else "0 (at or below its guarantee)")
    # No cap binds (every borrower may lose all k): the k smallest of all n phases, exactly. A cap
    # binds: that team gives all its borrowed gangs and the other the rest, each its smallest phases
    # (exact when the victims take every borrowed gang; otherwise the likelier split).
    caps = [b for b in (b_p, b_q) if b]
    pooled = victims == 0 or all(victims <= b for b in caps)
    if pooled:
        v_p = victims if b_p and not b_q else (0 if not b_p else None)
        v_q = victims if b_q and not b_p else (0 if not b_q else None)
    else:
        # the tighter cap (fewer borrowed gangs per running job) binds
        if b_p and b_q:
            p_binds = b_q >= victims or (b_p < victims and b_p / n_p <= b_q / n_q)
            v_p = b_p if p_binds else victims - b_q
            v_q = victims - v_p
        else:  # one borrower, fewer borrowed gangs than the claim needs: it gives them all
            v_p, v_q = (b_p, 0) if b_p else (0, b_q)
    mode = d.step("victim_split", "How the least-work-lost victims split over the borrowers",
                  "pooled" if pooled else "capped", "1", kind="verdict",
                  formula="{victim_jobs} ≤ each borrower's jobs above its guarantee")
    del mode
    if pooled:
        lost_ck = pre * ckpt_h * fs.expected_least_loss_fraction(victims, cands)
        ck_formula = ("{preempted_gpus} GPUs × {checkpoint_minutes} × ({victim_jobs} + 1) / "
                      "(2 × ({candidate_jobs} + 1))")
    else:
        d.step("victims_pretrain_jobs", "Victims from Pretraining", v_p, "1", noun="jobs",
               formula=("{borrowed_jobs_pretrain}" if v_p == b_p else "{victim_jobs} − {borrowed_jobs_posttrain}")
               if b_p else "0 (not above its guarantee)")
        d.step("victims_posttrain_jobs", "Victims from Post-training", v_q, "1", noun="jobs",
               formula="{victim_jobs} − {victims_pretrain_jobs}" if b_p and b_q else
               ("{borrowed_jobs_posttrain}" if b_q else "0 (not above its guarantee)"))
        lost_ck = job * ckpt_h * (v_p * (v_p + 1) / (2 * (n_p + 1)) + v_q * (v_q + 1) / (2 * (n_q + 1)))
        ck_formula = ("{job_gpus} GPUs × {checkpoint_minutes} × ({victims_pretrain_jobs} × ({victims_pretrain_jobs} "
                      "+ 1) / (2 × ({allocation_jobs} + 1)) + {victims_posttrain_jobs} × ({victims_posttrain_jobs} "
                      "+ 1) / (2 × ({allocation_posttrain_jobs} + 1)))")
    d.step("lost_gpu_hours_checkpoint_aware", "Work lost, no warning, victims closest to their last checkpoint",
           lost_ck, "h", formula=ck_formula, noun="GPU")
    d.step("lost_gpu_hours_with_checkpoint_on_signal", "Work lost with a checkpoint on the signal: the save only",
           pre * p.save_minutes / 60, "h", formula="{preempted_gpus} GPUs × {save_minutes}", noun="GPU")
    frac = lost_ck / (pre * ckpt_h) if pre > 0 else 0.0
    d.step("break_even_checkpoint_minutes", "Checkpoint interval below which least-work-lost kills lose less than a save",
           p.save_minutes / frac if frac > 0 else math.inf, "min",
           formula="{save_minutes} × {preempted_gpus} GPUs × {checkpoint_minutes} / {lost_gpu_hours_checkpoint_aware}"
           if frac > 0 else "",
           note="" if frac > 0 else "No job is preempted, so no interval breaks even.")
    # The prose's clause about that interval, chosen here: an unbounded one is no interval to be
    # "below", and with nobody preempted nothing is lost at any.
    d.step("break_even_clause", "Checkpoint intervals at which killing at once beats a save",
           f"below {format_quantity(p.save_minutes / frac, 'min')} between checkpoints, killing the least-work-lost "
           "victims at once loses less than the save" if frac > 0
           else "here no job is preempted, so nothing is lost at any interval",
           formula="{break_even_checkpoint_minutes}", kind="verdict")
    d.step("signal_saving_ratio", "Without warning over with the signal",
           (ckpt_h / 2) / (p.save_minutes / 60), "1", noun="×",
           formula="({checkpoint_minutes} min / 2) / {save_minutes} min")
    # Kubernetes kills an evicted pod terminationGracePeriodSeconds after SIGTERM; unset, that is
    # 30 s, so a save longer than that needs the field raised or the victim dies mid-save.
    d.step("k8s_default_grace_s", "Kubernetes: terminationGracePeriodSeconds when a pod sets none",
           K8S_DEFAULT_GRACE_S, "s", kind="lookup")
    d.step("save_over_default_grace", "The save on the signal over Kubernetes' default grace",
           p.save_minutes * 60 / K8S_DEFAULT_GRACE_S, "1", noun="×",
           formula="{save_minutes} / {k8s_default_grace_s}")
    d.step("default_grace_verdict", "Does Kubernetes' default grace period cover the save?",
           "yes" if p.save_minutes * 60 <= K8S_DEFAULT_GRACE_S
           else "no: set terminationGracePeriodSeconds to at least the save, or the save dies with SIGKILL",
           formula="{save_minutes} ≤ {k8s_default_grace_s}", kind="verdict")
    d.step("owner_wait_s", "Longest an owner waits for its guarantee: one tick plus the save",
           (p.tick_minutes + p.save_minutes) * 60, "s", formula="{tick_minutes} + {save_minutes}")
    d.step("checkpoint_overhead_share", "Training time a blocking periodic checkpoint costs",
           p.save_minutes / p.checkpoint_minutes, "1", percent=True, formula="{save_minutes} / {checkpoint_minutes}")
    d.require("checkpoint_overhead_share", p.save_minutes < p.checkpoint_minutes, lambda: (
        f"A job would never train: writing a checkpoint takes {format_number(p.save_minutes)} min, no shorter than "
        f"the {format_number(p.checkpoint_minutes)} min between checkpoints."))

    # --- hoarding -------------------------------------------------------------------------------
    d.step("hoard_idle_gpu_hours_per_day", "GPU time the hoard wastes a day", hoard * 24, "h",
           formula="{hoard_gpus} GPUs × 24 h", noun="GPU")
    shares = [s_p, s_q, s_i, s_e]
    tot_alloc = d.step("history_total_by_allocation_gpus", "Charged last week if holding counts (the full cluster)",
                       hist_p + hist_q + evals_alloc, "1", noun="GPUs",
                       formula="{history_pretrain_gpus} + {history_posttrain_gpus} + "
                               "max({evals_hold_gpus}, {evals_use_gpus})")
    tot_use = d.step("history_total_by_use_gpus", "Charged last week if only running jobs count",
                     hist_p + hist_q + use_e, "1", noun="GPUs",
                     formula="{history_pretrain_gpus} + {history_posttrain_gpus} + "
                             "{evals_use_gpus}")
    # Released: the hold goes back to the tree and Pretraining borrows it instead (up to its demand).
    hist_p_rel = min(d_p, G - hist_q - use_e)
    tot_rel = d.step("history_total_if_released_gpus", "Charged last week had Evals released its hoard",
                     hist_p_rel + hist_q + use_e, "1", noun="GPUs",
                     formula="min({demand_pretrain_gpus}, {total_gpus} − {history_posttrain_gpus} − "
                             "{evals_use_gpus}) + {history_posttrain_gpus} + {evals_use_gpus}")
    fa = d.step("evals_factor_charged_by_allocation", "Evals' factor if it hoards and pays for what it holds",
                _factors([hist_p, hist_q, 0.0, evals_alloc], shares)[3], "1",
                formula="2^(−(max({evals_hold_gpus}, {evals_use_gpus}) / {history_total_by_allocation_gpus}) / "
                        "({share_evals} / {share_total}))")
    d.step("evals_factor_charged_by_use", "Evals' factor if it hoards and pays only for what runs",
           _factors([hist_p, hist_q, 0.0, use_e], shares)[3], "1",
           formula="2^(−({evals_use_gpus} / {history_total_by_use_gpus}) / ({share_evals} / {share_total}))")
    fr = d.step("evals_factor_if_released", "Evals' factor if it releases the hoard (Pretraining borrows it)",
                _factors([hist_p_rel, hist_q, 0.0, use_e], shares)[3], "1",
                formula="2^(−({evals_use_gpus} / {history_total_if_released_gpus}) / ({share_evals} / {share_total}))")
    del tot_alloc, tot_use, tot_rel
    d.step("hoarding_weight_ratio", "Evals' claim on idle GPUs, hoarding over releasing",
           fa / fr, "1", noun="×", formula="{evals_factor_charged_by_allocation} / {evals_factor_if_released}")
    d.step("busy_utilization_cap_share", "Most of the cluster that can run jobs while the hoard sits idle",
           (G - hoard) / G, "1", percent=True, formula="({total_gpus} − {hoard_gpus}) / {total_gpus}")
    del f_e
    # Words the quota tree and the tick diagrams read (content [[diagrams]]), and the week the
    # half-life chart marks.
    d.step("charge_basis", "What the ledger charges", "by allocation (held GPUs)" if p.charge_by_allocation
           else "by use (running GPUs)", "", kind="lookup", note="The charge_by_allocation knob.")
    d.step("hours_per_week", "One week", HOURS_PER_WEEK, "h", kind="lookup")
    d.step("models_guarantee_gpus", "Models division's guarantees", d.value("guarantee_pretrain_gpus")
           + d.value("guarantee_posttrain_gpus"), "1", noun="GPUs",
           formula="{guarantee_pretrain_gpus} + {guarantee_posttrain_gpus}")
    d.step("research_guarantee_gpus", "Research division's guarantees", d.value("guarantee_interp_gpus")
           + d.value("guarantee_evals_gpus"), "1", noun="GPUs", formula="{guarantee_interp_gpus} + {guarantee_evals_gpus}")
    return d


# ---------------------------------------------------------------------------------------------
# The live simulation of the same morning.


def team_specs(p: Params) -> list[fs.TeamSpec]:
    """The four teams as the simulation sees them, starting from last week's state."""
    d = solve(p)
    v = d.value
    memory = v("usage_memory_h")
    ckpt_h = p.checkpoint_minutes / 60
    hist_p = v("history_pretrain_gpus")
    hist_q = v("history_posttrain_gpus")
    # The run starts this morning: the ledger holds last week, the GPUs run this morning's whole gangs
    # (Post-training's own guarantee already back from the borrower).
    run_p, run_q = v("allocation_whole_gpus"), v("allocation_posttrain_whole_gpus")
    evals_alloc = max(v("evals_hold_gpus"), v("evals_use_gpus"))
    charged_e = evals_alloc if p.charge_by_allocation else v("evals_use_gpus")
    common = dict(job_gpus=p.job_gpus, job_hours=p.job_hours, checkpoint_h=ckpt_h)
    return [
        fs.TeamSpec(TEAMS[0], DIVISIONS[0], p.share_pretrain, offered_gpus=v("demand_pretrain_gpus"),
                    burst_gpus=max(0.0, v("demand_pretrain_gpus") - run_p), initial_running_gpus=run_p,
                    initial_usage_gpu_h=hist_p * memory, **common),
        fs.TeamSpec(TEAMS[1], DIVISIONS[1], p.share_posttrain, offered_gpus=v("demand_posttrain_gpus"),
                    burst_gpus=max(0.0, v("demand_posttrain_gpus") - run_q), initial_running_gpus=run_q,
                    initial_usage_gpu_h=hist_q * memory, **common),
        fs.TeamSpec(TEAMS[2], DIVISIONS[2], p.share_interp, offered_gpus=v("interp_return_gpus"),
                    start_h=p.return_hour, burst_gpus=v("interp_return_gpus"), **common),
        fs.TeamSpec(TEAMS[3], DIVISIONS[3], p.share_evals, offered_gpus=v("evals_use_gpus"),
                    hold_gpus=v("evals_hold_gpus"), initial_running_gpus=v("evals_use_gpus"),
                    initial_usage_gpu_h=charged_e * memory, **common),
    ]


def _run_kwargs(p: Params) -> dict:
    return dict(
        hours=p.sim_days * 24,
        tick_h=p.tick_minutes / 60,
        half_life_h=p.half_life_hours,
        guaranteed_fraction=p.guaranteed_fraction,
        save_h=p.save_minutes / 60,
        victim_policy=VICTIM_POLICIES[p.victim_policy],
        checkpoint_on_signal=p.checkpoint_on_signal,
        charge_by_allocation=p.charge_by_allocation,
    )


def simulate(p: Params, seed: int = 0) -> fs.FairShareResult:
    return fs.run(fs.Config(p.total_gpus, team_specs(p), **_run_kwargs(p)), seed)


def simulate_scaled(p: Params, factor: float, seed: int = 0) -> fs.FairShareResult:
    """The same morning on a cluster `factor` times larger, every team's load scaled with it
    (for the benchmark: jobs grow with the factor, ticks do not)."""
    specs = [
        replace(t, offered_gpus=t.offered_gpus * factor, burst_gpus=t.burst_gpus * factor,
                hold_gpus=t.hold_gpus * factor, initial_running_gpus=t.initial_running_gpus * factor,
                initial_usage_gpu_h=t.initial_usage_gpu_h * factor)
        for t in team_specs(p)
    ]
    return fs.run(fs.Config(int(round(p.total_gpus * factor)), specs, **_run_kwargs(p)), seed)


# The run's figures as steps (issue 19): the live panel's cards, caption and replay read these, each
# beside the closed form it is held to. The panel also runs the other Evals policy on the same seed
# (holding its idle GPUs or releasing them), so the two can be set side by side.
def counterpart(p: Params) -> dict:
    """The other Evals policy: release the hoard if it holds one, else hold all of its idle GPUs."""
    return {"evals_hold_fraction": 0.0 if p.evals_hold_fraction > 0 else 1.0}


def _mean_or_none(x) -> float | str:
    return float(x.mean()) if x.size else "no jobs"


def simulation_steps(p: Params, r: fs.FairShareResult, other: fs.FairShareResult | None = None) -> Derivation:
    import numpy as np  # the closed forms need no numpy; only the run's samples do

    d = Derivation(p)
    t_ret = r.tick_at(p.return_hour) if p.return_hour < p.sim_days * 24 else None
    before = slice(0, t_ret if t_ret else r.ticks)
    at_ret = (r.ev_tick == t_ret) if t_ret is not None else np.zeros(r.ev_tick.shape, bool)
    d.step("sim_first_target_gpus", "Pretraining's target, first tick (sim)", float(r.target[0, 0]), "1", noun="GPUs",
           kind="simulated", note="The run starts from last week's ledger, so its first water-filling is the hand "
                                  "arithmetic. Afterwards the factors move and whole jobs round the split.")
    d.step("sim_borrowed_gpus", "Borrowed before the return (sim mean)", float(r.borrowed[before].sum(axis=1).mean()),
           "1", noun="GPUs", kind="simulated")
    d.step("sim_preempted_at_return_gpus", "Preempted at the return (sim)",
           float(r.preempted[t_ret].sum()) if t_ret is not None else "no return in the run", "1", noun="GPUs",
           kind="simulated", note="Jobs that happen to end at the same tick give some GPUs back without a preemption.")
    d.step("sim_lost_checkpoint_aware_gpu_h", "Lost at the return, least-work victims (sim)",
           float(r.ev_lost_checkpoint_gpu_h[at_ret].sum()), "h", noun="GPU", kind="simulated",
           note="Work since the victims' last checkpoint, killed without warning. One run; the closed form is a mean.")
    d.step("sim_lost_random_gpu_h", "Lost at the return, random victims on the same state (sim)",
           float(np.nansum(r.ev_lost_random_gpu_h[at_ret])), "h", noun="GPU", kind="simulated")
    d.step("sim_preemptions", "Preemptions over the run", r.preemptions, "1", noun="jobs", kind="simulated",
           note="GPU-hours the same victims lose with a save on the signal, and without warning.")
    d.step("sim_lost_on_signal_gpu_h", "Lost over the run with a save on the signal", float(r.lost_signal_total), "h",
           noun="GPU", kind="simulated")
    d.step("sim_lost_blind_gpu_h", "Lost over the run without warning", float(r.lost_no_warning_total), "h",
           noun="GPU", kind="simulated")
    d.step("sim_min_utilization_oversubscribed", "Lowest utilization when oversubscribed",
           float(r.min_utilization_when_oversubscribed) if r.oversubscribed.any() else "never oversubscribed", "1",
           percent=True, kind="simulated", note="GPUs held over the cluster, at every tick where demand reached it.")
    d.step("sim_jobs_arrived", "Jobs arrived", int((r.job_state > 0).sum()), "1", noun="jobs", kind="simulated")
    d.step("sim_jobs_finished", "Jobs finished", int((r.job_state == fs._DONE).sum()), "1", noun="jobs",
           kind="simulated")
    if other is not None:
        hoard, free = (r, other) if p.evals_hold_fraction > 0 else (other, r)
        d.step("sim_running_share_holding", "GPUs running jobs while Evals holds", float(hoard.busy_utilization.mean()),
               "1", percent=True, kind="simulated")
        d.step("sim_running_share_releasing", "GPUs running jobs while Evals releases",
               float(free.busy_utilization.mean()), "1", percent=True, kind="simulated")
        evals = list(r.team_names).index("Evals")
        d.step("sim_evals_wait_holding_min", "Evals' mean start wait while holding",
               _hours_to_min(_mean_or_none(hoard.waits_by_team()[evals])), "min", kind="simulated")
        d.step("sim_evals_wait_releasing_min", "Evals' mean start wait while releasing",
               _hours_to_min(_mean_or_none(free.waits_by_team()[evals])), "min", kind="simulated")
    return d


def _hours_to_min(h: float | str) -> float | str:
    return h * 60 if not isinstance(h, str) else h


def replay_steps(p: Params, r: fs.FairShareResult, t_s: float) -> Derivation:
    """The cluster at one tick: who borrows, who was preempted for whom and what it cost, the factors."""
    import numpy as np

    d = Derivation(p)
    t = int(round(t_s / (r.tick_h * 3600)))
    names = list(r.team_names)
    d.step("replay_hour", "Hour of the run", float(r.t_h[t]), "h", kind="given")
    borrowed = [f"{names[i]} {format_number(r.borrowed[t, i])}" for i in range(len(names)) if r.borrowed[t, i] > 0.5]
    d.step("replay_borrowing", "Borrowing", ", ".join(borrowed) + " GPUs above guarantee" if borrowed else "nobody", "",
           kind="simulated")
    at = np.flatnonzero(r.ev_tick == t)
    events = []
    for owner in sorted(set(r.ev_owner[at].tolist())):
        ev = at[r.ev_owner[at] == owner]
        victims = [names[k] for e in ev for k in r.ev_victim_team[e]]
        from_ = ", ".join(f"{victims.count(n)} from {n}" for n in dict.fromkeys(victims))
        events.append(f"for {names[owner]}: {int(r.ev_victims[ev].sum())} jobs ({from_}), "
                      f"{format_number(r.ev_gpus[ev].sum())} GPUs")
    d.step("replay_preempted", "Preempted at this tick", "; ".join(events) if events else "at this tick: nobody", "",
           kind="simulated")
    d.step("replay_lost_checkpoint_gpu_h", "Work since the victims' last checkpoint",
           float(r.ev_lost_checkpoint_gpu_h[at].sum()), "h", noun="GPU", kind="simulated")
    d.step("replay_lost_random_gpu_h", "The same with random victims", float(np.nansum(r.ev_lost_random_gpu_h[at])), "h",
           noun="GPU", kind="simulated")
    d.step("replay_lost_signal_gpu_h", "The same with a save on the signal", float(r.ev_lost_signal_gpu_h[at].sum()),
           "h", noun="GPU", kind="simulated")
    d.step("replay_factors", "Fair-share factors", ", ".join(f"{n} {f:.3f}" for n, f in zip(names, r.factor[t])), "",
           kind="simulated")
    return d


def replay_start_s(p: Params, r: fs.FairShareResult) -> float:
    """A fresh replay opens on the owner's return (the preemptions), or on the first tick without one."""
    t = r.tick_at(p.return_hour) if p.return_hour < p.sim_days * 24 else 0
    return t * r.tick_h * 3600
