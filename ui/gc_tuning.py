"""Freeze what the first page run loaded, so Python's full collections stop rescanning it.

A page run with plotly, pint, numpy and Streamlit loaded tracks ~110,000 long-lived objects, and
Python's automatic full collection walked them all every few reruns: 80-100 ms added to one
slider move in five (measured with gc.callbacks). gc.freeze() moves the objects alive now into a
permanent generation that collections skip; objects freed by reference counting are still freed.
Called once per process after the first page run. It imports every model and UI module first,
so what later pages import is frozen too (a bench over all 38 pages in one process had reruns
of 200-300 ms one in five otherwise); the cyclic garbage of that one run stays (a few kB).
"""

from __future__ import annotations

import gc
import importlib
import pkgutil

_frozen = False


def freeze_once() -> None:
    global _frozen
    if not _frozen:
        _frozen = True
        import models
        import ui

        for package in (models, ui):
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                importlib.import_module(info.name)
        gc.collect()
        gc.freeze()
