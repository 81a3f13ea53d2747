"""configlib.parse: TOML or JSON text -> dict, or one plain sentence naming the layer and the
line. Line and column numbers below are counted by hand from the test's own text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from models.configlib import parse_layer


def test_toml_and_json_give_the_same_dict():
    toml_text = '[optim]\nlr = 1.5e-4\nbetas = [0.9, 0.95]\n\n[train]\nseed = 17\n'
    json_text = '{\n  "train": {"seed": 17},\n  "optim": {"betas": [0.9, 0.95], "lr": 0.00015}\n}'
    expected = {"optim": {"lr": 1.5e-4, "betas": [0.9, 0.95]}, "train": {"seed": 17}}
    assert parse_layer("x", toml_text).data == expected
    assert parse_layer("x", json_text).data == expected


def test_blank_text_is_an_empty_layer():
    for text in ("", "   ", "\n\t\n"):
        out = parse_layer("Base", text)
        assert out.data == {} and out.error is None
    assert parse_layer("Base", "{}").data == {}


def test_toml_error_names_the_layer_line_and_column():
    # "b = " then the newline: b(1) space(2) =(3) space(4) newline(5)
    e = parse_layer("Experiment", "a = 1\nb = \n").error
    assert e == "Experiment layer (TOML), line 2, column 5: Invalid value."
    e = parse_layer("Experiment", "a = 1\na = 2\n").error
    assert e.startswith("Experiment layer (TOML), line 2, column ") and "overwrite" in e


def test_toml_error_at_the_end_of_the_text():
    assert parse_layer("Pins", 'a = "x').error == "Pins layer (TOML), at the end: Unterminated string."


def test_json_error_names_the_layer_line_and_column():
    # { " a " : space 1 , } -> the closing brace is column 9
    e = parse_layer("Pins", '{"a": 1,}').error
    assert e == "Pins layer (JSON), line 1, column 9: Expecting property name enclosed in double quotes."
    e = parse_layer("Pins", '{\n  "env": {"image": 1,}\n}').error
    assert e.startswith("Pins layer (JSON), line 2") and "Traceback" not in e


def test_a_toml_date_must_be_quoted_and_the_error_gives_its_path():
    e = parse_layer("Base", "[data]\nsnapshot = 2025-06-02\n").error
    assert e == ("Base layer: `data.snapshot` is a TOML date or time; quote it as a string "
                 "(the hash is computed over JSON).")
    assert "`l[1]`" in parse_layer("Base", "l = [1, 1979-05-27T07:32:00Z]").error
    assert parse_layer("Base", '[data]\nsnapshot = "2025-06-02"\n').data == {"data": {"snapshot": "2025-06-02"}}


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=80))
def test_parse_layer_never_raises(text):
    out = parse_layer("Layer", text)
    assert (out.data is None) != (out.error is None)
    if out.error:
        assert out.error.startswith("Layer layer")
