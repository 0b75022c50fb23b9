"""What is built once per immutable object (a loaded policy), and kept while it lives;
the read-only mapping that keeps such an object immutable all the way down; and a
bounded table of the values of the keys used last (:class:`Recent`), for what is kept
by a key rather than by an object.

A :class:`~credit.policy.Policy` is immutable, so what is derived from it alone (the
views a step reads, the figures a reason states that every file shares) never goes
stale. It is kept by the object's identity, not its value: a policy copied with other
parameters (``model_copy(update=...)``) is another object and gets its own. The entry
goes when the object does (a weak reference), so a process that loads many policies
keeps nothing for those it dropped."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from pydantic import AfterValidator

__all__ = [
    "READ_ONLY",
    "KeptPer",
    "ReadOnlyDict",
    "ReadOnlyList",
    "Recent",
    "frozen_json",
    "read_only",
    "read_only_fields",
]

_Of = TypeVar("_Of")
_Built = TypeVar("_Built")
_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


class KeptPer(Generic[_Of, _Built]):
    """``build(obj)``, built once for each object while it lives.

    What is built may hold the object itself (a batch plan holds its policy): then the
    entry keeps the object alive, and only ``most`` bounds what is kept: past that many
    objects, the one used least recently is let go (its entry dropped, so the object
    goes once nothing else holds it, and is built again if it comes back). Without
    ``most``, what is built must not hold the object, or neither ever goes."""

    def __init__(self, build: Callable[[_Of], _Built], *, most: int | None = None) -> None:
        if most is not None and most < 1:
            raise ValueError(f"most must be at least 1, not {most}")
        self._build = build
        self._most = most
        self._kept: dict[int, tuple[weakref.ref[_Of], _Built]] = {}

    def __call__(self, obj: _Of) -> _Built:
        key, kept = id(obj), self._kept  # (the callback may run at shutdown)
        entry = kept.get(key)
        if entry is not None and entry[0]() is obj:
            if self._most is not None and kept.pop(key, None) is not None:
                kept[key] = entry  # the most recently used last
            return entry[1]
        built = self._build(obj)
        kept.pop(key, None)  # a dead object's entry at this address (its callback pending)
        kept[key] = (weakref.ref(obj, lambda ref: _drop(kept, key, ref)), built)
        if self._most is not None:
            _trim(kept, self._most)
        return built


class Recent(Generic[_Key, _Value]):
    """The values of the ``most`` keys used last (a bounded table: a key read or kept
    becomes the newest, and past ``most`` keys the oldest go). Each step is one
    operation on its dict, so threads may share one: at worst a value is built twice.
    For what is kept by a key that is not an immutable object (:class:`KeptPer` is
    for those)."""

    def __init__(self, most: int) -> None:
        if most < 1:
            raise ValueError(f"most must be at least 1, not {most}")
        self._most = most
        self._kept: dict[_Key, _Value] = {}

    def get(self, key: _Key) -> _Value | None:
        """The value kept for ``key`` (None: none), now the newest."""
        value = self._kept.pop(key, None)
        if value is not None:
            self._kept[key] = value
        return value

    def put(self, key: _Key, value: _Value) -> None:
        """Keep ``value`` for ``key``, the newest; the oldest go past ``most``."""
        kept = self._kept
        kept.pop(key, None)
        kept[key] = value
        _trim(kept, self._most)

    def __len__(self) -> int:
        return len(self._kept)


def _trim(kept: dict[Any, Any], most: int) -> None:
    """The oldest keys (a dict keeps its keys in the order put) taken out until at most
    ``most`` are left: one at a time from the front, without reading the other keys
    (a copy of every key was most of a put into a table of a thousand). Each step is
    one operation on the dict; if another thread changes it between two (the iterator
    then raises), the next put trims what is left."""
    while len(kept) > most:
        try:
            oldest = next(iter(kept))
        except (RuntimeError, StopIteration):
            return
        kept.pop(oldest, None)


def _drop(kept: dict[int, tuple[weakref.ref[Any], Any]], key: int, ref: weakref.ref[Any]) -> None:
    """A dead object's entry taken out (not a newer object's at the same address)."""
    entry = kept.get(key)
    if entry is not None and entry[0] is ref:
        kept.pop(key, None)


class _Refuses:
    """What a read-only container does when asked to change: refuses."""

    __slots__ = ()
    _REFUSAL = (
        "read-only: loaded data is not changed in place; a version with other values "
        "is another object, built from a copy"
    )

    def _read_only(self, *_: object, **__: object) -> Any:
        raise TypeError(self._REFUSAL)


class ReadOnlyDict(_Refuses, dict[_Key, _Value]):
    """A mapping of loaded data (a policy's parameters, the catalogue's entries, the
    legal frame's texts) that refuses every change once made: what is derived from the
    object that holds it is kept by that object (above, and the verifier's answers
    kept per pinned data), so its data cannot change under what was kept. A version
    with other values is another object, built from a copy (``{**mapping, key: ...}``
    is a plain dict). A dict otherwise: it reads, compares, copies into a dict and
    pickles (to another process) as one. What is derived from one alone may be kept
    while it lives (it can be referred to weakly: :class:`KeptPer`)."""

    __slots__ = ("__weakref__",)
    __setitem__ = __delitem__ = __ior__ = _Refuses._read_only
    clear = pop = popitem = setdefault = update = _Refuses._read_only

    def __reduce__(self) -> tuple[type[ReadOnlyDict[_Key, _Value]], tuple[dict[_Key, _Value]]]:
        return type(self), (dict(self),)


class ReadOnlyList(_Refuses, list[_Value]):
    """A JSON array that refuses every change once made (what :func:`frozen_json`
    gives for one): a list otherwise, so it reads, compares with a list, writes as
    JSON and pickles as one."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _Refuses._read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _Refuses._read_only

    def __reduce__(self) -> tuple[type[ReadOnlyList[_Value]], tuple[list[_Value]]]:
        return type(self), (list(self),)


_ReadOnly = TypeVar("_ReadOnly", bound=ReadOnlyDict[Any, Any])


def read_only(
    mapping: Mapping[Any, Any],
    kind: type[_ReadOnly] = ReadOnlyDict,  # type: ignore[assignment]
) -> _ReadOnly:
    """``mapping`` as a read-only dict of ``kind`` (itself when it is one)."""
    return mapping if isinstance(mapping, kind) else kind(mapping)


# A pydantic field's mapping made read-only once validated (``Annotated[..., READ_ONLY]``).
READ_ONLY = AfterValidator(read_only)


def read_only_fields(record: object, *names: str) -> None:
    """A frozen dataclass's mappings made read-only (called from its ``__post_init__``)."""
    for name in names:
        object.__setattr__(record, name, read_only(getattr(record, name)))


def frozen_json(value: Any) -> Any:
    """A JSON value read-only all the way down: each object a :class:`ReadOnlyDict`,
    each array a :class:`ReadOnlyList` (so it still equals the value it was made from);
    strings, numbers, booleans and null as they are."""
    if isinstance(value, dict):
        return ReadOnlyDict({key: frozen_json(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return ReadOnlyList([frozen_json(item) for item in value])
    return value
