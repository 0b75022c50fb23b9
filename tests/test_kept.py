"""What is built once per immutable object (credit.kept): built once for each object
while it lives, never shared with another object of equal value, and dropped with it."""

from __future__ import annotations

import gc

from credit.kept import KeptPer


class _Thing:
    def __init__(self, value: int) -> None:
        self.value = value


def test_a_thing_is_built_once_while_the_object_lives() -> None:
    built: list[int] = []
    kept = KeptPer(lambda thing: built.append(thing.value) or thing.value * 10)
    thing = _Thing(4)
    assert kept(thing) == 40
    assert kept(thing) == 40
    assert built == [4]


def test_an_object_of_equal_value_gets_its_own() -> None:
    built: list[int] = []
    kept = KeptPer(lambda thing: built.append(thing.value) or [thing.value])
    first, second = _Thing(4), _Thing(4)
    assert kept(first) is not kept(second)
    assert built == [4, 4]


def test_what_was_built_goes_with_the_object() -> None:
    kept = KeptPer(lambda thing: thing.value)
    thing = _Thing(1)
    kept(thing)
    key = id(thing)
    assert key in kept._kept
    del thing
    gc.collect()
    assert key not in kept._kept


def test_a_new_object_at_a_dead_ones_address_is_built_again() -> None:
    # the entry is checked against the object itself, not only its address
    built: list[int] = []
    kept = KeptPer(lambda thing: built.append(thing.value) or thing.value)
    thing = _Thing(1)
    kept(thing)
    key = id(thing)
    stale = kept._kept[key]
    del thing
    gc.collect()
    other = _Thing(2)
    kept._kept[id(other)] = stale  # as if the old entry were still there
    assert kept(other) == 2
    assert built == [1, 2]
