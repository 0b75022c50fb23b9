"""The parse cache of the packaged data (credit.yamldata): a command reads what the
strict loader made of a data file before, keyed by the SHA-256 of the file's bytes, of
the loader and of PyYAML, instead of importing PyYAML and parsing it again.

Scenarios: every packaged file reads the same from the cache as parsed; an edited file,
loader or PyYAML is another key (a stale entry is never read); a corrupt, torn or
misplaced entry is ignored and written again; a folder that cannot be written leaves
loading as it was; processes sharing a folder each read the same; text that was not
read from its file, files outside the package's data and values marshal cannot hold
are never cached.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import credit.yamldata as yamldata
from credit.errors import PolicyError

DATA = Path(yamldata.__file__).resolve().parent / "data"
GOVERNED = sorted(DATA.rglob("*.yaml"))
PARSE = yamldata._parse_strictly  # the strict loader itself (a test may count its calls)


def same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (True is not 1, "1" is not 1)."""
    return bool(a == b and repr(a) == repr(b))


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.yaml-parse"))


def leftovers(folder: Path) -> list[Path]:
    """Anything in the folder that is not a whole entry (a temporary file)."""
    return sorted(p for p in folder.iterdir() if not p.name.endswith(".yaml-parse"))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(yamldata.CACHE_DIR_ENV, str(folder))
    return folder


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files the strict loader parsed (every other load was read from the cache)."""
    seen: list[Path] = []

    def counted(path: Path, text: str) -> Any:
        seen.append(path)
        return PARSE(path, text)

    monkeypatch.setattr(yamldata, "_parse_strictly", counted)
    return seen


@pytest.fixture
def own_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the packaged data, standing in for it (so a test may edit a file)."""
    folder = tmp_path / "data"
    shutil.copytree(DATA, folder)
    monkeypatch.setattr(yamldata, "_DATA_DIR", os.path.realpath(folder))
    return folder


# ---------------------------------------------------------------- the same data


def test_every_packaged_data_file_reads_the_same_from_the_cache_as_parsed(
    cache: Path, parses: list[Path]
) -> None:
    assert len(GOVERNED) >= 8  # the policies, the catalogue, the frame, the terms, ...
    for path in GOVERNED:
        parsed = _parsed(path)
        first = yamldata.load_yaml(path)  # parsed, and kept
        second = yamldata.load_yaml(path)  # read from the cache
        assert same(first, parsed) and same(second, parsed), path
        assert second is not first  # each load its own data: a caller may change it
    assert parses == GOVERNED  # each parsed once, by the first load
    assert len(entries(cache)) == len(GOVERNED) and leftovers(cache) == []


def test_the_commands_data_is_read_from_a_warm_cache_without_importing_pyyaml(
    cache: Path,
) -> None:
    load = textwrap.dedent(
        """
        import sys
        from credit.guardrails.pins import default_pins
        from credit.policy import default_policy
        from credit.cases import default_case_limits
        default_pins(), default_policy(), default_case_limits()
        print("yaml" in sys.modules)
        """
    )
    env = {**os.environ, yamldata.CACHE_DIR_ENV: str(cache)}

    def run() -> str:
        done = subprocess.run(
            [sys.executable, "-c", load], env=env, check=True, capture_output=True, text=True
        )
        return done.stdout.strip()

    assert run() == "True"  # an empty cache: every file parsed (and kept)
    assert entries(cache)
    assert run() == "False"  # then nothing is parsed: PyYAML is not even imported


# ---------------------------------------------------------------- never stale


def test_an_edited_file_is_parsed_again_never_read_from_its_old_entry(
    cache: Path, own_data: Path, parses: list[Path]
) -> None:
    path = own_data / "reasons.yaml"
    before = yamldata.load_yaml(path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('version: "', 'version: "edited-', 1), encoding="utf-8")
    after = yamldata.load_yaml(path)
    assert after["version"] == f"edited-{before['version']}"
    assert after == yamldata.load_yaml(path) and parses == [path, path]
    assert len(entries(cache)) == 2  # one entry per content; neither was overwritten
    path.write_text(text, encoding="utf-8")  # back as it was: its first entry again
    assert yamldata.load_yaml(path) == before and parses == [path, path]


