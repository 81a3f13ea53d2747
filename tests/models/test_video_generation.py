"""video-generation: the seed's forty denoising passes worked by hand from published figures, a
hand-worked variant, the 480p/720p claim, and properties that say which way each number moves."""

import math

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError

from models.serving.video_generation import Params, solve

# Published figures, typed here on purpose so the test does not lean on the code under test.
H100_BF16 = 989e12  # dense, H100 SXM datasheet (1,979 with sparsity)
H100_HBM = 3.35e12
H100_MEM = 80e9
B200_BF16 = 2250e12  # HGX B200: 36 PFLOPS sparse / 8 GPUs / 2


def _by_hand(*, frames, height, width, t_stride, s_stride, patch, params, layers, steps, cfg, peak, mfu, sp):
    latent_frames = 1 + math.ceil((frames - 1) / t_stride)
    per_frame = math.ceil(math.ceil(height / s_stride) / patch) * math.ceil(math.ceil(width / s_stride) / patch)
    n = latent_frames * per_frame
    width_model = math.sqrt(params / (12 * layers))
    per_pass = 2 * params * n + 4 * layers * width_model * n * n
    per_request = steps * (2 if cfg else 1) * per_pass
    gpu_s = per_request / (peak * mfu)
    return n, width_model, per_pass, per_request, gpu_s, gpu_s / sp


def test_seed_scenario_forty_passes_about_a_minute():
    d = solve(Params())
    # 81 frames -> 1 + 80/4 = 21 latent frames; 480 x 853.3 -> 60 x 107 cells -> 30 x 54 patches
    n, w, per_pass, per_req, gpu_s, wall = _by_hand(
        frames=81, height=480, width=480 * 16 / 9, t_stride=4, s_stride=8, patch=2, params=13e9, layers=40,
        steps=40, cfg=True, peak=H100_BF16, mfu=0.4, sp=8)
    assert n == 21 * 30 * 54 == 34_020
    assert d.value("latent_frames") == 21
    assert d.value("tokens_per_pass") == n
    assert d.value("dit_width") == pytest.approx(w) == pytest.approx(5204, rel=1e-3)
    # "40 denoising passes", doubled by classifier-free guidance
    assert d.value("passes_per_request") == 80
    assert d.value("linear_flops_per_pass") == pytest.approx(2 * 13e9 * 34_020)
    assert d.value("attention_flops_per_pass") == pytest.approx(4 * 40 * w * 34_020**2)
    assert d.value("flops_per_pass") == pytest.approx(per_pass) == pytest.approx(1.848e15, rel=1e-3)
    assert d.value("flops_per_request") == pytest.approx(per_req) == pytest.approx(1.479e17, rel=1e-3)
    assert d.value("gpu_seconds_per_request") == pytest.approx(gpu_s) == pytest.approx(373.8, rel=1e-3)
    # "the user waits about a minute": 373.8 GPU-s over 8 GPUs
    assert d.value("wall_time_s") == pytest.approx(wall) == pytest.approx(46.72, rel=1e-3)
    assert 30 < d.value("wall_time_s") < 90
    assert d.value("meets_wait_target") == "yes"


def test_about_a_minute_holds_at_480p_not_720p():
    d = solve(Params())
    # 720p: 1280 x 720 -> 45 x 80 tokens a latent frame, 21 latent frames
    n720, *_, wall720 = _by_hand(
        frames=81, height=720, width=1280, t_stride=4, s_stride=8, patch=2, params=13e9, layers=40,
        steps=40, cfg=True, peak=H100_BF16, mfu=0.4, sp=8)
    assert n720 == 21 * 45 * 80 == 75_600
    assert d.value("tokens_per_pass_720p") == n720
    assert d.value("wall_time_720p_s") == pytest.approx(wall720) == pytest.approx(170.0, rel=1e-3)
    assert d.value("wall_time_480p_s") == pytest.approx(d.value("wall_time_s"))
    assert d.value("wall_time_720p_s") > 2 * 60  # nearly three minutes, not one
    # more than the 2.25x pixel ratio, because attention is quadratic in tokens
    assert d.value("wall_ratio_720p_over_480p") > 2.25 * 1.5
    # the knob itself agrees with the fixed 720p step
    assert solve(Params(height_px=720)).value("wall_time_s") == pytest.approx(wall720)
    # tallest height (16-px steps) within 60 s: 512 fits, 528 does not
    assert d.value("max_height_within_wait") == 512
    assert solve(Params(height_px=512)).value("wall_time_s") <= 60 < solve(Params(height_px=528)).value("wall_time_s")


