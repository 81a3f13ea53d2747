"""prompt-playground-product: storage, revocation and export figures by hand, the version tree's
immutability and undo, the label compare-and-set, properties, the content, and the page."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.content import DIRECTIVE, load_content
from models.product.prompt_playground_product import (
    MAX_VERSIONS,
    ROOT_LINES,
    Params,
    add_version,
    diffs_to_render,
    export_curl,
    export_request,
    layout,
    mean_chain,
    move_label,
    new_tree,
    replay,
    snapshot_count,
    solve,
    undo,
)

SLUG = "prompt-playground-product"
ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "product" / "prompt-playground-product.md"


def v(d, key):
    return d.value(key)


# --- the page's scenario, by hand -------------------------------------------------------------------


def test_scenario_prompt_size():
    d = solve(Params())
    assert v(d, "prompt_tokens") == pytest.approx(400 * 1000 / 4)  # 100,000
    assert v(d, "prompt_lines") == pytest.approx(400 * 1000 / 80)  # 5,000
    assert v(d, "lazy_render_fraction") == pytest.approx(60 / 5000)  # 1.2%
    assert v(d, "body_home").startswith("object storage")  # 400 kB > 64 kB
    assert v(d, "cost_per_run_usd") == pytest.approx(100_000 * 3 / 1e6)  # $0.30


def test_scenario_storage():
    d = solve(Params())
    # N = 200 versions of S = 400 kB, edits e = 2 kB, a snapshot every k = 20
    assert v(d, "full_copies_KB") == pytest.approx(200 * 400)  # 80,000
    assert v(d, "snapshots_stored") == 10  # versions 0, 20, ..., 180
    assert v(d, "diffs_stored") == 190
    assert v(d, "snapshot_plus_diff_KB") == pytest.approx(10 * 400 + 190 * 2)  # 4,380
    assert v(d, "storage_saving_ratio") == pytest.approx(80_000 / 4_380)  # 18.26
    assert v(d, "worst_case_diffs_applied") == 20 - 1
    assert v(d, "mean_diffs_applied") == pytest.approx(sum(range(20)) / 20)  # 9.5
    assert v(d, "worst_case_read_KB") == pytest.approx(400 + 19 * 2)  # 438
    assert v(d, "diff_only_KB") == pytest.approx(400 + 199 * 2)  # 798
    assert v(d, "diff_only_worst_case_diffs") == 199
    assert v(d, "snapshot_overhead_KB") == pytest.approx(4_380 - 798)


def test_scenario_revocation():
    d = solve(Params())
    assert v(d, "revocation_staleness_bound_s") == pytest.approx(60 + 5)
    assert v(d, "body_link_staleness_bound_s") == pytest.approx(300)  # max(65, 300)
    assert v(d, "authz_reads_per_s") == pytest.approx(2000 / 60)


def test_scenario_request_limit_drafts_and_skip_deltas():
    d = solve(Params())
    assert v(d, "request_limit_share") == pytest.approx(400 / 1000)  # 40% of a 1 MB proxy limit
    assert v(d, "request_limit_tokens") == pytest.approx(1000 * 1000 / 4)  # 250,000 tokens pass
    assert v(d, "upload_path").startswith("through the API")
    assert v(d, "autosaves_per_hour") == pytest.approx(3600 / 5)  # 720 draft writes an hour
    # 200 versions: 127 = 0b1111111 has seven set bits, and no n < 200 has eight (255 is the first)
    assert v(d, "skip_delta_worst_diffs") == 7
    big = solve(Params(prompt_size_kB=4000))  # a 1M-token prompt of 4 MB
    assert v(big, "request_limit_share") == pytest.approx(4)
    assert v(big, "upload_path").startswith("straight from the client")


@pytest.mark.parametrize("n", [2, 3, 4, 7, 8, 9, 200, 1024, 1025, 9999])
def test_skip_delta_chain_is_the_most_set_bits_below_n(n):
    assert v(solve(Params(versions=n)), "skip_delta_worst_diffs") == max(bin(i).count("1") for i in range(n))


def test_variant_by_hand():
    p = Params(prompt_size_kB=1000, versions=50, edit_size_kB=10, snapshot_every=8, permission_cache_ttl_s=30,
               propagation_s=2, presigned_url_ttl_s=20, inline_limit_kB=1024, active_viewers=600)
    d = solve(p)
    assert v(d, "snapshots_stored") == 7  # 0, 8, 16, 24, 32, 40, 48
    assert v(d, "diffs_stored") == 43
    assert v(d, "full_copies_KB") == pytest.approx(50_000)
    assert v(d, "snapshot_plus_diff_KB") == pytest.approx(7 * 1000 + 43 * 10)  # 7,430
    assert v(d, "storage_saving_ratio") == pytest.approx(50_000 / 7_430)
    assert v(d, "worst_case_diffs_applied") == 7
    # six full runs of 0..7 (28 each) plus 0 and 1 for versions 48 and 49: 169 / 50
    assert v(d, "mean_diffs_applied") == pytest.approx(169 / 50)
    assert v(d, "revocation_staleness_bound_s") == pytest.approx(32)
    assert v(d, "body_link_staleness_bound_s") == pytest.approx(32)  # URLs expire first here
    assert v(d, "authz_reads_per_s") == pytest.approx(20)
    assert v(d, "body_home") == "the database row"  # 1,000 kB fits a 1,024 kB limit


def test_short_history_and_snapshot_every_version():
    d = solve(Params(versions=5, snapshot_every=20))
    assert v(d, "worst_case_diffs_applied") == 4  # only five versions: min(k, N) - 1
    assert v(d, "snapshots_stored") == 1
    d1 = solve(Params(snapshot_every=1))
    assert v(d1, "storage_saving_ratio") == pytest.approx(1)
    assert v(d1, "worst_case_diffs_applied") == 0


def test_whole_prompt_rewrites_lose_the_saving():
    d = solve(Params(edit_size_kB=200))
    # 10 x 400 + 190 x 200 = 42,000 kB; 80,000 / 42,000 = 1.9
    assert v(d, "snapshot_plus_diff_KB") == pytest.approx(42_000)
    assert v(d, "storage_saving_ratio") == pytest.approx(80_000 / 42_000)


# --- properties -----------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 3000), k=st.integers(1, 300))
def test_chain_helpers_match_brute_force(n, k):
    assert snapshot_count(n, k) == sum(1 for i in range(n) if i % k == 0)
    assert mean_chain(n, k) == pytest.approx(sum(i % k for i in range(n)) / n)


@settings(max_examples=150, deadline=None)
@given(k1=st.integers(1, 1000), k2=st.integers(1, 1000), n=st.integers(2, 10_000),
       s=st.floats(1, 10_000), frac=st.floats(0.0001, 1))
def test_longer_snapshot_interval_stores_less_and_renders_more(k1, k2, n, s, frac):
    lo, hi = sorted((k1, k2))
    e = max(0.01, s * frac)
    base = dict(versions=n, prompt_size_kB=s, edit_size_kB=min(e, 1000))
    d_lo, d_hi = solve(Params(snapshot_every=lo, **base)), solve(Params(snapshot_every=hi, **base))
    assert v(d_hi, "snapshot_plus_diff_KB") <= v(d_lo, "snapshot_plus_diff_KB") + 1e-6
    assert v(d_hi, "worst_case_diffs_applied") >= v(d_lo, "worst_case_diffs_applied")
    assert v(d_lo, "snapshot_plus_diff_KB") <= v(d_lo, "full_copies_KB") + 1e-6


@settings(max_examples=150, deadline=None)
@given(e1=st.floats(0.01, 1000), e2=st.floats(0.01, 1000))
def test_bigger_edits_never_raise_the_saving(e1, e2):
    lo, hi = sorted((e1, e2))
    assert v(solve(Params(edit_size_kB=hi)), "storage_saving_ratio") <= v(
        solve(Params(edit_size_kB=lo)), "storage_saving_ratio") + 1e-9


@settings(max_examples=150, deadline=None)
@given(t1=st.floats(1, 3600), t2=st.floats(1, 3600), prop=st.floats(0.1, 120), url=st.floats(10, 86_400))
def test_longer_ttl_staler_but_fewer_reads(t1, t2, prop, url):
    lo, hi = sorted((t1, t2))
    kw = dict(propagation_s=prop, presigned_url_ttl_s=url)
    d_lo, d_hi = solve(Params(permission_cache_ttl_s=lo, **kw)), solve(Params(permission_cache_ttl_s=hi, **kw))
    assert v(d_hi, "revocation_staleness_bound_s") >= v(d_lo, "revocation_staleness_bound_s")
    assert v(d_hi, "authz_reads_per_s") <= v(d_lo, "authz_reads_per_s")
    for d in (d_lo, d_hi):
        assert v(d, "body_link_staleness_bound_s") >= v(d, "revocation_staleness_bound_s")


# --- the version tree -------------------------------------------------------------------------------


ops_strategy = st.lists(st.tuples(st.sampled_from("eu"), st.integers(0, 1000)), max_size=25)


def _apply_random(tree, ops):
    """Apply ops whose target is taken modulo the tree size; skip an undo of the root."""
    for op, raw in ops:
        vid = raw % len(tree)
        if op == "u" and tree.get(vid).parent is None:
            continue
        yield (add_version(tree, vid) if op == "e" else undo(tree, vid)), op, vid, tree
        tree = add_version(tree, vid) if op == "e" else undo(tree, vid)


@settings(max_examples=150, deadline=None)
@given(ops=ops_strategy)
def test_no_operation_mutates_an_existing_version(ops):
    tree = new_tree()
    for new, op, vid, old in _apply_random(tree, ops):
        snapshot = [dataclasses.astuple(x) for x in old.versions]
        assert len(new) == len(old) + 1
        # every earlier version is the very same object, unchanged
        assert all(a is b for a, b in zip(new.versions, old.versions))
        assert [dataclasses.astuple(x) for x in old.versions] == snapshot
        added = new.versions[-1]
        assert added.id == len(old) and added.parent == vid and added.depth == old.get(vid).depth + 1
        if op == "u":
            target = old.get(vid)
            assert added.kind == "undo"
            assert added.lines == old.get(target.parent).lines
            assert added.restores == target.parent
        else:
            assert added.lines[:-1] == old.get(vid).lines


def test_versions_are_frozen():
    tree = add_version(new_tree(), 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tree.versions[1].lines = ("rewritten",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tree.versions = ()


def test_undo_is_a_new_version_and_undo_of_undo_is_redo():
    t = replay("e0.e1")  # v0 -> v1 -> v2
    u = undo(t, 2)
    assert len(u) == 4 and len(t) == 3  # the old tree is untouched
    v3 = u.get(3)
    assert v3.parent == 2 and v3.kind == "undo" and v3.lines == t.get(1).lines and v3.restores == 1
    r = undo(u, 3)
    assert r.get(4).lines == t.get(2).lines and r.get(4).restores == 2
    with pytest.raises(ValueError):
        undo(t, 0)


def test_branch_history_tips_and_layout():
    t = replay("e0.e1.e2.e1.u3")  # the page's demo
    assert t.children(1) == (2, 4)  # v4 branches from v1
    assert set(t.tips()) == {4, 5}
    assert t.history(5) == (5, 3, 2, 1, 0)
    assert t.get(5).lines == t.get(2).lines  # undo of v3 restores v2's body
    assert "branch from v1" in t.get(4).note
    pos = layout(t)
    assert len(set(pos.values())) == len(t)  # no two versions drawn on the same spot
    assert pos[4][1] != pos[2][1] and pos[2][1] == pos[1][1]  # a branch opens a lane
    assert [t.get(i).depth for i in range(6)] == [0, 1, 2, 3, 2, 4]
    assert [diffs_to_render(t, i, 2) for i in range(6)] == [0, 1, 0, 1, 0, 0]  # depth mod 2


def test_replay_rejects_nonsense_and_is_deterministic():
    assert replay("") == new_tree()
    assert new_tree().get(0).lines == ROOT_LINES
    assert replay("e0.u1") == replay("e0.u1")
    for bad in ("x0", "e5", "e0.u9", "e", "e0..e1", "u0"):
        with pytest.raises(ValueError):
            replay(bad)
    with pytest.raises(ValueError):
        replay(".".join(["e0"] * MAX_VERSIONS))


def test_two_saves_on_one_parent_both_survive_and_one_label_move_wins():
    t = replay("e0.e1")
    labels = {"latest": 2}
    alice = add_version(t, 2)  # Alice saves v3 on v2 ...
    both = add_version(alice, 2)  # ... Bob saves v4 on v2 at the same time
    assert both.children(2) == (3, 4)
    labels, ok_a = move_label(labels, "latest", 2, 3)
    labels2, ok_b = move_label(labels, "latest", 2, 4)  # Bob still believes latest is v2
    assert ok_a and not ok_b
    assert labels2 == {"latest": 3}
    assert set(both.tips()) == {3, 4}  # Bob's version is kept, as a branch
    _, ok = move_label(labels2, "latest", 3, 4)  # after a rebase, a fresh CAS succeeds
    assert ok


def test_export_is_a_messages_api_request():
    t = replay("e0.e1")
    body = export_request(t.get(2).lines, max_tokens=512)
    assert json.loads(json.dumps(body)) == body
    assert body["system"] == "\n".join(t.get(2).lines)
    assert body["max_tokens"] == 512 and body["messages"][0]["role"] == "user"
    inline = export_curl(body)
    assert "https://api.anthropic.com/v1/messages" in inline and "anthropic-version: 2023-06-01" in inline
    assert "x-api-key: $ANTHROPIC_API_KEY" in inline
    assert export_curl(body, "v2.json").endswith("--data @v2.json")
    quoted = export_curl(export_request(("Don't guess.",)))
    assert "Don'\\''t" in quoted  # a single quote survives the shell


# --- the page's own figures and prose (the contract every page meets: tests/test_contract.py) --------


def test_the_page_draws_its_version_tree():
    directives = {(m.group(1), m.group(2)) for s in load_content(CONTENT).sections for line in s.body.splitlines()
                  if (m := DIRECTIVE.match(line.strip()))}
    assert ("sim", "version_tree") in directives


def test_presets_teach_what_they_say():
    by_name = {p.name: p.values for p in load_content(CONTENT).presets}
    rewrite = solve(Params(**by_name["Every save rewrites the prompt"]))
    assert v(rewrite, "storage_saving_ratio") == pytest.approx(1.9, abs=0.05)
    assert v(solve(Params(**by_name["A snapshot every version"])), "storage_saving_ratio") == pytest.approx(1)
    short = solve(Params(**by_name["A five-second permission cache"]))
    assert v(short, "revocation_staleness_bound_s") == pytest.approx(10)
    assert v(short, "authz_reads_per_s") == pytest.approx(400)


# --- the page, through AppTest ----------------------------------------------------------------------


@pytest.fixture
def app(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    return AppTest.from_file(str(ROOT / "pages" / "product" / "prompt_playground_product.py"), default_timeout=30)


def _table(at):
    """The version table (AppTest does not expose a dataframe's key, so find it by its columns)."""
    (frame,) = [d.value for d in at.dataframe if "Diffs to render" in d.value.columns]
    return frame


def _qp(at, key):
    value = at.query_params.get(key)
    return value[0] if isinstance(value, list) else value


def test_page_edits_branches_and_undoes(app):
    at = app.run()
    assert not at.exception, [e.value for e in at.exception]
    assert _qp(at, f"{SLUG}.sim_ops") == "e0.e1.e2.e1.u3"
    assert at.selectbox(key=f"{SLUG}.sim_selected").value == 5
    at.selectbox(key=f"{SLUG}.sim_selected").set_value(1).run()
    at.button(key=f"{SLUG}.sim_edit").click().run()  # v1 has children: a branch
    assert not at.exception, [e.value for e in at.exception]
    assert _qp(at, f"{SLUG}.sim_ops") == "e0.e1.e2.e1.u3.e1"
    assert at.selectbox(key=f"{SLUG}.sim_selected").value == 6
    at.button(key=f"{SLUG}.sim_undo").click().run()
    assert _qp(at, f"{SLUG}.sim_ops") == "e0.e1.e2.e1.u3.e1.u6"
    table = _table(at)
    assert len(table) == 8 and table["Kind"].iloc[-1] == "undo" and table["Parent"].iloc[-1] == "v6"
    at.button(key=f"{SLUG}.sim_reset").click().run()
    assert len(_table(at)) == 1


def test_page_replays_a_linked_tree_and_survives_a_bad_one(app):
    app.query_params[f"{SLUG}.sim_ops"] = "e0.u1"
    at = app.run()
    assert not at.exception
    assert len(_table(at)) == 3
    assert not [i for i in at.info if "Ignored" in i.value]  # the URL checker accepts the key


def test_page_announces_an_unreplayable_link(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(ROOT / "pages" / "product" / "prompt_playground_product.py"), default_timeout=30)
    at.query_params[f"{SLUG}.sim_ops"] = "e0.u9"
    at.run()
    assert not at.exception
    assert any("could not be replayed" in w.value for w in at.warning)
    assert len(_table(at)) == 6