def test_the_drift_check_sees_an_edited_data_file_however_warm_the_cache(
    cache: Path, own_data: Path, parses: list[Path]
) -> None:
    """The lock's drift check (V7) hashes the files' own bytes on every load: a file
    edited after its parse was kept is drift, and read anew."""
    from credit.guardrails.lock import DataSources
    from credit.guardrails.pins import load_pins

    sources = DataSources.in_directory(own_data)
    assert load_pins(sources).drift == ()
    assert load_pins(sources).drift == () and len(set(parses)) == len(parses)  # all kept
    catalogue = own_data / "reasons.yaml"
    catalogue.write_text(
        catalogue.read_text(encoding="utf-8").replace('version: "', 'version: "edited-', 1),
        encoding="utf-8",
    )
    edited = load_pins(sources)
    assert "reasons.yaml" in edited.drift and edited.catalogue.version.startswith("edited-")
    assert parses[-1] == catalogue


def test_another_loader_or_another_pyyaml_is_another_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib.machinery import ModuleSpec, PathFinder

    path = DATA / "reasons.yaml"
    raw = path.read_bytes()
    monkeypatch.setattr(yamldata, "_fingerprint", None)
    key = yamldata._cache_key(path, raw)
    assert key is not None and yamldata._cache_key(path, raw) == key

    edited_loader = tmp_path / "yamldata.py"
    edited_loader.write_bytes(Path(yamldata.__file__).read_bytes() + b"\n# edited\n")
    monkeypatch.setattr(yamldata, "__file__", str(edited_loader))
    monkeypatch.setattr(yamldata, "_fingerprint", None)
    other_loader = yamldata._cache_key(path, raw)
    monkeypatch.undo()

    spec = PathFinder.find_spec("yaml")
    assert spec is not None and spec.origin is not None
    upgraded = tmp_path / "yaml" / "__init__.py"
    upgraded.parent.mkdir()
    upgraded.write_text(
        Path(spec.origin).read_text(encoding="utf-8").replace("__version__", "__old_version__")
        + "\n__version__ = '99.0'\n",
        encoding="utf-8",
    )

    def find_spec(name: str, *args: Any, **kwargs: Any) -> ModuleSpec | None:
        return ModuleSpec(name, None, origin=str(upgraded)) if name == "yaml" else None

    monkeypatch.setattr(PathFinder, "find_spec", find_spec)
    monkeypatch.setattr(yamldata, "_fingerprint", None)
    other_pyyaml = yamldata._cache_key(path, raw)
    assert None not in (other_loader, other_pyyaml)
    assert len({key, other_loader, other_pyyaml}) == 3


