"""checkpoint-storage: seed figures from the seed's own arithmetic, hand-worked variants, the
resharding overlap count against a brute-force enumeration, and properties that say which way
each number must move."""

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from models.registry import QUESTIONS
from models.training.checkpoint_storage import Params, max_source_shards, solve


def overlaps_by_enumeration(old: int, new: int) -> int:
    """Most old shards any new rank overlaps, by walking every rank and every old shard with
    exact fractions: the definition, with no algebra."""
    best = 0
    for j in range(new):
        lo, hi = Fraction(j, new), Fraction(j + 1, new)
        count = sum(1 for i in range(old) if max(lo, Fraction(i, old)) < min(hi, Fraction(i + 1, old)))
        best = max(best, count)
    return best


# Llama 3 70B counted by hand from its config.json: 80 layers of GQA attention (d 8192, 64 heads,
# 8 KV heads of 128) and a SwiGLU MLP of 28,672, plus untied 128,256-token embeddings.
L70_PARAMS = 80 * (8192 * 8192 * 2 + 2 * 8192 * 8 * 128 + 3 * 8192 * 28672) + 2 * 128256 * 8192  # 70.55B
# bf16 weights 2 + fp32 master 4 + Adam m 4 + v 4: what a resumable checkpoint stores (no gradients).
CKPT_GB = L70_PARAMS * 14 / 1e9  # 987.7 GB


def test_seed_figures_follow_the_seed_arithmetic():
    d = solve(Params())
    assert d.value("model_params") == L70_PARAMS
    assert d.value("checkpoint_bytes_per_param") == 14
    # "1,000 GPUs write 1 TB": the seed's round terabyte is a 70B model's 14 B/param state
    assert d.value("checkpoint_TB") == pytest.approx(CKPT_GB / 1000)
    assert d.value("checkpoint_TB") == pytest.approx(1.0, rel=0.015)
    # "a burst that must finish in 60 s": the seed's 1,000 GB / 60 s = 16.7 GB/s; this model's 16.5
    assert d.value("aggregate_write_GBps") == pytest.approx(CKPT_GB / 60)
    assert 1000 / 60 == pytest.approx(d.value("aggregate_write_GBps"), rel=0.015)
    # each of 1,000 GPUs: 16.5 GB/s / 1,000 = 16.5 MB/s, from a 0.99 GB share
    assert d.value("per_gpu_shard_GB") == pytest.approx(CKPT_GB / 1000)
    assert d.value("per_gpu_write_GBps") == pytest.approx(CKPT_GB / 60 / 1000)
    # "a 30x peak-to-average": every 30 minutes, a one-minute burst
    assert d.value("peak_to_average") == pytest.approx(30 * 60 / 60) == 30
    # drain at the average: the checkpoint every 1,800 s
    assert d.value("min_drain_GBps") == pytest.approx(CKPT_GB / 1800)
    assert d.value("aggregate_write_GBps") / d.value("min_drain_GBps") == pytest.approx(30)
    # "a 512-GPU checkpoint resumes on 256": each new rank takes two old shards' worth
    assert d.value("reshard_max_source_shards_per_rank") == 512 // 256 == 2
    assert d.value("reshard_bytes_per_rank_GB") == pytest.approx(CKPT_GB / 256)
    assert d.value("reshard_whole_file_read_GB") == pytest.approx(2 * CKPT_GB / 512)


def test_retention_by_hand():
    d = solve(Params())
    tb = CKPT_GB / 1000
    # 48 saves a day (1,440 / 30) of 0.99 TB
    assert d.value("checkpoints_per_day") == pytest.approx(48)
    assert d.value("volume_per_day_TB") == pytest.approx(48 * tb)
    # last 5 + one full-state milestone per day for 90 days = 95 checkpoints; everything = 48 x 90
    assert d.value("milestones_kept") == 90
    assert d.value("retained_TB") == pytest.approx((5 + 90) * tb)
    assert d.value("keep_everything_TB") == pytest.approx(4320 * tb)
    # weights-only milestones are the bf16 weights, 2 B/param: 70.55e9 x 2 = 141 GB each
    w = solve(Params(milestone_contents="weights only"))
    assert w.value("milestone_TB") == pytest.approx(L70_PARAMS * 2 / 1e12)
    assert w.value("retained_TB") == pytest.approx(5 * tb + 90 * L70_PARAMS * 2 / 1e12)


