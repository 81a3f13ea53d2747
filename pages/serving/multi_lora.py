from ui.question_page import QuestionPage

page = QuestionPage("multi-lora")

page.sweep("adapter_bytes", "lora_rank", {"adapter_bytes": "LoRA on {value}"},
           family=("targets", ("q,v", "q,k,v,o", "all seven")), points={"heavy comparison adapter":
                                                                         ("heavy_rank", "heavy_adapter_bytes")},
           title="One adapter's size against rank, by the projections it targets (log-log)",
           y_title="MB per adapter (bf16)", y_unit="MB", from_unit="B", log_y=True, n=16)  # straight on log-log

page.sweep("gpus_vs_traffic", "total_tokens_per_s",
           {"dedicated_gpus": "A replica per variant", "multi_lora_gpus": "Shared multi-LoRA pool"},
           title="GPUs against total demand: the idle gap closes as traffic grows (log-log)", y_title="GPUs",
           line_shape="hv", n=120, log_y=True)

page.sweep("overhead_vs_variants", "variants", {
    "mixed_batch_overhead_fraction": "Your adapters, random routing",
    "mixed_batch_overhead_routed_fraction": "Your adapters, affinity routing",
    "heavy_mixed_batch_overhead_fraction": "Heavy adapters, random routing",
    "heavy_mixed_batch_overhead_routed_fraction": "Heavy adapters, affinity routing",
}, title="Throughput lost to mixed batches against the number of variants", y_title="% of throughput",
    x_title="Fine-tuned variants", n=80)

page.render()
