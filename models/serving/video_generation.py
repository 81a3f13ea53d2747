"""Serving video generation: forty denoising passes of a diffusion transformer (seed 004).

A request is a fixed amount of compute, known before it starts, spent over a latent sequence of
tens of thousands of tokens:

    latent frames    = 1 + ceil((frames - 1) / temporal stride)      (a causal VAE keeps frame 0)
    tokens per pass  = latent frames x ceil(H / (spatial stride x patch)) x ceil(W / (spatial stride x patch))
    FLOP per pass    = 2 x params x tokens  +  4 x layers x width x tokens^2   (full, non-causal attention)
    FLOP per request = steps x (2 with classifier-free guidance) x FLOP per pass
    GPU-seconds      = FLOP per request / (peak x MFU);   wall time = GPU-seconds / sequence-parallel degree

Modelling choices (the page states them):
  * The DiT is a stack of standard blocks, about 12 x width^2 parameters each (4 w^2 attention,
    8 w^2 MLP at 4x), so the width follows from the size and the depth knobs. Text cross-attention,
    adaLN modulation, the text encoder and the VAE decode are left out: they add a few percent.
  * Attention is bidirectional over the whole clip: every token attends to every token, so the
    term is N^2, not the N^2 / 2 of a causal LLM prefill. Head dim 128.
  * The accelerator, its peaks and its HBM are the engine's (models/engine): the page takes the
    accelerator knobs and the weight and compute formats from the engine's groups, and a part's
    numbers only through its Hardware. The DiT's shape and its MFU stay the page's own: it is not
    an LLM, and its MFU is per GPU, measured across the sequence-parallel group, so the
    all-to-alls of sequence parallelism are inside it; the GPUs of one job share the work evenly.
  * HBM traffic per pass per GPU: every weight once, plus each matmul's input and output once
    (20 x width values per token per layer, bf16); flash attention keeps the N^2 scores on chip.
  * The queue is M/M/c over groups of GPUs, which overstates the wait of near-constant job times.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import model_validator

from pydantic import create_model
from pydantic.fields import FieldInfo

from models.engine.hardware import named as hardware_named
from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import AcceleratorKnobs, ModelKnobs, ReplicaKnobs, accelerator
from models.engine.precision import bytes_per_element
from models.engine.roofline import ATTENTION_FLOPS_PER_MAC
from models.engine.serving_knobs import SloKnobs
from models.sim import queue

# Shape assumptions of the DiT and its VAE (the page says so; none of them is a catalog constant).
PARAMS_PER_BLOCK_PER_WIDTH_SQ = 12  # 4 w^2 attention projections + 8 w^2 MLP (4x expansion)
HEAD_DIM = 128
LATENT_CHANNELS = 16  # the 16-channel video VAEs of HunyuanVideo and Wan 2.1
LATENT_BYTES_PER_VALUE = 4  # fp32 between steps
ACT_BYTES = 2  # activations in bf16
ACT_VALUES_PER_TOKEN_PER_LAYER_PER_WIDTH = 20  # matmul inputs + outputs (16 w) + Q, K, V, O for attention (4 w)
ATTN_FLOPS_PER_TOKEN_PAIR_PER_WIDTH = 2 * ATTENTION_FLOPS_PER_MAC  # QK^T and AV, 2 FLOP per MAC: 4 x width
ASPECTS = {"16:9": 16 / 9, "4:3": 4 / 3, "1:1": 1.0, "9:16": 9 / 16}
Aspect = Literal["16:9", "4:3", "1:1", "9:16"]
# xDiT's HunyuanVideo performance report: 1280 x 720, 129 frames, 50 steps, Ulysses sequence parallelism,
# latency in seconds on H100. HunyuanVideo embeds its guidance (--embedded-cfg-scale), one DiT pass a step.
# The page's own shape stands in for the model (13B, 40 standard blocks), so the anchor tests its formulas.
XDIT_H100_LATENCY_S = {1: 1904.08, 2: 925.04, 4: 514.08, 8: 337.58}
XDIT_DIT_PARAMS, XDIT_DIT_LAYERS, XDIT_STEPS = 13, 40, 50
XDIT_FRAMES, XDIT_HEIGHT_PX, XDIT_WIDTH_PX = 129, 720, 1280
SEARCH_HEIGHTS = range(16, 4321, 16)  # candidate heights for the tallest video that meets the target


def _group_fields(group: type[StrictModel], names: tuple[str, ...]) -> dict:
    """The named knobs exactly as the group declares them (label, range, help, default)."""
    return {n: (group.model_fields[n].annotation, FieldInfo.merge_field_infos(group.model_fields[n])) for n in names}


# A DiT page needs the engine's accelerator and formats but not its LLM: the accelerator knobs
# without the model choice, the weight and compute formats, the usable share of HBM, and the
# SLO group's target utilization.
_HARDWARE = tuple(n for n in AcceleratorKnobs.model_fields if n not in ModelKnobs.model_fields)
_Hardware = create_model(
    "_Hardware", __base__=StrictModel,
    **_group_fields(ReplicaKnobs, _HARDWARE + ("weight_precision", "compute_precision", "usable_hbm_fraction")),
    **_group_fields(SloKnobs, ("target_utilization",)),
)


class _VideoKnobs(StrictModel):
    dit_params_b: Annotated[
        float,
        Knob("DiT size", "billion", 1, 60, 0.5, log=True,
             help="Parameters of the diffusion transformer; 13B is the HunyuanVideo / Wan-14B class.",
             draw=(5, 30)),
    ] = 13
    dit_layers: Annotated[
        int,
        Knob("DiT blocks", "blocks", 12, 96, 1,
             help="Transformer blocks; with the size they set the width (12 x width² parameters a block).",
             draw=(30, 60)),
    ] = 40
    frames: Annotated[
        int,
        Knob("Frames", "frames", 17, 481, 4, help="Output frames (81 at 16 fps is about 5 s).",
             draw=(49, 161), draw_choices=(49, 81, 121, 161)),
    ] = 81
    fps: Annotated[
        int, Knob("Frame rate", "frames/s", 8, 60, 1, help="Frames per second of the output video.", draw=(16, 24), draw_choices=(16, 24)),
    ] = 16
    height_px: Annotated[
        int,
        Knob("Resolution (height)", "px", 144, 2160, 16,
             help="Vertical pixels: 480 is 480p, 720 is 720p. The width follows from the aspect ratio.",
             draw=(360, 720), draw_choices=(360, 480, 720)),
    ] = 480
    aspect: Annotated[Aspect, Knob("Aspect ratio", help="Width over height.")] = "16:9"
    vae_spatial_stride: Annotated[
        int, Knob("VAE spatial stride", "px", 4, 32, 4, help="Pixels per latent cell along each side (8 in most video VAEs).",
                  draw=(8, 16), draw_choices=(8, 16)),
    ] = 8
    vae_temporal_stride: Annotated[
        int, Knob("VAE temporal stride", "frames", 1, 8, 1, help="Frames per latent frame (4 in most video VAEs).",
                  draw=(4, 8), draw_choices=(4, 8)),
    ] = 4
    patch_size: Annotated[
        int, Knob("Patch size", "cells", 1, 4, 1, help="Latent cells per token along each side (2 × 2 patches).",
                  draw=(1, 2)),
    ] = 2
    denoising_steps: Annotated[
        int, Knob("Denoising steps", "steps", 1, 100, 1,
                  help="Sampler steps; 40-50 for a base model, 4-8 for a step-distilled one.", draw=(20, 50)),
    ] = 40
    classifier_free_guidance: Annotated[
        bool, Knob("Classifier-free guidance", help="Two passes a step (with and without the prompt); off for a guidance-distilled model."),
    ] = True
    sp_degree: Annotated[
        int, Knob("GPUs per job", "GPUs", 1, 32, 1,
                  help="Sequence-parallel degree: the tokens of one video are split across this many GPUs.",
                  draw=(4, 8), draw_choices=(4, 8)),
    ] = 8
    dit_mfu: Annotated[
        float, Knob("DiT MFU (sequence-parallel comms included)", "", 0.1, 0.8, 0.01, percent=True,
                    help="Share of dense peak each GPU sustains over a whole pass, the sequence-parallel "
                         "all-to-alls included (40%: what xDiT's HunyuanVideo run implies on one H100; its "
                         "eight-GPU run implies 28% per GPU).",
                    draw=(0.3, 0.55)),
    ] = 0.4
    arrival_rate: Annotated[
        float, Knob("Arrival rate", "jobs/s", 0.01, 100, log=True, help="Video requests per second at peak.",
                    draw=(0.1, 5)),
    ] = 0.5
    wait_target_s: Annotated[
        float, Knob("Acceptable wait", "s", 10, 600, 5, log=True,
                    help="The generation time users accept: 'about a minute'.", draw=(45, 120)),
    ] = 60
    vae_decode_flops_per_pixel: Annotated[
        float, Knob("VAE decode FLOP per output pixel-frame", "FLOP", 1e5, 1e8, log=True,
                    help="Work of the VAE decoder per output pixel of every frame: an estimate for a 96-128-channel "
                         "causal 3D-conv decoder (about 3 × 3 × 3 convolutions at each of four resolutions).",
                    draw=(5e6, 2e7)),
    ] = 1e7
    vae_bytes_per_pixel_frame: Annotated[
        float, Knob("VAE decode peak memory per output pixel-frame", "B", 100, 2000, log=True,
                    help="Peak working memory of an untiled conv VAE decode per output pixel-frame "
                         "(750 B measured on LTX-2's decoder).",
                    draw=(400, 1000)),
    ] = 750
    vae_mfu: Annotated[
        float, Knob("VAE decode MFU", "", 0.02, 0.5, 0.01, percent=True,
                    help="Share of dense peak the VAE decoder sustains: small 3D convolutions over one latent "
                         "chunk at a time run far below a DiT's matmuls (an estimate).",
                    draw=(0.05, 0.2)),
    ] = 0.1
    gpu_hour_usd: Annotated[
        float, Knob("GPU price", "USD/h", 0.5, 10, 0.1,
                    help="What one GPU-hour costs you (an assumption: rental or amortized ownership).",
                    draw=(1.5, 4)),
    ] = 2.5



class Params(_Hardware, _VideoKnobs):
    """The clip, the DiT and the load first, then the engine's accelerator and formats."""

    @model_validator(mode="after")
    def _weights_fit(self) -> "Params":
        hw = accelerator(self)
        if not hw.has(self.compute_precision):
            raise ValueError(f"{hw.name} has no dense {self.compute_precision} rate; pick another compute precision.")
        weights = self.dit_params_b * 1e9 * bytes_per_element(self.weight_precision)
        usable = self.usable_hbm_fraction * hw.hbm_bytes
        if weights > usable:
            raise ValueError(
                f"A {self.dit_params_b:g}B DiT in {self.weight_precision} is {weights / 1e9:,.0f} GB of weights, more "
                f"than one {hw.name} holds ({usable / 1e9:,.0f} GB usable). Every GPU of a sequence-parallel job "
                "keeps a full copy here: use a smaller weight format, a bigger GPU, or a smaller model.")
        return self


