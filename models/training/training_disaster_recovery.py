"""Disaster recovery for a three-month run on 8,000 GPUs (seeds 000 and 004).

Teaching order: what the run is worth (GPU-hours), how often it is interrupted anyway (the Llama 3
rate scaled to this job), what those interruptions cost and the checkpoint interval that
minimises it (Young 1974), then the building-loss case as two numbers, RPO and RTO, the second
cluster that sets the RTO, and the drills that keep both numbers honest.

Modelling choices, all stated on the page:
- Interruptions per GPU-day are the Llama 3 paper's (419 unexpected in 54 days on 16,384 GPUs),
  scaled linearly to this job's GPU count and to the run's wall-clock days, times a multiplier.
- Saves are synchronous: the job pauses for the write to the primary burst tier. That pause is
  the checkpoint cost delta in Young's formula T* = sqrt(2 delta M).
- Replication reads the same in-memory snapshot as the local write, so it starts when the save
  starts; the cross-site link, much slower than the burst tier, sets its duration. If one
  checkpoint's transfer outlasts the interval, only every k-th checkpoint is replicated.
"""

from __future__ import annotations

import math
from typing import Annotated

from models.catalog import CHECKPOINT_BYTES_PER_PARAM, LLAMA3_INTERRUPTIONS, MODELS
from models.core import Derivation, Knob, StrictModel

DEFAULT_MODEL = MODELS["Llama-3.1-405B"]
# Uptime Institute's outage survey: about one organization in five reports a "serious" or "severe"
# outage within three years. The nearest public rate to a site loss, and an upper bound on it: most
# of those outages last hours, and an organization runs several sites.
UPTIME_SERIOUS_OUTAGE_SHARE_3Y = 0.2


