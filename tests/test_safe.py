"""Typed text shown inside Markdown stays text: checked with a CommonMark parser."""

import html

from hypothesis import given, settings, strategies as st
from markdown_it import MarkdownIt

from ui.safe import code_span

md = MarkdownIt("commonmark")

PAYLOADS = [
    "<script>alert(1)</script>",
    "` [click](javascript:alert(1)) `",
    "``![img](http://x/y.png)``",
    "**bold** _it_ # head",
    "a`b``c```d",
    "`",
    "line one\nline two",
    "$x$ and $$y$$",
]


def _only_code(text: str) -> None:
    out = md.render("Saved: " + code_span(text)).strip()
    assert out.startswith("<p>Saved: <code>") and out.endswith("</code></p>"), out
    inner = out[len("<p>Saved: <code>"):-len("</code></p>")]
    assert "<" not in inner.replace("&lt;", ""), out  # no element produced inside the span
    assert html.unescape(inner).strip() == " ".join(text.split()).strip()


def test_known_payloads_render_as_code():
    for p in PAYLOADS:
        _only_code(p)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("`*_[]()!<>#$\\ab \n&;:/"), max_size=60))
def test_any_markdown_punctuation_stays_inside_the_span(text):
    if not " ".join(text.split()).strip():
        return
    _only_code(text)


def test_long_text_is_cut():
    assert len(code_span("x" * 1000)) < 210


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("`*_[]()!<>#$\\ab \n&;:/.-|~{}+"), max_size=60))
def test_escaped_text_renders_as_plain_text(text):
    from ui.safe import escape_markdown

    out = md.render(escape_markdown(text)).strip()
    body = out.removeprefix("<p>").removesuffix("</p>")
    assert "<" not in body.replace("&lt;", "").replace("<br />", ""), out
    assert html.unescape(body) == " ".join(text.split())
