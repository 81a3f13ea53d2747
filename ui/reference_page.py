"""Reference: every hardware and model constant of `models/catalog.py`, with its source.

Tables are built from the catalog's dataclasses, so a constant changed there changes here; the
only text typed on this page is explanation.
"""

from __future__ import annotations

import re

import streamlit as st

from models.catalog import (
    ADAM_MIXED_BYTES_PER_PARAM,
    CHECKPOINT_BYTES_PER_PARAM,
    GPUS,
    INFER_FLOPS_PER_PARAM_TOKEN,
    LINKS,
    LLAMA3_INTERRUPTIONS,
    MODELS,
    TRAIN_FLOPS_PER_PARAM_TOKEN,
    model as catalog_model,
)
from ui.links import page_link

_URL = re.compile(r"https?://[^\s;,)]+")
_ROW_PX, _HEADER_PX = 35, 38
_LINK_COL = st.column_config.LinkColumn("Source", width="small", display_text="open",
                                        help="The first address the source cites; the full citation is listed below.")


def first_url(text: str) -> str | None:
    m = _URL.search(text)
    return m.group(0).rstrip(".") if m else None


def _fp8(tflops: float | None) -> str:
    """A part without FP8 tensor cores says so; a dataframe would print a missing number as "None"."""
    return "none: no FP8 tensor cores" if tflops is None else f"{tflops:,.0f}"


def gpu_rows() -> list[dict]:
    return [{
        "GPU": g.name,
        "Link": first_url(g.source),
        "Vendor": g.vendor,
        "HBM (GB)": g.memory_GB,
        "HBM bandwidth (TB/s)": g.hbm_TBps,
        "Dense BF16 (TFLOP/s)": g.dense_bf16_TFLOPs,
        "Dense FP8 (TFLOP/s)": _fp8(g.dense_fp8_TFLOPs),
        "Dense INT8 (TOP/s)": "not published" if g.dense_int8_TOPs is None else f"{g.dense_int8_TOPs:,.0f}",
        "Scale-up link, both ways (GB/s)": g.nvlink_GBps,
        "Scale-up domain": g.scale_up_domain,
        "Power (W)": "not published" if g.tdp_W is None else f"{g.tdp_W:,.0f}",
        "Ridge point (FLOP/byte)": g.ridge_flops_per_byte,
        "Note": g.note,
    } for g in GPUS.values()]


def link_rows() -> list[dict]:
    return [{
        "Link": ln.name,
        "URL": first_url(ln.source),
        "Kind": ln.kind,
        "Per direction (GB/s)": ln.GBps,
        "Per direction (Gb/s)": ln.Gbps,
        "Note": ln.note,
    } for ln in LINKS.values()]


def model_rows() -> list[dict]:
    return [{
        "Model": m.name,
        "Link": first_url(m.source),
        "Attention": m.attention,
        "Layers": m.layers,
        "d_model": m.d_model,
        "Heads": m.heads,
        "KV heads": m.kv_heads,
        "Head dim": m.head_dim,
        "Vocabulary": m.vocab,
        "Total params (B)": m.total_params / 1e9,
        "Active params (B)": m.active_params / 1e9,
        "Experts (routed, top-k)": f"{m.moe_experts}, top-{m.experts_per_token}" if m.is_moe else "dense",
        "Weights in bf16 (GB)": m.weight_bytes(2) / 1e9,
        "KV per token, bf16 (kB)": m.kv_bytes_per_token(2) / 1e3,
        "Note": m.note,
    } for m in MODELS.values()]


def convention_rows(example: str = "Llama-3-70B") -> list[dict]:
    m = catalog_model(example)
    r = LLAMA3_INTERRUPTIONS
    n = m.total_params
    return [
        {
            "Convention": "Training state, mixed-precision Adam",
            "Value": f"{ADAM_MIXED_BYTES_PER_PARAM} bytes per parameter",
            "What it counts": "bf16 weights 2 + bf16 gradients 2 + fp32 master weights 4 + Adam m 4 + Adam v 4, "
                              "before any ZeRO sharding",
            "Example": f"{example}: {ADAM_MIXED_BYTES_PER_PARAM * n / 1e12:.2f} TB across the data-parallel group",
            "Source": "Rajbhandari et al., ZeRO, arXiv 1910.02054, section 3.1",
        },
        {
            "Convention": "Resumable checkpoint",
            "Value": f"{CHECKPOINT_BYTES_PER_PARAM} bytes per parameter",
            "What it counts": "the same state minus the gradients, which are recomputed after a restart",
            "Example": f"{example}: {CHECKPOINT_BYTES_PER_PARAM * n / 1e9:,.0f} GB per checkpoint",
            "Source": "Rajbhandari et al., ZeRO, arXiv 1910.02054, section 3.1 (the state above, less gradients)",
        },
        {
            "Convention": "Training compute",
            "Value": f"{TRAIN_FLOPS_PER_PARAM_TOKEN} FLOP per parameter per token",
            "What it counts": "forward 2 (one multiply-add per weight) + backward 4",
            "Example": f"{example}: {TRAIN_FLOPS_PER_PARAM_TOKEN * n:.3g} FLOP per training token",
            "Source": "Kaplan et al., Scaling Laws for Neural Language Models, arXiv 2001.08361, section 2.1",
        },
        {
            "Convention": "Inference compute",
            "Value": f"{INFER_FLOPS_PER_PARAM_TOKEN} FLOP per parameter per token",
            "What it counts": "the forward pass alone (attention over the context is added on top by the serving "
                              "arithmetic)",
            "Example": f"{example}: {INFER_FLOPS_PER_PARAM_TOKEN * n:.3g} FLOP per generated token",
            "Source": "Kaplan et al., Scaling Laws for Neural Language Models, arXiv 2001.08361, section 2.1",
        },
        {
            "Convention": "Unexpected interruptions, Llama 3 pre-training",
            "Value": f"{r.unexpected_interruptions} in {r.days:g} days on {r.gpus:,} GPUs",
            "What it counts": f"{r.per_gpu_day * 1e4:.1f} per 10,000 GPU-days: one every "
                              f"{r.mean_hours_between_interruptions:.1f} h for the whole job",
            "Example": f"at the same rate a 1,024-GPU job is interrupted every "
                       f"{r.mean_hours_between_interruptions_at(1024):.0f} h",
            "Source": r.source,
        },
    ]


