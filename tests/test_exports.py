"""The packages that re-export names lazily (``credit``, ``credit.guardrails``,
``credit.batch``) share one implementation, :func:`credit._exports.lazy_exports`."""

from __future__ import annotations

import importlib
import sys
import types

import pytest

from credit._exports import lazy_exports


@pytest.mark.parametrize("package", ["credit", "credit.guardrails", "credit.batch"])
def test_every_exported_name_is_the_object_of_the_module_it_lives_in(package: str) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) <= set(dir(module))
    for name in module.__all__:
        value = getattr(module, name)
        assert name in vars(module)  # kept: the next lookup is a plain attribute
        assert vars(module)[name] is value
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nope'"):
        module.nope  # noqa: B018


def test_a_name_is_imported_from_its_home_on_first_use_and_never_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = types.ModuleType("lazyhome")
    home.value = object()  # type: ignore[attr-defined]
    package = types.ModuleType("lazypkg")
    monkeypatch.setitem(sys.modules, "lazyhome_", home)
    monkeypatch.setitem(sys.modules, "lazypkg", package)
    imported: list[str] = []
    real = importlib.import_module

    def spy(name: str) -> types.ModuleType:
        imported.append(name)
        return real(name)

    monkeypatch.setattr(importlib, "import_module", spy)
    getter, lister = lazy_exports("lazypkg", {"value": "lazyhome_"})
    assert lister() == sorted({*vars(package), "value"}) and imported == []
    assert getter("value") is home.value and imported == ["lazyhome_"]
    assert package.value is home.value  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'other'"):
        getter("other")
