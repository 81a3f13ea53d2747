"""Showing text a person typed inside Markdown without letting it become Markdown.

Streamlit renders Markdown (and `$...$` as LaTeX) but never raw HTML unless asked, and we never
ask. What remains is Markdown injection: a backtick that closes our code span early, a link, an
image. A CommonMark code span fenced with more backticks than the text contains cannot be
closed from inside, and nothing inside a code span is interpreted.
"""

from __future__ import annotations

import re

_BACKTICKS = re.compile(r"`+")


def code_span(text: str, limit: int = 200) -> str:
    """`text` as an inline code span that nothing inside can break out of."""
    text = " ".join(str(text).split())  # one line: a newline would end the span's paragraph
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    if not text:
        return "` `"
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:])")


def escape_markdown(text: str) -> str:
    """Backslash-escape every character Markdown (or Streamlit's LaTeX) could act on.

    For messages that quote what someone typed, e.g. "Could not read a number in '...'"."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


NUL_PROBLEM = ("This text holds a NUL character (\\0, often pasted from a binary file or a terminal), which "
               "cannot be stored. Remove it and try again; nothing else was changed.")


def has_nul(text: str) -> bool:
    """A NUL cannot be stored (PostgreSQL text refuses it, and the store refuses it on both engines)."""
    return "\x00" in text
