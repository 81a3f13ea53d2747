"""The engine's default efficiencies and fixed costs, and where each comes from.

Every LLM page starts from these unless its question states another figure; the accuracy page
(models/validation.py) fits them to public measurements, and tests/models/test_validation.py
checks that these constants are those fits, rounded to the knobs' steps.

    decode MBU 80%, fixed 1.9 ms a step   fit (b) of a vLLM run of Llama 3.1 70B on 8 x H200, two
                                          batch sizes, with the engine's tensor-parallel all-reduces
                                          charged: 79.5% of peak HBM bandwidth plus 1.92 ms a step
    prefill MFU 60%                       fit (a) of GPT-13B's prefills on A100 (one and two GPUs,
                                          FasterTransformer): 59.9%; Llama 3.1 70B's single prefill
                                          gives 64%
    decode MFU 50%                        not fitted: every measured decode is bound by bytes, so no
                                          measurement says how fast its skinny GEMMs run
    all-reduce latency 6 us               a TP-8 all-reduce of 512 B on H100 with SGLang's custom
                                          kernel (SGLang PR 2904); held, never fitted

Before the engine charged the all-reduces, the same run fitted 69.7% plus 2.2 ms; the pages
then shipped 70%, 1 ms and a prefill MFU of 50%. At these defaults the accuracy page's mean error
over its eight measurements falls from 18% to 12%, and every decode is within 5%.
"""

DEFAULT_HBM_EFFICIENCY = 0.80
DEFAULT_STEP_OVERHEAD_MS = 1.9
DEFAULT_PREFILL_MFU = 0.60
DEFAULT_DECODE_MFU = 0.50
DEFAULT_ALLREDUCE_LATENCY_US = 6.0
