"""Strict YAML reading for governed data files (policy, reason catalogue, ...).

The loader refuses to guess: duplicate keys are errors, no value is silently turned
into a float (``45.0`` stays the text "45.0", read later as an exact Decimal) and no
date is parsed implicitly (dates are checked where they are read, so a bad date is an
error that names its key).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import marshal
import os
import re
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypedDict

from credit.errors import PolicyError

if TYPE_CHECKING:
    import yaml

__all__ = [
    "CACHE_DIR_ENV",
    "Versioned",
    "cache_dir",
    "expect_keys",
    "load_yaml",
    "read_date",
    "read_decimal",
    "read_int",
    "read_source",
    "read_str",
    "versioned",
]

# PyYAML is imported only when a file is parsed (a file read from the cache below is
# not): its import alone is a tenth of a command's start-up.


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            line = key_node.start_mark.line + 1
            raise PolicyError(f"duplicate key on line {line}", file=loader.name, key=str(key))
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


def _strict(loader: type[Any]) -> None:
    """Make ``loader`` strict: no implicit floats or timestamps, no duplicate keys."""
    import yaml

    loader.yaml_implicit_resolvers = {
        first: [
            (tag, regexp)
            for tag, regexp in resolvers
            if tag not in ("tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp")
        ]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _strict_loaders() -> tuple[type[Any], type[Any] | None]:
    """The strict loader, and the same strict loader over libyaml's parser (when PyYAML
    was built with it): the same resolvers and constructors in Python, the scanning and
    parsing in C, several times faster. The fast one reads every governed file that is
    well formed; a file it refuses is read again by the pure-Python loader, whose error
    (quoting the text) is the one stated. Made on first use, kept as the module's
    ``_StrictLoader`` and ``_FastStrictLoader``."""
    import yaml

    class _StrictLoader(yaml.SafeLoader):
        """SafeLoader without implicit floats or timestamps, rejecting duplicate keys."""

    _strict(_StrictLoader)
    fast: type[Any] | None = None
    if getattr(yaml, "__with_libyaml__", False):

        class _CStrictLoader(yaml.CSafeLoader):
            """CSafeLoader without implicit floats or timestamps, rejecting duplicate keys."""

        _strict(_CStrictLoader)
        fast = _CStrictLoader
    return _StrictLoader, fast


def __getattr__(name: str) -> Any:
    """``_StrictLoader`` and ``_FastStrictLoader``, made (importing PyYAML) when first
    asked for."""
    if name in ("_StrictLoader", "_FastStrictLoader"):
        slow, fast = _strict_loaders()
        globals().setdefault("_StrictLoader", slow)
        globals().setdefault("_FastStrictLoader", fast)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _loader(name: str) -> Any:
    """The module's loader ``name`` (a test may have replaced it), made on first use."""
    return globals()[name] if name in globals() else __getattr__(name)


def _parse(loader_class: type[Any], text: str, name: str) -> Any:
    loader = loader_class(text)
    loader.name = name
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _parse_strictly(path: Path, text: str) -> Any:
    """``text`` read by the strict loader (through libyaml when there); a syntax error
    is a PolicyError naming the file."""
    import yaml

    fast = _loader("_FastStrictLoader")
    if fast is not None:
        try:
            return _parse(fast, text, str(path))
        except (yaml.YAMLError, PolicyError):
            pass  # read again below: the pure-Python loader states the error
    try:
        return _parse(_loader("_StrictLoader"), text, str(path))
    except yaml.YAMLError as err:
        raise PolicyError(f"not valid YAML: {err}", file=str(path)) from None


