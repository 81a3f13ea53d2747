"""The engine's knob groups: one declaration, other defaults by derivation, a custom part and a
custom shape that run the catalog's arithmetic, and a sentence for what cannot run."""

import pytest
from pydantic import ValidationError

from models.engine.knobs import EngineKnobs, llm, problem, replica, with_defaults
from models.mock import draw_scenario


def test_a_custom_shape_typed_as_llama3_70b_is_llama3_70b():
    typed = EngineKnobs(model="Custom")  # the custom defaults are Llama-3-70B's shape
    assert llm(typed).total_params == llm(EngineKnobs()).total_params == 70_552_387_584
    assert replica(typed).kv_bytes_per_token == replica(EngineKnobs()).kv_bytes_per_token == 327_680


def test_a_custom_mla_moe_shape():
    # DeepSeek-V3's latent (512 + 64 per layer) in int8: 61 x 576 x 1 B = 35,136 B a token
    p = EngineKnobs(model="Custom", custom_layers=61, custom_kv_lora_rank=512, custom_qk_rope_head_dim=64,
                    custom_experts=256, custom_experts_per_token=8, custom_shared_experts=1, custom_dense_layers=3,
                    custom_d_model=7168, custom_heads=128, custom_kv_heads=128, custom_ffn_dim=18432,
                    kv_precision="int8", gpu="B200", tp_degree=8, weight_precision="fp8")
    assert replica(p).kv_bytes_per_token == 61 * 576
    m = llm(p)
    assert m.is_moe and m.active_params < m.total_params / 10


def test_a_custom_accelerator_is_used():
    p = EngineKnobs(gpu="Custom", custom_hbm_GB=192, custom_hbm_TBps=5.3, custom_bf16_TFLOPs=1307)
    r = replica(p)
    assert r.hbm_bytes == 4 * 192e9 and r.hbm_Bps == 4 * 5.3e12 and r.peak_flops == 4 * 1307e12


def test_with_defaults_keeps_the_one_declaration():
    Rack = with_defaults(EngineKnobs, gpu="GB200 (NVL72)", model="Kimi-K2 1T", tp_degree=16)
    assert (Rack().gpu, Rack().model, Rack().tp_degree) == ("GB200 (NVL72)", "Kimi-K2 1T", 16)
    for name in ("gpu", "model", "tp_degree", "hbm_efficiency"):
        assert Rack.model_fields[name].metadata == EngineKnobs.model_fields[name].metadata
    assert problem(Rack()) is None  # 16 GPUs fit inside the 72-GPU NVLink domain


@pytest.mark.parametrize(("knobs", "says"), [
    (dict(gpu="A100 80GB", compute_precision="fp8"), "no dense fp8 rate"),
    (dict(tp_degree=16), "wider than H100 SXM's scale-up domain of 8"),
    (dict(tp_degree=1), "needs 141 GB of weights"),
    (dict(model="Custom", custom_heads=64, custom_kv_heads=6), "do not split"),
])
def test_what_cannot_run_is_said(knobs, says):
    assert says in problem(EngineKnobs.model_construct(**{**EngineKnobs().model_dump(), **knobs}))
    with pytest.raises(ValueError, match=says):  # and the knobs refuse it in the same words
        EngineKnobs(**knobs)


def test_a_drawn_scenario_names_catalog_parts_and_keeps_the_custom_defaults():
    for seed in range(40):
        p = draw_scenario(EngineKnobs, seed)
        assert p.gpu != "Custom" and p.model != "Custom"
        assert p.custom_hbm_GB == 80 and p.custom_layers == 80
        assert p.kv_precision == "bf16" and p.compute_precision == "bf16"


def test_a_knob_shown_only_for_custom():
    from ui.knobs import shown, specs

    by_field = {s.field: s for s in specs(EngineKnobs)}
    assert not shown(by_field["custom_hbm_GB"], {"gpu": "H100 SXM"})
    assert shown(by_field["custom_hbm_GB"], {"gpu": "Custom"})
    assert shown(by_field["gpu"], {})


def test_without_drops_knobs_and_keeps_the_checks():
    from models.engine.knobs import without
    from models.engine.serving_knobs import ServingKnobs

    Prefill = without(EngineKnobs, "hbm_efficiency", "decode_mfu", "step_overhead_ms")
    assert not {"hbm_efficiency", "decode_mfu", "step_overhead_ms"} & set(Prefill.model_fields)
    assert Prefill.model_fields["prefill_mfu"].metadata == EngineKnobs.model_fields["prefill_mfu"].metadata
    # the dropped knobs run at the engine's defaults: 1.9 ms a step, 80% MBU
    r = replica(Prefill(tp_degree=8))
    assert (r.step_overhead_s, r.hbm_efficiency) == (1.9e-3, 0.8)
    with pytest.raises(ValidationError, match="141 GB of weights"):  # the engine's check is kept
        Prefill(tp_degree=1)
    Fleetless = without(ServingKnobs, "target_utilization")
    assert "target_utilization" not in Fleetless.model_fields
    with pytest.raises(ValidationError, match="GB of KV for one sequence"):  # and the serving check
        Fleetless(tp_degree=4, prompt_tokens=1_000_000)
    with pytest.raises(KeyError, match="no knob"):
        without(EngineKnobs, "not_a_knob")
