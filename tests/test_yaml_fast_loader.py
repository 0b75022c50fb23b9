"""The governed YAML files are read through libyaml when PyYAML has it (several times
faster: the policy, the catalogue and the verifier's data are read at every command's
start), and read exactly as the pure-Python strict loader reads them: the same data,
the same refusals, the same error text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import credit.yamldata as yamldata
from credit.errors import PolicyError

DATA = Path(yamldata.__file__).resolve().parent / "data"
GOVERNED = sorted(DATA.rglob("*.yaml"))

pytestmark = pytest.mark.skipif(
    yamldata._FastStrictLoader is None, reason="PyYAML was built without libyaml"
)


def both(text: str) -> tuple[Any, Any]:
    assert yamldata._FastStrictLoader is not None
    return (
        yamldata._parse(yamldata._StrictLoader, text, "t.yaml"),
        yamldata._parse(yamldata._FastStrictLoader, text, "t.yaml"),
    )


def test_every_bundled_governed_file_reads_the_same_through_libyaml() -> None:
    assert len(GOVERNED) >= 5  # the policy, the catalogue, the frame, the terms, ...
    for path in GOVERNED:
        slow, fast = both(path.read_text(encoding="utf-8"))
        assert fast == slow and repr(fast) == repr(slow), path


def test_libyaml_keeps_floats_and_dates_as_text_like_the_strict_loader() -> None:
    slow, fast = both("rate: 15.99\nasOf: 2026-01-01\ncount: 3\nflag: true\n")
    assert fast == slow == {"rate": "15.99", "asOf": "2026-01-01", "count": 3, "flag": True}


def test_a_duplicate_key_is_refused_by_libyaml_too_with_the_same_words() -> None:
    text = "a: 1\nb:\n  c: 2\n  c: 3\n"
    assert yamldata._FastStrictLoader is not None
    for loader in (yamldata._StrictLoader, yamldata._FastStrictLoader):
        with pytest.raises(PolicyError) as refused:
            yamldata._parse(loader, text, "t.yaml")
        assert str(refused.value) == "t.yaml, key c: duplicate key on line 4"
    with pytest.raises(PolicyError, match=r"^t.yaml, key c: duplicate key on line 4$"):
        yamldata.load_yaml("t.yaml", text)


@pytest.mark.parametrize("text", ["a: [1,\n", "a:\n\t- b\n", "a: 'open\n", "- a\nb: c\n"])
def test_a_malformed_file_is_stated_in_the_pure_python_loader_s_words(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as slow:
        yamldata._parse(yamldata._StrictLoader, text, "t.yaml")
    with pytest.raises(PolicyError) as stated:
        yamldata.load_yaml("t.yaml", text)
    assert str(stated.value) == f"t.yaml: not valid YAML: {slow.value}"
    assert "^" in str(stated.value)  # the pure-Python loader quotes the text


def test_a_well_formed_file_is_read_by_libyaml_not_by_the_pure_python_loader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Refuses(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            raise AssertionError("the pure-Python loader was used")

    monkeypatch.setattr(yamldata, "_StrictLoader", Refuses)
    assert yamldata.load_yaml("t.yaml", "a: 1\n") == {"a": 1}
    with pytest.raises(AssertionError, match="pure-Python loader was used"):
        yamldata.load_yaml("t.yaml", "a: [1,\n")