def test_without_a_fingerprint_nothing_is_cached(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyYAML's source not found (a frozen build): the key cannot name it, so no key."""
    from importlib.machinery import PathFinder

    monkeypatch.setattr(PathFinder, "find_spec", lambda *a, **k: None)
    monkeypatch.setattr(yamldata, "_fingerprint", None)
    assert yamldata._cache_key(DATA / "reasons.yaml", (DATA / "reasons.yaml").read_bytes()) is None
    yamldata.load_yaml(DATA / "reasons.yaml")
    assert not cache.exists()


# ---------------------------------------------------------------- never trusted


def _corrupt(blob: bytes, how: str, at: int, byte: int) -> bytes:
    at %= len(blob)
    if how == "truncate":
        return blob[:at]
    if how == "flip":
        return blob[:at] + bytes([blob[at] ^ (byte or 1)]) + blob[at + 1 :]
    if how == "append":
        return blob + bytes([byte])
    return bytes([byte]) * at  # garbage


@settings(max_examples=60, deadline=None)
@given(
    how=st.sampled_from(["truncate", "flip", "append", "garbage"]),
    at=st.integers(min_value=0, max_value=1 << 20),
    byte=st.integers(min_value=0, max_value=255),
)
def test_a_corrupt_entry_is_ignored_and_written_again(how: str, at: int, byte: int) -> None:
    path = DATA / "notice-rules.yaml"
    parsed = _parsed(path)
    with tempfile.TemporaryDirectory() as tmp, _cache_dir(Path(tmp)):
        yamldata.load_yaml(path)
        (entry,) = entries(Path(tmp))
        entry.write_bytes(_corrupt(entry.read_bytes(), how, at, byte))
        assert same(yamldata.load_yaml(path), parsed)  # parsed again, not read
        assert same(yamldata.load_yaml(path), parsed)
        (rewritten,) = entries(Path(tmp))
        assert yamldata._cache_read(rewritten.name.split(".")[0]) == (True, parsed)


def test_an_entry_of_other_data_is_never_read(cache: Path, parses: list[Path]) -> None:
    """Sound marshal data that is not the file's: under the file's key with a digest
    that does not match it, or another file's sound entry under this file's name."""
    rules, frame = DATA / "notice-rules.yaml", DATA / "legal-frame.yaml"
    yamldata.load_yaml(rules)
    yamldata.load_yaml(frame)
    rules_key = yamldata._cache_key(rules, rules.read_bytes())
    frame_key = yamldata._cache_key(frame, frame.read_bytes())
    assert rules_key and frame_key
    rules_entry, frame_entry = (cache / f"{k}.yaml-parse" for k in (rules_key, frame_key))
    blob = rules_entry.read_bytes()
    head = len(yamldata._CACHE_FORMAT) + len(rules_key) + yamldata._DIGEST
    import marshal

    forged = blob[:head] + marshal.dumps({"rules": "forged"})
    rules_entry.write_bytes(forged)  # the digest no longer matches what follows it
    assert yamldata.load_yaml(rules)["rules"] != "forged"
    shutil.copyfile(frame_entry, rules_entry)  # sound, but the frame's: its key says so
    assert "frame" not in yamldata.load_yaml(rules)
    assert parses == [rules, frame, rules, rules]


# ---------------------------------------------------------------- read only, shared


def test_a_folder_that_cannot_be_made_leaves_loading_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parses: list[Path]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv(yamldata.CACHE_DIR_ENV, str(blocker / "cache"))
    for _ in range(2):
        assert same(yamldata.load_yaml(DATA / "reasons.yaml"), _parsed(DATA / "reasons.yaml"))
    assert len(parses) == 2 and blocker.read_text(encoding="utf-8") == "not a folder"


@pytest.mark.parametrize("failing", ["open", "write", "replace"])
def test_a_folder_that_cannot_be_written_leaves_loading_as_it_was_and_no_torn_entry(
    cache: Path, monkeypatch: pytest.MonkeyPatch, parses: list[Path], failing: str
) -> None:
    """Read only (EROFS), or full half way through an entry: the file is parsed, no
    error, and neither a torn entry nor a temporary file is left behind."""
    path = DATA / "legal-frame.yaml"
    yamldata.load_yaml(DATA / "reasons.yaml")  # a sound entry, read while writes fail

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EROFS, "Read-only file system")

    if failing == "open":
        monkeypatch.setattr(yamldata.os, "open", refuse)
    elif failing == "replace":
        monkeypatch.setattr(yamldata.os, "replace", refuse)
    else:
        full = OSError(errno.ENOSPC, "No space left on device")
        monkeypatch.setattr(yamldata, "open", _half_written(full), raising=False)
    for _ in range(2):
        assert same(yamldata.load_yaml(path), _parsed(path))
    assert same(yamldata.load_yaml(DATA / "reasons.yaml"), _parsed(DATA / "reasons.yaml"))
    assert parses == [DATA / "reasons.yaml", path, path]  # the sound entry still read
    assert len(entries(cache)) == 1 and leftovers(cache) == []


def test_a_process_stopped_half_way_through_an_entry_leaves_no_entry(
    cache: Path, monkeypatch: pytest.MonkeyPatch, parses: list[Path]
) -> None:
    """Stopped (an interrupt) with half an entry written: nothing under the entry's name
    and no temporary file; the next load parses the file and keeps it whole."""
    path = DATA / "legal-frame.yaml"
    monkeypatch.setattr(yamldata, "open", _half_written(KeyboardInterrupt()), raising=False)
    with pytest.raises(KeyboardInterrupt):
        yamldata.load_yaml(path)
    assert list(cache.iterdir()) == []
    monkeypatch.undo()
    monkeypatch.setenv(yamldata.CACHE_DIR_ENV, str(cache))
    assert same(yamldata.load_yaml(path), _parsed(path))
    assert yamldata._cache_read(entries(cache)[0].name.split(".")[0]) == (True, _parsed(path))


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anyway")
def test_a_read_only_folder_is_read_and_never_written(cache: Path, parses: list[Path]) -> None:
    yamldata.load_yaml(DATA / "reasons.yaml")
    cache.chmod(0o500)
    try:
        for path in (DATA / "reasons.yaml", DATA / "legal-frame.yaml"):
            assert same(yamldata.load_yaml(path), _parsed(path))
    finally:
        cache.chmod(0o700)
    assert parses == [DATA / "reasons.yaml", DATA / "legal-frame.yaml"]
    assert len(entries(cache)) == 1