# ---------------------------------------------------------------- the parse cache
#
# The packaged data (the files under credit/data: the policies, the catalogue, the
# frame, the verifier's rules and formats, the prohibited terms, ...) is read at the
# start of nearly every command. What the strict loader makes of a file depends only on
# the file's bytes, this module and PyYAML, so it is kept in a cache keyed by the
# SHA-256 of exactly those: a changed file, loader or PyYAML is another key (a stale
# entry cannot be read), and an entry is never updated in place.
#
# An entry is marshal data (the types a parse gives: dicts, lists, text, numbers,
# booleans, None) behind a header naming its key and the SHA-256 of the data: an entry
# whose header, key or digest does not check out (a torn or corrupt file) is ignored,
# never read, and the file is parsed (the entry is written again). Entries are written
# to a temporary file and renamed into place, so a reader never sees half of one and
# processes sharing the folder may write the same entry at once. A folder that cannot
# be made or written (read only) leaves loading as it was: every file parsed.
#
# What the cache holds is trusted like the package's own bytecode (__pycache__): who
# can write it can change what is loaded. So it lives where only who can write the
# package's own files can write: beside the packaged data, in credit/data/__cache__
# (as __pycache__ lives beside the modules); a package installed read-only keeps no
# cache and parses its files every time, unless $CREDIT_CACHE_DIR names a folder, which
# must then be trusted the same way (empty: no cache). Files outside the package's
# data, and text not read from its file, are never cached. The lock's drift check
# (check V7) hashes the data files' own bytes, not the cache.

CACHE_DIR_ENV: Final = "CREDIT_CACHE_DIR"
_CACHE_FORMAT: Final = b"credit.yaml-cache/1\n"
_DIGEST: Final = 32  # bytes of a SHA-256
_DATA_DIR: Final = os.path.realpath(Path(__file__).resolve().parent / "data")
_fingerprint: bytes | None = None


def cache_dir() -> Path | None:
    """The folder of the start-up cache: $CREDIT_CACHE_DIR (empty: no cache), else
    credit/data/__cache__, beside the packaged data files."""
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen is not None:
        return Path(chosen) if chosen.strip() else None
    return Path(_DATA_DIR) / "__cache__"


def _loader_fingerprint() -> bytes:
    """What a parse depends on besides the text: the cache format, the interpreter's
    marshal, this module's source and PyYAML's (which states its version); b"" when one
    cannot be read (then nothing is cached)."""
    global _fingerprint
    if _fingerprint is None:
        from importlib.machinery import PathFinder

        try:
            spec = PathFinder.find_spec("yaml")
            origin = spec.origin if spec is not None else None
            if origin is None:
                raise OSError("PyYAML not found")
            parts = [
                _CACHE_FORMAT,
                f"{sys.implementation.cache_tag} marshal {marshal.version}".encode(),
                Path(__file__).read_bytes(),
                Path(origin).read_bytes(),
            ]
        except (OSError, ImportError, ValueError):
            parts = []
        _fingerprint = b"".join(hashlib.sha256(p).digest() for p in parts) if parts else b""
    return _fingerprint


def _cache_key(path: Path, raw: bytes) -> str | None:
    """The entry's key, or None when ``raw`` is not the bytes of a packaged data file."""
    if cache_dir() is None:
        return None
    real = os.path.realpath(path)
    if not real.startswith(_DATA_DIR + os.sep):
        return None
    try:
        if Path(real).read_bytes() != raw:
            return None  # text not read from the file (a test, an upload): not cached
    except OSError:
        return None
    fingerprint = _loader_fingerprint()
    if not fingerprint:
        return None
    return hashlib.sha256(fingerprint + hashlib.sha256(raw).digest()).hexdigest()


def _cache_read(key: str) -> tuple[bool, Any]:
    """(True, the parse) from a sound entry, else (False, None)."""
    folder = cache_dir()
    if folder is None:
        return False, None
    try:
        blob = (folder / f"{key}.yaml-parse").read_bytes()
    except OSError:
        return False, None
    head = _CACHE_FORMAT + key.encode("ascii")
    body = blob[len(head) + _DIGEST :]
    if not blob.startswith(head) or blob[len(head) : len(head) + _DIGEST] != (
        hashlib.sha256(body).digest()
    ):
        return False, None
    try:
        return True, marshal.loads(body)
    except (EOFError, ValueError, TypeError):  # pragma: no cover - the digest checked it
        return False, None


def _cache_write(key: str, doc: Any) -> None:
    """Keep ``doc`` as the entry ``key`` if it can (else nothing: no error)."""
    folder = cache_dir()
    if folder is None:
        return
    try:
        body = marshal.dumps(doc)
    except ValueError:
        return  # a value marshal does not hold (an explicitly tagged date): not cached
    blob = _CACHE_FORMAT + key.encode("ascii") + hashlib.sha256(body).digest() + body
    final = folder / f"{key}.yaml-parse"
    temporary = folder / f".{key}.{os.getpid()}.{id(blob):x}.tmp"
    try:
        folder.mkdir(mode=0o755, parents=True, exist_ok=True)
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with open(handle, "wb") as out:
            out.write(blob)
        os.replace(temporary, final)
    except OSError:
        pass  # a folder that cannot be written: the file is parsed again next time
    finally:
        with contextlib.suppress(OSError):  # not renamed into place: nothing is left
            temporary.unlink(missing_ok=True)