def test_training_state_conventions_change_the_checkpoint():
    # Megatron-LM's distributed-optimizer table: fp32 params keep no separate master copy, so the
    # checkpoint is 4 B weights + 4 m + 4 v = 12 B; a bf16 row stores 2 + 12 = 14 whatever the grads.
    fp32 = solve(Params(training_state="fp32 weights and grads"))
    assert fp32.value("checkpoint_bytes_per_param") == 12
    assert fp32.value("checkpoint_TB") == pytest.approx(L70_PARAMS * 12 / 1e12)
    assert fp32.value("weights_only_GB") == pytest.approx(L70_PARAMS * 4 / 1e9)
    zero = solve(Params(training_state="bf16 weights and grads (ZeRO paper)"))
    assert zero.value("training_state_bytes_per_param") == 16
    assert zero.value("checkpoint_TB") == pytest.approx(CKPT_GB / 1000)


def test_custom_model_checkpoints_from_its_shape():
    # A made-up dense shape: 32 layers, d 4096, MHA with 32 heads of 128, MLP 11,008, 32,000 tokens:
    # LLaMA-2-7B's published shape, 6.74B parameters.
    p = Params(model="Custom", custom_layers=32, custom_d_model=4096, custom_heads=32, custom_kv_heads=32,
               custom_head_dim=128, custom_ffn_dim=11008, custom_vocab=32000)
    n = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008) + 2 * 32000 * 4096
    assert n == pytest.approx(6.74e9, rel=0.01)
    assert solve(p).value("checkpoint_TB") == pytest.approx(n * 14 / 1e12)


def test_burst_tier_sizing_by_hand():
    d = solve(Params())
    # 16.46 GB/s x 2 headroom = 32.9 GB/s over 10 GB/s servers -> 4; capacity 3 slots
    assert d.value("fast_tier_GBps") == pytest.approx(2 * CKPT_GB / 60)
    assert d.value("fast_tier_servers") == 4
    assert d.value("fast_tier_capacity_TB") == pytest.approx(3 * CKPT_GB / 1000)
    # one of 4 down: 987.7 GB / 30 GB/s = 32.9 s; bare sizing is 2 servers, one down: 98.8 s
    assert d.value("burst_one_server_down_s") == pytest.approx(CKPT_GB / 30)
    assert d.value("servers_without_headroom") == 2
    assert d.value("burst_one_down_without_headroom_s") == pytest.approx(CKPT_GB / 10)
    # a synchronous save stalls 60 / 1,800 of the time: 1,000 GPUs x 24 h / 30 = 800 GPU-h a day
    assert d.value("sync_stall_fraction") == pytest.approx(1 / 30)
    assert d.value("sync_stall_gpu_hours_per_day") == pytest.approx(800)
    assert d.value("single_tier_idle_fraction") == pytest.approx(29 / 30)
    # async: 0.99 GB over PCIe Gen5 x16 (32 GT/s x 16 x 128/130 / 8 = 63.0 GB/s)
    assert d.value("snapshot_stall_s") == pytest.approx(CKPT_GB / 1000 / (32 * 16 * 128 / 130 / 8))
    assert d.value("rpo_burst_min") == pytest.approx(31)
    assert d.value("rpo_async_average_min") == pytest.approx(60)
    # restore reads from the servers installed: 4 x 10 GB/s = 40 GB/s, not the 32.9 GB/s required
    assert d.value("fast_tier_installed_GBps") == pytest.approx(40)
    assert d.value("restore_s") == pytest.approx(CKPT_GB / 40)
    assert d.value("headroom_adds_server").startswith("yes")  # 4 servers against the bare 2
    flat = solve(Params(fast_tier_headroom=1))  # no headroom: the same 2 servers both ways
    assert flat.value("fast_tier_servers") == flat.value("servers_without_headroom")
    assert flat.value("headroom_adds_server").startswith("no")


