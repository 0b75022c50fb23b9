"""What is built once per immutable object (a loaded policy), and kept while it lives.

A :class:`~credit.policy.Policy` is immutable, so what is derived from it alone (the
views a step reads, the figures a reason states that every file shares) never goes
stale. It is kept by the object's identity, not its value: a policy copied with other
parameters (``model_copy(update=...)``) is another object and gets its own. The entry
goes when the object does (a weak reference), so a process that loads many policies
keeps nothing for those it dropped."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["KeptPer"]

_Of = TypeVar("_Of")
_Built = TypeVar("_Built")


class KeptPer(Generic[_Of, _Built]):
    """``build(obj)``, built once for each object while it lives."""

    def __init__(self, build: Callable[[_Of], _Built]) -> None:
        self._build = build
        self._kept: dict[int, tuple[weakref.ref[_Of], _Built]] = {}

    def __call__(self, obj: _Of) -> _Built:
        entry = self._kept.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        key, kept = id(obj), self._kept  # the callback may run at shutdown
        built = self._build(obj)
        kept[key] = (weakref.ref(obj, lambda _: kept.pop(key, None)), built)
        return built