def test_processes_sharing_an_empty_folder_each_read_the_same_data(cache: Path) -> None:
    """Four processes at once, each loading every packaged file twice into one folder:
    each gets the parse, and the folder ends with one whole entry per file."""
    load = textwrap.dedent(
        f"""
        import json, sys
        from credit.yamldata import load_yaml
        paths = {[str(p) for p in GOVERNED]!r}
        docs = [load_yaml(p) for p in paths] + [load_yaml(p) for p in paths]
        print(json.dumps([repr(d) for d in docs]))
        """
    )
    env = {**os.environ, yamldata.CACHE_DIR_ENV: str(cache)}
    workers = [
        subprocess.Popen([sys.executable, "-c", load], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [w.communicate()[0] for w in workers]
    assert [w.returncode for w in workers] == [0] * 4
    expected = [repr(_parsed(p)) for p in GOVERNED] * 2
    assert all(json.loads(out) == expected for out in outputs)
    assert len(entries(cache)) == len(GOVERNED) and leftovers(cache) == []


# ---------------------------------------------------------------- not cached


def test_text_not_read_from_its_file_and_files_outside_the_data_are_never_cached(
    cache: Path, tmp_path: Path
) -> None:
    catalogue = DATA / "reasons.yaml"
    edited = catalogue.read_text(encoding="utf-8").replace('version: "', 'version: "x', 1)
    assert yamldata.load_yaml(catalogue, edited)["version"].startswith("x")
    outside = tmp_path / "reasons.yaml"
    shutil.copyfile(catalogue, outside)
    assert same(yamldata.load_yaml(outside), _parsed(catalogue))
    assert yamldata.load_yaml("t.yaml", "a: 1\n") == {"a": 1}
    assert not cache.exists()


def test_an_empty_cache_folder_setting_turns_the_cache_off(
    monkeypatch: pytest.MonkeyPatch, parses: list[Path]
) -> None:
    monkeypatch.setenv(yamldata.CACHE_DIR_ENV, "")
    assert yamldata.cache_dir() is None
    yamldata.load_yaml(DATA / "reasons.yaml")
    yamldata.load_yaml(DATA / "reasons.yaml")
    assert parses == [DATA / "reasons.yaml"] * 2


def test_the_default_folder_is_beside_the_packaged_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trusted like __pycache__: only who can write the package's files writes it (not
    the user's own cache folder, and never a folder relative to where it runs)."""
    monkeypatch.delenv(yamldata.CACHE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    monkeypatch.setenv("HOME", "/home/someone")
    assert yamldata.cache_dir() == DATA.resolve() / "__cache__"


def test_a_value_marshal_cannot_hold_is_parsed_every_time(
    cache: Path, own_data: Path, parses: list[Path]
) -> None:
    path = own_data / "dated.yaml"
    path.write_text("asOf: !!timestamp 2026-01-01\n", encoding="utf-8")
    for _ in range(2):
        assert repr(yamldata.load_yaml(path)) == "{'asOf': datetime.date(2026, 1, 1)}"
    assert parses == [path, path] and not cache.exists()


def test_a_file_that_does_not_parse_is_refused_as_before_and_never_cached(
    cache: Path, own_data: Path
) -> None:
    path = own_data / "broken.yaml"
    path.write_text("a: 1\na: 2\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(PolicyError, match=r"broken.yaml, key a: duplicate key on line 2$"):
            yamldata.load_yaml(path)
    assert not cache.exists()


# ---------------------------------------------------------------- helpers


def _parsed(path: Path) -> Any:
    return PARSE(path, path.read_text(encoding="utf-8"))


def _half_written(stop: BaseException) -> Any:
    """An ``open`` for the cache's entry file that writes half the entry, then raises
    ``stop`` (a full disk, an interrupt)."""
    real_open = open

    class HalfWritten:
        def __init__(self, handle: int, mode: str) -> None:
            self.out = real_open(handle, mode)

        def __enter__(self) -> HalfWritten:
            return self

        def __exit__(self, *exc: object) -> None:
            self.out.close()

        def write(self, blob: bytes) -> int:
            self.out.write(blob[: len(blob) // 2])
            self.out.flush()
            raise stop

    return HalfWritten


@contextlib.contextmanager
def _cache_dir(folder: Path) -> Iterator[None]:
    """$CREDIT_CACHE_DIR set to ``folder`` for a block (a hypothesis example has no
    function-scoped fixture of its own)."""
    before = os.environ.get(yamldata.CACHE_DIR_ENV)
    os.environ[yamldata.CACHE_DIR_ENV] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(yamldata.CACHE_DIR_ENV, None)
        else:
            os.environ[yamldata.CACHE_DIR_ENV] = before


def test_the_entry_key_is_the_sha256_of_the_fingerprint_and_the_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = DATA / "reasons.yaml"
    raw = path.read_bytes()
    fingerprint = yamldata._loader_fingerprint()
    assert len(fingerprint) == 4 * 32  # format, interpreter, loader, PyYAML
    assert yamldata._cache_key(path, raw) == (
        hashlib.sha256(fingerprint + hashlib.sha256(raw).digest()).hexdigest()
    )