def _table(rows: list[dict], key: str, column_config: dict) -> None:
    """Every row visible at once: these tables are short, and a scrollbar hides the last rows."""
    st.dataframe(rows, hide_index=True, key=key, width="stretch", column_config=column_config,
                 height=_HEADER_PX + _ROW_PX * len(rows))


def _sources(by_name: dict[str, str]) -> None:
    with st.expander(f"Sources, in full ({len(by_name)})"):
        st.markdown("\n".join(f"- **{name}**: {source}" for name, source in by_name.items()))


def render() -> None:
    st.title("Reference")
    st.caption("Every constant the models use, defined once in `models/catalog.py`, with where it comes from.")
    st.markdown(
        "Units are decimal (1 GB = 10⁹ bytes). FLOP/s figures are dense peaks; the vendors' headline numbers "
        "often assume 2:4 structured sparsity and are twice these. A GPU's scale-up figure is both directions "
        "added, as the datasheets quote it; the link table gives one direction, the rate one transfer sees."
    )
    page_link("pages/validation.py", "validation",
              "How accurate are these models? The arithmetic against measurements", icon=":material/fact_check:")

    st.subheader("GPUs", divider="gray")
    _table(gpu_rows(), "reference.gpus", {
        "Link": _LINK_COL,
        "Ridge point (FLOP/byte)": st.column_config.NumberColumn(
            format="%.0f", help="Dense BF16 FLOP/s ÷ HBM B/s: below this arithmetic intensity a kernel is memory-bound."),
        "Dense FP8 (TFLOP/s)": st.column_config.TextColumn(help="Dense FP8 peak; older parts have no FP8 tensor cores."),
        "Note": st.column_config.TextColumn(width="large"),
    })
    _sources({g.name: g.source for g in GPUS.values()})

    st.subheader("Links and storage", divider="gray")
    _table(link_rows(), "reference.links", {
        "URL": _LINK_COL,
        "Per direction (GB/s)": st.column_config.NumberColumn(format="%.2f"),
        "Per direction (Gb/s)": st.column_config.NumberColumn(format="%.0f"),
        "Note": st.column_config.TextColumn(width="large"),
    })
    _sources({ln.name: ln.source for ln in LINKS.values()})

    st.subheader("Model shapes", divider="gray")
    _table(model_rows(), "reference.models", {
        "Link": _LINK_COL,
        "d_model": st.column_config.NumberColumn(format="localized"),
        "Vocabulary": st.column_config.NumberColumn(format="localized"),
        "Total params (B)": st.column_config.NumberColumn(format="%.2f"),
        "Active params (B)": st.column_config.NumberColumn(format="%.2f"),
        "Weights in bf16 (GB)": st.column_config.NumberColumn(format="%.1f"),
        "KV per token, bf16 (kB)": st.column_config.NumberColumn(
            format="%.1f", help="2 (K and V) × layers × KV heads × head dim × 2 B; MLA: layers × latent × 2 B."),
        "Note": st.column_config.TextColumn(width="large"),
    })
    _sources({m.name: m.source for m in MODELS.values()})

    st.subheader("Training conventions", divider="gray")
    st.markdown(
        f"Two pairs of numbers are easy to swap. Memory: training holds {ADAM_MIXED_BYTES_PER_PARAM} bytes per "
        f"parameter, a checkpoint writes {CHECKPOINT_BYTES_PER_PARAM} (gradients are not saved). Compute: a training "
        f"token costs {TRAIN_FLOPS_PER_PARAM_TOKEN} FLOP per parameter, an inference token "
        f"{INFER_FLOPS_PER_PARAM_TOKEN}, because the backward pass costs twice the forward."
    )
    # A static table: these rows are sentences, and a dataframe would cut them off.
    st.table(convention_rows(), hide_index=True)
