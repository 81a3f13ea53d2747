"""Nested page paths (`/mock/extra/deeper`, `/mock/`) get the app, not a blank page.

Streamlit serves index.html for any unknown path, and the page loads its scripts relative to its
own address ("./static/js/..."). One level down that resolves to /static and works; two levels down
it resolves to /mock/extra/static, which is index.html again, so the browser shows nothing (with a
200). An app page is always one segment, so a deeper path is redirected to one segment: the page
itself for a trailing slash, else a name no page has, which gets Streamlit's own "Page not found".
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

# Segments of what Streamlit itself serves; a path holding one is never redirected. The frontend
# also probes `<page>/_stcore/health` to find the base path and must get Streamlit's own answer.
SERVED_BELOW_ROOT = ("_stcore", "static", "media", "component", "app", "auth", "oauth2callback", "-")


def flattened(path: str) -> str | None:
    """The one-segment path to send `path` to, or None when it is already fine."""
    parts = [p for p in path.split("/") if p]
    if not parts or any(p in SERVED_BELOW_ROOT for p in parts) or "." in parts[-1]:
        return None  # Streamlit's own routes, and files (favicon.png, manifest.json)
    if len(parts) == 1:
        return f"/{parts[0]}" if path.endswith("/") and path != "/" else None
    return "/" + quote("-".join(parts), safe="-._~")


class NestedPathRedirect:
    """ASGI middleware: a 302 from a nested page path to its one-segment form."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("method") in ("GET", "HEAD"):
            target = flattened(scope.get("path", ""))
            if target is not None:
                query = scope.get("query_string", b"").decode("latin-1")
                location = target + (f"?{query}" if query else "")
                await send({"type": "http.response.start", "status": 302,
                            "headers": [(b"location", location.encode("latin-1")), (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)


def install() -> None:
    """Add the redirect to the middleware Streamlit builds its server with (before it starts)."""
    from starlette.middleware import Middleware
    from streamlit.web.server.starlette import starlette_app

    original = starlette_app.create_streamlit_middleware
    if getattr(original, "_with_nested_redirect", False):
        return

    def with_redirect() -> list:
        return [*original(), Middleware(NestedPathRedirect)]

    with_redirect._with_nested_redirect = True
    starlette_app.create_streamlit_middleware = with_redirect
