"""Declared figures (issue 19): `page.sweep(...)` charts and `[[diagrams]]` tables in the content
file, drawn by QuestionPage with no function in the page script.

The two builders below are serving-platform's and usage-billing-pipeline's former diagram
functions, kept verbatim: each declared diagram must send the browser the JSON they sent."""

from __future__ import annotations

import json
import runpy
from functools import lru_cache
from unittest import mock

import plotly.io as pio
import plotly.tools
import pytest
import streamlit  # noqa: F401  (registers the plotly template the app runs with)

from models.content import DIAGRAM_TONES, ContentError, parse_content
from models.registry import QUESTIONS, written
from ui.charts import sweep_figure
from ui.diagram import TONES, Arrow, Box, box_diagram, content_diagram, fill
from ui.question_page import PageContext, QuestionPage
from ui.solve_cache import solve


def _sent(fig) -> dict:
    fig = plotly.tools.return_figure_from_figure_or_data(fig, validate_figure=True)
    return json.loads(pio.to_json(fig, validate=False))


@lru_cache(maxsize=None)
def _page(slug: str) -> QuestionPage:
    with mock.patch.object(QuestionPage, "render", lambda self: None):
        return runpy.run_path(str(QUESTIONS[slug].page_path), run_name="page_under_test")["page"]


def _ctx(slug: str, **changes) -> PageContext:
    q = QUESTIONS[slug]
    assert set(changes) <= set(q.Params.model_fields), changes
    params = q.Params.model_validate({**q.Params().model_dump(), **changes})
    return PageContext(q, params, solve(slug, params), solve(slug, q.Params()))


def OLD_seven_boxes(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("clients", "Clients", f"{p.concurrent_users:,} users · {show('requests_in_flight')}", 0, 0, "muted"),
        Box("gw", "1 Gateway + auth", "TLS, key, tenant · fails: key store slow", 1, 0),
        Box("rl", "2 Rate limiter", f"{show('prompt_tokens_per_s')} in · fails: store down", 2, 0),
        Box("router", "3 Router", f"prefix affinity · {p.prefix_cache_hit:.0%} hit · fails: hot prefix", 3, 0),
        Box("queue", "4 Admission queue", "admit on free KV · fails: unbounded wait", 3, 1, "accent"),
        Box("engine", "5 Engine",
            f"batch {show('decode_batch')} · step {show('decode_step_s')} · fails: KV preemption", 2, 1),
        Box("stream", "7 Streaming path", f"{show('output_tokens_per_s')} · fails: slow client", 1, 1),
        Box("cache", "6 Prefix / KV cache", f"{show('cached_prompt_tokens')} cached · fails: goes cold", 2, 2),
        Box("fleet", "Sizing chain",
            f"{show('request_rate')} · {show('requests_in_flight')} in flight · "
            f"{show('replicas')} · {show('gpus')}", 0.5, 2, "muted"),
    ]
    arrows = [
        Arrow("clients", "gw", "HTTPS"),
        Arrow("gw", "rl"),
        Arrow("rl", "router"),
        Arrow("router", "queue"),
        Arrow("queue", "engine"),
        Arrow("engine", "cache", "KV blocks"),
        Arrow("engine", "stream", "tokens"),
        Arrow("stream", "clients", "SSE"),
    ]
    return box_diagram(boxes, arrows, title="Seven boxes between an API call and a GPU, with this scenario's numbers")


def OLD_billing_path(ctx):
    d = ctx.derivation
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("gw", "Gateway", "request id (the key's root) · API key", 0, 0, "muted"),
        Box("engine", "Inference engines", "count tokens once · spool to disk · hourly tally", 1, 0),
        Box("kafka", "Usage topic", f"{show('kafka_partitions')} · {show('peak_ingest_Bps')} at peak", 2, 0),
        Box("consumer", "Billing consumer", f"dedup {show('dedup_index_GB')} · price + tenant at event time · "
            "watermark", 3, 0, "accent"),
        Box("rollup", "Hourly rollups", f"{show('rollup_rows_per_month')} a month · closes month end + late window",
            3, 1),
        Box("ledger", "Ledger + invoices", f"{show('revenue_per_month_usd')} a month · adjustments, never rewrites",
            2, 1),
        Box("recon", "Reconciliation", f"engine tallies vs ledger · per engine-hour · "
            f"{show('missing_events_per_hour')} missing an hour", 1, 1, "danger"),
    ]
    arrows = [
        Arrow("gw", "engine", "request"),
        Arrow("engine", "kafka", show("events_per_s")),
        Arrow("kafka", "consumer", ""),
        Arrow("consumer", "rollup", "add"),
        Arrow("rollup", "ledger", "close"),
        Arrow("engine", "recon", "tallies", dashed=True),
        Arrow("ledger", "recon", "totals", dashed=True),
    ]
    return box_diagram(boxes, arrows, title="Where usage is counted, carried, closed and proved")


@pytest.mark.parametrize("slug, name, old, changes", [
    ("serving-platform", "seven_boxes", OLD_seven_boxes, {}),
    ("serving-platform", "seven_boxes", OLD_seven_boxes, {"concurrent_users": 45_000, "prefix_cache_hit": 0.85}),
    ("usage-billing-pipeline", "billing_path", OLD_billing_path, {}),
])
def test_a_declared_diagram_sends_what_the_function_it_replaced_sent(slug, name, old, changes):
    ctx = _ctx(slug, **changes)
    new = _page(slug)._renderers[("diagram", name)](ctx)
    assert _sent(new) == _sent(old(ctx))