def test_memory_and_batching_arithmetic():
    d = solve(Params())
    w = math.sqrt(13e9 / 480)
    assert d.value("weight_bytes") == pytest.approx(26e9)
    assert d.value("weight_share_of_hbm") == pytest.approx(26e9 / H100_MEM)
    assert d.value("attention_scores_bytes_per_layer") == pytest.approx(34_020**2 * (w / 128) * 2)
    assert d.value("attention_scores_bytes_per_layer") > H100_MEM  # why fused attention is mandatory
    assert d.value("latent_bytes") == pytest.approx(21 * 60 * 107 * 16 * 4)
    per_gpu = d.value("flops_per_pass") / 8
    act = 40 * 20 * w * (34_020 / 8) * 2
    ai = per_gpu / (26e9 + act)
    assert d.value("arithmetic_intensity_batch1") == pytest.approx(ai) == pytest.approx(3762, rel=1e-3)
    ridge = H100_BF16 / H100_HBM  # ~295 FLOP/B
    assert d.value("gpu_ridge") == pytest.approx(ridge)
    assert d.value("intensity_over_ridge") == pytest.approx(ai / ridge)
    assert ai / ridge > 10
    # sharing the 26 GB weight read saves at most 7.76 ms of a 584 ms pass
    assert d.value("batching_max_saving") == pytest.approx((26e9 / H100_HBM) / (per_gpu / (H100_BF16 * 0.4)))
    assert d.value("batching_max_saving") < 0.02


def test_queue_progress_and_cost():
    d = solve(Params())
    wall = d.value("wall_time_s")
    # the group is held through the DiT and the VAE decode it waits on
    held = wall + d.value("vae_decode_s")
    assert d.value("request_time_s") == pytest.approx(held)
    assert d.value("held_gpu_seconds_per_request") == pytest.approx(held * 8)
    assert d.value("jobs_in_service") == pytest.approx(0.5 * held)  # Little's law on the held time
    groups = math.ceil(0.5 * held / 0.7)
    assert d.value("gpu_groups") == groups
    assert d.value("gpus_for_load") == groups * 8
    assert d.value("busy_gpus") == pytest.approx(0.5 * held * 8)
    assert d.value("capacity_jobs_per_s") == pytest.approx(groups / held)
    assert d.value("progress_increment") == pytest.approx(1 / 40)
    assert d.value("step_time_s") == pytest.approx(wall / 40)
    assert d.value("progress_events_per_s") == pytest.approx(0.5 * 40)  # rate x steps, whatever the wall time
    assert d.value("cost_per_request_usd") == pytest.approx(held * 8 / 3600 * 2.5)
    # guidance's unguided half and attention are shares of the DiT's 373.8 GPU-s, not of the decode
    assert d.value("guidance_cost_usd") == pytest.approx(373.8 / 3600 * 2.5 / 2, rel=1e-3)
    assert d.value("attention_cost_usd") == pytest.approx(373.8 / 3600 * 2.5 * d.value("attention_share"), rel=1e-3)
    assert 0 < d.value("queue_wait_probability") < 1
    assert d.value("mean_queue_wait_s") < held
    # heads of 128 across the width, and 2 x 2 patches cover 4 cells
    assert d.value("dit_heads") == pytest.approx(math.sqrt(13e9 / 480) / 128)
    assert d.value("patch_cells") == 4


def test_variant_small_dit_square_720_no_guidance_on_b200():
    p = Params(dit_params_b=5, dit_layers=30, frames=121, height_px=720, aspect="1:1", denoising_steps=50,
               classifier_free_guidance=False, gpu="B200", sp_degree=4, dit_mfu=0.5, arrival_rate=2,
               target_utilization=0.8)
    d = solve(p)
    # 121 frames -> 1 + 120/4 = 31 latent frames; 720 x 720 -> 90 x 90 cells -> 45 x 45 = 2,025 tokens each
    n = 31 * 2025
    w = math.sqrt(5e9 / 360)
    per_pass = 2 * 5e9 * n + 4 * 30 * w * n * n
    gpu_s = 50 * per_pass / (B200_BF16 * 0.5)
    assert d.value("tokens_per_pass") == n == 62_775
    assert d.value("passes_per_request") == 50
    assert d.value("flops_per_pass") == pytest.approx(per_pass)
    assert d.value("gpu_seconds_per_request") == pytest.approx(gpu_s)
    assert d.value("wall_time_s") == pytest.approx(gpu_s / 4)
    held = gpu_s / 4 + d.value("vae_decode_s")
    assert d.value("jobs_in_service") == pytest.approx(2 * held)
    assert d.value("gpus_for_load") == 4 * math.ceil(2 * held / 0.8)
    assert d.value("guidance_cost_usd") == 0