def aspect_formula(aspect: str) -> str:
    """"16:9" as the arithmetic of the width over the height: "16 / 9"."""
    w, h = aspect.split(":")
    return f"{w} / {h}"


def erlang_b(servers: int, offered_load: float, wait_probability: float) -> float:
    """Erlang B of `offered_load` on `servers`, read back from Erlang C (which
    `queue.erlang_c_wait_probability` builds from B's recursion): C = c B / (c - a (1 - B)), so
    B = C (c - a) / (c - a C). 1 when the load fills every server."""
    c, a = servers, offered_load
    return wait_probability * (c - a) / (c - a * wait_probability) if a < c else 1.0


def width_px(p: Params, height: float) -> float:
    return height * ASPECTS[p.aspect]


def _tokens(p: Params, height: float) -> tuple[int, int, int, int, int]:
    """(latent frames, latent height, latent width, tokens per latent frame, tokens per pass)."""
    lf = 1 + math.ceil((p.frames - 1) / p.vae_temporal_stride)
    lh = math.ceil(height / p.vae_spatial_stride)
    lw = math.ceil(width_px(p, height) / p.vae_spatial_stride - 1e-9)
    per_frame = math.ceil(lh / p.patch_size) * math.ceil(lw / p.patch_size)
    return lf, lh, lw, per_frame, lf * per_frame