def test_page_sweep_draws_what_the_sweep_figure_call_it_replaced_drew():
    """serving-platform's former `replicas_vs_prefix_hit` function body, called directly."""
    ctx = _ctx("serving-platform", think_time_s=12.0)
    old = sweep_figure(
        ctx.slug, ctx.params, "prefix_cache_hit",
        {"replicas": "Replicas", "prefill_replica_equivalents": "Prefill work (busy replicas)",
         "decode_replica_equivalents": "Decode work (busy replicas)"},
        title="What the prefix cache is worth", y_title="Replicas", x_scale=100, n=100,
    )
    new = _page("serving-platform")._renderers[("chart", "replicas_vs_prefix_hit")](ctx)
    assert _sent(new) == _sent(old)


def test_a_placeholder_in_a_diagram_reads_plain_and_live():
    """A step as its metric card shows it (no "≈" hint), a knob with its unit, and no Markdown bold
    (a plotly annotation would print the asterisks)."""
    ctx = _ctx("serving-platform", concurrent_users=12_345)
    text = fill("{{concurrent_users}} · {{replicas}}", ctx.derivation, ctx.params)
    assert text == f"12,345 users · {ctx.derivation['replicas'].display(hint=False)}"
    assert "*" not in text and "≈" not in text
    assert fill("hit {{prefix_cache_hit}}", ctx.derivation, _ctx("serving-platform", prefix_cache_hit=0.25).params) \
        == "hit 25%"


def test_an_unknown_placeholder_is_a_content_error_naming_it():
    ctx = _ctx("serving-platform")
    with pytest.raises(ContentError, match=r"\{\{replicaz\}\}"):
        fill("{{replicaz}} replicas", ctx.derivation, ctx.params, "diagram 'x'")
    dg = _diagram_of('{ id = "a", title = "A", detail = "{{nope}}" }')
    with pytest.raises(ContentError, match=r"diagram 'd' box 'a'.*\{\{nope\}\}"):
        dg.check_placeholders({"replicas"})
    dg.check_placeholders({"nope"})  # named: no error


def _diagram_of(boxes: str, arrows: str = "", extra: str = ""):
    text = f'+++\nhook = "h"\n[[diagrams]]\nname = "d"\ntitle = "T"\n{extra}boxes = [{boxes}]\narrows = [{arrows}]\n+++\n'
    return parse_content(text).diagram("d")


def test_a_diagram_table_is_parsed_into_boxes_and_arrows():
    dg = _diagram_of('{ id = "a", title = "A", col = 0, row = 0 }, '
                     '{ id = "b", title = "B", detail = "x · y", col = 1.5, row = 1, tone = "danger" }',
                     '{ src = "a", dst = "b", label = "{{k}}", dashed = true }', "height = 300\n")
    assert [(b.id, b.col, b.row, b.tone) for b in dg.boxes] == [("a", 0, 0, "default"), ("b", 1.5, 1, "danger")]
    assert (dg.arrows[0].src, dg.arrows[0].dst, dg.arrows[0].dashed, dg.arrows[0].offset) == ("a", "b", True, 0.0)
    assert dg.height == 300 and dg.placeholders() == {"k"}


@pytest.mark.parametrize("boxes, arrows, wrong", [
    ('{ id = "a", title = "A" }', '{ src = "a", dst = "q" }', r"names no box 'q'"),
    ('{ id = "a", title = "A", tone = "loud" }', "", r"tone 'loud'"),
    ('{ id = "a", title = "A", colour = "red" }', "", r"unknown field\(s\) colour"),
    ('{ id = "a", title = "A" }, { id = "a", title = "B" }', "", r"two boxes are called 'a'"),
    ('{ title = "A" }', "", r"missing id"),
    ('{ id = "a", title = "A", col = "left" }', "", r"col must be a float"),
    ("", "", r"has no boxes"),
])
def test_a_malformed_diagram_is_a_content_error_that_says_what(boxes, arrows, wrong):
    with pytest.raises(ContentError, match=wrong):
        _diagram_of(boxes, arrows)


def test_the_tones_content_accepts_are_the_tones_the_diagram_draws():
    assert set(DIAGRAM_TONES) == set(TONES)


@pytest.mark.parametrize("q", [q for q in written() if q.content.diagrams], ids=lambda q: q.slug)
def test_every_declared_diagram_is_placed_drawn_and_not_shadowed(q):
    placed = {name for kind, name in q.content.directives() if kind == "diagram"}
    source = q.page_path.read_text()
    ctx = _ctx(q.slug)
    for dg in q.content.diagrams:
        assert dg.name in placed, f"{q.slug}: diagram '{dg.name}' is declared but no ::diagram line places it"
        assert f'@page.diagram("{dg.name}")' not in source, f"{q.slug}: '{dg.name}' declared twice"
        fig = _sent(content_diagram(dg, ctx.derivation, ctx.params))
        texts = [a["text"] for a in fig["layout"]["annotations"]] + [fig["layout"].get("title", {}).get("text", "")]
        assert not any("{{" in t or "**" in t for t in texts), f"{q.slug}: {dg.name}: {texts}"
