"""Turn transcripts: stored outside the database under the SHA-256 of their canonical
bytes, named on the ``underwriter.turn`` entry, and read back only while the bytes still
hash to that name."""

from __future__ import annotations

import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import card_case
from credit.canonical import canonical_bytes, sha256_hex
from credit.errors import InputError, JournalIntegrityError
from credit.governance.onramp import intake
from credit.journal import InMemoryStore
from credit.policy import PolicyRegistry, default_policy
from credit.tools import CaseTools
from credit.underwriters import UNDERWRITER_TURN, RulesUnderwriter, SparkRuntime, TurnContext
from credit.underwriters.transcripts import (
    DEFAULT_TRANSCRIPTS,
    TRANSCRIPT_FORMAT,
    TRANSCRIPT_MODE,
    TRANSCRIPTS_ENV,
    read_transcript,
    transcript_name,
    transcripts_folder,
    write_transcript,
)

REGISTRY = PolicyRegistry([default_policy()])


def transcript(**fields: Any) -> dict[str, Any]:
    return {"format": TRANSCRIPT_FORMAT, "caseId": "C-1", "system": "S", **fields}


# ------------------------------------------------------------------ the store


def test_a_transcript_is_stored_as_canonical_json_under_its_sha256_for_its_owner_only(
    tmp_path: Path,
) -> None:
    written = transcript(prompt="Underwrite C-1.", toolCalls=[{"tool": "get_policy"}])
    stored = write_transcript(tmp_path / "t", written)
    data = stored.path.read_bytes()
    assert data == canonical_bytes(written)
    assert stored.sha256 == sha256_hex(data) and stored.name == f"{stored.sha256}.json"
    assert stored.path == tmp_path / "t" / stored.name
    assert stat.S_IMODE(stored.path.stat().st_mode) == TRANSCRIPT_MODE == 0o600
    assert read_transcript(tmp_path / "t", stored.sha256) == written


def test_writing_the_same_transcript_again_changes_nothing(tmp_path: Path) -> None:
    first = write_transcript(tmp_path, transcript())
    again = write_transcript(tmp_path, {**transcript()})
    assert first == again
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temporary left


def test_a_file_under_a_transcripts_name_holding_other_bytes_is_never_overwritten(
    tmp_path: Path,
) -> None:
    stored = write_transcript(tmp_path, transcript())
    stored.path.chmod(0o600)
    stored.path.write_bytes(b'{"format":"credit.transcript/1","caseId":"C-2"}')
    with pytest.raises(JournalIntegrityError) as caught:
        write_transcript(tmp_path, transcript())
    assert caught.value.check == "transcript"
    assert b"C-2" in stored.path.read_bytes()


def test_a_transcript_changed_after_it_was_journaled_is_refused(tmp_path: Path) -> None:
    stored = write_transcript(tmp_path, transcript(final="approve"))
    stored.path.write_bytes(stored.path.read_bytes().replace(b"approve", b"decline"))
    with pytest.raises(JournalIntegrityError, match="hashes to") as caught:
        read_transcript(tmp_path, stored.sha256)
    assert caught.value.check == "transcript"


def test_a_missing_transcript_and_one_that_is_no_transcript_are_named(tmp_path: Path) -> None:
    absent = "0" * 64
    with pytest.raises(JournalIntegrityError) as missing:
        read_transcript(tmp_path, absent)
    assert missing.value.check == "transcript-missing"
    for data in (b"[1, 2]", b'{"format": "other/1"}', b"{not json"):
        sha = sha256_hex(data)
        (tmp_path / f"{sha}.json").write_bytes(data)
        with pytest.raises(JournalIntegrityError) as wrong:
            read_transcript(tmp_path, sha)
        assert wrong.value.check == "transcript-format", data


@pytest.mark.parametrize("digest", ["", "A" * 64, "0" * 63, "../" + "0" * 61, "0" * 64 + "\n"])
def test_a_name_that_is_not_a_sha256_digest_is_bad_input(tmp_path: Path, digest: str) -> None:
    with pytest.raises(InputError, match="not a SHA-256 digest"):
        read_transcript(tmp_path, digest)
    with pytest.raises(InputError):
        transcript_name(digest)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=5), inner, max_size=3)
            ),
            max_leaves=8,
        ),
        max_size=5,
    )
)
def test_any_transcript_reads_back_as_written_and_its_name_is_its_hash(
    tmp_path_factory: pytest.TempPathFactory, fields: dict[str, Any]
) -> None:
    folder = tmp_path_factory.mktemp("t")
    written = {**fields, "format": TRANSCRIPT_FORMAT}
    stored = write_transcript(folder, written)
    assert stored.sha256 == sha256_hex(canonical_bytes(written))
    assert read_transcript(folder, stored.sha256) == written