def test_reshard_cases_by_hand():
    # 512 -> 256: rank j covers old [2j, 2j+2): exactly two shards
    assert max_source_shards(512, 256) == 2
    # 512 -> 384: rank j covers 4/3 of a shard; offsets repeat 0, 1/3, 2/3:
    # [0, 4/3) -> 0,1; [4/3, 8/3) -> 1,2; [8/3, 4) -> 2,3. Never three.
    assert max_source_shards(512, 384) == 2
    # 512 -> 1024: each rank is half a shard, inside one
    assert max_source_shards(512, 1024) == 1
    # 512 -> 320: 8/5 per rank; rank 1 covers [1.6, 3.2) -> shards 1, 2, 3
    assert max_source_shards(512, 320) == 3
    # 640 -> 384 (5/3): rank 1 covers [5/3, 10/3) -> shards 1, 2, 3
    assert max_source_shards(640, 384) == 3
    # 512 -> 768 (2/3): rank 1 covers [2/3, 4/3) -> shards 0, 1
    assert max_source_shards(512, 768) == 2
    # 512 -> 200 (2.56): rank 2 covers [5.12, 7.68) -> 5, 6, 7; rank 7 [17.92, 20.48) -> 17..20
    assert max_source_shards(512, 200) == 4
    for old, new in [(512, 384), (512, 320), (640, 384), (512, 200), (96, 40)]:
        assert max_source_shards(old, new) == overlaps_by_enumeration(old, new)


def test_uneven_default_reads_three_shards():
    d = solve(Params())
    assert d.value("uneven_max_source_shards") == 3
    assert d.value("uneven_bytes_per_rank_GB") == pytest.approx(CKPT_GB / 320)
    # whole-file reads: 3 x 1.93 GB = 5.79 GB to use 3.09 GB
    assert d.value("uneven_whole_file_read_GB") == pytest.approx(3 * CKPT_GB / 512)


@settings(max_examples=300, deadline=None)
@given(old=st.integers(1, 120), new=st.integers(1, 120))
def test_closed_form_matches_interval_enumeration(old, new):
    assert max_source_shards(old, new) == overlaps_by_enumeration(old, new)


def test_variant_405b_on_2048_gpus_every_20_minutes():
    p = Params(model="Llama-3.1-405B", gpus=2048, interval_min=20, burst_window_s=90, fast_server_write_GBps=25,
               keep_last=3, milestone_every_h=48, run_days=60, old_shards=2048, new_ranks=1536)
    d = solve(p)
    # Llama 3.1 405B: 126 layers, d 16384, 128 heads and 8 KV heads of 128, MLP 53,248, 128,256 tokens
    n = 126 * (16384 * 16384 * 2 + 2 * 16384 * 8 * 128 + 3 * 16384 * 53248) + 2 * 128256 * 16384  # 405.85B
    ckpt_gb = n * 14 / 1e9  # 5,682 GB
    assert d.value("checkpoint_TB") == pytest.approx(ckpt_gb / 1000)
    assert d.value("aggregate_write_GBps") == pytest.approx(ckpt_gb / 90)  # 63.1 GB/s
    assert d.value("per_gpu_write_GBps") == pytest.approx(ckpt_gb / 90 / 2048)
    assert d.value("peak_to_average") == pytest.approx(1200 / 90)
    assert d.value("min_drain_GBps") == pytest.approx(ckpt_gb / 1200)  # 4.725 GB/s
    # 63.1 x 2 = 126.3 GB/s over 25 GB/s servers -> 5.05 -> 6
    assert d.value("fast_tier_servers") == 6
    # 72 a day x 5.68 TB; keep 3 + 30 milestones
    assert d.value("volume_per_day_TB") == pytest.approx(72 * ckpt_gb / 1000)
    assert d.value("retained_TB") == pytest.approx((3 + 30) * ckpt_gb / 1000)
    # 2048 -> 1536 is 4/3 again: two shards, 3.69 GB per rank
    assert d.value("reshard_max_source_shards_per_rank") == 2
    assert d.value("reshard_bytes_per_rank_GB") == pytest.approx(ckpt_gb / 1536)


