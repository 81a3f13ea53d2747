"""A GPU credit system: a ledger with a scheduler attached (seeds 000, 003, 004).

Who may spend, how fast, what happens when the account is empty and when everyone spends at once,
on 4,096 GPUs. Credits are GPU-hours. The walkthrough computes, in interview order:

    capacity            GPUs x hours in the period: everything anyone can spend
    credits to issue    capacity / the share of granted credits teams are expected to spend
                        (overbooking, as an airline does with seats)
    grants              credits split by team weight (the same weight the fairness rule uses)
    the debit path      one debit per running job per metering interval, not one per GPU-second;
                        a hold for the job's maximum runtime at admission, released at the end
    contention          weighted max-min fairness by water-filling (`water_fill`)
    exhaustion          a team's grant over the GPUs it burns

Two pure functions carry the interactive parts and are tested on their own:

    water_fill(capacity, demands, weights)   the allocation, with the rounds that produced it
    job_ledger(...)                          double-entry postings for one job: grant, hold,
                                             debit per interval, release; every transaction's
                                             postings sum to zero

Modelling choices stated on the page: teams are weighted by the same number for grants and for
fairness; every GPU runs a job during the busy hour (jobs = GPUs / GPUs per job); a job that
outlives its hold is stopped at the hold's end; a team with weight 0 is a scavenger that gets only
what positive-weight teams leave.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Sequence

from models.core import Derivation, Knob, StrictModel

TEAMS = ("Pretraining", "Post-training", "Research", "Evals")
TEAM_KEYS = ("pretraining", "posttraining", "research", "evals")
EPS = 1e-9
SLURM_BILLING_SCALE = 100  # billing units per H100-hour-credit: Slurm truncates a job's billing to an integer


class Params(StrictModel):
    gpus: Annotated[
        int,
        Knob("GPUs in the cluster", "GPUs", 256, 65536, 8, log=True,
             help="Every GPU the credits buy time on.", draw=(1024, 16384), draw_choices=(1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384)),
    ] = 4096
    period_days: Annotated[
        int,
        Knob("Credit period", "days", 1, 92, 1, help="Grants are issued per period and expire at its end.",
             draw=(7, 31)),
    ] = 30
    expected_spend_fraction: Annotated[
        float,
        Knob("Expected spend", "", 0.3, 1.0, 0.01, percent=True,
             help="Share of granted credits teams actually spend in a period (from history).", draw=(0.6, 0.95)),
    ] = 0.8
    gpus_per_job: Annotated[
        int,
        Knob("GPUs per job (mean)", "GPUs", 1, 1024, 1, log=True,
             help="Average job size; one debit per job per interval.", draw=(4, 64), draw_choices=(4, 8, 16, 32, 64)),
    ] = 8
    meter_interval_s: Annotated[
        float,
        Knob("Metering interval", "s", 1, 3600, 1, log=True,
             help="How often a running job is debited for the GPU time since its last debit.", draw=(15, 600)),
    ] = 60
    max_runtime_h: Annotated[
        float,
        Knob("Maximum runtime (hold)", "h", 1, 336, 1, log=True,
             help="A job's wall-clock limit; admission holds GPUs x this many hours.", draw=(4, 72)),
    ] = 24
    job_run_h: Annotated[
        float,
        Knob("Research job's actual runtime", "h", 0.1, 336, 0.1, log=True,
             help="How long the example job in the ledger really runs; it stops at its hold if longer.",
             draw=(0.5, 24)),
    ] = 3.5
    h100_speedup_over_a100: Annotated[
        float,
        Knob("H100 speed over A100 (measured)", "", 1.0, 6.0, 0.1,
             help="How many A100-hours of the org's own training work one H100-hour does; credits are "
                  "H100-hours, so an A100-hour costs 1 / this. MosaicML measured 3x (H100 FP8 against A100 BF16).",
             draw=(2.0, 3.5)),
    ] = 3.0
    weight_pretraining: Annotated[
        float, Knob("Pretraining weight", "", 0, 10, 0.5, help="Share of grants and of contended GPUs.",
                    draw=(2, 5))
    ] = 3
    demand_pretraining_gpus: Annotated[
        int, Knob("Pretraining demand", "GPUs", 0, 16384, 8, help="GPUs its queued and running jobs want now.",
                  draw=(1024, 4096))
    ] = 3072
    weight_posttraining: Annotated[
        float, Knob("Post-training weight", "", 0, 10, 0.5, help="Share of grants and of contended GPUs.",
                    draw=(1, 3))
    ] = 2
    demand_posttraining_gpus: Annotated[
        int, Knob("Post-training demand", "GPUs", 0, 16384, 8, help="GPUs its jobs want now.", draw=(256, 2048))
    ] = 1024
    weight_research: Annotated[
        float, Knob("Research weight", "", 0, 10, 0.5, help="Share of grants and of contended GPUs.", draw=(0.5, 2))
    ] = 1
    demand_research_gpus: Annotated[
        int, Knob("Research demand", "GPUs", 0, 16384, 8, help="GPUs its jobs want now.", draw=(256, 2048))
    ] = 1024
    weight_evals: Annotated[
        float, Knob("Evals weight", "", 0, 10, 0.5, help="Share of grants and of contended GPUs.", draw=(0.5, 2))
    ] = 1
    demand_evals_gpus: Annotated[
        int, Knob("Evals demand", "GPUs", 0, 16384, 8, help="GPUs its jobs want now.", draw=(64, 1024))
    ] = 256

    def weights(self) -> list[float]:
        return [getattr(self, f"weight_{k}") for k in TEAM_KEYS]

    def demands(self) -> list[float]:
        return [float(getattr(self, f"demand_{k}_gpus")) for k in TEAM_KEYS]

    @classmethod
    def draw_together(cls, values: dict, rng) -> dict:
        """A mock's example job ends before its wall-clock limit (10-80% of it when a draw put it
        at or past the limit), so the release hands something back: drawn on their own, 159
        scenarios in 1,000 asked what a job that ran to its hold returns.

        The cluster is drawn below the teams' total demand (1.1-1.6x over it, or the largest size
        under it): the page teaches the rule under contention, and drawn on their own, 12,288 GPUs
        met 4,640 GPUs of demand, where the water level is infinite and a split by demand hands
        teams more than they ask."""
        out = {}
        if values["job_run_h"] >= values["max_runtime_h"]:
            out["job_run_h"] = rng.uniform(0.1, 0.8) * values["max_runtime_h"]
        total = sum(values[f"demand_{k}_gpus"] for k in TEAM_KEYS)
        sizes = (1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384)  # the gpus knob's draw_choices
        if not total / 1.6 <= values["gpus"] <= total / 1.1:
            fits = [c for c in sizes if total / 1.6 <= c <= total / 1.1]
            under = [c for c in sizes if c < total] or [sizes[0]]
            out["gpus"] = fits[int(rng.integers(len(fits)))] if fits else max(under)
        return out


# ---------------------------------------------------------------------------------------------
# Weighted max-min fairness


@dataclass(frozen=True)
class FillRound:
    level: float  # capacity per unit of weight offered in this round
    satisfied: tuple[int, ...]  # teams whose whole remaining demand fits under the level
    scavenger: bool = False  # a round among weight-0 teams, after everyone else


@dataclass(frozen=True)
class Fill:
    allocation: tuple[float, ...]
    rounds: tuple[FillRound, ...] = field(default_factory=tuple)

    @property
    def level(self) -> float:
        """The final water level per unit of weight among positive-weight teams (inf if all satisfied)."""
        last = [r for r in self.rounds if not r.scavenger]
        if not last or last[-1].satisfied:
            return math.inf
        return last[-1].level


def _fill(capacity: float, demands: list[float], weights: list[float], members: list[int],
          scavenger: bool) -> tuple[dict[int, float], float, list[FillRound]]:
    alloc: dict[int, float] = {}
    rounds: list[FillRound] = []
    active = [i for i in members if demands[i] > 0]
    remaining = capacity
    while active and remaining > EPS:
        total_w = sum(weights[i] for i in active)
        level = remaining / total_w
        # demand <= level x weight, written with the share weight / total so that a tiny weight can
        # neither overflow the level nor lose precision in a product
        offer = {i: remaining * (weights[i] / total_w) for i in active}
        sat = tuple(i for i in active if demands[i] <= offer[i] * (1 + 1e-12))
        if sum(demands[i] for i in sat) > remaining:  # rounding at the boundary: nobody fits after all
            sat = ()
        rounds.append(FillRound(level, sat, scavenger))
        if not sat:
            alloc.update(offer)
            return alloc, 0.0, rounds
        for i in sat:
            alloc[i] = demands[i]
            remaining -= demands[i]
        active = [i for i in active if i not in sat]
    return alloc, max(0.0, remaining), rounds


def water_fill_trace(capacity: float, demands: Sequence[float], weights: Sequence[float]) -> Fill:
    """Weighted max-min fair shares of `capacity`, with the rounds that produced them.

    Each round offers every unsatisfied team `level x weight`, where level = what is left / their
    total weight. Teams whose demand fits are frozen at their demand, and what they did not need
    is offered again in the next round. When nobody fits, the rest is split by weight. Teams of
    weight 0 (scavengers) share, equally, only what positive-weight teams leave.
    """
    d = [float(x) for x in demands]
    w = [float(x) for x in weights]
    if len(d) != len(w):
        raise ValueError("one weight per demand")
    if capacity < 0 or any(x < 0 for x in d) or any(x < 0 for x in w):
        raise ValueError("capacity, demands and weights must be non-negative")
    n = len(d)
    weighted = [i for i in range(n) if w[i] > 0]
    alloc, left, rounds = _fill(float(capacity), d, w, weighted, scavenger=False)
    scavengers = [i for i in range(n) if w[i] == 0]
    if scavengers and left > EPS:
        more, _, extra = _fill(left, d, [1.0] * n, scavengers, scavenger=True)
        alloc.update(more)
        rounds += extra
    return Fill(tuple(alloc.get(i, 0.0) for i in range(n)), tuple(rounds))


def water_fill(capacity: float, demands: Sequence[float], weights: Sequence[float]) -> list[float]:
    """Weighted max-min fair allocation: never above capacity, never above a demand, and all of
    the capacity when demand exceeds it."""
    return list(water_fill_trace(capacity, demands, weights).allocation)


def whole_units(allocation: Sequence[float], demands: Sequence[float], capacity: int) -> list[int]:
    """Round a fractional allocation to whole GPUs: floor each, then hand the GPUs the floors left
    over to the largest remainders, never above a demand or past the capacity."""
    floors = [math.floor(a + EPS) for a in allocation]
    target = min(int(capacity), math.floor(sum(allocation) + EPS))
    spare = target - sum(floors)
    order = sorted(range(len(allocation)), key=lambda i: allocation[i] - floors[i], reverse=True)
    for i in order:
        if spare <= 0:
            break
        if floors[i] + 1 <= demands[i] + EPS:
            floors[i] += 1
            spare -= 1
    return floors


# ---------------------------------------------------------------------------------------------
# The ledger: double-entry postings for one job


@dataclass(frozen=True)
class Posting:
    txn: int
    kind: str  # grant, hold, debit, release
    account: str
    amount: float  # GPU-hours; positive = into the account
    key: str  # idempotency key of the transaction


@dataclass(frozen=True)
class JobLedger:
    postings: tuple[Posting, ...]
    admitted: bool
    hold_gpu_hours: float
    spent_gpu_hours: float
    released_gpu_hours: float
    debits: int
    note: str

    def balances(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for p in self.postings:
            out[p.account] = out.get(p.account, 0.0) + p.amount
        return out

    def transaction_sums(self) -> dict[int, float]:
        out: dict[int, float] = {}
        for p in self.postings:
            out[p.txn] = out.get(p.txn, 0.0) + p.amount
        return out


def job_ledger(team: str, balance_gpu_hours: float, job_gpus: int, max_runtime_h: float, run_h: float,
               interval_h: float, job_id: str = "job-1") -> JobLedger:
    """Postings for one job against a team that starts with `balance_gpu_hours`.

    Accounts: `org:issuance` (credits created; goes negative), `<team>:available`, `<team>:held`,
    `cluster:consumed`. Transactions: the grant; the hold (refused, with no postings, if the
    balance cannot cover job_gpus x max_runtime_h); one debit per metering interval, the last one
    partial; the release of what the hold did not use. Each transaction sums to zero.
    """
    if job_gpus <= 0 or max_runtime_h <= 0 or run_h < 0 or interval_h <= 0 or balance_gpu_hours < 0:
        raise ValueError("need positive GPUs, runtime and interval, and a non-negative balance")
    avail, held, issuance, consumed = f"{team}:available", f"{team}:held", "org:issuance", "cluster:consumed"
    posts: list[Posting] = []
    txn = 0

    def post(kind: str, key: str, src: str, dst: str, amount: float) -> None:
        nonlocal txn
        txn += 1
        posts.append(Posting(txn, kind, src, -amount, key))
        posts.append(Posting(txn, kind, dst, amount, key))

    post("grant", f"grant:{team}", issuance, avail, balance_gpu_hours)
    hold = job_gpus * max_runtime_h
    if hold > balance_gpu_hours + EPS:
        return JobLedger(tuple(posts), False, hold, 0.0, 0.0, 0,
                         f"hold refused: {hold:,.4g} GPU-h needed, {balance_gpu_hours:,.4g} available")
    post("hold", f"hold:{job_id}", avail, held, hold)
    runs = min(run_h, max_runtime_h)
    # at least one debit for any run at all: a run shorter than EPS intervals still bills what it ran
    n = max(1, math.ceil(runs / interval_h - EPS)) if runs > 0 else 0
    spent = 0.0
    for i in range(n):
        hours = min(interval_h, runs - i * interval_h)
        amount = job_gpus * hours
        spent += amount
        post("debit", f"debit:{job_id}:{i}", held, consumed, amount)
    left = hold - spent
    if left > EPS:
        post("release", f"release:{job_id}", held, avail, left)
    note = "stopped at its hold" if run_h > max_runtime_h + EPS else "finished inside its hold"
    return JobLedger(tuple(posts), True, hold, spent, max(0.0, left), n, note)


# ---------------------------------------------------------------------------------------------


def _names(indices: Sequence[int]) -> str:
    names = [TEAMS[i] for i in sorted(indices)]
    if not names:
        return "nobody"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    weights, demands = p.weights(), p.demands()

    # --- numbers: capacity, overbooking, grants ---
    hours = d.step("hours_in_period", "Hours in the period", p.period_days * 24, "h", formula="{period_days}")
    cap = d.step("capacity_gpu_hours", "GPU-hours the cluster can deliver in the period", p.gpus * hours, "h",
                 formula="{gpus} × {hours_in_period} h", noun="GPU")
    credits = d.step("credits_to_issue_gpu_hours", "Credits to issue so the expected spend fills the cluster",
                     cap / p.expected_spend_fraction, "h",
                     formula="{capacity_gpu_hours} / {expected_spend_fraction}", noun="GPU")
    d.step("overbooking_ratio", "Credits issued over capacity", credits / cap, "1", noun="×",
           formula="{credits_to_issue_gpu_hours} / {capacity_gpu_hours}")
    d.step("unhonourable_if_all_spend", "Credits that cannot run this period if every team spends all of its grant",
           (credits - cap) / credits, "1", percent=True,
           formula="({credits_to_issue_gpu_hours} − {capacity_gpu_hours}) / {credits_to_issue_gpu_hours}")
    total_w = d.step("total_weight", "Sum of the team weights", sum(weights), "1",
                     formula=" + ".join(f"{{weight_{k}}}" for k in TEAM_KEYS))
    grants = {}
    for k, name in zip(TEAM_KEYS, TEAMS):
        grants[k] = d.step(f"grant_{k}_gpu_hours", f"{name}'s grant for the period",
                           credits * getattr(p, f"weight_{k}") / total_w if total_w else 0.0, "h",
                           formula=f"{{credits_to_issue_gpu_hours}} h × {{weight_{k}}} / {{total_weight}}", noun="GPU")

    # --- arithmetic: the debit path ---
    jobs = d.step("jobs_running", "Jobs running when every GPU is busy", p.gpus / p.gpus_per_job, "1", noun="jobs",
                  formula="{gpus} / {gpus_per_job}")
    dps = d.step("ledger_debits_per_s", "Debit transactions per second: one per job per interval",
                 jobs / p.meter_interval_s, "1/s", noun="debits",
                 formula="{jobs_running} / {meter_interval_s} s")
    d.step("per_gpu_second_debits_per_s", "Debits per second if every GPU-second were its own debit", p.gpus, "1/s",
           noun="debits", formula="{gpus} / 1 s")
    d.step("debit_reduction", "Writes saved by metering jobs per interval", p.gpus / dps, "1", noun="×",
           formula="{per_gpu_second_debits_per_s} / {ledger_debits_per_s}")
    per_period = d.step("debits_per_period", "Debit transactions in a period", dps * hours * 3600, "1",
                        noun="transactions", formula="{ledger_debits_per_s} × {hours_in_period}")
    d.step("postings_per_period", "Ledger rows in a period (two postings per transaction)", 2 * per_period, "1",
           noun="rows", formula="2 × {debits_per_period}")
    d.step("debit_per_interval_gpu_hours", "One debit for one job", p.gpus_per_job * p.meter_interval_s / 3600, "h",
           formula="{gpus_per_job} × {meter_interval_s}", noun="GPU")
    hold = d.step("hold_gpu_hours", "Hold taken at admission: GPUs × maximum runtime",
                  p.gpus_per_job * p.max_runtime_h, "h", formula="{gpus_per_job} × {max_runtime_h} h", noun="GPU")
    held = d.step("held_gpu_hours_total", "Credits locked in holds with every GPU busy", jobs * hold, "h",
                  formula="{jobs_running} × {hold_gpu_hours}", noun="GPU")
    d.step("held_share_of_credits", "Share of the period's credits locked in holds at once", held / credits,
           "1", percent=True, formula="{held_gpu_hours_total} / {credits_to_issue_gpu_hours}")
    d.step("unmetered_exposure_gpu_hours", "GPU time a lost metering interval leaves unbilled, whole cluster",
           p.gpus * p.meter_interval_s / 3600, "h", formula="{gpus} × {meter_interval_s}", noun="GPU")

    # The ledger example (`job_ledger` posts it row by row): Research starts one average job.
    ran = d.step("job_billed_h", "Hours the example job is billed (it stops at its hold)",
                 min(p.job_run_h, p.max_runtime_h), "h", formula="min({job_run_h} h, {max_runtime_h} h)")
    d.step("job_debits", "Debits the example job posts", math.ceil(ran * 3600 / p.meter_interval_s - EPS), "1",
           noun="debits", formula="ceil({job_billed_h} / {meter_interval_s})")
    spend = d.step("job_spend_gpu_hours", "What the example job spends", p.gpus_per_job * ran, "h",
                   formula="{gpus_per_job} × {job_billed_h} h", noun="GPU")
    d.step("hold_release_gpu_hours", "What the release hands back", hold - spend, "h",
           formula="{hold_gpu_hours} − {job_spend_gpu_hours}", noun="GPU")
    d.step("ledger_example_admitted", "Was the example job's hold accepted?",
           "yes" if hold <= grants["research"] + EPS else "no",
           formula="{hold_gpu_hours} ≤ {grant_research_gpu_hours}", kind="verdict")

    # Exchange rate between GPU types: a credit is one H100-hour, and an A100-hour is charged by the
    # work it does, so the example job costs the same credits on either type.
    rate = d.step("a100_credit_rate", "Credits one A100-hour costs (a credit is one H100-hour)",
                  1 / p.h100_speedup_over_a100, "1", formula="1 / {h100_speedup_over_a100}")
    a100_h = d.step("example_job_a100_hours", "The example job's runtime on A100s",
                    ran * p.h100_speedup_over_a100, "h", formula="{job_billed_h} × {h100_speedup_over_a100}")
    d.step("example_job_a100_credits", "What the example job spends on A100s", p.gpus_per_job * a100_h * rate, "h",
           formula="{gpus_per_job} × {example_job_a100_hours} × {a100_credit_rate}", noun="GPU")

    # The same rate as Slurm billing weights. Slurm stores a job's billing as an integer, truncated, so a
    # weight below 1 bills a one-GPU job nothing: both weights are scaled by SLURM_BILLING_SCALE, and the
    # grant is written in billing-minutes at that scale.
    w_h100 = d.step("slurm_h100_billing_weight", "Slurm billing weight of one H100 (credits scaled to whole units)",
                    SLURM_BILLING_SCALE, "1", formula=str(SLURM_BILLING_SCALE))
    d.step("slurm_a100_billing_weight", "Slurm billing weight of one A100", w_h100 * rate, "1",
           formula="{slurm_h100_billing_weight} × {a100_credit_rate}")
    d.step("slurm_one_a100_billing_unscaled", "What a one-A100 job bills at the unscaled weight (an integer, truncated)",
           math.floor(rate + EPS), "1", formula="floor(1 × {a100_credit_rate})")
    d.step("slurm_grptresmins_pretraining", "Pretraining's grant written as a Slurm GrpTRESMins billing limit",
           grants["pretraining"] * 60 * w_h100, "1", noun="billing-minutes",
           formula="{grant_pretraining_gpu_hours} / 1 min × {slurm_h100_billing_weight}")

    # --- depth: contention, weighted max-min ---
    total_d = d.step("total_demand_gpus", "GPUs all teams want at once", sum(demands), "1", noun="GPUs",
                     formula=" + ".join(f"{{demand_{k}_gpus}}" for k in TEAM_KEYS))
    d.step("oversubscription", "Demand over the cluster", total_d / p.gpus, "1", noun="×",
           formula="{total_demand_gpus} / {gpus}")
    fill = water_fill_trace(p.gpus, demands, weights)
    whole = whole_units(fill.allocation, demands, p.gpus)
    first = fill.rounds[0].level if fill.rounds else math.inf
    d.step("first_level_gpus_per_weight", "First water level: GPUs per unit of weight, before anyone is satisfied",
           first, "1", noun="GPUs", formula="{gpus} / {total_weight}" if fill.rounds else "")
    satisfied = [i for r in fill.rounds if not r.scavenger for i in r.satisfied]
    d.step("satisfied_demand_gpus", "GPUs given in full to teams whose demand fits under the level",
           sum(demands[i] for i in satisfied), "1", noun="GPUs",
           formula=" + ".join(f"{{demand_{TEAM_KEYS[i]}_gpus}}" for i in satisfied) if satisfied
           else "0 (no demand fits under the first level)")
    capped = [i for i in range(len(weights)) if i not in satisfied and weights[i] > 0 and demands[i] > 0]
    d.step("unsatisfied_weight", "Weight of the teams still wanting more", sum(weights[i] for i in capped), "1",
           formula=" + ".join(f"{{weight_{TEAM_KEYS[i]}}}" for i in capped) if capped
           else "0 (every team is satisfied)")
    d.step("water_level_gpus_per_weight", "Final water level among teams still wanting more", fill.level, "1",
           noun="GPUs", formula="({gpus} − {satisfied_demand_gpus}) / {unsatisfied_weight}"
           if capped and math.isfinite(fill.level) else "")
    d.step("satisfied_teams", "Teams frozen at their full demand", _names(satisfied),
           formula="demand ≤ level × weight", kind="verdict")
    d.step("capped_teams", "Teams held to the final level", _names(capped), formula="demand > level × weight",
           kind="verdict")
    d.step("fill_rounds", "Rounds the water-filling took", sum(1 for r in fill.rounds if not r.scavenger), "1",
           noun="rounds", formula="one round per recomputed level, until no remaining demand fits under it",
           kind="search")
    d.step("weighted_share_pretraining_gpus", "Pretraining's share by weight alone",
           p.gpus * p.weight_pretraining / total_w if total_w else 0.0, "1", noun="GPUs",
           formula="{gpus} × {weight_pretraining} / {total_weight}")

    def share(k: str) -> str:  # how water-filling arrives at a team's GPUs (a search over the level)
        if getattr(p, f"weight_{k}") == 0:
            return f"min({{demand_{k}_gpus}}, an equal share of what the weighted teams leave), in whole GPUs"
        return (f"min({{demand_{k}_gpus}}, {{water_level_gpus_per_weight}} × {{weight_{k}}}), "
                "in whole GPUs by largest remainder")

    d.step("contention_allocation_gpus", "Pretraining's allocation under contention (water-filling)", whole[0], "1",
           noun="GPUs", formula=share("pretraining"), kind="search")
    for i, (k, name) in enumerate(zip(TEAM_KEYS[1:], TEAMS[1:]), start=1):
        d.step(f"alloc_{k}_gpus", f"{name}'s allocation", whole[i], "1", noun="GPUs", formula=share(k), kind="search")
    d.step("idle_gpus", "GPUs nobody is given", p.gpus - sum(whole), "1", noun="GPUs",
           formula="{gpus} − {contention_allocation_gpus} − {alloc_posttraining_gpus} − "
                   "{alloc_research_gpus} − {alloc_evals_gpus}")
    d.step("proportional_evals_gpus", "Evals' GPUs if the cluster were split by demand instead",
           p.gpus * p.demand_evals_gpus / total_d if total_d else 0.0, "1", noun="GPUs",
           formula="{gpus} × {demand_evals_gpus} / {total_demand_gpus}")
    d.step("proportional_pretraining_gpus", "Pretraining's GPUs if split by demand",
           p.gpus * p.demand_pretraining_gpus / total_d if total_d else 0.0, "1", noun="GPUs",
           formula="{gpus} × {demand_pretraining_gpus} / {total_demand_gpus}")
    # Who a split by demand favours: the team whose by-demand share beats its water-filled allocation most.
    gains = [(p.gpus * dem / total_d if total_d else 0.0) - w for dem, w in zip(demands, whole)]
    top = max(range(len(TEAMS)), key=lambda i: gains[i])
    alloc_key = ["{contention_allocation_gpus}"] + [f"{{alloc_{k}_gpus}}" for k in TEAM_KEYS[1:]]
    d.step("by_demand_gainer", "The team a split by demand favours most over water-filling", TEAMS[top],
           formula="the team with the largest {gpus} × demand / {total_demand_gpus} − allocation", kind="search")
    d.step("by_demand_gain_gpus", f"{TEAMS[top]}'s gain from a split by demand", gains[top], "1", noun="GPUs",
           formula=f"{{gpus}} × {{demand_{TEAM_KEYS[top]}_gpus}} / {{total_demand_gpus}} − {alloc_key[top]}")

    # --- failure modes: the empty account ---
    burst = p.demand_pretraining_gpus
    d.step("hours_to_exhaust_at_burst", "Hours until Pretraining's grant runs out at its full demand",
           grants["pretraining"] / burst if burst else math.inf, "h",
           formula="{grant_pretraining_gpu_hours} / {demand_pretraining_gpus}")
    d.step("hours_to_exhaust_at_allocation", "The same at its contended allocation",
           grants["pretraining"] / whole[0] if whole[0] else math.inf, "h",
           formula="{grant_pretraining_gpu_hours} / {contention_allocation_gpus}")
    d.step("jobs_per_grant_research", "Maximum-length holds Research's grant covers",
           math.floor(grants["research"] / hold + EPS), "1", noun="holds",
           formula="floor({grant_research_gpu_hours} / {hold_gpu_hours})")
    return d