def test_worked_problem_wan_2_1_t2v_14b_720p_on_eight_h100s():
    # Wan 2.1 (github.com/Wan-AI/Wan2.1, arXiv 2503.20314): T2V-14B, 40 blocks of width 5,120 (40 heads of
    # 128), a VAE of stride 4 x 8 x 8 with 16 latent channels, patches of 1 x 2 x 2; 81 frames at 1280 x 720
    # make the latent [16, 21, 90, 160] and a sequence of 75,600 tokens (its 720p seq_len); T2V samples 50
    # steps with classifier-free guidance, in bf16, multi-GPU with Ulysses sequence parallelism over 8.
    p = Params(dit_params_b=14, dit_layers=40, frames=81, height_px=720, aspect="16:9", vae_spatial_stride=8,
               vae_temporal_stride=4, patch_size=2, denoising_steps=50, classifier_free_guidance=True,
               gpu="H100 SXM", weight_precision="bf16", compute_precision="bf16", sp_degree=8)
    d = solve(p)
    assert (d.value("latent_frames"), d.value("latent_height"), d.value("latent_width")) == (21, 90, 160)
    assert d.value("tokens_per_pass") == 21 * 45 * 80 == 75_600
    # FLOP per pass with the source's own width: 2 x 14e9 x 75,600 + 4 x 40 x 5,120 x 75,600^2 = 6.8 PFLOP.
    # The page infers the width from 12 x w^2 per block (5,401), so its attention runs 5.5% high.
    n = 75_600
    source_pass = 2 * 14e9 * n + 4 * 40 * 5120 * n * n
    assert d.value("dit_width") == pytest.approx(math.sqrt(14e9 / (12 * 40)))
    assert d.value("flops_per_pass") == pytest.approx(source_pass, rel=0.05)
    # 100 passes on 8 H100s at 40% of 989 TFLOP/s: about 4 minutes of wall time, 35 GPU-minutes, far
    # past "about a minute": why Wan's own 720p runs take minutes even on eight GPUs
    assert d.value("passes_per_request") == 100
    wall = 100 * d.value("flops_per_pass") / (989e12 * 0.4) / 8
    assert d.value("wall_time_s") == pytest.approx(wall)
    assert 100 * source_pass / (989e12 * 0.4) / 8 == pytest.approx(d.value("wall_time_s"), rel=0.05)
    assert d.value("meets_wait_target") == "no"


def test_the_engine_s_accelerators_and_formats_work_or_are_refused():
    assert solve(Params(gpu="GB200 (NVL72)", compute_precision="fp8")).value("gpu_peak_flops") == 5000e12
    with pytest.raises(ValidationError, match="no dense fp8 rate"):
        Params(gpu="TPU v5e", compute_precision="fp8", dit_params_b=5)
    d = solve(Params(gpu="Custom", custom_hbm_GB=96, custom_hbm_TBps=3, custom_bf16_TFLOPs=400))
    assert d.value("gpu_peak_flops") == 400e12 and d.value("gpu_hbm_Bps") == 3e12
    # weight-only fp8: half the bytes, the bf16 peak
    w8 = solve(Params(weight_precision="fp8"))
    assert w8.value("weight_bytes") == 13e9 and w8.value("gpu_peak_flops") == 989e12


def test_a_dit_too_big_for_one_gpu_is_refused_in_plain_words():
    with pytest.raises(ValidationError, match="more than one H100 SXM holds"):
        Params(dit_params_b=50)
    Params(dit_params_b=50, weight_precision="fp8")  # 50 GB fits


heights = st.integers(9, 67).map(lambda k: 16 * k)  # 144 .. 1072 px


