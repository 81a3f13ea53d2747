"""configlib.validate against a small schema written here: every message is spelled out by hand,
so a changed word, a lost check or a lossy conversion fails a test."""

from __future__ import annotations

from models.configlib import Field, Issue, Schema, validate

FIELDS = {
    "run.name": Field("str"),
    "run.steps": Field("int", lo=1),
    "run.lr": Field("float", gt=0, hi=1),
    "run.betas": Field("list[float]", lo=0, hi=1, length=2),
    "run.kind": Field("str", choices=("a", "b")),
    "run.commit": Field("str", pattern=r"[0-9a-f]{4}", help="a 4-digit hex id"),
    "run.tags": Field("list[str]"),
    "net.shape.width": Field("int", lo=1),
}
SCHEMA = Schema(FIELDS, version=3, renamed={"run.learning_rate": "run.lr"})


def good() -> dict:
    return {"run": {"name": "x", "steps": 10, "lr": 0.1, "betas": [0.9, 0.95], "kind": "a", "commit": "beef",
                    "tags": ["t"]},
            "net": {"shape": {"width": 4}}}


def with_run(**run) -> dict:
    cfg = good()
    cfg["run"].update(run)
    return cfg


def messages(cfg: dict, schema: Schema = SCHEMA) -> list[str]:
    return [i.message for i in validate(cfg, schema)[1]]


def test_a_good_config_passes_unchanged():
    normalized, issues = validate(good(), SCHEMA)
    assert issues == [] and normalized == good()


def test_sections_are_every_table_on_the_way_to_a_field():
    assert SCHEMA.sections == ("net", "net.shape", "run")


def test_only_lossless_conversions_and_the_input_is_untouched():
    cfg = with_run(steps=1e12, lr=1, betas=[1, 0])
    normalized, issues = validate(cfg, SCHEMA)
    assert issues == []
    assert normalized["run"]["steps"] == 1_000_000_000_000 and type(normalized["run"]["steps"]) is int
    assert normalized["run"]["lr"] == 1.0 and type(normalized["run"]["lr"]) is float
    assert normalized["run"]["betas"] == [1.0, 0.0] and all(type(x) is float for x in normalized["run"]["betas"])
    assert cfg["run"]["steps"] == 1e12 and type(cfg["run"]["lr"]) is int  # validate copies


def test_type_messages():
    assert messages(with_run(steps=10.5)) == ["`run.steps` must be an integer, got a fraction 10.5."]
    assert messages(with_run(steps=True)) == ["`run.steps` must be an integer, got a boolean true."]
    assert messages(with_run(lr="0.1")) == ['`run.lr` must be a number, got a string "0.1".']
    assert messages(with_run(tags="t")) == ['`run.tags` must be a list of strings, got a string "t".']
    assert messages(with_run(tags=[1])) == ["`run.tags` must be a list of strings, got a list [1]."]
    assert messages(with_run(name={"a": 1})) == ['`run.name` must be a string, got a table {"a": 1}.']


def test_range_messages():
    assert messages(with_run(lr=0)) == ["`run.lr` must be above 0, got 0."]
    assert messages(with_run(lr=2)) == ["`run.lr` must be at most 1, got 2."]
    assert messages(with_run(steps=0)) == ["`run.steps` must be at least 1, got 0."]
    assert messages(with_run(betas=[0.9])) == ["`run.betas` needs exactly 2 values, got 1."]
    assert messages(with_run(betas=[0.9, 1.5])) == ["`run.betas` must be at most 1, got 1.5."]
    assert messages(with_run(kind="c")) == ["`run.kind` must be one of a, b; got 'c'."]
    assert messages(with_run(commit="BEEF")) == ["`run.commit` must be a 4-digit hex id; got 'BEEF'."]
    assert messages(with_run(tags=[])) == ["`run.tags` needs at least one entry."]


def test_missing_key():
    cfg = good()
    del cfg["run"]["kind"]
    (issue,) = validate(cfg, SCHEMA)[1]
    assert (issue.path, issue.kind, issue.message) == ("run.kind", "missing", "`run.kind` is missing (a string).")


def test_unknown_key_names_the_closest_one_and_what_runs_instead():
    cfg = with_run(stpes=20)
    (issue,) = validate(cfg, SCHEMA)[1]
    assert issue.kind == "unknown"
    assert issue.message == "unknown key `run.stpes`. Did you mean `run.steps`?"
    assert issue.silently == "ignored: the run uses `run.steps` = 10 from another layer"
    (issue,) = validate({**good(), "zzz": 1}, SCHEMA)[1]
    assert issue.message == "unknown key `zzz`." and issue.silently == "ignored: nothing reads it"


def test_unknown_table_and_a_deep_typo():
    (issue,) = validate({**good(), "rn": {"lr": 0.2}}, SCHEMA)[1]
    assert issue.message == "unknown table `rn`. Did you mean `run`?"
    cfg = good()
    cfg["net"]["shape"]["widht"] = 8
    (issue,) = validate(cfg, SCHEMA)[1]
    assert issue.message == "unknown key `net.shape.widht`. Did you mean `net.shape.width`?"


def test_a_section_that_is_not_a_table():
    cfg = {**good(), "net": 3}
    issues = validate(cfg, SCHEMA)[1]
    assert [(i.path, i.kind) for i in issues] == [("net", "type"), ("net.shape.width", "missing")]
    assert issues[0].message == "`net` must be a table of settings, got an integer."


def test_the_computed_section_and_a_renamed_key():
    issues = validate({**good(), "derived": {"x": 1}}, SCHEMA)[1]
    assert [i.message for i in issues] == ["`derived` is computed by the resolver; a layer may not set it."]
    (issue,) = validate(with_run(learning_rate=0.5), SCHEMA)[1]
    assert issue.message == "`run.learning_rate` was renamed to `run.lr` in schema v3; migrate the file (`migrate`)."
    assert issue.silently == "ignored: the run uses `run.lr` = 0.1 from another layer"


def test_cross_checks_see_only_the_leaves_that_passed_normalized():
    seen = []

    def cross(v):
        seen.append(dict(v))
        return [Issue("run.steps", "cross", "steps and lr disagree.", "")] if v.get("run.lr") == 1.0 else []

    schema = Schema(FIELDS, cross_checks=cross)
    issues = validate(with_run(steps=0, lr=1), schema)[1]
    assert [(i.path, i.kind) for i in issues] == [("run.steps", "range"), ("run.steps", "cross")]
    assert "run.steps" not in seen[0]  # it failed its own range check
    assert seen[0]["run.lr"] == 1.0 and type(seen[0]["run.lr"]) is float


def test_issues_come_unknown_first_then_in_field_order():
    cfg = with_run(zz=1, lr="x", steps=0)
    del cfg["run"]["name"]
    assert [(i.path, i.kind) for i in validate(cfg, SCHEMA)[1]] == [
        ("run.zz", "unknown"), ("run.name", "missing"), ("run.steps", "range"), ("run.lr", "type")]


def test_validate_never_raises_on_odd_shapes():
    for cfg in ({}, {"run": 3}, {"run": {"betas": "x"}}, {"a": {"b": {}}}, {"net": {"shape": 1}},
                {"run": {"steps": float("inf")}}, {"run": {"tags": [None]}}):
        normalized, issues = validate(cfg, SCHEMA)
        assert issues, cfg
