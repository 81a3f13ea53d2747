"""Freeze what the first page run loaded, so Python's full collections stop rescanning it.

A page run with plotly, pint, numpy and Streamlit loaded tracks ~110,000 long-lived objects, and
Python's automatic full collection walked them all every few reruns: 80-100 ms added to one
slider move in five (measured with gc.callbacks). gc.freeze() moves the objects alive now into a
permanent generation that collections skip; objects freed by reference counting are still freed.
Called once per process after the first page run, when the heavy modules are imported; the
cyclic garbage of that one run stays (a few kB).
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_once() -> None:
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()
        gc.freeze()
