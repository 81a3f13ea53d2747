from models.platform import research_cluster_fair_share as model
from ui.declared_panel import Card, Counterpart, Replay
from ui.question_page import QuestionPage
from ui.sim_figures import fair_share

page = QuestionPage("research-cluster-fair-share")

page.sweep("lost_vs_checkpoint", "checkpoint_minutes", {
    "lost_gpu_hours_without_warning": "Killed without warning, random victims",
    "lost_gpu_hours_checkpoint_aware": "Killed without warning, least work lost",
    "lost_gpu_hours_with_checkpoint_on_signal": "Save on the signal"},
    title="GPU-hours lost when the owner returns, against the checkpoint interval (log-log)",
    y_title="GPU-hours lost", log_y=True, n=80)

page.sweep("last_week_vs_half_life", "half_life_hours", {"weight_of_last_week": "Weight of a GPU-hour used a week ago"},
    title="What last week still costs, against the half-life", y_title="Weight (1 = counts in full)", n=80,
    vlines=(("hours_per_week", "one week"),))

page.sweep("split_vs_guarantee", "guaranteed_fraction", {
    "allocation_gpus": "Pretraining, weights share × F", "allocation_without_factor_gpus": "Pretraining, weights share only",
    "allocation_posttrain_gpus": "Post-training, weights share × F"},
    title="This morning's split against the guaranteed part of each share", y_title="GPUs allocated", x_scale=100, n=41)

page.sweep("hoarding", "evals_hold_fraction", {
    "evals_factor_charged_by_allocation": "Evals' factor, charged by allocation",
    "evals_factor_charged_by_use": "Evals' factor, charged by use",
    "evals_factor_if_released": "Evals' factor if it releases the hoard"},
    title="Holding idle GPUs: what it does to the hoarder's fair-share factor", y_title="Fair-share factor F",
    x_scale=100, n=41, hlines=(0.5,))

page.simulation(
    "fair_share", title="Live: {{sim_days}} of the cluster, one {{tick_minutes}} tick at a time",
    message="Simulating the cluster…",
    counterpart=Counterpart(model.counterpart, "Simulating the other Evals policy…",
                            variant=lambda p: "free" if p.evals_hold_fraction > 0 else "hold"),
    cards=(Card("sim_first_target_gpus", against="allocation_gpus", label="Pretraining's target, first tick (sim)"),
           Card("sim_borrowed_gpus", against="borrowed_gpus"),
           Card("sim_preempted_at_return_gpus", against="preempted_gpus"),
           Card("sim_lost_checkpoint_aware_gpu_h", against="lost_gpu_hours_checkpoint_aware",
                label="Lost at the return, no warning (sim)"),
           Card("sim_preemptions", label="Preemptions over the run",
                also=(("sim_lost_on_signal_gpu_h", "lost with a save"),)),
           Card("sim_min_utilization_oversubscribed"),
           Card("sim_running_share_holding", label="GPUs running jobs: Evals holds",
                also=(("sim_running_share_releasing", "if it releases"), ("busy_utilization_cap_share", "cap"))),
           Card("sim_evals_wait_holding_min", label="Evals' mean start wait: holds",
                also=(("sim_evals_wait_releasing_min", "if it releases"),))),
    replay=Replay(dt_s=fair_share.tick_s, steps_at=model.replay_steps, charts=(fair_share.cluster_at,), label="Tick of the run",
                  span=fair_share.run_span_s, start=model.replay_start_s,
                  caption="Borrowing: {{replay_borrowing}}. Preempted {{replay_preempted}}; work since their last "
                          "checkpoint {{replay_lost_checkpoint_gpu_h}} (random victims on the same state: "
                          "{{replay_lost_random_gpu_h}}), save on the signal {{replay_lost_signal_gpu_h}}. "
                          "Fair-share factors: {{replay_factors}}."),
    chart=(fair_share.held_per_team, fair_share.factors, fair_share.utilization, fair_share.start_waits),
    caption="{{sim_jobs_arrived}} arrived over {{sim_days}} ({{sim_jobs_finished}} finished). The preempted jobs lost "
            "{{sim_lost_on_signal_gpu_h}} with a save on the signal, {{sim_lost_blind_gpu_h}} killed without warning; "
            "holding idle GPUs buys Evals at most {{owner_wait_s}} of wait. The run starts from "
            "last week's ledger and jobs, so its first tick repeats the hand arithmetic; then the factors move towards "
            "the fixed point where each borrower's weight matches its usage, and whole {{job_gpus}} jobs round the "
            "split. Pretraining and Post-training ask for more than the cluster, so their waits grow with the run: a "
            "scheduler decides who waits, it cannot remove the wait. Change the seed for another run.")

page.render()