def test_preset_about_lines_hold():
    q = QUESTIONS["checkpoint-storage"]
    presets = {pr.name: pr.values for pr in q.content.presets}
    d = solve(Params(**presets["A 405B model on the same cluster"]))
    assert d.value("checkpoint_TB") == pytest.approx(5.68, abs=0.005)
    assert d.value("aggregate_write_GBps") == pytest.approx(94.7, abs=0.05)
    assert d.value("fast_tier_servers") == 19  # 189.4 / 10
    assert d.value("min_drain_GBps") == pytest.approx(3.16, abs=0.005)
    d = solve(Params(**presets["Save every 10 minutes"]))
    assert d.value("peak_to_average") == pytest.approx(10)
    assert d.value("sync_stall_fraction") == pytest.approx(0.1)
    d = solve(Params(**presets["No headroom on the burst tier"]))
    assert d.value("fast_tier_servers") == 2
    assert d.value("burst_one_server_down_s") == pytest.approx(99, abs=0.5)


# Catalog models in order of size; the hypotheses compare a smaller with a larger one.
MODELS = ("Llama-3-8B", "LLaMA-2-13B", "Mixtral-8x7B", "Llama-3-70B", "Llama-3.1-405B", "DeepSeek-V3", "Kimi-K2 1T")
sizes = st.sampled_from(MODELS)


@settings(max_examples=150, deadline=None)
@given(a=sizes, b=sizes)
def test_bigger_model_needs_more_bandwidth_and_storage(a, b):
    lo, hi = sorted((a, b), key=MODELS.index)
    d_lo, d_hi = solve(Params(model=lo)), solve(Params(model=hi))
    for key in ["aggregate_write_GBps", "min_drain_GBps", "volume_per_day_TB", "retained_TB",
                "reshard_bytes_per_rank_GB", "fast_tier_servers"]:
        assert d_hi.value(key) >= d_lo.value(key) - 1e-12, key
    # ... but the peak-to-average and the overlap count do not depend on size
    assert d_hi.value("peak_to_average") == d_lo.value("peak_to_average")
    assert d_hi.value("reshard_max_source_shards_per_rank") == d_lo.value("reshard_max_source_shards_per_rank")


@settings(max_examples=150, deadline=None)
@given(w1=st.floats(10, 600), w2=st.floats(10, 600))
def test_longer_window_lowers_the_burst_not_the_drain(w1, w2):
    lo, hi = sorted((w1, w2))
    d_lo, d_hi = solve(Params(burst_window_s=lo)), solve(Params(burst_window_s=hi))
    assert d_hi.value("aggregate_write_GBps") <= d_lo.value("aggregate_write_GBps")
    assert d_hi.value("peak_to_average") <= d_lo.value("peak_to_average")
    assert d_hi.value("min_drain_GBps") == d_lo.value("min_drain_GBps")
    assert d_hi.value("sync_stall_fraction") >= d_lo.value("sync_stall_fraction")


@settings(max_examples=150, deadline=None)
@given(g1=st.integers(8, 100_000), g2=st.integers(8, 100_000))
def test_more_gpus_share_the_same_burst(g1, g2):
    lo, hi = sorted((g1, g2))
    d_lo, d_hi = solve(Params(gpus=lo)), solve(Params(gpus=hi))
    assert d_hi.value("per_gpu_write_GBps") <= d_lo.value("per_gpu_write_GBps")
    assert d_hi.value("aggregate_write_GBps") == d_lo.value("aggregate_write_GBps")


