"""Number formats: bytes per element, and which peak a compute format runs at.

Three choices are separate because deployments separate them: weights in int4 or fp8 with bf16
compute (weight-only quantization dequantizes in the kernel), a KV cache in fp8 or int8 to fit
twice the context, compute in fp8 where the tensor cores have it.
"""

from __future__ import annotations

from typing import Literal

WeightPrecision = Literal["bf16", "fp8", "int8", "int4"]
KvPrecision = Literal["bf16", "fp8", "int8"]
ComputePrecision = Literal["bf16", "fp8", "int8", "fp4"]

BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
}

# Activations cross the tensor-parallel all-reduce in the compute format's storage width, but never
# below a byte: fp8 GEMMs still reduce bf16 partial sums in practice (TransformerEngine keeps the
# all-reduce in bf16). Keep it at 2 bytes whatever the compute format.
ACTIVATION_BYTES = 2.0


def bytes_per_element(fmt: str) -> float:
    try:
        return BYTES_PER_ELEMENT[fmt]
    except KeyError:
        raise ValueError(f"unknown number format {fmt!r}; known: {', '.join(BYTES_PER_ELEMENT)}") from None
