"""``credit notice``, ``credit verify``, ``credit mutate`` and ``credit lock``: thin
adapters over the renderer, the verifier, the mutation suite and the reviewed lock (no
domain logic here).

Exit status: 0 success; 1 a check failed (``verify``: a failed check; ``mutate``: a
survivor, an unapplied mutator or a check with no proof that it is needed; ``lock``: the data
differs from the reviewed lock and was not accepted); 2 bad input, named in the message.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from credit.cli.common import LazyConsole
from credit.errors import CreditError, InputError, NoticeInputError, PolicyError

if TYPE_CHECKING:
    from credit.policy import Policy

__all__ = ["register_notices"]

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
REPO_ROOT = Path(__file__).resolve().parents[3]

out = LazyConsole()
err = LazyConsole(stderr=True)
# Tables are read in logs and CI as often as in a terminal: no narrower than 120 there.
wide = LazyConsole(width=None if sys.stdout.isatty() else 120)


def _fail(message: object, status: int = EXIT_BAD_INPUT) -> typer.Exit:
    err.print(f"error: {message}", highlight=False, markup=False)
    return typer.Exit(status)


def _policy(path: Path | None) -> Policy:
    from credit.policy import default_policy, load_policy

    try:
        return load_policy(path) if path else default_policy()
    except PolicyError as e:
        raise _fail(e) from None


# ---------------------------------------------------------------- credit notice


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def notice_command(
    file: Annotated[Path, typer.Argument(help="One case (.json) or a batch (.jsonl).")],
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write <caseId>.notice.json and <caseId>.expect.json (and .notice.txt) here.",
        ),
    ] = None,
    text: Annotated[
        bool, typer.Option("--text", help="Print (or also write) the notice text.")
    ] = False,
    policy: Annotated[
        Path | None, typer.Option("--policy", help="Policy YAML (default: the reference policy).")
    ] = None,
) -> None:
    """Render the notices of the declines and counteroffers in a case file.

    Without --out, print each notice as one JSON line (or its text with --text)."""
    from credit.cases import iter_cases
    from credit.guardrails import expectation_for
    from credit.notices import NOTICE_DECISIONS, render_notice
    from credit.underwriting import decide_case

    pol = _policy(policy)
    failures: list[InputError] = []
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    try:
        entries = list(iter_cases(file))
    except InputError as e:
        raise _fail(e) from None
    count = 0
    for entry in entries:
        if entry.error is not None:
            failures.append(entry.error)
            continue
        assert entry.case is not None
        try:
            underwriting = decide_case(entry.case, pol)
        except InputError as e:
            failures.append(e.located(line=entry.line, source=str(file)))
            continue
        if underwriting.decision.decision not in NOTICE_DECISIONS:
            continue
        notice = render_notice(entry.case, underwriting)
        count += 1
        if out_dir is None:
            # one JSON line per notice; with --text, each text then a blank line
            sys.stdout.write(
                notice.text + "\n" if text else notice.canonical_bytes().decode() + "\n"
            )
            continue
        expectation = expectation_for(entry.case, underwriting)
        case_id = notice.case_id
        _write(out_dir / f"{case_id}.notice.json", notice.canonical_bytes() + b"\n")
        _write(out_dir / f"{case_id}.expect.json", expectation.canonical_bytes() + b"\n")
        if text:
            _write(out_dir / f"{case_id}.notice.txt", notice.text.encode("utf-8"))
        out.print(
            f"{case_id} {notice.decision} notice sha256 {notice.sha256}",
            highlight=False,
        )
    if out_dir is not None:
        out.print(f"{count} notice(s) written to {out_dir}", highlight=False)
    sys.stdout.flush()
    for failure in failures:
        err.print(f"  {failure}", highlight=False, markup=False)
    if failures:
        raise typer.Exit(EXIT_BAD_INPUT)


# ---------------------------------------------------------------- credit verify


def _read_json(path: Path) -> Any:
    from credit.canonical import loads

    try:
        return loads(path.read_bytes())
    except OSError as e:
        raise NoticeInputError(f"cannot read: {e.strerror}", source=str(path)) from None
    except ValueError as e:
        raise NoticeInputError(f"not valid JSON: {e}", source=str(path)) from None


def verify_command(
    notice: Annotated[Path, typer.Argument(help="A notice file (<caseId>.notice.json).")],
    expect: Annotated[
        Path, typer.Option("--expect", help="What it must say (<caseId>.expect.json).")
    ],
) -> None:
    """Verify a notice against its expectation; print the report as JSON.

    Exit 0 when every check passed, 1 when any failed, 2 on bad input."""
    from credit.guardrails import Verifier
    from credit.notice_format import parse_expectation, parse_notice

    try:
        n = parse_notice(_read_json(notice))
    except InputError as e:
        raise _fail(e.located(source=str(notice))) from None
    try:
        x = parse_expectation(_read_json(expect))
    except InputError as e:
        raise _fail(e.located(source=str(expect))) from None
    report = Verifier().verify(n, x)
    sys.stdout.write(json.dumps(report.to_wire(), indent=2) + "\n")
    sys.stdout.flush()
    if not report.passed:
        raise typer.Exit(EXIT_FAILED)


# ---------------------------------------------------------------- credit mutate


def _mutations_module() -> ModuleType:
    """evals/mutations.py lives beside the source tree, not in the package."""
    if not (REPO_ROOT / "evals" / "mutations.py").is_file():
        raise _fail(f"the mutation suite needs the source checkout ({REPO_ROOT}/evals)")
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    return importlib.import_module("evals.mutations")


def mutate_command(
    cases: Annotated[
        Path | None,
        typer.Option("--cases", help="Case file (default: the bundled examples/cases.jsonl)."),
    ] = None,
    results: Annotated[
        Path, typer.Option("--results", help="Where mutations.json and mutations.md go.")
    ] = REPO_ROOT / "results",
    workers: Annotated[
        int,
        typer.Option("--workers", min=1, help="Processes to run it on (the same results)."),
    ] = 1,
) -> None:
    """Run the mutation suite M1-M18 and the meta-mutation; write the results.

    Exit 1 on any survivor, any mutator never applied, or any check with no proof that
    it is needed (a mutant that fails it alone and gets through without it)."""
    from rich.table import Table

    from credit.cli.common import default_cases_path

    mutations = _mutations_module()
    started = time.perf_counter()
    try:
        result = mutations.run(cases or default_cases_path(), workers=workers)
    except CreditError as e:
        raise _fail(e, EXIT_BAD_INPUT if isinstance(e, ValueError) else EXIT_FAILED) from None
    wall = time.perf_counter() - started
    paths = mutations.write_results(result, results)
    table = Table(title=f"Mutation suite: {result.notices} genuine notices from {result.cases}")
    for column in ("mutator", "defect", "intended", "applied", "killed", "n/a", "survivors"):
        table.add_column(column)
    for m in result.mutators:
        table.add_row(
            m.id,
            m.defect,
            ", ".join(m.intended),
            str(m.applied),
            str(m.killed),
            str(m.not_applicable),
            str(len(m.survivors)),
        )
    wide.print(table)
    meta = Table(
        title="Meta-mutation: a mutant that fails each check alone gets through without it"
    )
    for column in ("check", "name", "proofs", "a proof (mutator, case)", "gate"):
        meta.add_column(column)
    for c in result.meta:
        proof = f"{c.first.mutator}, {c.first.case_id}" if c.first else "none"
        meta.add_row(
            c.check, c.name, str(c.proofs), proof, "needed" if c.needed else "NOT SHOWN NEEDED"
        )
    wide.print(meta)
    out.print(f"results: {', '.join(str(p) for p in paths)}; wall time {wall:.2f}s")
    for problem in result.problems:
        err.print(f"FAIL: {problem}", highlight=False, markup=False)
    if result.problems:
        raise typer.Exit(EXIT_FAILED)


# ---------------------------------------------------------------- credit lock


def lock_command(
    accept: Annotated[
        bool, typer.Option("--accept", help="Accept the diff shown and write the new lock.")
    ] = False,
    by: Annotated[
        str | None, typer.Option("--by", help="Who reviewed the diff (required to accept).")
    ] = None,
    data: Annotated[
        Path | None, typer.Option("--data", help="Folder of the pinned data (default: packaged).")
    ] = None,
    lock: Annotated[
        Path | None, typer.Option("--lock", help="Lock file (default: notice.lock.json there).")
    ] = None,
) -> None:
    """Show the diff between the reviewed lock and the current frame, catalogue, code
    mapping and verifier rules; with --accept --by NAME, write the new lock.

    Exit 0 when the lock is current (or was accepted), 1 when it differs."""
    from credit.guardrails.lock import (
        DataSources,
        current_pins,
        drift,
        lock_diff,
        read_lock,
        write_lock,
    )

    sources = DataSources.in_directory(data, lock) if data else DataSources.default()
    if lock is not None and data is None:
        d = DataSources.default()
        sources = DataSources(d.frame, d.catalogue, d.rules, lock)
    try:
        current = current_pins(sources)
    except CreditError as e:
        raise _fail(e) from None
    try:
        reviewed = read_lock(sources.lock)
    except NoticeInputError as e:
        if sources.lock.exists():
            raise _fail(e) from None
        reviewed = None
    changed = drift(reviewed, current) if reviewed else tuple(current)
    if not changed:
        out.print(f"lock {sources.lock} is current: nothing to review", highlight=False)
        return
    sys.stdout.write(lock_diff(reviewed, current))
    sys.stdout.flush()
    if not accept:
        err.print(
            f"{len(changed)} pinned item(s) changed since review ({', '.join(changed)}): "
            "review the diff, then run `credit lock --accept --by NAME`",
            highlight=False,
            markup=False,
        )
        raise typer.Exit(EXIT_FAILED)
    if not by or not by.strip():
        raise _fail("--accept needs --by NAME: the reviewer who accepts this diff")
    write_lock(sources.lock, current, accepted_by=by, accepted_on=dt.date.today())
    out.print(
        f"accepted by {by}: {', '.join(changed)}; lock written to {sources.lock}",
        highlight=False,
    )


def register_notices(app: typer.Typer) -> None:
    app.command("notice")(notice_command)
    app.command("verify")(verify_command)
    app.command("mutate")(mutate_command)
    app.command("lock")(lock_command)