@settings(max_examples=150, deadline=None)
@given(interval=st.floats(5, 240), window=st.floats(10, 600), size=sizes)
def test_peak_to_average_is_burst_over_drain(interval, window, size):
    d = solve(Params(interval_min=interval, burst_window_s=window, model=size))
    assert d.value("peak_to_average") == pytest.approx(d.value("aggregate_write_GBps") / d.value("min_drain_GBps"))


@settings(max_examples=150, deadline=None)
@given(h=st.floats(1, 4), rate=st.floats(1, 100), size=sizes)
def test_headroom_never_makes_a_lost_server_hurt_more(h, rate, size):
    d = solve(Params(fast_tier_headroom=h, fast_server_write_GBps=rate, model=size))
    assert d.value("fast_tier_servers") >= d.value("servers_without_headroom") >= 2
    assert d.value("burst_one_server_down_s") <= d.value("burst_one_down_without_headroom_s") + 1e-9


@settings(max_examples=200, deadline=None)
@given(old=st.integers(8, 4096), new=st.integers(8, 4096))
def test_overlap_count_bounds(old, new):
    n = max_source_shards(old, new)
    assert 1 <= n <= math.ceil(old / new) + 1
    if old % new == 0:
        assert n == old // new
    if new % old == 0:
        assert n == 1


@settings(max_examples=100, deadline=None)
@given(k1=st.integers(1, 50), k2=st.integers(1, 50))
def test_keeping_more_retains_more(k1, k2):
    lo, hi = sorted((k1, k2))
    assert solve(Params(keep_last=hi)).value("retained_TB") >= solve(Params(keep_last=lo)).value("retained_TB")


def test_page_moves_prose_with_a_knob(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(QUESTIONS["checkpoint-storage"].page_path), default_timeout=30).run()
    assert not at.exception
    text = lambda: "\n".join(m.value for m in at.markdown)  # noqa: E731
    assert "**16.46 MB/s**" in text()
    at.select_slider(key="checkpoint-storage.gpus").set_value(2000).run()
    assert not at.exception
    # the same 16.46 GB/s burst over 2,000 GPUs: 8.231 MB/s each
    assert "**8.231 MB/s**" in text()
    assert "**16.46 GB/s**" in text()


def test_worked_problem_bloom_176b_checkpoint():
    # BigScience's BLOOM training page (bigscience.notion.site, "BigScience 176B Model"): 70 layers,
    # 112 heads, hidden 14,336, 384 A100 80GB; "only the bf16 weights are 329GB, the full checkpoint
    # with optimizer states is 2.3TB". BLOOM's vocabulary is 250,680 (arXiv 2211.05100) and its MLP
    # is a plain 4 x d GeLU: 8 d^2 per layer, entered as a gated MLP of width 8 d / 3 = 38,229. The
    # custom shape counts an untied output head, 3.6B more than BLOOM's tied one.
    d_model, width = 14336, 38229
    p = Params(model="Custom", custom_layers=70, custom_d_model=d_model, custom_heads=112, custom_kv_heads=112,
               custom_head_dim=128, custom_ffn_dim=width, custom_vocab=250680, gpus=384,
               training_state="bf16 weights and grads (ZeRO paper)")
    n = 70 * (4 * d_model * d_model + 3 * d_model * width) + 2 * 250680 * d_model  # 179.8B
    d = solve(p)
    assert d.value("model_params") == n
    assert d.value("weights_only_GB") == pytest.approx(2 * n / 1e9)
    assert d.value("checkpoint_TB") == pytest.approx(14 * n / 1e12)  # 2 bf16 + 12 fp32 master, m, v
    # The source's figures are binary: 329 GiB and 2.3 TiB.
    assert d.value("weights_only_GB") * 1e9 / 2**30 == pytest.approx(329, rel=0.02)
    assert d.value("checkpoint_TB") * 1e12 / 2**40 == pytest.approx(2.3, rel=0.02)
    assert d.value("per_gpu_shard_GB") == pytest.approx(14 * n / 1e9 / 384)  # 6.6 GB from each A100


