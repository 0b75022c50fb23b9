"""A package's re-exported names, each imported from its module on first use (PEP 562).

One implementation for every package that keeps its imports lazy (``credit``,
``credit.guardrails``, ``credit.batch``): ``credit verify`` does not import the
underwriting to check a notice, and ``credit.batch.notices`` loads no Arrow.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose names ``homes`` maps
    to the modules (absolute names) they are imported from. A name is imported once:
    then it is the package's own attribute."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return __getattr__, __dir__