def test_the_folder_is_the_one_given_else_the_environments_else_transcripts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(TRANSCRIPTS_ENV, raising=False)
    assert transcripts_folder() == DEFAULT_TRANSCRIPTS == Path("transcripts")
    monkeypatch.setenv(TRANSCRIPTS_ENV, str(tmp_path / "env"))
    assert transcripts_folder() == tmp_path / "env"
    assert transcripts_folder(tmp_path / "given") == tmp_path / "given"


# ------------------------------------------------------------------ the runtime


class Transcribing(RulesUnderwriter):
    """The rules underwriter, keeping a transcript of each turn (a model's stand-in)."""

    def __init__(self) -> None:
        super().__init__(REGISTRY)
        self.kept: dict[str, dict[str, Any]] = {}

    async def run(self, tools: CaseTools, context: TurnContext) -> str:
        self.kept[context.turn] = transcript(caseId=context.case_id, system=context.methodology)
        return await super().run(tools, context)

    def take_transcript(self, turn: str) -> Mapping[str, Any] | None:
        return self.kept.pop(turn, None)


def taken_in(case_id: str) -> InMemoryStore:
    store = InMemoryStore()
    intake(card_case(case_id=case_id), store)
    return store


def test_a_turns_transcript_is_stored_and_its_hash_and_file_journaled_on_the_turn(
    tmp_path: Path,
) -> None:
    store = taken_in("C-T")
    runtime = SparkRuntime(store, registry=REGISTRY, transcripts=tmp_path)
    underwriter = Transcribing()
    result = runtime.run_turn("C-T", underwriter)
    (turn,) = store.entries("C-T", kinds=[UNDERWRITER_TURN])
    sha = turn.payload["transcriptSha256"]
    assert turn.payload["transcript"] == f"{sha}.json"
    assert read_transcript(tmp_path, sha)["caseId"] == "C-T"
    assert underwriter.kept == {}  # taken once
    assert result.decision_entry is not None and store.verify().ok


def test_an_underwriter_that_keeps_no_transcript_gets_no_transcript_fields(
    tmp_path: Path,
) -> None:
    store = taken_in("C-R")
    SparkRuntime(store, registry=REGISTRY, transcripts=tmp_path).run_turn(
        "C-R", RulesUnderwriter(REGISTRY)
    )
    (turn,) = store.entries("C-R", kinds=[UNDERWRITER_TURN])
    assert not {"transcript", "transcriptSha256", "transcriptError"} & set(turn.payload)
    assert list(tmp_path.iterdir()) == []


def test_a_transcript_that_cannot_be_stored_is_named_on_the_turn_which_is_still_journaled(
    tmp_path: Path,
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the folder should be")
    store = taken_in("C-X")
    result = SparkRuntime(store, registry=REGISTRY, transcripts=blocked).run_turn(
        "C-X", Transcribing()
    )
    (turn,) = store.entries("C-X", kinds=[UNDERWRITER_TURN])
    assert "transcriptSha256" not in turn.payload
    assert turn.payload["transcriptError"].startswith(("FileExistsError", "NotADirectoryError"))
    assert result.decision_entry is not None


def test_a_transcript_whose_name_is_taken_by_other_bytes_is_named_as_lost_on_the_turn(
    tmp_path: Path,
) -> None:
    """The same turn's transcript, planted first under its name with other bytes."""

    class Fixed(Transcribing):
        async def run(self, tools: CaseTools, context: TurnContext) -> str:
            answer = await super().run(tools, context)
            self.kept[context.turn] = transcript(caseId="C-Y")
            return answer

    taken = write_transcript(tmp_path, transcript(caseId="C-Y"))
    taken.path.chmod(0o600)
    taken.path.write_bytes(b"other bytes")
    store = taken_in("C-Y")
    SparkRuntime(store, registry=REGISTRY, transcripts=tmp_path).run_turn("C-Y", Fixed())
    (turn,) = store.entries("C-Y", kinds=[UNDERWRITER_TURN])
    assert "does not hold the transcript" in turn.payload["transcriptError"]
    assert "transcriptSha256" not in turn.payload