@settings(max_examples=80, deadline=None)
@given(h1=heights, h2=heights, frames=st.integers(4, 60).map(lambda k: 4 * k + 1))
def test_taller_never_faster_and_attention_share_grows(h1, h2, frames):
    lo, hi = sorted((h1, h2))
    d_lo, d_hi = solve(Params(height_px=lo, frames=frames)), solve(Params(height_px=hi, frames=frames))
    assert d_hi.value("tokens_per_pass") >= d_lo.value("tokens_per_pass")
    assert d_hi.value("wall_time_s") >= d_lo.value("wall_time_s")
    assert d_hi.value("attention_share") >= d_lo.value("attention_share") - 1e-11


@settings(max_examples=60, deadline=None)
@given(f1=st.integers(17, 481), f2=st.integers(17, 481))
def test_longer_clips_never_need_fewer_gpus(f1, f2):
    lo, hi = sorted((f1, f2))
    assert solve(Params(frames=hi)).value("gpus_for_load") >= solve(Params(frames=lo)).value("gpus_for_load")


@settings(max_examples=60, deadline=None)
@given(sp=st.integers(1, 32), mfu=st.floats(0.1, 0.8))
def test_more_gpus_per_job_cut_wall_time_not_gpu_seconds(sp, mfu):
    one = solve(Params(sp_degree=1, dit_mfu=mfu))
    many = solve(Params(sp_degree=sp, dit_mfu=mfu))
    assert many.value("gpu_seconds_per_request") == pytest.approx(one.value("gpu_seconds_per_request"))
    assert many.value("wall_time_s") == pytest.approx(one.value("wall_time_s") / sp)


@settings(max_examples=60, deadline=None)
@given(steps=st.integers(1, 100))
def test_guidance_doubles_the_work(steps):
    on = solve(Params(denoising_steps=steps, classifier_free_guidance=True))
    off = solve(Params(denoising_steps=steps, classifier_free_guidance=False))
    assert on.value("flops_per_request") == pytest.approx(2 * off.value("flops_per_request"))


@settings(max_examples=80, deadline=None)
@given(params=st.floats(5, 30), layers=st.integers(30, 60), height=st.integers(23, 45).map(lambda k: 16 * k),
       sp=st.integers(4, 8), frames=st.integers(12, 40).map(lambda k: 4 * k + 1),
       gpu=st.sampled_from(["H100 SXM", "H200", "B200", "MI300X"]))
def test_one_video_is_far_above_the_ridge_across_the_draw(params, layers, height, sp, frames, gpu):
    d = solve(Params(dit_params_b=params, dit_layers=layers, height_px=height, sp_degree=sp, frames=frames, gpu=gpu))
    assert d.value("intensity_over_ridge") > 2
    assert d.value("batching_max_saving") < 0.15


@settings(max_examples=60, deadline=None)
@given(rate=st.floats(0.01, 20), util=st.floats(0.3, 0.95))
def test_fleet_covers_the_busy_gpus_with_headroom(rate, util):
    d = solve(Params(arrival_rate=rate, target_utilization=util))
    assert d.value("jobs_in_service") == pytest.approx(rate * d.value("request_time_s"))
    assert d.value("gpus_for_load") >= d.value("busy_gpus") / util - 1e-6


def test_hbm_left_for_activations_by_hand():
    # A 13B DiT in bf16 is 26 GB on each H100 (80 GB, 90% usable): 72 - 26 = 46 GB for the rest.
    d = solve(Params())
    assert d.value("hbm_left_for_activations_bytes") == pytest.approx(0.9 * 80e9 - 13e9 * 2)
    # fp8 weights halve the 26 GB; the usable share moves the room one for one
    assert solve(Params(weight_precision="fp8", usable_hbm_fraction=0.8)).value(
        "hbm_left_for_activations_bytes") == pytest.approx(0.8 * 80e9 - 13e9 * 1)


