"""`Ration`: at most so many parts of one decision call GitHub about their own runner in one
hook call, however often the decision is run again with more answers; the others wait for a
later hook call, and none is lost or served twice."""

from __future__ import annotations

from contextlib import suppress
from datetime import UTC, datetime
from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hooks.clock import ManualClock
from hooks.github.port import RunnerListing, Scope
from hooks.lifecycle.steps import (
    Answers,
    Deferred,
    FindRunner,
    ListRunners,
    NeedAnswer,
    Ration,
    RemoveRunner,
    questions_of,
    resolve,
    rotated,
)
from tests.in_memory_github import InMemoryGitHub

ORG = Scope(organization="acme")
OBSERVED = datetime(2026, 1, 1, tzinfo=UTC)  # a fact newer than any cached list


class RemovalOfEach:
    """A decision over parts: each looks its runner up by name, then removes it (two calls of
    its own, in two runs of the decision). Records which parts finished in its last run."""

    def __init__(self, names: list[str], limit: int) -> None:
        self.names = names
        self.limit = limit
        self.finished: set[str] = set()
        self.deferred = False

    def __call__(self, answers: Answers) -> None:
        ration = Ration(answers, self.limit)
        self.finished = set()

        def advance(name: str) -> None:
            with suppress(Deferred):
                self._remove(ration.part(), name)
                self.finished.add(name)

        questions_of(partial(advance, name) for name in self.names)
        self.deferred = ration.deferred

    @staticmethod
    def _remove(github: Answers, name: str) -> None:
        github.list_runners(ORG)  # shared by every part: not counted
        found = github.find_runner(ORG, name, not_before=OBSERVED)
        if found is not None:
            github.remove_runner(ORG, found.id)


def registered(count: int) -> InMemoryGitHub:
    github = InMemoryGitHub(ManualClock())
    for index in range(count):
        github.register(ORG, f"runner-{index}")
    return github


def calls_of(github: InMemoryGitHub, since: int, method: str) -> int:
    return sum(1 for called, _ in github.calls[since:] if called == method)


@given(runners=st.integers(0, 40), limit=st.integers(1, 8))
def test_each_hook_call_serves_at_most_the_ration_and_every_part_in_turn(
    runners: int, limit: int
) -> None:
    github = registered(runners)
    waiting = [f"runner-{index}" for index in range(runners)]
    hook_calls = 0
    while True:
        decision = RemovalOfEach(waiting, limit)
        before = len(github.calls)
        resolve(decision, github, ahead=lambda answers: ListRunners(ORG))
        hook_calls += 1
        # Each part served made its two calls; no more parts than the ration were served.
        assert calls_of(github, before, "runners_named") <= limit
        assert calls_of(github, before, "remove_runner") <= limit
        assert decision.finished or not waiting  # each hook call gets somewhere
        waiting = [name for name in waiting if name not in decision.finished]
        if not decision.deferred:
            break
    assert waiting == []
    assert not github.runners.get(ORG)
    assert github.count("remove_runner") == runners  # each removed once
    assert hook_calls == max(1, -(-runners // limit))


def test_a_part_answered_before_is_never_deferred() -> None:
    """A part with an answer of its own was admitted in an earlier run of the same hook call:
    it goes on with that answer even where the ration is spent by the parts before it."""
    github = registered(3)
    third = github.runners_named(ORG, "runner-2")
    answers = Answers().with_answer(ListRunners(ORG), RunnerListing.of(github.list_runners(ORG)))
    answers = answers.with_answer(FindRunner(ORG, "runner-2", OBSERVED), tuple(third))
    decision = RemovalOfEach(["runner-0", "runner-1", "runner-2"], limit=1)

    with pytest.raises(NeedAnswer) as asked:
        decision(answers)

    assert asked.value.steps == (
        FindRunner(ORG, "runner-0", OBSERVED),  # admitted: the ration's one
        RemoveRunner(ORG, third[0].id),  # answered before: goes on
    )  # and runner-1 waits for a later hook call


def test_a_part_waiting_for_a_shared_list_counts_too() -> None:
    """Found in review: a part that waited for the scope's list (not counted then) was
    admitted in the next run where it stands, and every later part admitted before kept its
    place: 8 removals in one hook call for a ration of 4."""
    github = registered(8)
    ids = {runner.name: runner.id for runner in github.list_runners(ORG)}
    limit = 4

    def decide(answers: Answers) -> None:
        ration = Ration(answers, limit)

        def by_name(name: str) -> None:  # its id unknown: looked up in the scope's list
            with suppress(Deferred):
                part = ration.part()
                found = part.find_runner(ORG, name)
                assert found is not None
                part.remove_runner(ORG, found.id)

        def by_id(name: str) -> None:  # its id recorded: removed at once
            with suppress(Deferred):
                ration.part().remove_runner(ORG, ids[name])

        names = sorted(ids)
        questions_of(
            [partial(by_name, name) for name in names[:4]]
            + [partial(by_id, name) for name in names[4:]]
        )

    resolve(decide, github)  # one hook call, the list not asked for ahead

    assert github.count("remove_runner") <= limit


@given(parts=st.integers(1, 30), turn=st.integers(0, 10_000))
def test_a_rotated_order_holds_every_part_once(parts: int, turn: int) -> None:
    order = list(range(parts))
    assert sorted(rotated(order, turn)) == order
    assert rotated(order, turn)[0] == turn % parts
