from models.serving import kv_cache_tiers as model
from models.sim.kv_tiers import DRAM, HBM, MISS, SSD
from ui.declared_panel import Card, Replay, Table
from ui.question_page import QuestionPage
from ui.sim_figures import kv_tiers
from ui.sim_figures.kv_tiers import TIER_COLORS

page = QuestionPage("kv-cache-tiers")

page.sweep("reload_vs_recompute", "conversation_tokens", {
    "recompute_s": "Recompute (prefill with attention)", "reload_s_ssd": "Reload from SSD",
    "reload_s_dram": "Reload from DRAM"}, title="Getting a prefix back: reload against recompute (log time)",
    x_title="Prefix length (tokens)", y_title="Seconds", log_y=True, height=400,
    colors={"recompute_s": TIER_COLORS[MISS], "reload_s_ssd": TIER_COLORS[SSD], "reload_s_dram": TIER_COLORS[DRAM]},
    vlines=(("break_even_prefix_tokens_ssd", "SSD break-even"), ("break_even_prefix_tokens_dram", "DRAM break-even")))

page.sweep("shares_vs_think", "think_median_s", {
    "predicted_hit_share_hbm": "HBM", "predicted_hit_share_dram": "DRAM", "predicted_hit_share_ssd": "SSD",
    "predicted_miss_share": "miss: recompute"}, stacked=True, log_x=True, layout={"yaxis": {"range": [0, 100]}},
    title="Where returning turns find their KV, against the median think time (estimate)",
    x_title="Median think time (s, log)", y_title="% of returning turns",
    colors={"predicted_hit_share_hbm": TIER_COLORS[HBM], "predicted_hit_share_dram": TIER_COLORS[DRAM],
            "predicted_hit_share_ssd": TIER_COLORS[SSD], "predicted_miss_share": TIER_COLORS[MISS]})

OUTCOME_ROWS = tuple((label, f"{{{{sim_share_{o}}}}}", f"{{{{{estimate}}}}}", f"{{{{sim_last_ttft_median_{o}_s}}}}",
                      f"{{{{last_ttft_floor_{o}_s}}}}", f"{{{{sim_ttft_p95_{o}_s}}}}")
                     for label, (_, o, estimate) in zip(("HBM hit", "DRAM hit", "SSD hit", "miss (recompute)"),
                                                        model.OUTCOME_KEYS))

page.simulation(
    "kv-tiers", title="Live: conversations moving through HBM, DRAM and SSD on one replica",
    message="Simulating conversations…",
    cards=((Card("sim_hit_rate", against="predicted_hit_rate"),
            Card("sim_share_hbm", against="predicted_hit_share_hbm", label="HBM hits"),
            Card("sim_share_dram", against="predicted_hit_share_dram", label="DRAM hits")),
           (Card("sim_ttft_median_dram_s", label="Median TTFT, DRAM hit", also=(("reload_s_dram", "reload"),)),
            Card("sim_ttft_median_ssd_s", label="Median TTFT, SSD hit", also=(("reload_s_ssd", "reload"),)),
            Card("sim_gpu_hours_avoided", against="gpu_hours_avoided_estimate"))),
    table=Table(("Where the KV was", "Simulated share", "Estimate", "Median TTFT, last turn (sim)",
                 "Model, last turn, no queueing", "p95 TTFT, all turns (sim)"), OUTCOME_ROWS),
    replay=Replay(dt_s=30.0, steps_at=model.replay_steps, charts=(kv_tiers.occupancy, kv_tiers.hits),
                  span=kv_tiers.run_end_s, label="Minute of the run",
                  caption="At {{replay_minute}}: HBM {{replay_hbm_bytes}} in {{replay_hbm_entries}} · DRAM "
                          "{{replay_dram_bytes}} in {{replay_dram_entries}} · SSD {{replay_ssd_bytes}} in "
                          "{{replay_ssd_entries}} · {{replay_thinking}} thinking between turns."),
    chart=kv_tiers.ttft_by_prefix,
    caption="Shares: returning turns after the first third of the window (the tiers fill first); the last turn "
            "restores {{last_prefix_tokens}}. {{sim_conversations}}, {{sim_turns}}, {{sim_demotions}}, {{sim_drops}} "
            "evicted from the last tier; the run ends {{sim_end_s}} in, when the last returning user has finished. "
            "Prefill is one FIFO queue at {{replica_flops}}; each link moves one reload at a time; replies stream "
            "at a token every {{sim_tpot_s}}. The window is {{sim_window_min}} of the {{sim_minutes}} asked "
            "(shortened above {{sim_max_turns}} to stay interactive). Change the seed to see another run.")

page.render()
