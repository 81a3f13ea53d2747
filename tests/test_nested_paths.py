"""Nested page paths go to one segment; what Streamlit serves below the root is left alone."""

import pytest

from ui.nested_paths import NestedPathRedirect, flattened


@pytest.mark.parametrize(("path", "to"), [
    ("/mock/extra/deeper", "/mock-extra-deeper"),
    ("/mock/", "/mock"),
    ("/serving-platform/x", "/serving-platform-x"),
    ("/mock", None), ("/", None), ("", None),
    ("/static/js/index.js", None), ("/_stcore/health", None), ("/media/abc.png", None),
    ("/component/x/index.html", None), ("/app/static/logo.png", None),
    ("/batched-inference-api/_stcore/health", None),  # the frontend's base-path probe
    ("/batched-inference-api/_stcore/host-config", None), ("/mock/extra/favicon.png", None),
])
def test_flattened(path, to):
    assert flattened(path) == to


def _drive(coro) -> None:
    """Run a coroutine that never really waits (asyncio.run refuses inside the event loop the
    browser tests leave on this worker's thread)."""
    try:
        coro.send(None)
    except StopIteration:
        return
    raise AssertionError("the middleware waited on something")


def test_the_redirect_keeps_the_query_and_passes_everything_else_on():
    seen, sent = [], []

    async def app(scope, receive, send):
        seen.append(scope["path"])

    async def send(message):
        sent.append(message)

    mw = NestedPathRedirect(app)
    _drive(mw({"type": "http", "method": "GET", "path": "/mock/a", "query_string": b"profile=ann"}, None, send))
    assert sent[0]["status"] == 302 and (b"location", b"/mock-a?profile=ann") in sent[0]["headers"]
    _drive(mw({"type": "http", "method": "GET", "path": "/mock", "query_string": b""}, None, send))
    _drive(mw({"type": "websocket", "path": "/_stcore/stream"}, None, send))
    assert seen == ["/mock", "/_stcore/stream"]
