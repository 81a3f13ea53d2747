"""The class deployment for real: two replicas on one PostgreSQL, behind deploy/nginx.conf.

Browsers are pinned by nginx's sticky cookie (one fresh browser gets its cookie from nginx;
two are handed cookie values that nginx is known to send to replica A and to replica B), the
answers typed on both replicas land in the one database, and a replica killed with SIGKILL in
the middle of a mock interview costs the learner nothing: the page reconnects through nginx to
the other replica, which reloads the attempt from PostgreSQL, and the round goes on.
"""

from __future__ import annotations

import re
import signal
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest
from playwright.sync_api import expect

from models.core import PHASES
from models.registry import QUESTIONS
from store import Store
from tests.e2e.conftest import _free_port, start_server, stop_server, wait_idle
from tests.e2e.stack import COOKIE, Nginx

pytestmark = pytest.mark.e2e

SLUG = "batched-inference-api"


@pytest.fixture(scope="module")
def stack(pg_cluster, tmp_path_factory):
    db_url = pg_cluster.create_database("replicas")
    logs = tmp_path_factory.mktemp("replicas")
    ports = [_free_port(), _free_port()]
    while ports[0] == ports[1]:
        ports[1] = _free_port()
    servers = []
    nginx = None
    try:
        with ThreadPoolExecutor(2) as pool:  # both replicas boot at once, as in a deployment
            starting = [pool.submit(start_server, db_url, logs / f"{name}.log", port=port)
                        for name, port in zip("ab", ports, strict=True)]
        servers.extend(f.result()[0] for f in starting if f.exception() is None)  # stopped below
        for future in starting:
            future.result()  # re-raise a replica's failure to start
        try:
            nginx = Nginx(ports, _free_port())
        except RuntimeError as exc:
            pytest.fail(str(exc), pytrace=False)
        yield {"db": db_url, "ports": ports, "servers": servers, "nginx": nginx}
    finally:
        if nginx:
            nginx.stop()
        for proc in servers:
            stop_server(proc)
        if nginx:
            nginx.cleanup()


def _mock_attempt(db_url: str) -> str:
    """A mock attempt with every phase open (so every drill shows), as the load bench makes them."""
    q = QUESTIONS[SLUG]
    now = datetime.now(timezone.utc)
    with Store.open(db_url) as store:
        attempt = store.start_attempt("me", SLUG, "mock", q.Params().model_dump(mode="json"), seed=0,
                                      deadline=now + timedelta(minutes=45), settings={"round_min": 45}, now=now)
        for phase in PHASES:
            store.mark_phase(attempt, phase, now=now)
    return attempt


def _answered(upstream: str) -> str:
    """The replica that answered: the last of nginx's comma-separated list of tries."""
    return upstream.split(",")[-1].strip()


def _save(page, key: str, typed: str) -> None:
    box = page.locator(f".st-key-mockdrill-{key}")
    box.locator("input[type='text']").fill(typed)
    expect(box.locator("input[type='text']")).to_have_value(typed)
    box.get_by_role("button", name="Save").click()
    expect(box.get_by_text(re.compile(r"Saved at .*" + re.escape(typed)))).to_be_visible()


def test_sessions_pinned_to_both_replicas_one_database_and_a_killed_replica(stack, browser, browser_context_args):
    nginx: Nginx = stack["nginx"]
    port_a, port_b = stack["ports"]
    replica = {port_a: f"127.0.0.1:{port_a}", port_b: f"127.0.0.1:{port_b}"}
    keys = nginx.keys_for([port_a, port_b])
    drills = [d.key for d in QUESTIONS[SLUG].drills]
    attempts = {port_a: _mock_attempt(stack["db"]), port_b: _mock_attempt(stack["db"])}

    # A fresh browser: nginx picks a replica and sets the cookie; every later request follows it.
    fresh = browser.new_context(**browser_context_args)
    page = fresh.new_page()
    first = page.goto(f"{nginx.url}/")
    wait_idle(page)
    cookie = {c["name"]: c["value"] for c in fresh.cookies()}[COOKIE]
    assert re.fullmatch(r"[0-9a-f]{32}", cookie), cookie  # nginx's $request_id
    assert all(page.reload().headers["x-upstream"] == first.headers["x-upstream"] for _ in range(3))
    fresh.close()

    # Two learners pinned to the two replicas, each mid-way through a mock interview.
    pages = {}
    for port in (port_a, port_b):
        context = browser.new_context(**browser_context_args)
        context.add_cookies([{"name": COOKIE, "value": keys[port], "url": nginx.url}])
        page = context.new_page()
        response = page.goto(f"{nginx.url}/mock?attempt={attempts[port]}")
        assert response.headers["x-upstream"] == replica[port]
        wait_idle(page)
        pages[port] = page
    for port, tag in ((port_a, "1"), (port_b, "2")):
        _save(pages[port], drills[0], f"{tag}01")
        _save(pages[port], drills[1], f"{tag}02")

    # Replica A dies in the middle of its learner's round.
    proc_a = stack["servers"][0]
    proc_a.send_signal(signal.SIGKILL)
    proc_a.wait(timeout=10)

    # The page reconnects on its own; nginx sends it to B, which rebuilds the round from the store.
    page = pages[port_a]
    box = page.locator(f".st-key-mockdrill-{drills[1]}")
    expect(box.get_by_text(re.compile(r"Saved at .*102"))).to_be_visible(timeout=60_000)
    wait_idle(page, timeout=60_000)
    _save(page, drills[2], "103")
    _save(page, drills[0], "104")  # a re-answer, recorded through the other replica
    _save(pages[port_b], drills[2], "203")  # B's own learner never noticed
    response = page.reload()
    # nginx may try A again first (its fail_timeout ran out): "A, B" lists every upstream tried.
    assert _answered(response.headers["x-upstream"]) == replica[port_b]
    wait_idle(page)
    expect(page.locator(f".st-key-mockdrill-{drills[0]}").locator("input[type='text']")).to_have_value("104")

    # Every answer from both replicas, in order, in the one database.
    with Store.open(stack["db"]) as store:
        typed = {port: [a["typed"] for a in store.answers(attempts[port])] for port in (port_a, port_b)}
        latest = store.latest_answers(attempts[port_a])
        assert store.answer_count() == 7
    assert typed == {port_a: ["101", "102", "103", "104"], port_b: ["201", "202", "203"]}
    assert latest[drills[0]]["typed"] == "104"

    for page in pages.values():
        page.context.close()

    # nginx's log: each pinned browser stayed on its replica until A died, then A's moved to B.
    lines = nginx.log_lines()
    by_key = {key: [line for line in lines if line["sticky"] == key] for key in keys.values()}
    b_only = {line["upstream"] for line in by_key[keys[port_b]]}
    assert b_only == {replica[port_b]}, b_only
    a_seen = [_answered(line["upstream"]) for line in by_key[keys[port_a]]]
    assert replica[port_a] in a_seen and a_seen[-1] == replica[port_b], a_seen
    streams = [line for line in by_key[keys[port_a]] if line["request"].startswith("GET /_stcore/stream")]
    assert {s["status"] for s in streams} == {"101"} and len(streams) >= 2  # one socket per replica
    # The fresh browser: its first request (no cookie yet) was hashed on the very id nginx then
    # sent as its cookie, so all of its requests, the WebSocket included, went to one replica.
    fresh_lines = [line for line in lines if line["sticky"] == cookie]
    assert any(line["request"].startswith("GET /_stcore/stream") for line in fresh_lines)
    assert {line["upstream"] for line in fresh_lines} == {first.headers["x-upstream"]}