def read_source(path: Path | str, text: str | None = None) -> tuple[str, bytes]:
    """A governed file's text and exact bytes (what its SHA-256 is taken of).

    With ``text`` given (a test, an upload), the bytes are its UTF-8 encoding."""
    if text is not None:
        return text, text.encode("utf-8")
    try:
        raw = Path(path).read_bytes()
    except OSError as err:
        raise PolicyError(f"cannot read: {err.strerror}", file=str(path)) from None
    try:
        return raw.decode("utf-8"), raw
    except UnicodeDecodeError:
        raise PolicyError("not UTF-8 text", file=str(path)) from None


def load_yaml(path: Path | str, text: str | None = None) -> Any:
    """Parse a governed YAML file strictly; syntax errors name the file. A packaged data
    file's parse is read from the cache when it holds one (see above)."""
    path = Path(path)
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            raise PolicyError(f"cannot read: {err.strerror}", file=str(path)) from None
    key = _cache_key(path, text.encode("utf-8"))
    if key is not None:
        found, doc = _cache_read(key)
        if found:
            return doc
    doc = _parse_strictly(path, text)
    if key is not None:
        _cache_write(key, doc)
    return doc


def expect_keys(
    mapping: Any,
    *,
    required: set[str] | frozenset[str],
    optional: set[str] | frozenset[str] = frozenset(),
    file: str,
    key: str,
) -> dict[str, Any]:
    """Check a mapping has exactly the keys allowed: unknown and missing keys are errors."""
    where = key or "(top level)"
    if not isinstance(mapping, dict):
        raise PolicyError(f"expected a mapping, got {type(mapping).__name__}", file=file, key=where)
    for name in mapping:
        if name not in required and name not in optional:
            full = f"{key}.{name}" if key else str(name)
            raise PolicyError("unknown key", file=file, key=full)
    for name in sorted(required):
        if name not in mapping:
            full = f"{key}.{name}" if key else name
            raise PolicyError("missing key", file=file, key=full)
    return mapping


_DECIMAL = re.compile(r"^-?\d+(\.\d+)?$")


def read_decimal(value: Any, *, file: str, key: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise PolicyError(f"expected a decimal number, got {value!r}", file=file, key=key)
    text = str(value).strip()
    if not _DECIMAL.match(text):
        raise PolicyError(f"expected a decimal number, got {value!r}", file=file, key=key)
    try:
        return Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern already rules this out
        raise PolicyError(f"expected a decimal number, got {value!r}", file=file, key=key) from None


def read_int(value: Any, *, file: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(f"expected an integer, got {value!r}", file=file, key=key)
    return value


def read_str(value: Any, *, file: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PolicyError(f"expected non-empty text, got {value!r}", file=file, key=key)
    return value


def read_date(value: Any, *, file: str, key: str) -> dt.date:
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise PolicyError(f"expected a date YYYY-MM-DD, got {value!r}", file=file, key=key)
    try:
        return dt.date.fromisoformat(value)
    except ValueError as err:
        raise PolicyError(f"bad date {value!r}: {err}", file=file, key=key) from None


class Versioned(TypedDict):
    """What every governed data file states about itself, and where it came from."""

    name: str
    version: str
    effective_date: dt.date
    reference: str
    source: str
    sha256: str


def versioned(doc: Any, name_key: str, *, file: str, raw: bytes) -> Versioned:
    """The header of a governed data file (its name under ``name_key``, version,
    effectiveDate, reference), with the file it was read from and the SHA-256 of its
    bytes: the fields every loader's result carries (``**versioned(...)``)."""
    return Versioned(
        name=read_str(doc[name_key], file=file, key=name_key),
        version=read_str(str(doc["version"]), file=file, key="version"),
        effective_date=read_date(doc["effectiveDate"], file=file, key="effectiveDate"),
        reference=read_str(doc["reference"], file=file, key="reference"),
        source=file,
        sha256=hashlib.sha256(raw).hexdigest(),
    )
