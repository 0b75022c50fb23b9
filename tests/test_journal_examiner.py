"""Issue 12, for the examiner: the lender's key and checkpoints from ``credit run``,
``credit journal prove``, ``credit why``, ``credit replay`` and an examiner's bundle
checked with no database.

One journal for the module: ``credit run`` over the first twelve example cases, with
its own signing key, outbox and checkpoints folder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from credit.canonical import loads
from credit.catalogue import Catalogue
from credit.cli import app
from credit.journal import open_store
from credit.journal.checkpoint import verify_checkpoint
from credit.journal.keys import load_verifier
from credit.journal.merkle import verify_inclusion
from credit.models import Case
from credit.policy import Policy
from credit.underwriting import Underwriting

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "cases.jsonl"
NOTIFIED = "C-000011"
HELD = "C-000006"


@dataclass
class Run:
    root: Path
    db: str
    key: Path
    outbox: Path
    checkpoints: Path

    def env(self) -> dict[str, str]:
        return {
            "CREDIT_DATABASE_URL": self.db,
            "CREDIT_SIGNING_KEY": str(self.key),
            "CREDIT_CHECKPOINTS": str(self.checkpoints),
            "CREDIT_OUTBOX": str(self.outbox),
        }

    def cli(self, *args: str) -> Result:
        return CliRunner().invoke(app, list(args), env=self.env())


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("examiner")
    batch = root / "batch.jsonl"
    batch.write_text(
        "\n".join(EXAMPLES.read_text(encoding="utf-8").splitlines()[:12]) + "\n",
        encoding="utf-8",
    )
    made = Run(
        root,
        f"sqlite:///{root / 'credit.db'}",
        root / "lender.key",
        root / "outbox",
        root / "checkpoints",
    )
    keygen = made.cli("journal", "keygen", "--out", str(made.key), "--name", "bank.example/j")
    assert keygen.exit_code == 0, keygen.output
    result = made.cli("run", str(batch), "--outbox", str(made.outbox))
    assert result.exit_code == 0, result.output
    assert "journal: signed checkpoint" in result.stdout
    return made


# ---------------------------------------------------------------------- keys and checkpoints


def test_keygen_writes_a_private_key_only_its_owner_reads_and_its_verifier_key(run: Run) -> None:
    assert stat.S_IMODE(run.key.stat().st_mode) == 0o600
    verifier = load_verifier(run.key.with_name("lender.key.pub"))
    assert verifier.name == "bank.example/j"


def test_a_run_with_no_key_set_makes_the_default_key_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CREDIT_SIGNING_KEY")
    monkeypatch.delenv("CREDIT_CHECKPOINTS")
    batch = tmp_path / "one.jsonl"
    batch.write_text(EXAMPLES.read_text(encoding="utf-8").splitlines()[0] + "\n")
    result = CliRunner().invoke(app, ["run", str(batch), "--outbox", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "made the journal signing key credit-journal.key" in result.stderr
    assert (tmp_path / "credit-journal.key").is_file()
    assert len(list((tmp_path / "checkpoints").glob("*.checkpoint"))) == 1
    again = CliRunner().invoke(app, ["run", str(batch), "--outbox", str(tmp_path / "out")])
    assert again.exit_code == 0 and "made the journal signing key" not in again.stderr


def test_a_named_key_that_is_missing_is_an_error_never_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CREDIT_SIGNING_KEY", str(tmp_path / "absent.key"))
    batch = tmp_path / "one.jsonl"
    batch.write_text(EXAMPLES.read_text(encoding="utf-8").splitlines()[0] + "\n")
    result = CliRunner().invoke(app, ["run", str(batch), "--outbox", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "no signing key there" in result.stderr
    assert not (tmp_path / "absent.key").exists()


def test_the_run_signed_a_c2sp_checkpoint_of_its_whole_tree(run: Run) -> None:
    (path,) = sorted(run.checkpoints.glob("*.checkpoint"))
    verifier = load_verifier(run.key.with_name("lender.key.pub"))
    checkpoint = verify_checkpoint(path.read_bytes(), verifier, origin="bank.example/j")
    with open_store(run.db, create=False) as store:
        assert store.tree_head() == (checkpoint.size, checkpoint.root_hash)
        assert checkpoint.size == len(store.entries())


def test_credit_journal_checkpoint_signs_nothing_new_for_an_unchanged_tree(run: Run) -> None:
    before = sorted(run.checkpoints.glob("*.checkpoint"))
    result = run.cli("journal", "checkpoint")
    assert result.exit_code == 0, result.output
    assert sorted(run.checkpoints.glob("*.checkpoint")) == before
    assert result.stdout.startswith("bank.example/j\n")


def test_credit_journal_prove_gives_paths_a_standard_verifier_accepts(run: Run) -> None:
    result = run.cli("journal", "prove", NOTIFIED)
    assert result.exit_code == 0, result.output
    proof = loads(result.stdout)
    root = verify_checkpoint(
        Path(proof["checkpoint"]["file"]).read_bytes(),
        load_verifier(run.key.with_name("lender.key.pub")),
    ).root_hash
    assert proof["entries"] and proof["notCovered"] == []
    for item in proof["entries"]:
        siblings = [bytes.fromhex(h) for h in item["path"]]
        leaf = bytes.fromhex(item["leafHash"])
        assert verify_inclusion(leaf, item["leafIndex"], item["treeSize"], siblings, root)
        assert not verify_inclusion(leaf, item["leafIndex"] + 1, item["treeSize"], siblings, root)


# ---------------------------------------------------------------------- the outbox


def test_sha256sum_of_each_sent_file_is_its_journaled_notice_sha256(run: Run) -> None:
    with open_store(run.db, create=False) as store:
        sent = store.entries(kinds=["notice.sent"])
    assert sent
    for entry in sent:
        data = (run.outbox / f"{entry.case_id}.notice.json").read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry.payload["noticeSha256"]
        assert not data.endswith(b"\n")


# ---------------------------------------------------------------------- why


def test_credit_why_tells_a_person_the_policy_steps_reasons_notice_and_who(run: Run) -> None:
    result = run.cli("why", NOTIFIED)
    assert result.exit_code == 0, result.output
    text = result.stdout
    with open_store(run.db, create=False) as store:
        decision = store.decision_entry(NOTIFIED)
        sent = store.entries(NOTIFIED, kinds=["notice.sent"])[0]
        released = store.entries(NOTIFIED, kinds=["keystone.released"])[0]
    assert decision is not None
    policy = decision.payload["policy"]
    assert (
        f"{policy['name']} v{policy['version']} sha256 {policy['sha256']} [#{decision.seq}]" in text
    )
    assert "Methodology" in text and "products.auto.maxLtvPct = 120.0" in text
    assert "LTV_OVER_CAP (ltvPct=127.7, maxLtvPct=120.0)" in text
    assert "above our maximum of 120.0%" in text  # the reason's sentence
    assert f"sha256 {sent.payload['noticeSha256']}" in text
    assert all(f"    V{n} pass" in text for n in range(1, 9))
    assert f"sent [#{sent.seq}]" in text
    assert f"keystone.released by keystone at {released.recorded_at}" in text
    assert "equipoise: passed" in text and "backstop: passed" in text


def test_credit_why_json_is_the_same_account_as_one_document(run: Run) -> None:
    result = run.cli("why", NOTIFIED, "--json")
    assert result.exit_code == 0, result.output
    doc = loads(result.stdout)
    assert doc["decision"]["decision"] == "counteroffer"
    assert [r["code"] for r in doc["reasons"]] == ["LTV_OVER_CAP"]
    assert sorted(doc["notice"]["checks"]) == [f"V{n}" for n in range(1, 9)]
    assert set(doc["reviews"]) == {"equipoise", "backstop"}
    assert all(isinstance(step["rule"], str) for step in doc["steps"])
    assert doc["entries"][0]["kind"] == "intake.accepted"


def test_credit_why_of_a_held_case_names_the_hold_and_the_findings(run: Run) -> None:
    doc = loads(run.cli("why", HELD, "--json").stdout)
    assert doc["state"] == "held"
    assert [p["kind"] for p in doc["people"]] == ["keystone.held"]
    assert any(not r["passed"] for r in doc["reviews"].values())


def test_credit_why_of_an_unknown_case_is_bad_input(run: Run) -> None:
    result = run.cli("why", "NO-SUCH-CASE")
    assert result.exit_code == 2 and "no case NO-SUCH-CASE" in result.stderr


# ---------------------------------------------------------------------- replay


def test_replay_of_every_bundled_case_finds_no_difference(run: Run) -> None:
    result = run.cli("replay", "--all")
    assert result.exit_code == 0, result.output
    assert "ok: 12 decision(s) replayed, 12 bit for bit, 0 with differences" in result.stdout
    # and each decision's two reviews, done again on it (Equipoise with what it had read)
    assert "ok: 24 review(s) done again, 24 the same, 0 different, 0 not replayable" in (
        result.stdout
    )


def test_replay_names_the_case_and_field_when_the_engine_decides_otherwise(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    import credit.underwriting as underwriting

    real = underwriting.decide_case

    def halved(case: Case, policy: Policy, catalogue: Catalogue | None = None) -> Underwriting:
        """A planted defect: the engine now states half its confidence."""
        result = real(case, policy, catalogue)
        half = result.decision.model_copy(update={"confidence": result.decision.confidence / 2})
        return dataclasses.replace(result, decision=half)

    monkeypatch.setattr(underwriting, "decide_case", halved)
    result = run.cli("replay", NOTIFIED)
    assert result.exit_code == 1
    assert f"case {NOTIFIED} entry" in result.stdout
    assert "decision.confidence: DIFFERS" in result.stdout


# ---------------------------------------------------------------------- the bundle


@pytest.fixture(scope="module")
def bundle(run: Run) -> Path:
    out = run.root / "bundle.zip"
    result = run.cli("export", NOTIFIED, "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


def verify_offline(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> Result:
    """credit verify-bundle with no database: the URL unset and the store unreadable."""
    import credit.journal.sql as sql

    def no_database(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the bundle verifier opened a database")

    monkeypatch.delenv("CREDIT_DATABASE_URL", raising=False)
    monkeypatch.setattr(sql, "open_store", no_database)
    monkeypatch.setattr(sql.SqlStore, "__init__", no_database)
    return CliRunner().invoke(app, ["verify-bundle", str(bundle)])


def test_the_bundle_verifies_with_no_database(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (bundle.parent / "credit.db").rename(bundle.parent / "credit.db.away")
    try:
        result = verify_offline(bundle, monkeypatch)
    finally:
        (bundle.parent / "credit.db.away").rename(bundle.parent / "credit.db")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"ok: case {NOTIFIED}: ")
    assert "notice verified V1, V2, V3, V4, V5, V6, V7, V8" in result.stdout
    names = set(zipfile.ZipFile(bundle).namelist())
    assert names == {
        "manifest.json",
        "case.json",
        "decision.json",
        "notice.json",
        "report.json",
        "entries.jsonl",
        "proof.json",
        "checkpoint",
        "journal.pub",
    }


def rewritten(bundle: Path, tmp_path: Path, name: str, data: bytes) -> Path:
    """A copy of the bundle with one file replaced (its manifest hash kept as it was,
    then, to test the deeper check too, also updated)."""
    out = tmp_path / f"tampered-{name}.zip"
    with zipfile.ZipFile(bundle) as src, zipfile.ZipFile(out, "w") as dst:
        manifest = loads(src.read("manifest.json"))
        manifest["files"][name] = hashlib.sha256(data).hexdigest()
        for item in src.namelist():
            if item == name:
                dst.writestr(item, data)
            elif item == "manifest.json":
                from credit.canonical import dumps

                dst.writestr(item, dumps(manifest, sort_keys=True) + "\n")
            else:
                dst.writestr(item, src.read(item))
    return out


@pytest.mark.parametrize(
    ("name", "edit", "named"),
    [
        ("notice.json", lambda b: b.replace(b"notice", b"n0tice", 1), "notice.json: the sent"),
        (
            "case.json",
            lambda b: b.replace(b"2026-11-30", b"2026-11-29", 1),
            "case.json: the stored",
        ),
        (
            "entries.jsonl",
            lambda b: b.replace(b'"counteroffer"', b'"approve"', 1),
            "does not match its hash",
        ),
        ("checkpoint", lambda b: b.replace(b"\n\n", b"\nextra\n\n", 1), "bundle: checkpoint"),
        (
            "decision.json",
            lambda b: b.replace(b'"counteroffer"', b'"approve"', 1),
            "decision.json: is not",
        ),
    ],
)
def test_a_tampered_bundle_fails_offline_naming_what(
    bundle: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    edit: object,
    named: str,
) -> None:
    with zipfile.ZipFile(bundle) as src:
        original = src.read(name)
    changed = edit(original)  # type: ignore[operator]
    assert changed != original
    result = verify_offline(rewritten(bundle, tmp_path, name, changed), monkeypatch)
    assert result.exit_code == 1
    assert named in result.stdout


def test_a_bundle_file_changed_without_its_manifest_is_named(
    bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "stale.zip"
    with zipfile.ZipFile(bundle) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.namelist():
            data = src.read(item)
            dst.writestr(item, data + b" " if item == "report.json" else data)
    result = verify_offline(out, monkeypatch)
    assert result.exit_code == 1
    assert "report.json: does not hash to its manifest entry" in result.stdout


def test_a_decision_recorded_under_another_name_fails_the_bundle_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that recorded a decision under a name that is not its content's (so the
    reviews naming that name could be taken as about another decision): the chain and
    the proofs hold, and the bundle's check of each decision's name says what is wrong."""
    from conftest import auto_case
    from credit.governance.onramp import intake
    from credit.journal.naming import named_decision
    from credit.journal.signer import load_journal_key

    made = Run(
        tmp_path,
        f"sqlite:///{tmp_path / 'credit.db'}",
        tmp_path / "lender.key",
        tmp_path / "outbox",
        tmp_path / "checkpoints",
    )
    assert made.cli("journal", "keygen", "--out", str(made.key)).exit_code == 0
    with open_store(made.db, key=load_journal_key(made.key)) as store:
        for case_id, misnamed in (("N-OK", False), ("N-BAD", True)):
            intake(auto_case(case_id=case_id), store)
            payload = named_decision(case_id, "decision.recorded", {"decision": {}}, 1)
            if misnamed:
                payload["decisionId"] = named_decision("N-OK", "decision.recorded", {}, 1)[
                    "decisionId"
                ]
            store.record_decision(case_id, payload)
    assert made.cli("journal", "checkpoint").exit_code == 0
    verified = made.cli("journal", "verify")
    assert verified.exit_code == 1 and "decision-id" in verified.stdout
    assert "N-BAD" in verified.stdout and "N-OK" not in verified.stdout
    for case_id in ("N-OK", "N-BAD"):
        exported = made.cli("export", case_id, "--out", str(tmp_path / f"{case_id}.zip"))
        assert exported.exit_code == 0, exported.output
    for case_id, fails in (("N-OK", False), ("N-BAD", True)):
        result = verify_offline(tmp_path / f"{case_id}.zip", monkeypatch)
        assert (result.exit_code == 1) is fails, result.stdout
        assert ("its decisionId" in result.stdout) is fails