class Params(StrictModel):
    gpus: Annotated[
        int,
        Knob("GPUs in the run", "GPUs", 512, 100_000, log=True,
             help="GPUs the training job spans at the primary site.", draw=(2000, 32_000), draw_choices=(2000, 4000, 8000, 16000, 24000, 32000)),
    ] = 8000
    run_days: Annotated[
        float,
        Knob("Run length", "days", 7, 365, 1, help="Wall-clock length of the run (three months = 90).",
             draw=(30, 180)),
    ] = 90
    params_b: Annotated[
        float,
        Knob("Model parameters", "billion", 1, 2000, log=True,
             help="Dense parameter count; the checkpoint is 14 B per parameter. Default: Llama 3.1 405B.",
             draw=(70, 1000)),
    ] = DEFAULT_MODEL.total_params / 1e9
    failure_rate_multiplier: Annotated[
        float,
        Knob("Failure rate vs Llama 3", "×", 0.25, 4, 0.05,
             help="1 = the Llama 3 paper's unexpected-interruption rate per GPU-day.", draw=(0.5, 2)),
    ] = 1.0
    write_tier_GBps: Annotated[
        float,
        Knob("Primary burst-tier write rate", "GB/s", 10, 2000, log=True,
             help="Aggregate rate the primary site's checkpoint tier absorbs; the job pauses for the write.",
             draw=(40, 400)),
    ] = 100
    interval_min: Annotated[
        float,
        Knob("Checkpoint interval", "min", 5, 240, 1,
             help="Start of one save to the start of the next.", draw=(10, 120)),
    ] = 30
    restart_min: Annotated[
        float,
        Knob("Restart after an interruption", "min", 1, 120, 1,
             help="Detect the fault, swap the node from the spare pool, relaunch, load the last checkpoint locally.",
             draw=(5, 45)),
    ] = 15
    replication_gbps: Annotated[
        float,
        Knob("Link to the second site", "Gb/s", 1, 3200, log=True,
             help="Bandwidth reserved for checkpoint replication between the sites; bits, not bytes.",
             draw=(10, 800)),
    ] = 100
    detect_min: Annotated[
        float,
        Knob("Detect the site loss", "min", 1, 60, 1,
             help="From the building going dark to a page that says so.", draw=(2, 15)),
    ] = 5
    decide_min: Annotated[
        float,
        Knob("Decide to fail over", "min", 0, 240, 5,
             help="A named person declares the disaster; automated failover of a whole run is rarely wise.",
             draw=(15, 120)),
    ] = 30
    launch_min: Annotated[
        float,
        Knob("Launch at the second site", "min", 5, 2880, log=True,
             help="Preempt the second cluster's work, start the job on healthy nodes with images cached. "
             "Warm: minutes. Cold (image pulls, burn-in, fabric tests): many hours.",
             draw=(10, 600)),
    ] = 20
    second_site_read_GBps: Annotated[
        float,
        Knob("Second-site checkpoint read rate", "GB/s", 1, 2000, log=True,
             help="Aggregate read from wherever the replica lands at the second site.", draw=(10, 200)),
    ] = 50
    second_site_fraction: Annotated[
        float,
        Knob("Second cluster size", "", 0.1, 1, 0.05, percent=True,
             help="Share of the primary's GPUs the second site can give the run.", draw=(0.25, 1)),
    ] = 1.0
    drill_every_days: Annotated[
        float,
        Knob("Restore drill every", "days", 1, 90, 1,
             help="Load the newest replica at the second site and train from it.", draw=(3, 30)),
    ] = 7
    drill_gpus: Annotated[
        int,
        Knob("GPUs per drill", "GPUs", 64, 8192, log=True,
             help="The slice a drill resumes on (a reshard, since it is smaller than the job).",
             draw=(128, 2048), draw_choices=(128, 256, 512, 1024, 2048)),
    ] = 512
    drill_hours: Annotated[
        float,
        Knob("Drill length", "h", 0.5, 24, 0.5, help="Load, train a few hundred steps, compare the loss.",
             draw=(1, 6)),
    ] = 2
    site_loss_per_year: Annotated[
        float,
        Knob("Site losses per year", "", 0.001, 0.5, 0.001, log=True, percent=True,
             help="Chance a year that the building is out for longer than the run can wait (power, cooling, "
                  "fire, a fabric-wide fault). An estimate: no public rate exists for this event.",
             draw=(0.005, 0.1)),
    ] = 0.02
    usd_per_gpu_hour: Annotated[
        float,
        Knob("GPU-hour price", "USD/h", 0.5, 10, 0.1, log=True,
             help="What a GPU-hour of this cluster costs, owned or rented.", draw=(1.5, 4)),
    ] = 2.0
    egress_usd_per_GB: Annotated[
        float,
        Knob("Replication price", "USD/GB", 0, 0.1, 0.001,
             help="Per-GB price of the cross-site link (cloud inter-region transfer is about 0.02; an owned "
                  "fibre link is a fixed cost, 0 here).", draw=(0.005, 0.05)),
    ] = 0.02


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    # --- Numbers: what the run is worth and how often it breaks ----------------------------
    run_h = d.step(
        "run_gpu_hours", "GPU time in the run", p.gpus * p.run_days * 24, "h",
        formula="{gpus} × {run_days}", noun="GPU")
    ckpt_tb = d.step(
        "checkpoint_TB", "Checkpoint: resumable training state",
        p.params_b * 1e9 * CHECKPOINT_BYTES_PER_PARAM / 1e12, "TB",
        formula="{params_b} × 10⁹ params × 14 B/param",
    )
    ckpt_gb = ckpt_tb * 1000
    meta_rate = d.step(
        "meta_failures_per_gpu_day", "Meta's reported interruptions per GPU-day (Llama 3)",
        LLAMA3_INTERRUPTIONS.per_gpu_day, "1", noun="per GPU-day",
        formula="419 interruptions / (54 × 16,384 GPU-days)",
    )
    rate = d.step(
        "failures_per_gpu_day", "Unexpected interruptions per GPU-day",
        meta_rate * p.failure_rate_multiplier, "1", noun="per GPU-day",
        formula="{meta_failures_per_gpu_day} × {failure_rate_multiplier}",
    )
    per_day = d.step(
        "interruptions_per_day", "Interruptions per day for this job", rate * p.gpus, "1", noun="per day",
        formula="{failures_per_gpu_day} × {gpus} GPUs",
    )
    mtbf_h = d.step(
        "job_mtbf_h", "Mean time between interruptions of the job", 24 / per_day, "h",
        formula="24 h / {interruptions_per_day}",
    )
    n_int = d.step(
        "expected_interruptions", "Interruptions expected over the run", per_day * p.run_days, "1",
        noun="interruptions",
        formula="{interruptions_per_day} × {run_days} / 1 day",
    )
    # --- Arithmetic: the cost of ordinary interruptions and Young's interval -------------------
    write_s = d.step(
        "checkpoint_write_s", "Synchronous save to the primary burst tier", ckpt_gb / p.write_tier_GBps, "s",
        formula="{checkpoint_TB} TB / {write_tier_GBps} GB/s",
    )
    mtbf_s = mtbf_h * 3600
    young_s = math.sqrt(2 * write_s * mtbf_s)
    young_min = d.step(
        "young_optimal_interval_min", "Young's optimal checkpoint interval", young_s / 60, "min",
        formula="(2 × {checkpoint_write_s} × {job_mtbf_h})^0.5",
    )
    loss_min = d.step(
        "loss_per_interruption_min", "Work lost per interruption: half an interval plus the restart",
        p.interval_min / 2 + p.restart_min, "min",
        formula="{interval_min} min / 2 + {restart_min} min",
    )
    d.step(
        "restart_share_of_loss", "Restart's share of that loss", p.restart_min / loss_min, "1", percent=True,
        formula="{restart_min} min / {loss_per_interruption_min} min",
    )
    lost_h = d.step(
        "gpu_hours_lost", "GPU time lost to interruptions over the run", n_int * loss_min / 60 * p.gpus, "h",
        formula="{expected_interruptions} × {loss_per_interruption_min} × {gpus}", noun="GPU")
    lost_frac = d.step(
        "fraction_lost", "Share of the run lost to interruptions", lost_h / run_h, "1", percent=True,
        formula="{gpu_hours_lost} / {run_gpu_hours}",
    )
    ckpt_frac = d.step(
        "checkpoint_overhead_fraction", "Share of the run spent paused for saves",
        write_s / (p.interval_min * 60), "1", percent=True,
        formula="{checkpoint_write_s} / {interval_min}",
    )
    d.step(
        "total_overhead_fraction", "Interruptions plus saves", lost_frac + ckpt_frac, "1", percent=True,
        formula="{fraction_lost} + {checkpoint_overhead_fraction}",
    )
    d.step(
        "young_total_overhead_fraction", "The same total at Young's interval",
        write_s / young_s + (young_s / 2 + p.restart_min * 60) / mtbf_s, "1", percent=True,
        formula="{checkpoint_write_s} / {young_optimal_interval_min} + "
        "({young_optimal_interval_min} / 2 + {restart_min}) / {job_mtbf_h}",
    )
    # --- Site loss: RPO -------------------------------------------------------------------------
    repl_s = d.step(
        "replication_s", "One checkpoint across the site link", ckpt_gb * 8 / p.replication_gbps, "s",
        formula="{checkpoint_TB} / {replication_gbps}",
    )
    every = d.step(
        "replicate_every", "Replicate every k-th checkpoint (1 if the link keeps up)",
        max(1, math.ceil(repl_s / (p.interval_min * 60) - 1e-9)), "1",
        formula="max(1, ⌈{replication_s} / {interval_min}⌉)",
    )
    site_interval = every * p.interval_min
    rpo_worst = d.step(
        "rpo_worst_min", "Worst-case site-loss RPO: a replicated interval plus the transfer",
        site_interval + repl_s / 60, "min",
        formula="{replicate_every} × {interval_min} + {replication_s}",
    )
    d.step(
        "rpo_mean_min", "Mean site-loss RPO (loss at a random moment)",
        site_interval / 2 + repl_s / 60, "min",
        formula="{replicate_every} × {interval_min} / 2 + {replication_s}",
    )
    # --- Site loss: RTO -------------------------------------------------------------------------
    load_s = d.step(
        "load_from_second_site_s", "Load the replica into the second cluster", ckpt_gb / p.second_site_read_GBps, "s",
        formula="{checkpoint_TB} TB / {second_site_read_GBps} GB/s",
    )
    rto = d.step(
        "rto_min", "RTO: detect + decide + launch + load",
        p.detect_min + p.decide_min + p.launch_min + load_s / 60, "min",
        formula="{detect_min} + {decide_min} + {launch_min} + {load_from_second_site_s}",
    )
    d.step(
        "site_loss_gpu_hours_worst", "Worst-case GPU time a site loss costs: lost progress plus the outage",
        p.gpus * (rpo_worst + rto) / 60, "h",
        formula="{gpus} × ({rpo_worst_min} + {rto_min})", noun="GPU")
    d.step(
        "second_site_gpus", "GPUs the run gets at the second site",
        math.floor(p.gpus * p.second_site_fraction + 1e-9), "1", noun="GPUs",
        formula="⌊{gpus} × {second_site_fraction}⌋",
    )
    d.step(
        "days_added_midrun_failover", "Days added if the site is lost at mid-run and never returns",
        p.run_days / 2 * (1 / p.second_site_fraction - 1), "d",
        formula="{run_days} days / 2 × (1 / {second_site_fraction} − 1)",
    )
    # --- Drills ---------------------------------------------------------------------------------
    drills = d.step(
        "drills_per_run", "Restore drills over the run", math.floor(p.run_days / p.drill_every_days + 1e-9), "1",
        noun="drills",
        formula="⌊{run_days} days / {drill_every_days} days⌋",
    )
    drill_h = d.step(
        "drill_gpu_hours", "GPU time the drills cost", drills * p.drill_gpus * p.drill_hours, "h",
        formula="{drills_per_run} × {drill_gpus} GPUs × {drill_hours} h", noun="GPU")
    d.step(
        "drill_fraction", "Drills as a share of the run", drill_h / run_h, "1", percent=True,
        formula="{drill_gpu_hours} / {run_gpu_hours}",
    )
    d.step(
        "silent_break_rpo_days", "RPO if replication breaks silently right after a drill",
        p.drill_every_days + rpo_worst / 1440, "d",
        formula="{drill_every_days} + {rpo_worst_min}",
    )
    # --- The money: replication egress, and the expected-value case for the second site -----------
    n_repl = d.step(
        "replicated_checkpoints", "Checkpoints shipped across the link over the run",
        math.floor(p.run_days * 1440 / (every * p.interval_min) + 1e-9), "1", noun="checkpoints",
        formula="⌊{run_days} / ({replicate_every} × {interval_min})⌋",
    )
    egress_tb = d.step(
        "replication_egress_PB", "Bytes replication sends over the run", n_repl * ckpt_tb / 1000, "PB",
        formula="{replicated_checkpoints} × {checkpoint_TB}",
    )
    egress_usd = d.step(
        "replication_egress_usd", "What those bytes cost on the link", egress_tb * 1e6 * p.egress_usd_per_GB, "USD",
        formula="{replication_egress_PB} × {egress_usd_per_GB}",
    )
    drill_usd = d.step(
        "drill_usd", "What the drills cost", drill_h * p.usd_per_gpu_hour, "USD",
        formula="{drill_gpu_hours} × {usd_per_gpu_hour}",
    )
    dr_cost = d.step(
        "dr_cost_usd", "The second site's running cost for the run (its GPUs do other work meanwhile)",
        egress_usd + drill_usd, "USD", formula="{replication_egress_usd} + {drill_usd}",
    )
    prob = d.step(
        "site_loss_probability_run", "Chance the site is lost during the run",
        1 - math.exp(-p.site_loss_per_year * p.run_days / 365), "1", percent=True,
        formula="1 − exp(−{site_loss_per_year} × {run_days} / 365 days)",
    )
    exposure_no_dr = d.step(
        "exposure_no_dr_gpu_hours", "GPU time a site loss destroys with no off-site copy (at a random moment, half "
        "the run)", run_h / 2, "h", formula="{run_gpu_hours} / 2", noun="GPU",
    )
    saved = d.step(
        "dr_saves_gpu_hours", "GPU time the second site saves when the site is lost",
        exposure_no_dr - p.gpus * (rpo_worst + rto) / 60, "h",
        formula="{exposure_no_dr_gpu_hours} − {site_loss_gpu_hours_worst}", noun="GPU",
    )
    ev = d.step(
        "dr_expected_saving_usd", "Expected value of what the second site saves",
        prob * saved * p.usd_per_gpu_hour, "USD",
        formula="{site_loss_probability_run} × {dr_saves_gpu_hours} × {usd_per_gpu_hour}",
    )
    d.step(
        "break_even_site_loss_probability", "Chance of a site loss during the run at which the second site pays",
        dr_cost / (saved * p.usd_per_gpu_hour), "1", percent=True,
        formula="{dr_cost_usd} / ({dr_saves_gpu_hours} × {usd_per_gpu_hour})",
    )
    be = dr_cost / (saved * p.usd_per_gpu_hour)
    be_year = d.step(
        "break_even_site_loss_per_year", "The same break-even as a yearly chance of losing the site",
        -math.log(1 - be) * 365 / p.run_days if be < 1 else math.inf, "1", percent=True,
        formula="−ln(1 − {break_even_site_loss_probability}) × 365 days / {run_days}" if be < 1 else "",
        note="" if be < 1 else "The running cost exceeds what a certain site loss would save: no odds make it pay.",
    )
    d.step(
        "uptime_serious_outage_share_3y", "Uptime Institute: organizations reporting a serious or severe outage "
        "in three years", UPTIME_SERIOUS_OUTAGE_SHARE_3Y, "1", percent=True, kind="lookup",
    )
    uptime_year = d.step(
        "uptime_serious_outage_per_year", "That survey as a yearly chance per organization",
        1 - (1 - UPTIME_SERIOUS_OUTAGE_SHARE_3Y) ** (1 / 3), "1", percent=True,
        formula="1 − (1 − {uptime_serious_outage_share_3y})^(1/3)",
    )
    d.step(
        "break_even_over_uptime_rate", "Break-even yearly odds over the survey's serious-outage rate",
        be_year / uptime_year, "1", noun="×",
        formula="{break_even_site_loss_per_year} / {uptime_serious_outage_per_year}",
    )
    d.step(
        "dr_pays_on_expected_value", "Does the expected saving exceed the running cost?",
        "yes" if ev >= dr_cost else "no", formula="{dr_expected_saving_usd} ≥ {dr_cost_usd}",
    )
    d.step(
        "worst_case_loss_no_dr_usd", "The run's value at its last day, lost with no off-site copy",
        run_h * p.usd_per_gpu_hour, "USD", formula="{run_gpu_hours} × {usd_per_gpu_hour}",
    )
    return d