def test_seed_the_vae_decode_is_serial_and_heavy_at_720p():
    """40 steps x 2 guidance passes = 80. The VAE decode: 81 frames x 480 x 853.3 px = 33.2 M
    pixel-frames x 10 MFLOP = 332 TFLOP, at 10% of 989 TFLOP/s on one GPU: 3.36 s while the other
    seven wait. Untiled at 750 B a pixel-frame: 24.9 GB here, 81 x 720 x 1,280 x 750 B = 56 GB at
    720p, more than the 0.9 x 80 GB - 26 GB = 46 GB an H100 has beside 13 B bf16 weights."""
    d = solve(Params())
    assert d.value("passes_per_request") == 40 * 2
    pix = 81 * 480 * 480 * 16 / 9
    assert d.value("output_pixel_frames") == pytest.approx(pix)
    vae_s = pix * 1e7 / (989e12 * 0.1)
    assert d.value("vae_decode_s") == pytest.approx(vae_s) == pytest.approx(3.36, abs=0.01)
    assert d.value("vae_group_gpu_seconds") == pytest.approx(8 * vae_s)
    assert d.value("request_time_s") == pytest.approx(d.value("wall_time_s") + vae_s)
    assert d.value("vae_untiled_bytes") == pytest.approx(pix * 750)
    assert d.value("vae_untiled_720p_bytes") == pytest.approx(81 * 720 * 1280 * 750) == pytest.approx(56e9, rel=0.01)
    assert 81 * 720 * 1280 * 750 > 0.9 * 80e9 - 13e9 * 2
    assert d.value("vae_untiled_720p_fits") == "no" and d.value("vae_untiled_fits") == "yes"
    # distilled to 4 passes the DiT takes a twentieth of its time and the VAE is most of the job
    distilled = d.value("wall_time_s") * 4 / 80
    assert d.value("vae_share_distilled") == pytest.approx(vae_s / (distilled + vae_s))
    assert d.value("vae_share_distilled") > 0.5


def test_xdit_anchor_worked_by_hand():
    from models.serving.video_generation import Params, solve

    d = solve(Params())
    # 1280 x 720, 129 frames: 1 + ceil(128 / 4) = 33 latent frames of (720 / 16) x (1280 / 16) = 45 x 80 tokens.
    n = 33 * 45 * 80
    assert d.value("xdit_tokens_per_pass") == n == 118_800
    # The page's 13B of 40 blocks of 12 w^2: w = sqrt(13e9 / 480) = 5,204.2; 50 passes of
    # 2 x 13e9 x n + 4 x 40 x w x n^2.
    w = (13e9 / 480) ** 0.5
    flops = 50 * (2 * 13e9 * n + 4 * 40 * w * n * n)
    assert d.value("xdit_flops_per_request") == pytest.approx(flops)
    assert flops == pytest.approx(7.42e17, rel=1e-3)
    # One H100 (989 TFLOP/s bf16) took 1,904.08 s: 39.4% MFU. Eight took 337.58 s: 27.8% per GPU.
    assert d.value("xdit_one_gpu_mfu") == pytest.approx(flops / (1904.08 * 989e12))
    assert d.value("xdit_one_gpu_mfu") == pytest.approx(0.394, abs=0.001)
    assert d.value("xdit_gpus") == 8
    assert d.value("xdit_group_mfu") == pytest.approx(flops / (8 * 337.58 * 989e12))
    assert d.value("xdit_group_mfu") == pytest.approx(0.278, abs=0.001)
    assert d.value("xdit_scaling_clause").startswith("loses 29%")
    # The seed assumes 40%: its DiT time at the measured 27.8% is 40 / 27.8 times longer, past 60 s.
    assert d.value("wall_time_at_xdit_mfu_s") == pytest.approx(d.value("wall_time_s") * 0.40 / (flops / (8 * 337.58 * 989e12)))
    assert d.value("meets_wait_at_xdit_mfu") == "no"
    # Four GPUs per job read the four-GPU row (514.08 s); six read it too (the largest measured at or below).
    four = solve(Params(sp_degree=4))
    assert four.value("xdit_group_mfu") == pytest.approx(flops / (4 * 514.08 * 989e12))
    assert solve(Params(sp_degree=6)).value("xdit_gpus") == 4
    # Two GPUs ran slightly faster per GPU than one: no loss to report.
    assert solve(Params(sp_degree=2)).value("xdit_scaling_clause") == "keeps the one-GPU efficiency"


def test_vae_weight_clause_follows_the_scenario():
    from models.serving.video_generation import Params, solve

    # The seed: 55.99 GB untiled at 720p against 46 GB left beside the weights does not fit.
    assert solve(Params()).value("vae_weight_clause").startswith("memory-heavy")
    # A short narrow clip fits and stays a small share even distilled.
    small = solve(Params(frames=17, aspect="9:16", vae_bytes_per_pixel_frame=100))
    assert small.value("vae_untiled_720p_fits") == "yes"
    # Then the clause turns on the distilled share against a quarter.
    want = ("the bottleneck once the DiT is distilled" if small.value("vae_share_distilled") >= 0.25
            else "small for this clip, but it grows with every output pixel and no batch shares it")
    assert small.value("vae_weight_clause") == want
