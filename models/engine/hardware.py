"""One accelerator as the roofline needs it: the catalog's, or one a learner describes.

A custom accelerator is the set of numbers a worked problem states ("a chip with 96 GB of HBM at
3 TB/s and 400 TFLOP/s of bf16, 8 to a node on a 450 GB/s fabric"). It goes through the same
arithmetic as a catalog part, so a textbook problem on hardware we do not list can be entered.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.catalog import GPU, gpu as catalog_gpu

CUSTOM = "Custom"


@dataclass(frozen=True)
class Hardware:
    name: str
    hbm_bytes: float
    hbm_Bps: float
    peak_flops: dict[str, float | None]  # by compute format; None where the part has no such rate
    link_Bps_per_direction: float  # scale-up fabric, one direction
    scale_up_domain: int
    nic_Bps_per_direction: float

    def peak(self, fmt: str) -> float:
        value = self.peak_flops.get(fmt)
        if value is None:
            raise ValueError(f"{self.name} has no dense {fmt} rate; pick another compute precision.")
        return value

    def has(self, fmt: str) -> bool:
        return self.peak_flops.get(fmt) is not None


def from_catalog(g: GPU) -> Hardware:
    tera = 1e12
    return Hardware(
        name=g.name,
        hbm_bytes=g.memory_bytes,
        hbm_Bps=g.hbm_Bps,
        peak_flops={fmt: (None if g.dense_TFLOPs(fmt) is None else g.dense_TFLOPs(fmt) * tera)
                    for fmt in ("bf16", "fp8", "int8", "fp4")},
        link_Bps_per_direction=g.nvlink_GBps_per_direction * 1e9,
        scale_up_domain=g.scale_up_domain,
        nic_Bps_per_direction=g.nic_Gbps * 1e9 / 8,
    )


def custom(hbm_GB: float, hbm_TBps: float, bf16_TFLOPs: float, fp8_TFLOPs: float, int8_TOPs: float,
           link_GBps_per_direction: float, scale_up_domain: int, nic_Gbps: float) -> Hardware:
    """A described accelerator; a rate of 0 means the part has none in that format."""
    tera = 1e12
    return Hardware(
        name="the custom accelerator",
        hbm_bytes=hbm_GB * 1e9,
        hbm_Bps=hbm_TBps * 1e12,
        peak_flops={"bf16": bf16_TFLOPs * tera, "fp8": fp8_TFLOPs * tera or None,
                    "int8": int8_TOPs * tera or None, "fp4": None},
        link_Bps_per_direction=link_GBps_per_direction * 1e9,
        scale_up_domain=scale_up_domain,
        nic_Bps_per_direction=nic_Gbps * 1e9 / 8,
    )


def named(name: str) -> Hardware:
    return from_catalog(catalog_gpu(name))
