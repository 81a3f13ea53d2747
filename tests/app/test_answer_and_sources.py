"""The answer on one screen, the steps that carry it, and cited sources (issues 24 and 25): the
content format and how the page turns it into Markdown."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from models.content import ContentError, parse_content
from ui.prose import cite, numbered_sources

FRONT = '''+++
hook = "h"
answer = """
Two replicas [src:vllm], then [src:sglang] and [src:vllm] again.
"""
carrying = ["a", "b"]

[[sources]]
id = "sglang"
title = "SGLang docs: server arguments"
url = "https://docs.sglang.ai/backend/server_arguments.html"

[[sources]]
id = "vllm"
title = "vLLM docs: engine arguments"
url = "https://docs.vllm.ai/en/latest/serving/engine_args.html"
+++
Intro cites [src:sglang] and [src:nowhere].

## Numbers
'''


def test_sources_are_numbered_in_the_order_first_cited_and_cited_as_links():
    c = parse_content(FRONT)
    assert c.answer.startswith("Two replicas") and c.carrying == ("a", "b")
    assert c.cited() == ["vllm", "sglang", "nowhere"]
    assert numbered_sources(c) == [
        (1, "vLLM docs: engine arguments", "https://docs.vllm.ai/en/latest/serving/engine_args.html"),
        (2, "SGLang docs: server arguments", "https://docs.sglang.ai/backend/server_arguments.html"),
    ]
    assert cite("Two [src:vllm] and [src:sglang], not [src:nowhere].", c) == (
        "Two [[1]](https://docs.vllm.ai/en/latest/serving/engine_args.html) and "
        "[[2]](https://docs.sglang.ai/backend/server_arguments.html), not [src:nowhere].")


@pytest.mark.parametrize("entry, wrong", [
    ('id = "a"\ntitle = "T"', "exactly id, title and url"),
    ('id = "a"\ntitle = "T"\nurl = "http://example.com"', "https://"),
    ('id = "A b"\ntitle = "T"\nurl = "https://example.com"', "lower-case"),
    ('id = "a"\ntitle = ""\nurl = "https://example.com"', "non-empty"),
])
def test_a_malformed_source_is_a_content_error_that_says_what(entry, wrong):
    with pytest.raises(ContentError, match=wrong):
        parse_content(f'+++\nhook = "h"\n[[sources]]\n{entry}\n+++\n')


def test_a_source_declared_twice_and_a_carrying_list_with_a_repeat_are_refused():
    two = '[[sources]]\nid = "a"\ntitle = "T"\nurl = "https://e.com"\n'
    with pytest.raises(ContentError, match="declared twice"):
        parse_content(f'+++\nhook = "h"\n{two}{two}+++\n')
    with pytest.raises(ContentError, match="names a step twice"):
        parse_content('+++\nhook = "h"\ncarrying = ["a", "a"]\n+++\n')


def _derivation_script():
    from models.core import Derivation
    from ui.derivation_view import derivation_view

    d = Derivation()
    d.step("rate", "Request rate", 2000.0, "1/s", noun="requests", kind="given")
    d.step("per_gpu", "Per GPU", 250.0, "1/s", noun="requests", kind="given")
    d.step("gpus", "GPUs", 8, "1", noun="GPUs", formula="{rate} / {per_gpu}")
    d.step("spare", "Spare GPUs", 1, "1", noun="GPUs", kind="given")
    derivation_view(d, carrying=("gpus", "rate"))


def test_the_derivation_shows_its_carrying_steps_in_model_order_and_every_step_behind_an_expander():
    at = AppTest.from_function(_derivation_script).run()
    assert not at.exception
    carried = at.get("markdown")
    texts = [m.value for m in carried]
    assert texts[0] == "**The arithmetic that carries the answer** (2 of 4 steps)"
    lines = texts[1].splitlines()
    assert lines[0].startswith("1. **Request rate**") and "`2,000 requests/s`" in texts[1]
    assert any(line.startswith("2. **GPUs**") for line in lines)
    assert "`2,000 requests/s / 250 requests/s = 8 GPUs`" in texts[1]
    assert "Spare GPUs" not in texts[1]
    assert at.expander[0].label == "Worked derivation: all 4 steps"
    # Closed, the expander sends nothing (the browser would lay its steps out on every move) ...
    assert not at.expander[0].markdown
    # ... and opened it holds every step.
    at.session_state["derivation"] = True
    at.run()
    assert "Spare GPUs" in at.expander[0].markdown[0].value
