"""What is built once per immutable object (credit.kept): built once for each object
while it lives, never shared with another object of equal value, and dropped with it;
and the loaded data it is kept by is read-only all the way down (a mapping a loaded
policy, catalogue, legal frame, bureau-formats file, fair-lending review or ethics
pack holds refuses every change)."""

from __future__ import annotations

import gc
import pickle
import weakref
from typing import Any

import pytest

from conftest import in_threads
from credit.bureau_formats import default_bureau_formats
from credit.catalogue import default_catalogue
from credit.governance.fair_lending import default_fair_lending_config
from credit.governance.safety import default_ethics_pack
from credit.kept import KeptPer, ReadOnlyList
from credit.legal_frame import default_frame
from credit.policy import default_policy


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


def test_what_holds_its_object_is_kept_for_the_most_recent_objects_only() -> None:
    # a plan holds its policy: without a bound, no policy planned would ever go
    kept = KeptPer(lambda thing: (thing, thing.value), most=2)
    first, second, third = _Thing(1), _Thing(2), _Thing(3)
    alive = weakref.ref(first)
    kept(first), kept(second)
    assert kept(first)[1] == 1  # used again: now the most recent
    kept(third)  # past the bound: the least recently used (second) is let go
    assert set(kept._kept) == {id(first), id(third)}
    del first
    gc.collect()
    assert alive() is not None  # its entry holds it, as the bound allows
    for value in range(4, 6):
        kept(_Thing(value))
    gc.collect()
    assert alive() is None and len(kept._kept) == 2


def test_a_bounded_store_serves_many_threads_at_once() -> None:
    # the service's threads share what is kept
    things = [_Thing(value) for value in range(40)]
    kept = KeptPer(lambda thing: (thing, thing.value), most=4)

    def step(seed: int, i: int) -> None:
        thing = things[(i * 7 + seed) % len(things)]
        assert kept(thing)[1] == thing.value

    assert in_threads(step) == [] and len(kept._kept) <= 4


def test_a_bounded_table_of_recent_keys_serves_many_threads_at_once() -> None:
    # Equipoise's and the lives' tables are shared by a service's threads: a put trims
    # the oldest keys while others read and put
    from credit.kept import Recent

    recent: Recent[int, int] = Recent(4)

    def step(seed: int, i: int) -> None:
        key = (i * 7 + seed) % 40
        found = recent.get(key)
        assert found is None or found == key * 10
        recent.put(key, key * 10)

    assert in_threads(step) == []
    recent.put(-1, -10)  # a put with no thread beside it trims whatever is left over
    assert len(recent) == 4


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        KeptPer(lambda thing: thing, most=0)


# ---------------------------------------------------------------- read-only loaded data


def _loaded_mappings() -> dict[str, Any]:
    catalogue, frame, formats = default_catalogue(), default_frame(), default_bureau_formats()
    return {
        "policy parameters": default_policy().params,
        "catalogue entries": catalogue.entries,
        "catalogue product names": catalogue.product_names,
        "catalogue bureau codes": catalogue.by_bureau_code,
        "frame texts": frame.texts,
        "frame references": frame.references,
        "bureau key factors": formats.key_factors,
        "bureau fields": formats.fields,
        "a key factor's units": next(f.units for f in formats.key_factors.values() if f.units),
        "fair-lending review parameters": default_fair_lending_config().params,
        "an ethics commitment's parameters": next(
            c.parameters for c in default_ethics_pack().commitments if c.parameters
        ),
    }


@pytest.mark.parametrize("name", list(_loaded_mappings()))
def test_the_loaded_datas_mappings_refuse_every_change(name: str) -> None:
    mapping = _loaded_mappings()[name]
    key = next(iter(mapping))
    before = dict(mapping)
    changes = [
        lambda: mapping.__setitem__(key, mapping[key]),
        lambda: mapping.__delitem__(key),
        lambda: mapping.update({key: mapping[key]}),
        lambda: mapping.pop(key),
        lambda: mapping.popitem(),
        lambda: mapping.setdefault("a new key", None),
        lambda: mapping.clear(),
        lambda: mapping.__ior__({}),
    ]
    for change in changes:
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert dict(mapping) == before


@pytest.mark.parametrize("name", list(_loaded_mappings()))
def test_the_loaded_datas_mappings_read_copy_and_pickle_as_dicts(name: str) -> None:
    mapping = _loaded_mappings()[name]
    assert isinstance(mapping, dict)
    assert {**mapping} == dict(mapping) == mapping
    copied = {**mapping, "a new key": None}  # a version with other values: a plain dict
    copied["another"] = None
    again = pickle.loads(pickle.dumps(mapping))
    assert again == mapping
    assert type(again) is type(mapping)
    with pytest.raises(TypeError, match="read-only"):
        again["a new key"] = None


def test_a_read_only_array_refuses_every_change_and_reads_as_a_list() -> None:
    items = ReadOnlyList([3, 1, [2]])
    changes = [
        lambda: items.__setitem__(0, 1),
        lambda: items.__delitem__(0),
        lambda: items.__iadd__([1]),
        lambda: items.__imul__(2),
        lambda: items.append(1),
        lambda: items.extend([1]),
        lambda: items.insert(0, 1),
        lambda: items.pop(),
        lambda: items.remove(3),
        lambda: items.clear(),
        lambda: items.sort(),
        lambda: items.reverse(),
    ]
    for change in changes:
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert items == [3, 1, [2]] and isinstance(items, list)
    assert type([*items, 4]) is list and type(items.copy()) is list  # copies are lists
    again = pickle.loads(pickle.dumps(items))
    assert again == items and type(again) is ReadOnlyList
    with pytest.raises(TypeError, match="read-only"):
        again.append(1)


def test_recent_keeps_the_values_of_the_keys_used_last() -> None:
    """A bounded table: a key read or kept becomes the newest; past ``most`` keys the
    one used longest ago goes, and a key kept again replaces its value."""
    from credit.kept import Recent

    recent: Recent[str, int] = Recent(2)
    recent.put("a", 1)
    recent.put("b", 2)
    assert recent.get("a") == 1  # a is now the newest
    recent.put("c", 3)  # b, used longest ago, goes
    assert (recent.get("b"), recent.get("a"), recent.get("c")) == (None, 1, 3)
    recent.put("a", 10)  # replaced, the newest
    recent.put("d", 4)  # c goes
    assert (recent.get("c"), recent.get("a"), recent.get("d")) == (None, 10, 4)
    assert len(recent) == 2
    with pytest.raises(ValueError):
        Recent(0)
