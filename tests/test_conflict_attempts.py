"""Doing a deferred group's work again when another writer moved one of its cases:
:func:`credit.journal.conflict_attempts`, the one loop the run and the service use."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from credit.journal import CONFLICT_ATTEMPTS, GroupConflictError, conflict_attempts


def attempts_made(conflicts: int, attempts: int = CONFLICT_ATTEMPTS) -> int:
    """How many attempts run when the first ``conflicts`` of them conflict."""
    made = 0
    for attempt in conflict_attempts(attempts):
        with attempt:
            made += 1
            if made <= conflicts:
                raise GroupConflictError(["C-1"])
    return made


@given(attempts=st.integers(1, 8), conflicts=st.integers(0, 10))
def test_the_work_is_done_again_after_each_conflict_and_the_last_conflict_is_raised(
    attempts: int, conflicts: int
) -> None:
    if conflicts < attempts:
        assert attempts_made(conflicts, attempts) == conflicts + 1
    else:
        with pytest.raises(GroupConflictError) as raised:
            attempts_made(conflicts, attempts)
        assert raised.value.case_ids == ("C-1",)


def test_work_that_commits_at_once_is_done_once() -> None:
    assert attempts_made(0) == 1


def test_any_other_error_ends_the_attempts_at_once() -> None:
    made = 0
    with pytest.raises(ValueError, match="not a conflict"):
        for attempt in conflict_attempts():
            with attempt:
                made += 1
                raise ValueError("not a conflict")
    assert made == 1


def test_the_same_loop_serves_asynchronous_work() -> None:
    async def work() -> list[int]:
        done = []
        for attempt in conflict_attempts(3):
            with attempt:
                await asyncio.sleep(0)
                done.append(len(done) + 1)
                if len(done) < 2:
                    raise GroupConflictError(["C-2"])
        return done

    assert asyncio.run(work()) == [1, 2]


def test_fewer_than_one_attempt_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        list(conflict_attempts(0))
