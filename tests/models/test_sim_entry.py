"""Every simulation in models/sim is called the same way: `run(Config, seed) -> Result`, with a
frozen Config of its own module (queue.py is the shared queue engine, not a simulation of a page)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import pytest

import models.sim
from models.sim import batching, burst, failover, fair_share, kv_tiers, swarm, token_bucket

SMALL = {
    batching: lambda: batching.Config(horizon_s=2.0),
    burst: lambda: burst.Config(base_rps=1, peak_rps=2, ramp_s=5, hold_s=5, request_s=4, slots_per_replica=4,
                                target_utilization=0.8, initial_replicas=1, warm_pool=0, cold_start_s=5,
                                signal_delay_s=0, scale_down_hold_s=5),
    failover: lambda: failover.Config(horizon_s=10.0, drop_at_s=2.0, detection_s=2.0),
    fair_share: lambda: fair_share.Config(16, [fair_share.TeamSpec("A", "X", 1, offered_gpus=8, job_gpus=4)], hours=2),
    kv_tiers: lambda: kv_tiers.Config(horizon_s=120.0),
    swarm: lambda: swarm.Config(hosts=5, chunks=4),
    token_bucket: lambda: token_bucket.Config(input_tpm=60_000, output_tpm=6_000, burst_seconds=10, max_tokens=500,
                                              mean_input_tokens=200, mean_output_tokens=100, stream_tokens_per_s=50,
                                              seconds=5),
}


def test_every_simulation_module_is_listed():
    names = {m.name for m in pkgutil.iter_modules(models.sim.__path__)} - {"queue"}
    assert names == {m.__name__.rsplit(".", 1)[1] for m in SMALL}


@pytest.mark.parametrize("module", list(SMALL), ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_one_entry_point(module):
    mod = importlib.import_module(module.__name__)
    assert "run(Config, seed) -> Result" in mod.__doc__, "the module docstring states the convention"
    cfg_type, result_type = mod.Config, mod.Result
    assert dataclasses.is_dataclass(cfg_type) and cfg_type.__dataclass_params__.frozen
    params = list(inspect.signature(mod.run).parameters.values())
    assert len(params) == 2, f"run takes (config, seed), got {[p.name for p in params]}"
    assert params[1].name == "seed" and params[1].default == 0
    # the old conventions are gone
    for old in ("simulate", "simulate_contract", "compare_modes"):
        assert not hasattr(mod, old), f"{mod.__name__}.{old} is a second way in"
    cfg = SMALL[module]()
    r = mod.run(cfg, 0)
    assert isinstance(r, result_type)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(cfg, dataclasses.fields(cfg)[0].name, None)
