"""The batching scheduler's policies, one at a time: each decision on a scenario small enough to
work out by hand, then each policy driving the engine through a two-request run whose every
token time is derived below (every step costs exactly one second)."""

from __future__ import annotations

import numpy as np
import pytest

from models.sim import batching
from models.sim.batching import POLICIES, ChunkedPrefill, Config, ContinuousBatching, StaticBatching

STATIC, CONTINUOUS, CHUNKED = StaticBatching(), ContinuousBatching(), ChunkedPrefill()


def test_the_registry_names_each_policy_once():
    assert set(POLICIES) == {"static", "continuous", "chunked"}
    assert all(POLICIES[name].name == name for name in POLICIES)
    # static reserves KV at full context; the other two page it in blocks
    assert [POLICIES[n].paged for n in ("static", "continuous", "chunked")] == [False, True, True]
    with pytest.raises(ValueError, match="policy must be one of"):
        Config(policy="fifo")


# --- admission ------------------------------------------------------------------------------


def test_static_admits_a_whole_batch_only_when_idle():
    cfg = Config(policy="static", max_running=3)
    heads = [(100, 100)] * 5
    assert STATIC.admit(cfg, 0, iter(heads), 0) == 3  # up to max_running, KV not counted
    assert STATIC.admit(cfg, 0, iter(heads[:2]), 0) == 2  # fewer waiting than slots
    assert STATIC.admit(cfg, 1, iter(heads), 10**6) == 0  # a batch is running: nobody joins


def test_continuous_admits_while_blocks_and_the_prefill_budget_last():
    cfg = Config(policy="continuous", block_tokens=16, max_running=4, max_prefill_tokens=1000)
    # 500 tokens = ceil(500 / 16) = 32 blocks, 400 = 25: both fit 100 blocks and leave 100 of the
    # 1000 prompt tokens; the third would fit in blocks (19 of 43) but its 300 tokens do not
    assert CONTINUOUS.admit(cfg, 0, iter([(500, 500), (400, 400), (300, 300)]), 100) == 2
    # KV binds: 32 blocks, then ceil(100 / 16) = 7 blocks; 8 left fits them, 6 left does not
    assert CONTINUOUS.admit(cfg, 0, iter([(500, 500), (100, 100)]), 40) == 2
    assert CONTINUOUS.admit(cfg, 0, iter([(500, 500), (100, 100)]), 38) == 1
    # the first prompt may exceed the budget (it has to run some time); a second may not
    assert CONTINUOUS.admit(cfg, 0, iter([(5000, 5000), (10, 10)]), 10**6) == 1
    # a cached prefix holds blocks but costs no prefill: 2000 held, 500 to prefill, twice
    assert CONTINUOUS.admit(cfg, 0, iter([(2000, 500), (2000, 500), (2000, 500)]), 10**6) == 2
    # slots bind: 3 running of 4
    assert CONTINUOUS.admit(cfg, 3, iter([(10, 10)] * 3), 10**6) == 1
    assert CONTINUOUS.admit(cfg, 4, iter([(10, 10)]), 10**6) == 0


def test_chunked_admission_ignores_the_prefill_budget():
    cfg = Config(policy="chunked", block_tokens=16, max_running=4, max_prefill_tokens=1000)
    heads = [(5000, 5000), (5000, 5000)]
    assert CHUNKED.admit(cfg, 0, iter(heads), 10**6) == 2
    assert CONTINUOUS.admit(cfg, 0, iter(heads), 10**6) == 1
    # KV still binds: ceil(5000 / 16) = 313 blocks each, 600 free
    assert CHUNKED.admit(cfg, 0, iter(heads), 600) == 1


# --- one step's work ------------------------------------------------------------------------


def test_who_decodes_while_a_prompt_is_prefilling():
    pre = np.array([0, 5, 0])  # the middle sequence still has 5 prompt tokens
    assert STATIC.decoders(pre).tolist() == [False, False, False]  # the batch's prefill step
    assert CONTINUOUS.decoders(pre).tolist() == [False, False, False]  # a prefill-only step
    assert CHUNKED.decoders(pre).tolist() == [True, False, True]  # decodes ride along


