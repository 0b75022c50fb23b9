"""An examiner's bundle: one case, provable offline, with no database.

``credit export CASE --out FILE.zip`` writes (:func:`export_bundle`)::

    manifest.json        the case id, the format, and each file's SHA-256
    case.json            the stored case document (underwriter-visible; no monitoring)
    decision.json        the case's current decision entry (as in the journal)
    notice.json          the notice as sent (its exact bytes), when one was sent
    report.json          the notice's verification report (V1-V8)
    entries.jsonl        every journal entry of the case, one canonical JSON a line
    proof.json           each entry's RFC 9162 inclusion proof against the checkpoint
    checkpoint           the newest signed checkpoint (C2SP tlog-checkpoint)
    journal.pub          the lender's verifier key (C2SP signed-note verifier key)

``credit verify-bundle FILE.zip`` (:func:`verify_bundle`) needs nothing else: the
checkpoint's signature under the verifier key; each entry's hash recomputed from its
content; each entry's leaf hash and inclusion proof against the signed root; the case
document against its ``intake.accepted`` digest; the decision against its entry; the
notice's bytes against the journaled ``noticeSha256`` and the report's. The rules are
the verify walk's own (:mod:`credit.journal.audit`).

What a bundle cannot show: the entries' MACs (checkable only with the lender's secret
key), and anything about other cases.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from credit.canonical import canonical_bytes, dumps, loads, sha256_hex
from credit.errors import CreditError, InputError, JournalIntegrityError
from credit.journal.audit import (
    KeptCheckpoint,
    accepted_digest,
    document_problem,
    entry_leaf,
)
from credit.journal.base import Entry, Store, entry_hash
from credit.journal.checkpoint import verify_checkpoint
from credit.journal.keys import VerifierKey, load_verifier
from credit.journal.merkle import verify_inclusion
from credit.journal.naming import decision_id_problem
from credit.journal.tree import inclusion, root_b64
from credit.kinds import DECISION_KINDS, INTAKE_ACCEPTED, NOTICE_SENT, NOTICE_VERIFIED
from credit.notices.outbox import Outbox, notice_file_problem

__all__ = ["BUNDLE_FORMAT", "export_bundle", "verify_bundle"]

BUNDLE_FORMAT: Final = "credit.bundle/1"
_FILES: Final = (
    "case.json",
    "decision.json",
    "notice.json",
    "report.json",
    "entries.jsonl",
    "proof.json",
    "checkpoint",
    "journal.pub",
)


def _json_bytes(value: Any) -> bytes:
    return (dumps(value, sort_keys=True) + "\n").encode("utf-8")


def export_bundle(
    store: Store,
    case_id: str,
    out: Path,
    *,
    newest: KeptCheckpoint,
    checkpoint_text: bytes,
    verifier: VerifierKey,
    outbox: Outbox | None = None,
) -> dict[str, str]:
    """Write the case's bundle to ``out`` (a zip); the manifest's file hashes."""
    entries = list(store.authenticate(store.entries(case_id)))
    if not entries:
        raise InputError("no such case in the journal", case_id=case_id)
    document = store.get_case(case_id)
    if document is None:
        raise InputError("the case document is not stored", case_id=case_id)
    size = newest.size
    uncovered = [e.seq for e in entries if e.seq > size]
    if uncovered:
        raise JournalIntegrityError(
            f"case {case_id}: entries {uncovered} are newer than the newest checkpoint "
            "(sign one first: credit journal checkpoint)",
            check="not-covered",
            checkpoint=newest.path,
        )
    proofs = inclusion([e.seq for e in entries], size, store.leaf_hashes(size))
    decisions = [e for e in entries if e.kind in DECISION_KINDS]
    files: dict[str, bytes] = {
        "case.json": _json_bytes(document),
        "entries.jsonl": b"".join(canonical_bytes(e.to_wire()) + b"\n" for e in entries),
        "proof.json": _json_bytes(
            {
                "caseId": case_id,
                "treeSize": size,
                "rootHash": root_b64(newest.checkpoint.root_hash),
                "entries": [p.to_wire() for p in proofs],
            }
        ),
        "checkpoint": checkpoint_text,
        "journal.pub": f"{verifier}\n".encode(),
    }
    if decisions:
        files["decision.json"] = _json_bytes(decisions[-1].to_wire())
    verified = [e for e in entries if e.kind == NOTICE_VERIFIED]
    if verified:
        files["report.json"] = _json_bytes(verified[-1].payload.get("report"))
    sent = [e for e in entries if e.kind == NOTICE_SENT]
    if sent and outbox is not None:
        files["notice.json"] = outbox.read(case_id, str(sent[-1].payload.get("noticeSha256")))
    manifest = {
        "format": BUNDLE_FORMAT,
        "caseId": case_id,
        "files": {name: sha256_hex(data) for name, data in sorted(files.items())},
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", _json_bytes(manifest))
        for name in _FILES:
            if name in files:
                archive.writestr(name, files[name])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(buffer.getvalue())
    return dict(manifest["files"])  # type: ignore[arg-type]


def _entry(wire: Mapping[str, Any]) -> Entry:
    return Entry(
        seq=wire["seq"],
        case_id=wire["caseId"],
        kind=wire["kind"],
        payload=wire["payload"],
        prev_hash=wire["prevHash"],
        recorded_at=wire["recordedAt"],
        hash=wire["hash"],
    )


def verify_bundle(path: Path) -> tuple[list[str], dict[str, Any]]:
    """Check a bundle offline. Returns what fails (empty when it all holds) and a
    summary (case, entries proved, tree size, root, key)."""
    problems: list[str] = []
    summary: dict[str, Any] = {"bundle": str(path)}
    try:
        with zipfile.ZipFile(path) as archive:
            files = {name: archive.read(name) for name in archive.namelist()}
    except (OSError, zipfile.BadZipFile) as e:
        return [f"bundle: not a readable zip ({e})"], summary
    for required in (
        "manifest.json",
        "case.json",
        "entries.jsonl",
        "proof.json",
        "checkpoint",
        "journal.pub",
    ):
        if required not in files:
            problems.append(f"{required}: missing from the bundle")
    if problems:
        return problems, summary
    try:
        manifest = loads(files["manifest.json"])
        for name, digest in dict(manifest.get("files") or {}).items():
            if name not in files:
                problems.append(f"{name}: listed in the manifest but missing")
            elif sha256_hex(files[name]) != digest:
                problems.append(f"{name}: does not hash to its manifest entry")
        for name in files:
            if name != "manifest.json" and name not in (manifest.get("files") or {}):
                problems.append(f"{name}: in the bundle but not in its manifest")
        case_id = str(manifest.get("caseId"))
        summary["caseId"] = case_id
        verifier = load_verifier(files["journal.pub"].decode("utf-8").removesuffix("\n"))
        summary["key"] = str(verifier)
        checkpoint = verify_checkpoint(files["checkpoint"], verifier, source="checkpoint")
        root, size = checkpoint.root_hash, checkpoint.size
        summary.update(treeSize=size, rootHash=root_b64(root), origin=checkpoint.origin)
        entries = [_entry(loads(line)) for line in files["entries.jsonl"].splitlines() if line]
        proof = loads(files["proof.json"])
        paths = {int(p["seq"]): p for p in proof.get("entries") or []}
    except (CreditError, ValueError, KeyError, TypeError) as e:
        problems.append(f"bundle: {e}")
        return problems, summary
    proved = 0
    for entry in entries:
        where = f"entry {entry.seq}"
        if entry.case_id != case_id:
            problems.append(f"{where}: belongs to case {entry.case_id}, not {case_id}")
        if entry_hash(entry.prev_hash, entry.body()) != entry.hash:
            problems.append(f"{where}: its content does not match its hash (it was edited)")
            continue
        leaf = entry_leaf(entry.to_wire())
        item = paths.get(entry.seq)
        if item is None or entry.seq > size:
            problems.append(f"{where}: not covered by the checkpoint (no inclusion proof)")
            continue
        try:
            siblings = [bytes.fromhex(h) for h in item["path"]]
        except (ValueError, KeyError, TypeError):
            problems.append(f"{where}: its inclusion proof is malformed")
            continue
        if item.get("leafHash") != leaf.hex() or not verify_inclusion(
            leaf, entry.seq - 1, size, siblings, root
        ):
            problems.append(
                f"{where}: its inclusion proof does not lead to the checkpoint's signed root"
            )
            continue
        proved += 1
    summary["entriesProved"] = proved
    summary["entries"] = len(entries)
    by_kind = {e.kind: e for e in entries}
    accepted = next((e for e in entries if e.kind == INTAKE_ACCEPTED), None)
    document = loads(files["case.json"])
    if accepted is None:
        problems.append("case.json: no intake.accepted entry binds it")
    else:
        problem = document_problem(document, accepted_digest(accepted.payload))
        if problem is not None:
            problems.append(f"case.json: {problem}")
    decisions = [e for e in entries if e.kind in DECISION_KINDS]
    for number, decided in enumerate(decisions, start=1):  # each named by its content
        problem = decision_id_problem(case_id, decided.kind, decided.payload, number)
        if problem is not None:
            problems.append(f"entry {decided.seq}: {problem}")
    if "decision.json" in files:
        if not decisions or loads(files["decision.json"]) != loads(
            canonical_bytes(decisions[-1].to_wire())
        ):
            problems.append("decision.json: is not the case's current decision entry")
    elif decisions:
        problems.append("decision.json: missing, but the case has a decision")
    sent = by_kind.get(NOTICE_SENT)
    if sent is not None:
        journaled = str(sent.payload.get("noticeSha256"))
        problem = notice_file_problem(files.get("notice.json"), journaled)
        if problem is not None:
            problems.append(f"notice.json: {problem}")
        report = loads(files["report.json"]) if "report.json" in files else None
        if not isinstance(report, Mapping):
            problems.append("report.json: missing, but a notice was sent")
        else:
            if report.get("noticeSha256") != journaled:
                problems.append("report.json: is not the report of the notice sent")
            if report.get("passed") is not True:
                problems.append("report.json: the notice sent did not pass verification")
            summary["checks"] = {
                name: bool(check.get("passed"))
                for name, check in (report.get("checks") or {}).items()
            }
    return problems, summary
