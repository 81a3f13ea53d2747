"""Hardware and model constants: the one place a number about a GPU, a link or an LLM lives.

Every entry carries a `source` (a URL or a document name) so a reader can check it. Pure Python:
frozen dataclasses, no Streamlit, Plotly or DuckDB, so solvers and tests import it for free.

Unit conventions (SI decimal, spelled in the field names):
    memory_GB          1e9 bytes (GB, not GiB)
    hbm_TBps           1e12 bytes/s of HBM bandwidth
    dense_*_TFLOPs     1e12 FLOP/s, dense tensor-core peak (no 2:4 structured sparsity)
    nvlink_GBps        1e9 bytes/s, per GPU, BIDIRECTIONAL total (send + receive), as the vendors
                       quote it: H100 SXM "900 GB/s" means 450 GB/s each way. Use
                       `GPU.nvlink_GBps_per_direction` for a one-way transfer time. For a TPU it is
                       the chip's bidirectional inter-chip interconnect (ICI).
    scale_up_domain    accelerators one scale-up fabric joins (8 on an HGX board, 72 in GB200
                       NVL72, a TPU pod's chips): tensor parallelism stays inside it
    nic_Gbps           scale-out network per accelerator, one direction, 1e9 bits/s
    Link.GBps          1e9 bytes/s PER DIRECTION (the rate one transfer sees); Link.Gbps = GBps * 8
    tdp_W              watts, the board/module maximum the vendor lists
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# ---------------------------------------------------------------------------------------------
# GPUs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GPU:
    """An accelerator (a GPU, or a TPU chip): what its datasheet says, dense peaks per format."""

    name: str
    vendor: str
    memory_GB: float  # HBM capacity, 1e9 bytes
    hbm_TBps: float  # peak HBM bandwidth, 1e12 B/s
    dense_bf16_TFLOPs: float  # dense BF16 tensor peak, 1e12 FLOP/s (no sparsity)
    dense_fp8_TFLOPs: float | None  # dense FP8 tensor peak; None where the part has no FP8
    nvlink_GBps: float  # per-GPU scale-up bandwidth, BIDIRECTIONAL total, 1e9 B/s
    tdp_W: float | None  # maximum module power, W; None where the vendor does not publish it
    source: str
    note: str = ""
    dense_int8_TOPs: float | None = None  # dense INT8 tensor peak, 1e12 OP/s; None: no INT8 rate published
    dense_fp4_TFLOPs: float | None = None  # dense FP4 tensor peak; None where the part has no FP4
    scale_up_domain: int = 8  # accelerators on one scale-up fabric
    nic_Gbps: float = 400  # scale-out per accelerator, one direction
    kind: Literal["GPU", "TPU"] = "GPU"

    def __post_init__(self) -> None:
        for field_name in ("memory_GB", "hbm_TBps", "dense_bf16_TFLOPs", "nvlink_GBps", "scale_up_domain", "nic_Gbps"):
            if not getattr(self, field_name) > 0:
                raise ValueError(f"{self.name}: {field_name} must be positive")
        for field_name in ("dense_fp8_TFLOPs", "dense_int8_TOPs", "dense_fp4_TFLOPs", "tdp_W"):
            value = getattr(self, field_name)
            if value is not None and value <= 0:
                raise ValueError(f"{self.name}: {field_name} must be positive or None")
        if not self.source.strip():
            raise ValueError(f"{self.name}: source is required")

    def dense_TFLOPs(self, fmt: str) -> float | None:
        """Dense tensor peak for a compute format (TOPS for int8), or None where the part has none."""
        return {"bf16": self.dense_bf16_TFLOPs, "fp16": self.dense_bf16_TFLOPs, "fp8": self.dense_fp8_TFLOPs,
                "int8": self.dense_int8_TOPs, "fp4": self.dense_fp4_TFLOPs}.get(fmt)

    @property
    def memory_bytes(self) -> float:
        return self.memory_GB * 1e9

    @property
    def hbm_Bps(self) -> float:
        return self.hbm_TBps * 1e12

    @property
    def dense_bf16_flops(self) -> float:
        """Dense BF16 peak in FLOP/s."""
        return self.dense_bf16_TFLOPs * 1e12

    @property
    def nvlink_GBps_per_direction(self) -> float:
        """One-way scale-up bandwidth (half the bidirectional figure the vendor quotes)."""
        return self.nvlink_GBps / 2

    @property
    def ridge_flops_per_byte(self) -> float:
        """Roofline ridge point: dense BF16 FLOP/s divided by HBM B/s.

        A kernel whose arithmetic intensity (FLOP per byte moved from HBM) is below this is
        memory-bound on this GPU; above it, compute-bound. H100 SXM: 989e12 / 3.35e12 ~ 295.
        """
        return self.dense_bf16_flops / self.hbm_Bps


_A100_SRC = (
    "NVIDIA A100 Tensor Core GPU datasheet (SXM column), "
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf ; https://www.nvidia.com/en-us/data-center/a100/"
)
_H100_SRC = (
    "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column), "
    "https://www.nvidia.com/en-us/data-center/h100/ ; datasheet lists sparse figures "
    "(BF16 1,979 / FP8 3,958 TFLOPS 'with sparsity'); dense = half"
)
_H200_SRC = (
    "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column), "
    "https://www.nvidia.com/en-us/data-center/h200/ ; compute identical to H100 SXM "
    "(BF16 1,979 / FP8 3,958 TFLOPS with sparsity; dense = half)"
)
_B200_SRC = (
    "NVIDIA DGX B200 datasheet, https://www.nvidia.com/en-us/data-center/dgx-b200/ "
    "(8 GPUs: 1,440 GB HBM3e total = 180 GB/GPU; 64 TB/s total = 8 TB/s/GPU; "
    "NVLink 5 1.8 TB/s per GPU) and NVIDIA HGX B200 spec table, "
    "https://www.nvidia.com/en-us/data-center/hgx/ (8-GPU FP16/BF16 36 PFLOPS and FP8 72 PFLOPS, "
    "both with sparsity -> 2.25 / 4.5 PFLOPS dense per GPU; 1,000 W per GPU)"
)
_MI300X_SRC = (
    "AMD Instinct MI300X data sheet, "
    "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/"
    "amd-instinct-mi300x-data-sheet.pdf ; https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html "
    "(peak BF16 1,307.4 TFLOPS dense, 2,614.9 with sparsity; FP8 2,614.9 dense; "
    "Infinity Fabric 7 links x 128 GB/s = 896 GB/s aggregate)"
)

_H800_SRC = (
    "NVIDIA H800 (the H100 SXM variant sold under the October 2022 export rules): same Hopper die, HBM3 "
    "80 GB at 3.35 TB/s and tensor peaks as H100 SXM, NVLink 400 GB/s bidirectional; DeepSeek-V3 Technical "
    "Report, https://arxiv.org/abs/2412.19437, section 3.2.2 (H800 nodes, NVLink about 160 GB/s achieved against IB 50 GB/s)"
)
_GB200_SRC = (
    "NVIDIA GB200 NVL72 specifications, https://www.nvidia.com/en-us/data-center/gb200-nvl72/ (per GPU: "
    "FP16/BF16 5 PFLOPS, FP8 10 PFLOPS, INT8 10 POPS, FP4 20 PFLOPS, all with sparsity; 186 GB HBM3e at "
    "8 TB/s; NVLink 1.8 TB/s; up to 1,200 W. Rack: 72 GPUs, 130 TB/s of NVLink); MLCommons inference "
    "v6.1 system description GB200-NVL72_GB200-186GB_aarch64x16 (186 GB HBM3e; 4 ConnectX-7 per 4-GPU tray)"
)
_TPU_V5E_SRC = (
    "Google Cloud TPU v5e documentation, https://cloud.google.com/tpu/docs/v5e (per chip: 197 TFLOPS "
    "bf16, 393 TOPS int8, 16 GB HBM2 at 819 GB/s, ICI 400 GB/s bidirectional; 256 chips per pod, "
    "2D torus; 2 x 100 Gbps NICs per 8-chip host)"
)
_TPU_V5P_SRC = (
    "Google Cloud TPU v5p documentation, https://cloud.google.com/tpu/docs/v5p (per chip: 459 TFLOPS "
    "bf16 and fp8, 95 GB HBM2e at 2,765 GB/s, ICI 1,200 GB/s bidirectional, 50 Gbps data-centre network; "
    "8,960 chips per pod, 3D torus)"
)

GPUS: dict[str, GPU] = {
    g.name: g
    for g in (
        GPU(
            name="A100 40GB",
            vendor="NVIDIA",
            memory_GB=40,  # HBM2
            hbm_TBps=1.555,  # 1,555 GB/s (SXM)
            dense_bf16_TFLOPs=312,  # 624 with sparsity
            dense_fp8_TFLOPs=None,  # Ampere has no FP8 tensor cores
            nvlink_GBps=600,  # NVLink 3: 12 links x 50 GB/s bidirectional
            tdp_W=400,
            source=_A100_SRC,
            dense_int8_TOPs=624,  # 1,248 with sparsity
            nic_Gbps=200,  # DGX A100: 8 x ConnectX-6 HDR 200 Gb/s
        ),
        GPU(
            name="A100 80GB",
            vendor="NVIDIA",
            memory_GB=80,  # HBM2e
            hbm_TBps=2.039,  # 2,039 GB/s (SXM)
            dense_bf16_TFLOPs=312,
            dense_fp8_TFLOPs=None,
            nvlink_GBps=600,
            tdp_W=400,
            source=_A100_SRC,
            note="SXM4 module; the PCIe card has 1,935 GB/s and 300 W.",
            dense_int8_TOPs=624,
            nic_Gbps=200,
        ),
        GPU(
            name="H100 SXM",
            vendor="NVIDIA",
            memory_GB=80,  # HBM3
            hbm_TBps=3.35,
            dense_bf16_TFLOPs=989,  # 1,979 with sparsity
            dense_fp8_TFLOPs=1979,  # 3,958 with sparsity
            nvlink_GBps=900,  # NVLink 4: 18 links x 50 GB/s bidirectional = 450 GB/s each way
            tdp_W=700,  # "up to 700 W (configurable)"
            source=_H100_SRC,
            dense_int8_TOPs=1979,  # 3,958 with sparsity
        ),
        GPU(
            name="H800",
            vendor="NVIDIA",
            memory_GB=80,
            hbm_TBps=3.35,
            dense_bf16_TFLOPs=989,  # the H100 SXM die and clocks
            dense_fp8_TFLOPs=1979,
            nvlink_GBps=400,  # cut from 900 for export: 200 GB/s each way
            tdp_W=700,
            source=_H800_SRC,
            dense_int8_TOPs=1979,
            note="The export variant of H100 SXM DeepSeek trained V3 on: same tensor cores and HBM, "
                 "NVLink cut to 400 GB/s bidirectional (the V3 report measures 160 GB/s in practice), "
                 "FP64 cut too.",
        ),
        GPU(
            name="H200",
            vendor="NVIDIA",
            memory_GB=141,  # HBM3e
            hbm_TBps=4.8,
            dense_bf16_TFLOPs=989,
            dense_fp8_TFLOPs=1979,
            nvlink_GBps=900,
            tdp_W=700,
            source=_H200_SRC,
            note="H200 SXM; same GH100 die and clocks as H100 SXM, more and faster HBM.",
            dense_int8_TOPs=1979,
        ),
        GPU(
            name="B200",
            vendor="NVIDIA",
            memory_GB=180,  # DGX/HGX B200: 1,440 GB / 8 GPUs
            hbm_TBps=8.0,
            dense_bf16_TFLOPs=2250,  # 36 PFLOPS sparse / 8 GPUs / 2
            dense_fp8_TFLOPs=4500,  # 72 PFLOPS sparse / 8 GPUs / 2
            nvlink_GBps=1800,  # NVLink 5: 18 links x 100 GB/s bidirectional = 900 GB/s each way
            tdp_W=1000,
            source=_B200_SRC,
            note=(
                "Per-GPU figures of the air-cooled DGX/HGX B200 (1,000 W). The B200 package carries "
                "192 GB of HBM3e (8 stacks) but NVIDIA's system datasheets expose 180 GB per GPU; "
                "GB200 parts run at 1,200 W with ~10% higher peaks (2.5 PFLOPS dense BF16)."
            ),
            dense_int8_TOPs=4500,
            dense_fp4_TFLOPs=9000,  # 18 PFLOPS sparse
        ),
        GPU(
            name="GB200 (NVL72)",
            vendor="NVIDIA",
            memory_GB=186,  # HBM3e per GPU (13.4 TB across the rack's 72)
            hbm_TBps=8.0,
            dense_bf16_TFLOPs=2500,  # 5 PFLOPS with sparsity
            dense_fp8_TFLOPs=5000,  # 10 PFLOPS with sparsity
            nvlink_GBps=1800,  # NVLink 5, 900 GB/s each way, to any of the 72 through NVLink Switch trays
            tdp_W=1200,
            source=_GB200_SRC,
            dense_int8_TOPs=5000,
            dense_fp4_TFLOPs=10000,
            scale_up_domain=72,
            nic_Gbps=400,  # one ConnectX-7 400G per GPU, as an MLPerf GB200 NVL72 system lists it
            note="One Blackwell GPU of a GB200 NVL72 rack: 72 GPUs on one NVLink domain (130 TB/s), "
                 "so tensor and expert parallelism can span 72 GPUs instead of 8.",
        ),
        GPU(
            name="MI300X",
            vendor="AMD",
            memory_GB=192,  # HBM3, 8 stacks
            hbm_TBps=5.3,
            dense_bf16_TFLOPs=1307.4,
            dense_fp8_TFLOPs=2614.9,
            nvlink_GBps=896,  # Infinity Fabric (xGMI): 7 peer links x 128 GB/s bidirectional
            tdp_W=750,
            source=_MI300X_SRC,
            note="'nvlink_GBps' here is AMD Infinity Fabric peer bandwidth, aggregate bidirectional.",
            dense_int8_TOPs=2614.9,
        ),
        GPU(
            name="TPU v5e",
            vendor="Google",
            memory_GB=16,  # HBM2
            hbm_TBps=0.819,
            dense_bf16_TFLOPs=197,
            dense_fp8_TFLOPs=None,  # no FP8 rate published
            nvlink_GBps=400,  # ICI, bidirectional per chip (1,600 Gb/s)
            tdp_W=None,  # Google does not publish chip power
            source=_TPU_V5E_SRC,
            dense_int8_TOPs=393,
            scale_up_domain=256,  # one pod, a 2D torus
            nic_Gbps=25,  # 2 x 100 Gb/s NICs per 8-chip host
            kind="TPU",
            note="A chip of one TensorCore; 256 per pod on a 2D-torus ICI. Ring collectives on a torus "
                 "use two ports at once, so one-direction ICI per chip is taken as half the figure.",
        ),
        GPU(
            name="TPU v5p",
            vendor="Google",
            memory_GB=95,  # HBM2e
            hbm_TBps=2.765,
            dense_bf16_TFLOPs=459,
            dense_fp8_TFLOPs=459,  # the docs list FP8 at the BF16 rate
            nvlink_GBps=1200,  # ICI, bidirectional per chip
            tdp_W=None,
            source=_TPU_V5P_SRC,
            dense_int8_TOPs=None,  # not listed per chip in the Cloud TPU docs
            scale_up_domain=8960,  # one pod, a 3D torus (a single job: up to 6,144)
            nic_Gbps=50,  # data-centre network per chip
            kind="TPU",
            note="Two TensorCores per chip; 8,960 chips per pod on a 3D-torus ICI.",
        ),
    )
}

GPU_NAMES: tuple[str, ...] = tuple(GPUS)


# ---------------------------------------------------------------------------------------------
# Interconnects and storage
# ---------------------------------------------------------------------------------------------

LinkKind = Literal["scale-up", "scale-out", "host", "storage"]


@dataclass(frozen=True)
class Link:
    """One port / link / device, with its usable data rate PER DIRECTION.

    For network links `GBps` is the nominal line rate / 8 (400 Gb/s -> 50 GB/s; encoding overhead
    is already excluded from the Ethernet/IB data rate). For PCIe it is after 128b/130b encoding.
    For NVLink it is the per-GPU total over all of that GPU's links, one way.
    """

    name: str
    kind: LinkKind
    GBps: float  # 1e9 bytes/s, per direction
    source: str
    note: str = ""

    def __post_init__(self) -> None:
        if not self.GBps > 0:
            raise ValueError(f"{self.name}: GBps must be positive")
        if not self.source.strip():
            raise ValueError(f"{self.name}: source is required")

    @property
    def Gbps(self) -> float:
        """Per-direction rate in 1e9 bits/s."""
        return self.GBps * 8

    @property
    def Bps(self) -> float:
        return self.GBps * 1e9

    @property
    def bidirectional_GBps(self) -> float:
        return self.GBps * 2


def _pcie_x16_GBps(gigatransfers_per_s: float) -> float:
    """x16 lanes, 128b/130b encoding (Gen3+), 8 bits per byte, one direction."""
    return gigatransfers_per_s * 16 * (128 / 130) / 8


_IBTA_SRC = "InfiniBand Trade Association roadmap, https://www.infinibandta.org/infiniband-roadmap/"
_NVLINK_SRC = "NVIDIA NVLink and NVSwitch page, https://www.nvidia.com/en-us/data-center/nvlink/"
_PCIE_SRC = (
    "PCI-SIG PCI Express Base Specification (4.0: 16 GT/s, 5.0: 32 GT/s, 128b/130b encoding), "
    "https://pcisig.com/specifications"
)

LINKS: dict[str, Link] = {
    link.name: link
    for link in (
        # --- scale-up (per GPU, all links summed, one direction) ---
        Link(
            name="NVLink3",
            kind="scale-up",
            GBps=300,  # A100: 12 links x 25 GB/s each way; "600 GB/s" bidirectional
            source=_NVLINK_SRC + " ; NVIDIA A100 datasheet (NVLink 600 GB/s)",
        ),
        Link(
            name="NVLink4",
            kind="scale-up",
            GBps=450,  # H100/H200: 18 links x 25 GB/s each way; "900 GB/s" bidirectional
            source=_NVLINK_SRC + " ; NVIDIA H100 datasheet (NVLink 900 GB/s)",
        ),
        Link(
            name="NVLink5",
            kind="scale-up",
            GBps=900,  # B200: 18 links x 50 GB/s each way; "1.8 TB/s" bidirectional
            source=_NVLINK_SRC + " ; NVIDIA DGX B200 datasheet (NVLink 1.8 TB/s per GPU)",
        ),
        # --- scale-out: InfiniBand, one 4x port ---
        Link(name="IB HDR 200G", kind="scale-out", GBps=200 / 8, source=_IBTA_SRC + " (HDR 200 Gb/s)"),
        Link(name="IB NDR 400G", kind="scale-out", GBps=400 / 8, source=_IBTA_SRC + " (NDR 400 Gb/s)",
             note="ConnectX-7 / Quantum-2; the usual one-NIC-per-GPU rail of an H100 cluster."),
        Link(name="IB XDR 800G", kind="scale-out", GBps=800 / 8, source=_IBTA_SRC + " (XDR 800 Gb/s)",
             note="ConnectX-8 / Quantum-X800 generation."),
        # --- scale-out: Ethernet (RoCE v2 runs at the Ethernet line rate) ---
        Link(name="10GbE", kind="scale-out", GBps=10 / 8,
             source="IEEE Std 802.3ae-2002 (10 Gb/s Ethernet), https://standards.ieee.org/ieee/802.3ae/1073/"),
        Link(name="100GbE", kind="scale-out", GBps=100 / 8,
             source="IEEE Std 802.3ba-2010 (40/100 Gb/s Ethernet), https://standards.ieee.org/ieee/802.3ba/4335/",
             note="RoCE v2 uses the same line rate."),
        Link(name="200GbE", kind="scale-out", GBps=200 / 8,
             source="IEEE Std 802.3bs-2017 (200/400 Gb/s Ethernet), https://standards.ieee.org/ieee/802.3bs/6079/",
             note="RoCE v2 uses the same line rate."),
        Link(name="400GbE", kind="scale-out", GBps=400 / 8,
             source="IEEE Std 802.3bs-2017 (200/400 Gb/s Ethernet), https://standards.ieee.org/ieee/802.3bs/6079/",
             note="RoCE v2 uses the same line rate (e.g. NVIDIA Spectrum-X / ConnectX-7)."),
        # --- host: PCIe x16 slot ---
        Link(name="PCIe Gen4 x16", kind="host", GBps=_pcie_x16_GBps(16), source=_PCIE_SRC,
             note="16 GT/s x 16 lanes x 128/130 / 8 = 31.5 GB/s each way (~32 GB/s)."),
        Link(name="PCIe Gen5 x16", kind="host", GBps=_pcie_x16_GBps(32), source=_PCIE_SRC,
             note="32 GT/s x 16 lanes x 128/130 / 8 = 63.0 GB/s each way (~64 GB/s)."),
        # --- storage: one datacenter NVMe SSD (x4), sequential read ---
        Link(name="NVMe Gen4 SSD", kind="storage", GBps=7.0,
             source=(
                 "Samsung PM1733 (PCIe Gen4 x4 U.2) product brief: sequential read up to 7,000 MB/s, "
                 "https://semiconductor.samsung.com/ssd/enterprise-ssd/pm1733-pm1735/"
             ),
             note="Sequential read; a Gen4 x4 link tops out at 7.88 GB/s. Writes and random I/O are lower."),
        Link(name="NVMe Gen5 SSD", kind="storage", GBps=14.0,
             source=(
                 "Micron 9550 (PCIe Gen5 x4) product brief: sequential read up to 14,000 MB/s, "
                 "https://www.micron.com/products/storage/ssd/data-center-ssd/9550-ssd"
             ),
             note="Sequential read; a Gen5 x4 link tops out at 15.75 GB/s. Writes ~10 GB/s."),
    )
}

LINK_NAMES: tuple[str, ...] = tuple(LINKS)


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------

Attention = Literal["MHA", "GQA", "MLA"]


@dataclass(frozen=True)
class LLM:
    """Shape of a decoder-only transformer, enough for memory and FLOP arithmetic.

    `total_params` / `active_params` are counts (not billions). For a dense model they are equal.
    For MoE, `moe_experts` is the number of ROUTED experts per MoE layer, `experts_per_token` the
    routed top-k, and `shared_experts` the always-on experts.

    KV cache: for MHA/GQA each layer stores K and V for every KV head, i.e. 2 x kv_heads x head_dim
    elements per token. MLA (DeepSeek-V3, Kimi K2) stores one compressed latent of kv_lora_rank
    elements plus the decoupled RoPE key of qk_rope_head_dim elements, shared by all heads; such
    models set `kv_cache_elems_per_token_per_layer` to kv_lora_rank + qk_rope_head_dim.
    """

    name: str
    layers: int
    d_model: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    total_params: float
    active_params: float
    source: str
    attention: Attention = "GQA"
    moe_experts: int | None = None  # routed experts per MoE layer
    experts_per_token: int | None = None  # routed top-k
    shared_experts: int = 0
    kv_lora_rank: int | None = None  # MLA only
    qk_rope_head_dim: int | None = None  # MLA only
    kv_cache_elems_per_token_per_layer: int | None = None  # override (MLA)
    note: str = ""
    # The rest of the shape, enough to count the parameters from it (models/engine/shape.py):
    ffn_dim: int | None = None  # MLP width of a dense layer
    moe_ffn_dim: int | None = None  # MLP width of one expert (MoE)
    dense_layers: int = 0  # dense-MLP layers at the bottom of an MoE stack
    q_lora_rank: int | None = None  # MLA: queries through a low-rank bottleneck
    v_head_dim: int | None = None  # MLA: value width per head (head_dim is the non-RoPE key width)
    gated_mlp: bool = True  # SwiGLU (gate, up, down: 3 matrices) or a plain 2-matrix MLP
    tied_embeddings: bool = False  # the output head reuses the input embedding

    def __post_init__(self) -> None:
        for field_name in ("layers", "d_model", "heads", "kv_heads", "head_dim", "vocab"):
            if not getattr(self, field_name) > 0:
                raise ValueError(f"{self.name}: {field_name} must be positive")
        if not 0 < self.active_params <= self.total_params:
            raise ValueError(f"{self.name}: need 0 < active_params <= total_params")
        if self.heads % self.kv_heads:
            raise ValueError(f"{self.name}: heads must be a multiple of kv_heads")
        if (self.moe_experts is None) != (self.experts_per_token is None):
            raise ValueError(f"{self.name}: set both moe_experts and experts_per_token, or neither")
        if self.moe_experts is None and self.active_params != self.total_params:
            raise ValueError(f"{self.name}: a dense model has active_params == total_params")
        if self.attention == "MLA":
            if self.kv_lora_rank is None or self.qk_rope_head_dim is None:
                raise ValueError(f"{self.name}: MLA needs kv_lora_rank and qk_rope_head_dim")
            if self.kv_cache_elems_per_token_per_layer != self.kv_lora_rank + self.qk_rope_head_dim:
                raise ValueError(
                    f"{self.name}: MLA cache must be kv_lora_rank + qk_rope_head_dim elements"
                )
        if not self.source.strip():
            raise ValueError(f"{self.name}: source is required")

    @property
    def is_moe(self) -> bool:
        return self.moe_experts is not None

    @property
    def active_fraction(self) -> float:
        """Share of the weights one token touches (1.0 for dense)."""
        return self.active_params / self.total_params

    @property
    def kv_elems_per_token_per_layer(self) -> int:
        if self.kv_cache_elems_per_token_per_layer is not None:
            return self.kv_cache_elems_per_token_per_layer
        return 2 * self.kv_heads * self.head_dim  # K and V

    def kv_bytes_per_token(self, bytes_per_elem: float = 2) -> float:
        """KV-cache bytes one token occupies across all layers.

        GQA/MHA: 2 (K and V) x layers x kv_heads x head_dim x bytes_per_elem.
        MLA: layers x (kv_lora_rank + qk_rope_head_dim) x bytes_per_elem.
        """
        return self.layers * self.kv_elems_per_token_per_layer * bytes_per_elem

    def weight_bytes(self, bytes_per_param: float = 2) -> float:
        """All weights resident in memory (MoE: every expert, not just the active ones)."""
        return self.total_params * bytes_per_param


_LLAMA3_SRC = "Llama 3 paper, 'The Llama 3 Herd of Models', arXiv 2407.21783, Table 3"

MODELS: dict[str, LLM] = {
    m.name: m
    for m in (
        LLM(
            name="Llama-3-8B",
            layers=32,
            d_model=4096,
            heads=32,
            kv_heads=8,
            head_dim=128,
            vocab=128_256,
            total_params=8.03e9,
            active_params=8.03e9,
            ffn_dim=14_336,
            source=_LLAMA3_SRC + " ; https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json",
            note="Paper lists a 128K vocabulary; config.json has 128,256 (128,000 + 256 special tokens).",
        ),
        LLM(
            name="Llama-3-70B",
            layers=80,
            d_model=8192,
            heads=64,
            kv_heads=8,
            head_dim=128,
            vocab=128_256,
            total_params=70.6e9,
            active_params=70.6e9,
            ffn_dim=28_672,
            source=_LLAMA3_SRC + " ; https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json",
        ),
        LLM(
            name="Llama-3.1-405B",
            layers=126,
            d_model=16384,
            heads=128,
            kv_heads=8,
            head_dim=128,
            vocab=128_256,
            total_params=405e9,
            active_params=405e9,
            ffn_dim=53_248,
            source=_LLAMA3_SRC + " ; https://huggingface.co/meta-llama/Llama-3.1-405B/blob/main/config.json",
        ),
        LLM(
            name="Mixtral-8x7B",
            layers=32,
            d_model=4096,
            heads=32,
            kv_heads=8,
            head_dim=128,
            vocab=32_000,
            total_params=46.7e9,
            active_params=12.9e9,
            moe_experts=8,
            experts_per_token=2,
            moe_ffn_dim=14_336,
            source=(
                "Mixtral of Experts, arXiv 2401.04088 (Table 1: 32 layers, dim 4096, 32 heads, 8 KV heads, "
                "head_dim 128, vocab 32000, 8 experts, top-2); Mistral AI announcement "
                "https://mistral.ai/news/mixtral-of-experts (46.7B total, 12.9B per token); "
                "https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json"
            ),
        ),
        LLM(
            name="DeepSeek-V3",
            layers=61,
            d_model=7168,
            heads=128,
            kv_heads=128,  # config num_key_value_heads; irrelevant to the MLA cache below
            head_dim=128,  # qk_nope_head_dim = v_head_dim = 128 (query/key head is 128 + 64 RoPE)
            vocab=129_280,
            total_params=671e9,
            active_params=37e9,
            attention="MLA",
            moe_experts=256,
            experts_per_token=8,
            shared_experts=1,
            kv_lora_rank=512,
            qk_rope_head_dim=64,
            kv_cache_elems_per_token_per_layer=512 + 64,
            ffn_dim=18_432,
            moe_ffn_dim=2_048,
            dense_layers=3,
            q_lora_rank=1_536,
            v_head_dim=128,
            source=(
                "DeepSeek-V3 Technical Report, arXiv 2412.19437 (section 4.2: 61 layers, hidden 7168, "
                "128 heads, d_c = 512, d_h^R = 64, 1 shared + 256 routed experts, 8 activated; "
                "671B total, 37B activated); https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json"
            ),
            note="671B excludes the 14B multi-token-prediction module (685B on Hugging Face). "
            "First 3 layers are dense FFN.",
        ),
        LLM(
            name="Kimi-K2 1T",
            layers=61,
            d_model=7168,
            heads=64,
            kv_heads=64,
            head_dim=128,
            vocab=163_840,
            total_params=1.0e12,
            active_params=32e9,
            attention="MLA",
            moe_experts=384,
            experts_per_token=8,
            shared_experts=1,
            kv_lora_rank=512,
            qk_rope_head_dim=64,
            kv_cache_elems_per_token_per_layer=512 + 64,
            ffn_dim=18_432,
            moe_ffn_dim=2_048,
            dense_layers=1,
            q_lora_rank=1_536,
            v_head_dim=128,
            source=(
                "Kimi K2 model card, https://huggingface.co/moonshotai/Kimi-K2-Instruct and "
                "https://github.com/MoonshotAI/Kimi-K2 (1T total, 32B activated, 61 layers incl. 1 dense, "
                "attention hidden 7168, 64 heads, 384 experts, 8 selected, 1 shared, 160K vocab, MLA); "
                "config.json (vocab_size 163840, kv_lora_rank 512, qk_rope_head_dim 64)"
            ),
            note="Half of DeepSeek-V3's 128 heads; the MLA cache per token is the same size.",
        ),
        LLM(
            name="GPT-13B",
            layers=40,
            d_model=5120,
            heads=40,
            kv_heads=40,
            head_dim=128,
            vocab=50_257,
            total_params=13e9,
            active_params=13e9,
            attention="MHA",
            ffn_dim=4 * 5_120,
            gated_mlp=False,
            tied_embeddings=True,
            source=(
                "GPT-3 paper, 'Language Models are Few-Shot Learners', arXiv 2005.14165, Table 2.1 "
                "(GPT-3 13B: 40 layers, 40 heads, d_head 128, 13.0B params; GPT-2 BPE vocab 50,257); "
                "kipply, 'Transformer Inference Arithmetic', https://kipp.ly/transformer-inference-arithmetic/"
            ),
            note="Reference 13B MHA model. d_model = 40 heads x 128 = 5120 (the GPT-3 table prints 5140).",
        ),
        LLM(
            name="LLaMA-2-13B",
            layers=40,
            d_model=5120,
            heads=40,
            kv_heads=40,
            head_dim=128,
            vocab=32_000,
            total_params=13.0e9,
            active_params=13.0e9,
            attention="MHA",
            ffn_dim=13_824,
            source=(
                "Llama 2 paper, 'Llama 2: Open Foundation and Fine-Tuned Chat Models', arXiv 2307.09288 "
                "(13B: 40 layers, 40 heads, no GQA below 34B); "
                "https://huggingface.co/meta-llama/Llama-2-13b-hf/blob/main/config.json "
                "(hidden 5120, intermediate 13824, vocab 32000)"
            ),
            note="The 13B of many worked inference problems: MHA, so its KV cache is 5x Llama-3-70B's per layer.",
        ),
    )
}

MODEL_NAMES: tuple[str, ...] = tuple(MODELS)


# ---------------------------------------------------------------------------------------------
# Reliability
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reliability:
    """An observed failure count over a fleet and a period."""

    unexpected_interruptions: int
    days: float
    gpus: int
    source: str

    def __post_init__(self) -> None:
        if self.unexpected_interruptions < 0 or self.days <= 0 or self.gpus <= 0:
            raise ValueError("need interruptions >= 0, days > 0, gpus > 0")
        if not self.source.strip():
            raise ValueError("source is required")

    @property
    def gpu_days(self) -> float:
        return self.days * self.gpus

    @property
    def per_gpu_day(self) -> float:
        """Interruptions per GPU per day (the rate to scale to another cluster size)."""
        return self.unexpected_interruptions / self.gpu_days

    @property
    def per_day(self) -> float:
        """Interruptions per day for the whole observed fleet."""
        return self.unexpected_interruptions / self.days

    @property
    def mean_hours_between_interruptions(self) -> float:
        """Fleet-level mean time between unexpected interruptions, hours."""
        return self.days * 24 / self.unexpected_interruptions

    def mean_hours_between_interruptions_at(self, gpus: int) -> float:
        """Same per-GPU rate scaled to a job of `gpus` GPUs."""
        return 24 / (self.per_gpu_day * gpus)


LLAMA3_INTERRUPTIONS = Reliability(
    unexpected_interruptions=419,  # of 466 total job interruptions; 47 were planned
    days=54,
    gpus=16384,  # H100s
    source="Llama 3 paper, arXiv 2407.21783, section 3.3.4",
)


# ---------------------------------------------------------------------------------------------
# Training-state and FLOP conventions
# ---------------------------------------------------------------------------------------------

# Mixed-precision Adam, bytes per parameter held across the data-parallel group (before ZeRO
# sharding): bf16 weights 2 + bf16 grads 2 + fp32 master weights 4 + fp32 Adam m 4 + fp32 Adam v 4.
# Source: Rajbhandari et al., ZeRO, arXiv 1910.02054, section 3.1 (K = 12 optimizer bytes + 2 + 2).
ADAM_MIXED_BYTES_PER_PARAM = 16

# A resumable checkpoint: the same state minus gradients (recomputed after restart):
# bf16 weights 2 + fp32 master 4 + m 4 + v 4.
CHECKPOINT_BYTES_PER_PARAM = 14

# FLOPs per parameter per token: forward 2 (one multiply-add per weight), backward 4.
# Source: Kaplan et al., Scaling Laws for Neural Language Models, arXiv 2001.08361, section 2.1
# (C ~ 6 N per training token; forward pass ~ 2 N).
TRAIN_FLOPS_PER_PARAM_TOKEN = 6
INFER_FLOPS_PER_PARAM_TOKEN = 2


# ---------------------------------------------------------------------------------------------
# Deployment conventions and model details several pages use
# ---------------------------------------------------------------------------------------------

# One HGX/DGX baseboard: eight SXM GPUs on one NVSwitch domain, one 400G NIC each.
# Source: NVIDIA DGX H100 user guide, hardware overview (8x H100 SXM5, 4x NVSwitch, 8x ConnectX-7),
# https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html
GPUS_PER_NODE = 8

# Share of HBM a serving engine gives to weights, adapters and KV; the rest is activations, CUDA
# context, graphs and allocator slack. Source: vLLM engine arguments, gpu_memory_utilization
# (default 0.9), https://docs.vllm.ai/en/latest/configuration/engine_args.html
HBM_USABLE_FRACTION = 0.9

# Multi-Instance GPU on A100/H100/H200: 8 memory slices and 7 compute slices; the smallest profile
# (1g) owns one memory slice, and at most seven instances run at once. Source: NVIDIA MIG user
# guide, "Supported MIG profiles", https://docs.nvidia.com/datacenter/tesla/mig-user-guide/
MIG_MEMORY_SLICES = 8
MIG_MAX_INSTANCES = 7

# MLP (gate/up/down) width of Llama-3-70B. Source: Llama 3 paper, 'The Llama 3 Herd of Models',
# arXiv 2407.21783, Table 3 (FFN dimension 28,672 for 70B);
# https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json ("intermediate_size": 28672).
LLAMA3_70B_FFN_DIM = 28_672

# MLP width of the GPT-3 family, as a multiple of d_model (GPT-13B's 5,120 -> 20,480). Source: GPT-3
# paper, 'Language Models are Few-Shot Learners', arXiv 2005.14165, section 2.1 ("d_ff = 4 * d_model").
GPT3_FFN_MULTIPLE = 4

# Dense (non-MoE) transformer layers at the bottom of an MoE stack, by catalog model name.
# Sources: the MODELS entries' own notes: Kimi K2 "61 layers incl. 1 dense" (moonshotai/Kimi-K2
# model card); DeepSeek-V3 "first 3 layers are dense FFN" (arXiv 2412.19437, section 4.2).
DENSE_LAYERS = {name: m.dense_layers for name, m in MODELS.items() if m.is_moe}


# ---------------------------------------------------------------------------------------------
# Look-ups
# ---------------------------------------------------------------------------------------------


def gpu(name: str) -> GPU:
    try:
        return GPUS[name]
    except KeyError:
        raise KeyError(f"unknown GPU {name!r}; known: {', '.join(GPU_NAMES)}") from None


def model(name: str) -> LLM:
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODEL_NAMES)}") from None


def link(name: str) -> Link:
    try:
        return LINKS[name]
    except KeyError:
        raise KeyError(f"unknown link {name!r}; known: {', '.join(LINK_NAMES)}") from None