def test_prompt_tokens_taken_in_one_step():
    cfg = Config(policy="chunked", chunk_tokens=512)
    prefilling = np.array([300, 400, 100])
    # first come, first served within 512: 300, then 212 of 400, then nothing
    assert CHUNKED.prompt_take(cfg, prefilling).tolist() == [300, 212, 0]
    assert CONTINUOUS.prompt_take(cfg, prefilling).tolist() == [300, 400, 100]
    assert STATIC.prompt_take(cfg, prefilling).tolist() == [300, 400, 100]


# --- each policy driving the engine ---------------------------------------------------------

# Weights of 1e12 bytes at 1e12 B/s, KV free to read, compute practically infinite, no overhead:
# every step takes exactly 1 s, whatever it carries, so token times are whole seconds.
ONE_SECOND_STEPS = dict(weight_bytes=1e12, replica_Bps=1e12, kv_bytes_per_token=0.0, replica_flops=1e30,
                        overhead_s=0.0, horizon_s=20.0, max_running=4)


def _two_requests(policy: str, output=(3, 3), arrival=(0.0, 0.5), **kw) -> batching.BatchingResult:
    cfg = Config(policy=policy, **{**ONE_SECOND_STEPS, **kw})
    n = len(output)
    return batching._engine(cfg, np.array(arrival), np.full(n, 100, np.int64), np.array(output, np.int64),
                            np.zeros(n, bool))


def test_static_engine_run_by_hand():
    # r0 is admitted alone at 0 and prefills in [0, 1): tokens at 1, 2, 3. r1 (at 0.5) waits for
    # the batch to end at 3, prefills in [3, 4): tokens at 4, 5, 6.
    r = _two_requests("static")
    assert r.ttft_s.tolist() == [1.0, 3.5]
    assert r.e2e_s.tolist() == [3.0, 5.5]
    assert r.batch.tolist() == [1, 1, 1, 1, 1, 1]


def test_static_keeps_finished_members_as_padding():
    # both at 0, prefilled together; r1 (1 token) is done at 1 but rides along until r0's third token
    r = _two_requests("static", output=(3, 1), arrival=(0.0, 0.0))
    assert r.e2e_s.tolist() == [3.0, 1.0]
    assert r.batch.tolist() == [2, 2, 2]
    assert r.tokens.tolist() == [2, 1, 1]


def test_continuous_engine_run_by_hand():
    # r0 prefills in [0, 1) (token at 1). At 1, r1 is admitted: [1, 2) is prefill-only, r0 waits
    # (r1's first token at 2). Then both decode: tokens at 3 and 4 for each.
    r = _two_requests("continuous")
    assert r.ttft_s.tolist() == [1.0, 1.5]
    assert r.e2e_s.tolist() == [4.0, 3.5]
    assert r.tokens.tolist() == [1, 1, 2, 2]
    # a finished sequence leaves at once: no padding
    r = _two_requests("continuous", output=(3, 1), arrival=(0.0, 0.0))
    assert r.batch.tolist() == [2, 1, 1]


def test_chunked_engine_run_by_hand():
    # a whole prompt fits the 512-token chunk: r1's prefill in [1, 2) carries r0's decode along
    r = _two_requests("chunked", chunk_tokens=512)
    assert r.ttft_s.tolist() == [1.0, 1.5]
    assert r.e2e_s.tolist() == [3.0, 3.5]
    # 60-token chunks: [0,1) r0 60; [1,2) r0 40 (first token at 2) + r1 20; [2,3) r0 decodes
    # (token at 3) + r1 60; [3,4) r0's last token at 4 + r1's last 20 (first token at 4); r1
    # then decodes at 5 and 6.
    r = _two_requests("chunked", chunk_tokens=60)
    assert r.ttft_s.tolist() == [2.0, 3.5]
    assert r.e2e_s.tolist() == [4.0, 5.5]
    assert r.tokens.tolist() == [0, 1, 1, 2, 1, 1]
