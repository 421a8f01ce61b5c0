"""What the lifecycle asks GitHub, and the answers it decides with.

A decision reads GitHub through `Answers`, which has the port's methods but holds only what
GitHub already answered in this call: an unanswered question raises `NeedAnswer` with the step
to carry out. `resolve` carries it out through the real port (`carry_out`, the one place that
calls GitHub) and runs the decision again, until the decision completes. A decision is thus a
pure function of its facts and answers, and a test gives it scripted answers and no port.

A step asked twice in one call gets its first answer: the port's cache would give the same.
Each run up to a question is repeated, so a controller names the questions its decision is
certain to ask next (`resolve(..., ahead=...)`), carried out before the decision runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from hooks.github.port import (
    GitHubError,
    GitHubPort,
    GitHubRunner,
    JitConfig,
    RateLimitedError,
    RegistrationToken,
    RemoveOutcome,
    RemoveResult,
    RunnerListing,
    Scope,
)

if TYPE_CHECKING:
    from hooks.github.scaleset.service import ScaleSetPort

MAX_STEPS = 64
"""More GitHub calls than any decision makes in one hook call: a loop is a bug."""

T = TypeVar("T")


@dataclass(frozen=True)
class ListRunners:
    scope: Scope
    not_before: datetime | None = None


@dataclass(frozen=True)
class FindRunner:
    """The registrations under one name, asked for by name when the cached list is older
    than a fact the caller observed (`not_before`)."""

    scope: Scope
    name: str
    not_before: datetime | None = None


@dataclass(frozen=True)
class RemoveRunner:
    scope: Scope
    runner_id: int
    not_before: datetime | None = None


@dataclass(frozen=True)
class IssueToken:
    scope: Scope


@dataclass(frozen=True)
class LookUpRunnerGroup:
    scope: Scope
    group_name: str


@dataclass(frozen=True)
class GenerateJitConfig:
    scope: Scope
    name: str
    labels: tuple[str, ...]
    runner_group_id: int
    work_folder: str


@dataclass(frozen=True)
class GenerateScaleSetJitConfig:
    """A member of a runner scale set, registered through the scale-set API."""

    scope: Scope
    scale_set_id: int
    name: str
    work_folder: str


Step = (
    ListRunners
    | FindRunner
    | RemoveRunner
    | IssueToken
    | LookUpRunnerGroup
    | GenerateJitConfig
    | GenerateScaleSetJitConfig
)
Answer = (
    RunnerListing
    | tuple[GitHubRunner, ...]
    | RemoveResult
    | RegistrationToken
    | int
    | JitConfig
    | GitHubError
)


class NeedAnswer(BaseException):
    """Raised by `Answers` for a step not answered yet. A BaseException, so that no decision's
    `except GitHubError` (or `except Exception`) can swallow it. A decision over independent
    parts (the runners of a set) may gather the questions of several parts into one, so that
    they are all carried out before it runs again (`questions_of`)."""

    def __init__(self, step: Step, *more: Step) -> None:
        super().__init__(step, *more)
        self.steps = (step, *more)

    @property
    def step(self) -> Step:
        return self.steps[0]


def questions_of(parts: Iterable[Callable[[], object]]) -> None:
    """Run every part; if some stopped at a question, stop with all their questions at once
    (each part's own steps stay in order: its next question is asked on the next run)."""
    asked: list[Step] = []
    for part in parts:
        try:
            part()
        except NeedAnswer as need:
            asked += [step for step in need.steps if step not in asked]
    if asked:
        raise NeedAnswer(*asked)


class Answers:
    """GitHub's answers so far, read with the port's own method names."""

    __slots__ = ("_given",)

    def __init__(self, given: Mapping[Step, Answer] | None = None) -> None:
        self._given: dict[Step, Answer] = dict(given or {})

    def with_answer(self, step: Step, answer: Answer) -> Answers:
        return Answers({**self._given, step: answer})

    def answer_to(self, step: Step) -> Answer | None:
        """The answer given to `step`, a refusal included; None when not asked yet."""
        return self._given.get(step)

    @property
    def steps(self) -> tuple[Step, ...]:
        """The steps carried out, in order."""
        return tuple(self._given)

    def list_runners(self, scope: Scope, *, not_before: datetime | None = None) -> RunnerListing:
        answer = self._answer(ListRunners(scope, not_before))
        return (
            RunnerListing.of(answer) if isinstance(answer, tuple) else _typed(answer, RunnerListing)
        )

    def find_runner(
        self, scope: Scope, name: str, *, not_before: datetime | None = None
    ) -> GitHubRunner | None:
        """The runner registered as `name`: from the scope's list, which a sync reads anyway;
        asked for by name when the answer must be newer than `not_before` (a list that fresh
        would cost every page of the scope's runners)."""
        if not_before is None:
            return self.list_runners(scope).named(name)
        listed = _typed(self._answer(FindRunner(scope, name, not_before)), tuple)
        return next((r for r in listed if r.name == name), None)

    def remove_runner(
        self, scope: Scope, runner_id: int, *, not_before: datetime | None = None
    ) -> RemoveResult:
        return _typed(self._answer(RemoveRunner(scope, runner_id, not_before)), RemoveResult)

    def registration_token(self, scope: Scope) -> RegistrationToken:
        return _typed(self._answer(IssueToken(scope)), RegistrationToken)

    def runner_group_id(self, scope: Scope, group_name: str) -> int:
        return _typed(self._answer(LookUpRunnerGroup(scope, group_name)), int)

    def generate_jit_config(
        self,
        scope: Scope,
        name: str,
        labels: Sequence[str],
        runner_group_id: int,
        work_folder: str,
    ) -> JitConfig:
        step = GenerateJitConfig(scope, name, tuple(labels), runner_group_id, work_folder)
        return _typed(self._answer(step), JitConfig)

    def scale_set_jit_config(
        self, scope: Scope, scale_set_id: int, name: str, work_folder: str
    ) -> JitConfig:
        step = GenerateScaleSetJitConfig(scope, scale_set_id, name, work_folder)
        return _typed(self._answer(step), JitConfig)

    def _answer(self, step: Step) -> Answer:
        try:
            answer = self._given[step]
        except KeyError:
            raise NeedAnswer(step) from None
        if isinstance(answer, GitHubError):
            raise answer.with_traceback(None)
        return answer


class Deferred(BaseException):
    """Raised by a `Ration`'s answers for a part whose own GitHub calls wait for a later hook
    call. A BaseException, as `NeedAnswer` is, so that no `except GitHubError` swallows it."""


class Ration:
    """At most `limit` parts of one decision call GitHub in one hook call; the others wait
    for a later one (`Deferred`). Many runners stopping at once (a set deleted or scaled down
    by hundreds) would otherwise make hundreds of calls in one hook call, past
    Metacontroller's timeout, whose answer is then lost and the calls made again.

    A part counts from its first question (a step not answered yet, of any kind) or its first
    step about its own runner (a lookup by name, a removal), answered or not, in the order the
    parts run. A decision is run again with more answers until it asks nothing, in the same
    order: a part that counts in a later run asked something in an earlier one, so it counted
    there too, at the same place; no more than `limit` count in any run, and a part with
    answers of its own goes on with them.

    Callers choose the order: one that moves between hook calls (`rotated`) lets every part
    have its turn, however long the first ones keep failing."""

    def __init__(self, answers: Answers, limit: int) -> None:
        self.answers = answers
        self.limit = limit
        self.admitted = 0
        self.deferred = False  # some part waits for a later hook call
        self.rate_limited = False  # a part was told to wait for the rate limit's reset

    def part(self) -> Answers:
        """The answers one part reads, counted against the ration."""
        return _RationedAnswers(self)


def rotated(parts: Sequence[T], turn: int) -> list[T]:
    """`parts` starting at `turn` (modulo their number): a ration admits a different window
    of them at each turn."""
    if not parts:
        return []
    start = turn % len(parts)
    return [*parts[start:], *parts[:start]]


_PER_RUNNER_STEPS = (FindRunner, RemoveRunner)


class _RationedAnswers(Answers):
    __slots__ = ("_admitted", "_ration")

    def __init__(self, ration: Ration) -> None:
        self._given = ration.answers._given  # shared, read-only here
        self._ration = ration
        self._admitted = False

    def _answer(self, step: Step) -> Answer:
        answered = step in self._given
        if not self._admitted and (not answered or isinstance(step, _PER_RUNNER_STEPS)):
            ration = self._ration
            if not answered and ration.admitted >= ration.limit:
                ration.deferred = True
                raise Deferred
            self._admitted = True
            ration.admitted += 1
        if answered:
            self._note_rate_limit(self._given[step])
        return super()._answer(step)

    def _note_rate_limit(self, answer: Answer) -> None:
        if isinstance(answer, RateLimitedError) or (
            isinstance(answer, RemoveResult) and answer.outcome is RemoveOutcome.RATE_LIMITED
        ):
            self._ration.rate_limited = True


def _typed(answer: Answer, kind: type[T]) -> T:
    if not isinstance(answer, kind):
        raise TypeError(f"expected {kind.__name__}, the answer is {type(answer).__name__}")
    return answer


def carry_out(step: Step, github: GitHubPort, scale_sets: ScaleSetPort | None = None) -> Answer:
    """Ask GitHub. Its refusals (GitHubError) are answers too; anything else is a bug."""
    try:
        match step:
            case ListRunners(scope, not_before):
                return RunnerListing.of(github.list_runners(scope, not_before=not_before))
            case FindRunner(scope, name, not_before):
                return tuple(github.runners_named(scope, name, not_before=not_before))
            case RemoveRunner(scope, runner_id, not_before):
                return github.remove_runner(scope, runner_id, not_before=not_before)
            case IssueToken(scope):
                return github.registration_token(scope)
            case LookUpRunnerGroup(scope, group_name):
                return github.runner_group_id(scope, group_name)
            case GenerateJitConfig(scope, name, labels, group_id, work_folder):
                return github.generate_jit_config(scope, name, labels, group_id, work_folder)
            case GenerateScaleSetJitConfig(scope, scale_set_id, name, work_folder):
                if scale_sets is None:
                    return GitHubError("runner scale sets are not available on this server")
                return scale_sets.generate_jit_config(scope, scale_set_id, name, work_folder)
    except GitHubError as error:
        return error
    raise AssertionError(f"unknown step {step!r}")


def resolve(
    decide: Callable[[Answers], T],
    github: GitHubPort,
    *,
    ahead: Callable[[Answers], Step | None] | None = None,
    scale_sets: ScaleSetPort | None = None,
) -> T:
    """Run a decision to its end, carrying out each step it asks for. `ahead` names, from the
    answers so far, a step the decision is certain to ask next (the runner list is usually
    such a fact): carried out without running the decision, it spares one run each."""
    answers = Answers()
    for _ in range(MAX_STEPS):
        step = ahead(answers) if ahead is not None else None
        if step is None or answers.answer_to(step) is not None:
            try:
                return decide(answers)
            except NeedAnswer as need:
                for asked in need.steps:
                    answers = answers.with_answer(asked, carry_out(asked, github, scale_sets))
                continue
        answers = answers.with_answer(step, carry_out(step, github, scale_sets))
    raise RuntimeError(f"a decision asked more than {MAX_STEPS} questions: {answers.steps}")