def dit_width(p: Params) -> float:
    return math.sqrt(p.dit_params_b * 1e9 / (PARAMS_PER_BLOCK_PER_WIDTH_SQ * p.dit_layers))


def _passes(p: Params) -> int:
    return p.denoising_steps * (2 if p.classifier_free_guidance else 1)


def _flops_per_pass(p: Params, n: int) -> float:
    return 2 * p.dit_params_b * 1e9 * n + ATTN_FLOPS_PER_TOKEN_PAIR_PER_WIDTH * p.dit_layers * dit_width(p) * n * n


def _wall_time_s(p: Params, height: float, peak: float) -> float:
    return _passes(p) * _flops_per_pass(p, _tokens(p, height)[4]) / (peak * p.dit_mfu) / p.sp_degree


def _tallest_within(p: Params, wait_s: float, peak: float) -> int:
    """Largest height in SEARCH_HEIGHTS whose wall time is within `wait_s` (wall time grows with height); 0 if none."""
    lo, hi = -1, len(SEARCH_HEIGHTS) - 1  # invariant: index lo fits (or -1), everything above hi does not
    if _wall_time_s(p, SEARCH_HEIGHTS[hi], peak) <= wait_s:
        return SEARCH_HEIGHTS[hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _wall_time_s(p, SEARCH_HEIGHTS[mid], peak) <= wait_s:
            lo = mid
        else:
            hi = mid
    return SEARCH_HEIGHTS[lo] if lo >= 0 else 0


def _record_xdit_anchor(d: Derivation, p: Params, wall: float) -> None:
    """xDiT's published HunyuanVideo latencies put through this page's own formulas: the MFU they imply per
    GPU at the group size nearest below the scenario's, and this scenario's wall time at that MFU."""
    width = d.step("xdit_dit_width", "Width of a 13B DiT of 40 standard blocks (12 × width² a block)",
                   math.sqrt(XDIT_DIT_PARAMS * 1e9 / (PARAMS_PER_BLOCK_PER_WIDTH_SQ * XDIT_DIT_LAYERS)), "1",
                   formula="sqrt(13 billion / (12 × 40))")
    lf = 1 + math.ceil((XDIT_FRAMES - 1) / 4)
    n = lf * math.ceil(XDIT_HEIGHT_PX / 16) * math.ceil(XDIT_WIDTH_PX / 16)  # 8 x 8 VAE cells, 2 x 2 patches
    n = d.step("xdit_tokens_per_pass", "xDiT's HunyuanVideo run, 1280 × 720, 129 frames: tokens per pass", n, "1",
               noun="tokens", formula="(1 + ceil(128 / 4)) × ceil(720 / 16) × ceil(1280 / 16)")
    flops = d.step(
        "xdit_flops_per_request", "That run's FLOP, by this page's formulas (13B, 40 blocks, 50 steps, one pass each)",
        XDIT_STEPS * (2 * XDIT_DIT_PARAMS * 1e9 * n + ATTN_FLOPS_PER_TOKEN_PAIR_PER_WIDTH * XDIT_DIT_LAYERS * width * n * n),
        "FLOP", formula="50 × (2 FLOP × 13 billion × {xdit_tokens_per_pass} + 4 FLOP × 40 × "
                        "{xdit_dit_width} × {xdit_tokens_per_pass}²)")
    gpus = max(g for g in XDIT_H100_LATENCY_S if g <= max(p.sp_degree, 1))
    g = d.step("xdit_gpus", "The measured group size used (the largest at or below the scenario's)", gpus, "1",
               noun="GPUs", kind="lookup", note="xDiT reports 1, 2, 4 and 8 H100s.")
    measured = d.step("xdit_measured_s", "xDiT's measured latency at that group size, H100", XDIT_H100_LATENCY_S[gpus],
                      "s", kind="lookup", note="xDiT HunyuanVideo performance report, Ulysses, 1280 × 720, 129 frames.")
    d.step("xdit_one_gpu_s", "xDiT's measured latency on one H100", XDIT_H100_LATENCY_S[1], "s", kind="lookup",
           note="xDiT HunyuanVideo performance report.")
    h100 = hardware_named("H100 SXM").peak("bf16")  # xDiT's runs are bf16 on H100s
    d.step("xdit_one_gpu_mfu", "MFU that implies on one H100", flops / (XDIT_H100_LATENCY_S[1] * h100), "1",
           percent=True, formula=f"{{xdit_flops_per_request}} / ({{xdit_one_gpu_s}} × {h100 / 1e12:,.0f} TFLOP/s)")
    mfu = d.step("xdit_group_mfu", "MFU per GPU it implies at that group size", flops / (g * measured * h100), "1",
                 percent=True, formula=f"{{xdit_flops_per_request}} / ({{xdit_gpus}} × {{xdit_measured_s}} × "
                                       f"{h100 / 1e12:,.0f} TFLOP/s)")
    loss = 1 - mfu / d.value("xdit_one_gpu_mfu")
    d.step("xdit_scaling_clause", "What the group costs in efficiency, measured",
           f"loses {loss:.0%} of the one-GPU efficiency to the all-to-alls and the smaller shards" if loss > 0.01
           else "keeps the one-GPU efficiency", "1", formula="1 − {xdit_group_mfu} / {xdit_one_gpu_mfu}", kind="verdict")
    d.step("dit_mfu_over_xdit", "The scenario's MFU over that measured one", p.dit_mfu / mfu, "1", noun="×",
           formula="{dit_mfu} / {xdit_group_mfu}")
    at = d.step("wall_time_at_xdit_mfu_s", "This scenario's DiT time at the measured per-GPU MFU", wall * p.dit_mfu / mfu,
                "s", formula="{wall_time_s} × {dit_mfu} / {xdit_group_mfu}")
    d.step("meets_wait_at_xdit_mfu", "Within the acceptable wait at the measured MFU?",
           "yes" if at <= p.wait_target_s else "no", formula="{wall_time_at_xdit_mfu_s} ≤ {wait_target_s}",
           kind="verdict")


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    hw = accelerator(p)

    # --- the latent: tokens per pass ---
    d.step("video_seconds", "Length of the video", p.frames / p.fps, "s", formula="{frames} / {fps}")
    d.step("width_px", f"Width at {p.aspect}", width_px(p, p.height_px), "1", noun="px",
           formula="{height_px} × " + aspect_formula(p.aspect))
    lf, lh, lw, per_frame, n = _tokens(p, p.height_px)
    d.step("latent_frames", "Latent frames (the VAE keeps frame 0, then packs the rest by the stride)", lf, "1",
           noun="latent frames", formula="1 + ceil(({frames} − 1) / {vae_temporal_stride})")
    d.step("latent_height", "Latent height", lh, "1", noun="cells", formula="ceil({height_px} / {vae_spatial_stride})")
    d.step("latent_width", "Latent width", lw, "1", noun="cells", formula="ceil({width_px} / {vae_spatial_stride})")
    d.step("patch_cells", "Latent cells one token covers (a square patch)", p.patch_size ** 2, "1",
           noun="cell" if p.patch_size == 1 else "cells", formula="{patch_size} × {patch_size}")
    d.step("tokens_per_latent_frame", "Tokens per latent frame (patches of patch × patch cells)", per_frame, "1",
           noun="tokens", formula="ceil({latent_height} / {patch_size}) × ceil({latent_width} / {patch_size})")
    d.step("tokens_per_pass", "Tokens the DiT sees in every pass", n, "1", noun="tokens",
           formula="{latent_frames} × {tokens_per_latent_frame}")
    d.step("pixels_per_token", "Output pixels one token stands for", p.frames * p.height_px * width_px(p, p.height_px) / n,
           "1", noun="pixels", formula="{frames} × {height_px} × {width_px} / {tokens_per_pass}")

    # --- FLOP per pass and per request ---
    params = p.dit_params_b * 1e9
    w = d.step("dit_width", "DiT width implied by size and depth (12 × width² a block)", dit_width(p), "1",
               noun="", formula="sqrt({dit_params_b} billion / (12 × {dit_layers}))")
    lin = d.step("linear_flops_per_pass", "Matmuls through the weights: 2 FLOP per parameter per token",
                 2 * params * n, "FLOP", formula="2 FLOP × {dit_params_b} billion × {tokens_per_pass}")
    attn = d.step("attention_flops_per_pass", "Full attention: every token against every token, every block",
                  ATTN_FLOPS_PER_TOKEN_PAIR_PER_WIDTH * p.dit_layers * w * n * n, "FLOP",
                  formula="4 FLOP × {dit_layers} × {dit_width} × {tokens_per_pass}²")
    fpp = d.step("flops_per_pass", "FLOP per pass", lin + attn, "FLOP",
                 formula="{linear_flops_per_pass} + {attention_flops_per_pass}")
    d.step("attention_share", "Attention's share of the FLOP", attn / fpp, "1", percent=True,
           formula="{attention_flops_per_pass} / {flops_per_pass}")
    d.step("passes_per_step", "DiT passes per denoising step", 2 if p.classifier_free_guidance else 1, "1",
           noun="passes" if p.classifier_free_guidance else "pass", kind="lookup",
           note="2 with classifier-free guidance (with and without the prompt), 1 without.")
    passes = d.step("passes_per_request", "DiT passes per request", _passes(p), "1", noun="passes",
                    formula="{denoising_steps} × " + ("2 (guidance, with and without the prompt)"
                                                      if p.classifier_free_guidance else "1 (no guidance)"))
    fpr = d.step("flops_per_request", "FLOP per request", passes * fpp, "FLOP",
                 formula="{passes_per_request} × {flops_per_pass}")

    # --- time on the job's GPUs ---
    peak = d.step("gpu_peak_flops", f"{hw.name} dense {p.compute_precision} peak", hw.peak(p.compute_precision),
                  "FLOP/s")
    eff = d.step("effective_flops_per_gpu", "Sustained per GPU at the DiT MFU", peak * p.dit_mfu, "FLOP/s",
                 formula="{gpu_peak_flops} × {dit_mfu}")
    gsec = d.step("gpu_seconds_per_request", "GPU-seconds per request", fpr / eff, "s",
                  formula="{flops_per_request} / {effective_flops_per_gpu}")
    wall = d.step("wall_time_s", "Wall time on the job's GPUs", gsec / p.sp_degree, "s",
                  formula="{gpu_seconds_per_request} / {sp_degree}")
    d.step("meets_wait_target", "Within the acceptable wait?", "yes" if wall <= p.wait_target_s else "no",
           formula="{wall_time_s} ≤ {wait_target_s}", kind="verdict")
    d.step("gpu_seconds_per_video_second", "GPU-seconds per second of video", gsec / (p.frames / p.fps), "1",
           noun="GPU-s", formula="{gpu_seconds_per_request} / {video_seconds}")
    # The same request at 480p and 720p, everything else unchanged: where "about a minute" holds.
    for h in (480, 720):
        n_h = d.step(f"tokens_per_pass_{h}p", f"Tokens per pass at {h}p", _tokens(p, h)[4], "1", noun="tokens",
                     formula=f"{{latent_frames}} × ceil({h} / ({{vae_spatial_stride}} × {{patch_size}})) × "
                             f"ceil({h} × {aspect_formula(p.aspect)} / ({{vae_spatial_stride}} × {{patch_size}}))")
        d.step(f"flops_per_pass_{h}p", f"FLOP per pass at {h}p", _flops_per_pass(p, n_h), "FLOP",
               formula=f"2 FLOP × {{dit_params_b}} billion × {{tokens_per_pass_{h}p}} + "
                       f"4 FLOP × {{dit_layers}} × {{dit_width}} × {{tokens_per_pass_{h}p}}²")
        d.step(f"wall_time_{h}p_s", f"Wall time at {h}p, everything else the same", _wall_time_s(p, h, peak), "s",
               formula=f"{{passes_per_request}} × {{flops_per_pass_{h}p}} / "
                       "({effective_flops_per_gpu} × {sp_degree})")
    d.step("wall_ratio_720p_over_480p", "720p over 480p", d.value("wall_time_720p_s") / d.value("wall_time_480p_s"),
           "1", noun="×", formula="{wall_time_720p_s} / {wall_time_480p_s}")
    tallest = _tallest_within(p, p.wait_target_s, peak)
    d.step("max_height_within_wait", "Tallest resolution that still finishes within the acceptable wait", tallest,
           "1", noun="px", formula="the largest height, in 16-px steps, whose wall time is at most {wait_target_s}",
           kind="search")
    _record_xdit_anchor(d, p, wall)
    # --- the VAE decode: one GPU, after the last step, while the group waits ---
    pix = d.step("output_pixel_frames", "Output pixels over every frame", p.frames * p.height_px * width_px(p, p.height_px), "1",
                 noun="pixel-frames", formula="{frames} × {height_px} × {width_px}")
    vae_flops = d.step("vae_decode_flops", "VAE decode FLOP", pix * p.vae_decode_flops_per_pixel, "FLOP",
                       formula="{output_pixel_frames} × {vae_decode_flops_per_pixel}")
    vae_eff = d.step("vae_effective_flops", "Sustained by one GPU at the VAE MFU", peak * p.vae_mfu, "FLOP/s",
                     formula="{gpu_peak_flops} × {vae_mfu}")
    vae_s = d.step("vae_decode_s", "VAE decode on one GPU (serial: after the last step)",
                   vae_flops / vae_eff, "s", formula="{vae_decode_flops} / {vae_effective_flops}")
    d.step("vae_group_gpu_seconds", "GPU-seconds the group spends on it (the others wait)", vae_s * p.sp_degree, "s",
           formula="{vae_decode_s} × {sp_degree}")
    d.step("vae_share_of_job", "The VAE decode's share of the job's time", vae_s / (wall + vae_s), "1", percent=True,
           formula="{vae_decode_s} / ({wall_time_s} + {vae_decode_s})")
    total = d.step("request_time_s", "The user's wait, DiT plus VAE decode (queue not counted)", wall + vae_s, "s",
                   formula="{wall_time_s} + {vae_decode_s}")
    d.step("meets_wait_target_with_vae", "Within the acceptable wait, VAE included?",
           "yes" if total <= p.wait_target_s else "no", formula="{request_time_s} ≤ {wait_target_s}", kind="verdict")
    d.step("vae_untiled_bytes", "Peak memory of an untiled VAE decode", pix * p.vae_bytes_per_pixel_frame, "B",
           formula="{output_pixel_frames} × {vae_bytes_per_pixel_frame}")
    left = p.usable_hbm_fraction * hw.hbm_bytes - params * bytes_per_element(p.weight_precision)
    d.step("vae_untiled_fits", "Does the untiled decode fit beside the DiT weights?",
           "yes" if pix * p.vae_bytes_per_pixel_frame <= left else "no",
           formula=f"{{vae_untiled_bytes}} ≤ {left / 1e9:,.1f} GB of HBM left beside the weights", kind="verdict")
    w720 = width_px(p, 720)
    d.step("vae_decode_720p_s", "VAE decode at 720p, everything else the same",
           p.frames * 720 * w720 * p.vae_decode_flops_per_pixel / vae_eff, "s",
           formula=f"{{frames}} × 720 × 720 × {aspect_formula(p.aspect)} × {{vae_decode_flops_per_pixel}} / "
                   "{vae_effective_flops}")
    distilled = d.step("distilled_wall_s", "DiT wall time distilled to 4 passes (4 steps, guidance distilled)",
                       wall * 4 / passes, "s", formula="{wall_time_s} × 4 / {passes_per_request}")
    d.step("vae_share_distilled", "The VAE decode's share once the DiT is distilled", vae_s / (distilled + vae_s),
           "1", percent=True, formula="{vae_decode_s} / ({distilled_wall_s} + {vae_decode_s})")
    d.step("vae_untiled_720p_bytes", "Peak memory of an untiled VAE decode at 720p",
           p.frames * 720 * w720 * p.vae_bytes_per_pixel_frame, "B",
           formula=f"{{frames}} × 720 × 720 × {aspect_formula(p.aspect)} × {{vae_bytes_per_pixel_frame}}")
    d.step("vae_untiled_720p_fits", "Would the untiled 720p decode fit beside the weights?",
           "yes" if p.frames * 720 * w720 * p.vae_bytes_per_pixel_frame <= left else "no",
           formula=f"{{vae_untiled_720p_bytes}} ≤ {left / 1e9:,.1f} GB of HBM left beside the weights", kind="verdict")
    fits720 = p.frames * 720 * w720 * p.vae_bytes_per_pixel_frame <= left
    d.step("vae_weight_clause", "What the decode weighs in this scenario",
           "memory-heavy: untiled at 720p it does not fit beside the weights" if not fits720
           else "the bottleneck once the DiT is distilled" if vae_s / (distilled + vae_s) >= 0.25
           else "small for this clip, but it grows with every output pixel and no batch shares it", "1",
           formula="{vae_untiled_720p_fits} fits, {vae_share_distilled} of a distilled job", kind="verdict")
    d.step("step_time_s", "One denoising step (both guidance passes): the progress tick", wall / p.denoising_steps,
           "s", formula="{wall_time_s} / {denoising_steps}")
    d.step("progress_increment", "Progress per step", 1 / p.denoising_steps, "1", percent=True,
           formula="1 / {denoising_steps}")

    # --- memory per GPU ---
    bpp = bytes_per_element(p.weight_precision)
    wb = d.step("weight_bytes", f"DiT weights in {p.weight_precision}, on every GPU of the job", params * bpp, "B",
                formula=f"{{dit_params_b}} billion × {bpp:g} B")
    d.step("gpu_memory_bytes", f"{hw.name} HBM", hw.hbm_bytes, "B")
    d.step("gpu_hbm_Bps", f"{hw.name} HBM bandwidth", hw.hbm_Bps, "B/s")
    d.step("weight_share_of_hbm", "Weights as a share of one GPU's HBM", wb / hw.hbm_bytes, "1", percent=True,
           formula="{weight_bytes} / {gpu_memory_bytes}")
    d.step("hbm_left_for_activations_bytes", "HBM left per GPU for activations once the weights are in",
           p.usable_hbm_fraction * hw.hbm_bytes - wb, "B",
           formula="{usable_hbm_fraction} × {gpu_memory_bytes} − {weight_bytes}",
           note="What the VAE, the text encoder's outputs and the activations of a pass must fit in.")
    d.step("hidden_state_bytes", "One activation tensor of the whole clip (tokens × width, bf16)",
           n * w * ACT_BYTES, "B", formula="{tokens_per_pass} × {dit_width} × 2 B")
    d.step("dit_heads", "Attention heads (the width over a head dimension of 128)", w / HEAD_DIM, "1",
           noun="heads", formula="{dit_width} / 128", note="An assumption: heads of 128, as HunyuanVideo and Wan 2.1.")
    d.step("attention_scores_bytes_per_layer", "Attention scores of one block if written out (all heads, bf16)",
           n * n * (w / HEAD_DIM) * ACT_BYTES, "B", formula="{tokens_per_pass}² × ({dit_width} / 128 heads) × 2 B")
    d.step("latent_bytes", "The latent carried between steps (16 channels, fp32)",
           lf * lh * lw * LATENT_CHANNELS * LATENT_BYTES_PER_VALUE, "B",
           formula="{latent_frames} × {latent_height} × {latent_width} × 16 × 4 B")

    # --- why batching buys nothing ---
    local = d.step("tokens_per_gpu", "Tokens each GPU of the job holds", n / p.sp_degree, "1", noun="tokens",
                   formula="{tokens_per_pass} / {sp_degree}")
    fpg = d.step("flops_per_gpu_per_pass", "FLOP per GPU per pass", fpp / p.sp_degree, "FLOP",
                 formula="{flops_per_pass} / {sp_degree}")
    act = d.step("activation_bytes_per_gpu_per_pass", "Activation bytes each GPU moves per pass",
                 p.dit_layers * ACT_VALUES_PER_TOKEN_PER_LAYER_PER_WIDTH * w * local * ACT_BYTES, "B",
                 formula="{dit_layers} × 20 × {dit_width} × {tokens_per_gpu} × 2 B")
    ai = d.step("arithmetic_intensity_batch1", "Arithmetic intensity of one video (batch 1)", fpg / (wb + act),
                "FLOP/B", formula="{flops_per_gpu_per_pass} / ({weight_bytes} + {activation_bytes_per_gpu_per_pass})")
    ridge = d.step("gpu_ridge", f"{hw.name} ridge point ({p.compute_precision} peak / HBM bandwidth)", peak / hw.hbm_Bps,
                   "FLOP/B",
                   formula="{gpu_peak_flops} / {gpu_hbm_Bps}")
    d.step("intensity_over_ridge", "Intensity over the ridge", ai / ridge, "1", noun="×",
           formula="{arithmetic_intensity_batch1} / {gpu_ridge}")
    wread = d.step("weight_read_per_pass_s", "Reading the weights once per pass, per GPU", wb / hw.hbm_Bps, "s",
                   formula="{weight_bytes} / {gpu_hbm_Bps}")
    pass_s = d.step("pass_compute_s", "One pass's compute per GPU", fpg / eff, "s",
                    formula="{flops_per_gpu_per_pass} / {effective_flops_per_gpu}")
    d.step("batching_max_saving", "Most that sharing the weight read across a batch could save", wread / pass_s,
           "1", percent=True, formula="{weight_read_per_pass_s} / {pass_compute_s}")

    # --- queue, progress and the fleet ---
    # A job holds its whole group through the DiT and the VAE decode (the others wait on the decode),
    # so the fleet, its rate and its cost are sized on the held time, not the DiT's alone.
    held = total
    held_gsec = d.step("held_gpu_seconds_per_request", "GPU-seconds a job holds (the group, DiT plus VAE decode)",
                       held * p.sp_degree, "s", formula="{request_time_s} × {sp_degree}")
    in_service = d.step("jobs_in_service", "Jobs in service at once (Little's law, on the held time)",
                        p.arrival_rate * held, "1", noun="jobs", formula="{arrival_rate} × {request_time_s}")
    groups_cont = d.step("gpu_groups_continuous", "GPU groups the load needs at the target utilization, before "
                         "rounding up", in_service / p.target_utilization, "1", noun="groups",
                         formula="{jobs_in_service} / {target_utilization}")
    groups = d.step("gpu_groups", "GPU groups at the target utilization",
                    max(1, math.ceil(groups_cont - 1e-9)), "1", noun="groups",
                    formula="max(1, ceil({gpu_groups_continuous}))")
    d.step("gpus_for_load", "GPUs for the load", groups * p.sp_degree, "1", noun="GPUs",
           formula="{gpu_groups} × {sp_degree}")
    d.step("capacity_jobs_per_s", "Jobs per second the groups can start, all busy", groups / held, "1/s",
           noun="jobs", formula="{gpu_groups} / {request_time_s}")
    d.step("wait_per_queued_job_s", "Wait one queued job adds for those behind it", held / groups, "s",
           formula="{request_time_s} / {gpu_groups}")
    d.step("busy_gpus", "GPUs held at any moment (held GPU-seconds arriving per second)", p.arrival_rate * held_gsec,
           "1", noun="GPUs", formula="{arrival_rate} × {held_gpu_seconds_per_request}")
    wait_probability = queue.erlang_c_wait_probability(groups, in_service)
    d.step("erlang_b_blocking", "Erlang B of that load on the groups (the share a loss system would turn away)",
           erlang_b(groups, in_service, wait_probability), "1",
           formula="B(k) = A × B(k − 1) / (k + A × B(k − 1)) from B(0) = 1, up to k = {gpu_groups}, "
                   "with A = {jobs_in_service}", kind="lookup")
    p_wait = d.step("queue_wait_probability", "Share of jobs that queue (M/M/c over groups)",
                    wait_probability, "1", percent=True,
                    formula="{gpu_groups} × {erlang_b_blocking} / ({gpu_groups} − {jobs_in_service} × "
                            "(1 − {erlang_b_blocking}))" if in_service < groups else "1 (the load fills every group)")
    d.step("mean_queue_wait_s", "Mean wait in the queue", queue.erlang_c_mean_wait_s(groups, p.arrival_rate, 1 / held),
           "s", formula="{queue_wait_probability} / ({gpu_groups} / {request_time_s} − {arrival_rate})")
    d.step("progress_events_per_s", "Progress updates per second, fleet-wide (one per job per step)",
           p.arrival_rate * wall / (wall / p.denoising_steps), "1/s", noun="updates",
           formula="{arrival_rate} × {wall_time_s} / {step_time_s}")

    # --- where the cost goes ---
    cost = d.step("cost_per_request_usd", "GPU cost of one video at 100% busy (the group's held time)",
                  held_gsec / 3600 * p.gpu_hour_usd, "USD", formula="{held_gpu_seconds_per_request} × {gpu_hour_usd}")
    dit_cost = gsec / 3600 * p.gpu_hour_usd
    d.step("cost_per_request_at_util_usd", "GPU cost of one video at the target utilization",
           cost / p.target_utilization, "USD", formula="{cost_per_request_usd} / {target_utilization}")
    d.step("attention_cost_usd", "Of which attention", dit_cost * attn / fpp, "USD",
           formula="{gpu_seconds_per_request} × {gpu_hour_usd} × {attention_share}")
    d.step("guidance_cost_usd", "Of which the unguided pass of classifier-free guidance",
           dit_cost / 2 if p.classifier_free_guidance else 0.0, "USD",
           formula="{gpu_seconds_per_request} × {gpu_hour_usd} / 2" if p.classifier_free_guidance
           else "0 USD (guidance off)")
    d.step("fleet_cost_per_hour_usd", "Fleet cost per hour", groups * p.sp_degree * p.gpu_hour_usd, "USD",
           formula="{gpus_for_load} × {gpu_hour_usd} × 1 h")
    return d