# --- peer copies in CPU memory, and the batch across a resume: worked by hand ---------------------


def test_peer_copies_in_cpu_memory_by_hand():
    d = solve(Params())
    # 1,000 GPUs on 8-GPU nodes: 125 nodes, each holding 987.7 GB / 125 = 7.9 GB of the state
    assert d.value("nodes") == 125
    assert d.value("node_shard_GB") == pytest.approx(CKPT_GB / 125)
    # its own snapshot plus one peer's copy: 15.8 GB of a 2 TB node, 0.77%
    assert d.value("peer_host_GB") == pytest.approx(2 * CKPT_GB / 125)
    assert d.value("peer_host_share") == pytest.approx(2 * CKPT_GB / 125 / 2048)
    # 7.9 GB at 25 GB/s: 0.316 s, every 2 minutes
    assert d.value("peer_copy_s") == pytest.approx(CKPT_GB / 125 / 25)
    assert d.value("peer_copy_duty") == pytest.approx(CKPT_GB / 125 / 25 / 120)
    assert d.value("peer_rpo_min") == pytest.approx(2 + CKPT_GB / 125 / 25 / 60)
    assert d.value("peer_recover_s") == pytest.approx(CKPT_GB / 125 / 25)
    two = solve(Params(peer_replicas=2))
    assert two.value("peer_host_GB") == pytest.approx(3 * CKPT_GB / 125)
    assert two.value("peer_copy_s") == pytest.approx(2 * CKPT_GB / 125 / 25)


def test_resuming_512_on_256_doubles_the_accumulation_and_keeps_the_batch():
    d = solve(Params())
    # 512 ranks x 1 sequence x 2 micro-batches = 1,024 sequences a step
    assert d.value("global_batch_seqs") == 512 * 1 * 2 == 1024
    # on 256 ranks the same 1,024 need 1,024 / 256 = 4 micro-batches each: twice the 2 saved
    assert d.value("new_grad_accum") == 4 == 2 * 2
    assert d.value("new_accum_whole") == "yes"
    assert d.value("step_time_ratio") == 2
    # 320 ranks: 1,024 / 320 = 3.2, not a whole number of micro-batches
    assert d.value("uneven_grad_accum") == pytest.approx(3.2)
    assert d.value("uneven_accum_whole").startswith("no")
    # the data position is one global number: 20,000 steps x 1,024 sequences
    assert d.value("samples_consumed") == 20_000 * 1024
    # micro-batch 2 on 256 ranks: 1,024 / (256 x 2) = 2 micro-batches
    assert solve(Params(micro_batch_seqs=2)).value("new_grad_accum") == 1024 * 2 / (256 * 2)


def test_the_assumed_burst_server_is_placed_against_real_burst_tiers():
    d = solve(Params())
    assert d.value("cori_bb_node_GBps") == 6.5  # NERSC: up to 6.5 GB/s per Cori burst-buffer node
    assert d.value("perlmutter_oss_GBps") == pytest.approx(5000 / 274)  # over 5 TB/s from 274 OSSs: 18.2 GB/s
    assert d.value("tectonic_server_GBps") == pytest.approx(2000 / 7500)  # 2 TB/s over 7,500 servers: 0.27 GB/s
    # the seed's 10 GB/s sits between the two NERSC tiers
    assert d.value("fast_server_vs_reference").startswith("within")
    burst = CKPT_GB / 60 * 2  # 1 TB in 60 s with 2x headroom: 32.9 GB/s provisioned
    assert d.value("fast_tier_servers_cori") == math.ceil(burst / 6.5) == 6
    assert d.value("fast_tier_servers_perlmutter") == max(2, math.ceil(burst / (5000 / 274))) == 2
    assert solve(Params(fast_server_write_GBps=5)).value("fast_server_vs_reference").startswith("below")
    assert solve(Params(fast_server_write_GBps=40)).value("fast_server_vs_reference").startswith("above")
    assert d.value("micro_batch") == 1  # the micro-batch knob as a count of sequences
