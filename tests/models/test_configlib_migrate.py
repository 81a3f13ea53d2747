"""configlib.migrate: renamed keys move to their new names, once."""

from __future__ import annotations

from models.configlib import Field, Schema, migrate, validate
from models.configlib.training_schema import TRAINING_SCHEMA


def test_the_training_schema_renames_two_keys():
    old = {"optim": {"learning_rate": 2e-4, "schedule": "cosine"}, "batch": {"micro_batch_size": 8}}
    new, notes = migrate(old, TRAINING_SCHEMA)
    assert new == {"optim": {"schedule": "cosine", "lr": 2e-4}, "batch": {"micro_batch": 8}}
    assert notes == ["moved `optim.learning_rate` to `optim.lr`",
                     "moved `batch.micro_batch_size` to `batch.micro_batch`"]
    assert old == {"optim": {"learning_rate": 2e-4, "schedule": "cosine"}, "batch": {"micro_batch_size": 8}}


def test_migration_is_idempotent():
    new, _ = migrate({"optim": {"learning_rate": 2e-4}}, TRAINING_SCHEMA)
    again, notes = migrate(new, TRAINING_SCHEMA)
    assert again == new == {"optim": {"lr": 2e-4}} and notes == []


def test_both_names_set_keeps_the_new_value():
    both, notes = migrate({"optim": {"learning_rate": 1e-3, "lr": 2e-4}}, TRAINING_SCHEMA)
    assert both == {"optim": {"lr": 2e-4}}
    assert notes == ["dropped `optim.learning_rate`: `optim.lr` is already set"]


def test_a_move_across_tables_leaves_no_empty_table_behind():
    schema = Schema({"new.deep.x": Field("int"), "keep.y": Field("int")}, version=2,
                    renamed={"old.deep.x": "new.deep.x"})
    out, notes = migrate({"old": {"deep": {"x": 1}}, "keep": {"y": 2}}, schema)
    assert out == {"new": {"deep": {"x": 1}}, "keep": {"y": 2}}
    assert notes == ["moved `old.deep.x` to `new.deep.x`"]
    assert validate(out, schema)[1] == []  # an `old: {}` left behind would be an unknown table
    out, _ = migrate({"old": {"deep": {"x": 1}, "z": 0}}, schema)
    assert out == {"old": {"z": 0}, "new": {"deep": {"x": 1}}}  # a table still holding keys stays


def test_a_migrated_v1_file_validates_where_the_original_is_rejected():
    schema = Schema({"optim.lr": Field("float", gt=0)}, version=2, renamed={"optim.learning_rate": "optim.lr"})
    v1 = {"optim": {"learning_rate": 3e-4}}
    assert [(i.path, i.kind) for i in validate(v1, schema)[1]] == [("optim.learning_rate", "unknown"),
                                                                   ("optim.lr", "missing")]
    assert validate(migrate(v1, schema)[0], schema)[1] == []
