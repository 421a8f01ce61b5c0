"""The lifecycle decisions as pure functions: facts and scripted GitHub answers in, the next
question or the decision out. No port, no HTTP: what each controller decides, step by step."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hooks.clock import ManualClock, format_time, parse_time
from hooks.github.list_pacing import MAX_LIST_PERIOD
from hooks.github.port import (
    GitHubError,
    GitHubRunner,
    RateLimitedError,
    RegistrationToken,
    RemoveOutcome,
    RemoveResult,
    RunnerListing,
    Scope,
)
from hooks.lifecycle.graceful_stop import StopSubject, StopTiming, tick_graceful_stop
from hooks.lifecycle.incarnation import (
    LIST_SETTLE_SECONDS,
    MIN_LIST_WAIT_SECONDS,
    STEADY_WATCH_MAX_SECONDS,
    next_list_wait,
    registration_timed_out,
    steady_watch_wait,
)
from hooks.lifecycle.leftover import remove_leftover_registration, remove_stopped_runner
from hooks.lifecycle.steps import (
    MAX_STEPS,
    Answer,
    Answers,
    FindRunner,
    GenerateJitConfig,
    IssueToken,
    ListRunners,
    NeedAnswer,
    RemoveRunner,
    Step,
    resolve,
)
from hooks.naming import uid_tag
from hooks.resources.runner import GracefulStopStatus, Runner, RunnerStatus
from hooks.resources.runnerset import RunnerSet, RunnerSetStatus
from hooks.runner.container_mode import observe_account
from hooks.runner.decide import (
    RunnerFacts,
    RunnerPlan,
    decide_finalize,
    decide_sync,
    next_certain_question,
)
from hooks.runner.observed_pod import ObservedPod, observe_pod
from hooks.runner.parse import ParsedRunner
from hooks.runner.pod import PodDefaults
from hooks.runner.registration import RegistrationMaterial
from hooks.runner.report import runner_status
from hooks.runnerpod.decide import decide_pod_stop, decide_runner_id
from hooks.runnerpod.facts import read_runner_pod
from hooks.runnerset.decide import RunnerSetFacts, RunnerSetPlan
from hooks.runnerset.decide import decide_finalize as rs_decide_finalize
from hooks.runnerset.decide import decide_sync as rs_decide_sync
from hooks.runnerset.decide import next_certain_question as rs_next_certain_question
from hooks.runnerset.member import ObservedMember
from hooks.settings import Settings
from tests.hook_driver import new_runner, running_status
from tests.in_memory_github import InMemoryGitHub

ORG = Scope(organization="acme")
NAME = "example-runner"
NOW = ManualClock().now()
SETTINGS = Settings()
TIMING = StopTiming.from_settings(SETTINGS)


def decide(decision: object, answers: Mapping[Any, Answer] | None = None) -> object:
    """Run a decision with these answers: its result, or the question it stops at."""
    assert callable(decision)
    try:
        return decision(Answers(answers))
    except NeedAnswer as need:
        return need.step


# ------------------------------------------------------------------ steps and resolve


def test_an_unanswered_question_stops_the_decision_with_its_step() -> None:
    step = decide(lambda github: github.list_runners(ORG))
    assert step == ListRunners(ORG)


def test_a_refusal_is_raised_where_the_decision_asked() -> None:
    refused = GitHubError("boom", 500)

    def decision(github: Answers) -> str:
        try:
            github.registration_token(ORG)
        except GitHubError as error:
            return f"refused: {error}"
        return "issued"

    assert decide(decision, {IssueToken(ORG): refused}) == "refused: boom"


def test_no_except_clause_of_a_decision_swallows_a_question() -> None:
    def careless(github: Answers) -> str:
        try:
            github.list_runners(ORG)
        except Exception:
            return "swallowed"
        return "answered"

    assert decide(careless) == ListRunners(ORG)


def test_resolve_carries_out_each_step_once_in_order() -> None:
    github = InMemoryGitHub(ManualClock())
    github.register(ORG, NAME)

    def decision(answers: Answers) -> tuple[int, str]:
        found = answers.find_runner(ORG, NAME)
        assert found is not None
        again = answers.find_runner(ORG, NAME)  # asked twice: answered once
        assert again == found
        return found.id, answers.registration_token(ORG).token

    runner_id, token = resolve(decision, github)

    assert runner_id == github.runners[ORG][0].id
    assert token
    assert [method for method, _ in github.calls] == ["list_runners", "registration_token"]


def test_resolve_refuses_a_decision_that_never_ends() -> None:
    github = InMemoryGitHub(ManualClock())
    counter = iter(range(10**6))

    def endless(answers: Answers) -> None:
        for _ in range(MAX_STEPS + 1):
            answers.remove_runner(ORG, next(counter))

    with pytest.raises(RuntimeError, match="more than"):
        resolve(endless, github)


# ------------------------------------------------------------------ the graceful stop

RUNNING = ObservedPod(
    name=NAME,
    uid="pod-1",
    phase="Running",
    labels={},
    terminating=False,
    ready=True,
    ready_since=NOW - timedelta(minutes=5),
    reason="",
    message="",
    has_container_statuses=True,
    runner_exit_code=None,
    runner_started=True,
    ephemeral=True,
    scope=Scope(organization="acme"),
)


@given(
    ready_for=st.integers(0, 7200),  # whole seconds: no rounding at the boundary
    listed_after_ready=st.none() | st.integers(-600, 7200),
    seen=st.sampled_from(["online", "offline", "absent"]),
)
def test_a_registration_times_out_only_on_a_list_asked_after_the_timeout(
    ready_for: int, listed_after_ready: int | None, seen: str
) -> None:
    """Ready for the whole timeout, not online, and a list asked after the timeout ran out
    (when its time is known) that says so: a paced list may predate the registration."""
    timeout = 600.0
    ready_since = NOW - timedelta(seconds=ready_for)
    pod = replace(RUNNING, ready_since=ready_since)
    listed_at = (
        None if listed_after_ready is None else ready_since + timedelta(seconds=listed_after_ready)
    )
    found = None if seen == "absent" else GitHubRunner(7, NAME, seen, busy=False)
    expected = (
        ready_for >= timeout
        and seen != "online"
        and (listed_after_ready is None or listed_after_ready >= timeout)
    )
    assert registration_timed_out(pod, found, NOW, timeout, listed_at) is expected


def runner(runner_id: int = 7, *, busy: bool = False) -> GitHubRunner:
    return GitHubRunner(id=runner_id, name=NAME, status="online", busy=busy)


def stop_state() -> GracefulStopStatus:
    return GracefulStopStatus(reason="ScaleDown", started_at=format_time(NOW))


def test_stop_of_an_unknown_runner_asks_for_the_list_then_deletes_it() -> None:
    subject = StopSubject(ORG, NAME, None, RUNNING, ephemeral=True)

    def tick(github: Answers) -> object:
        return tick_graceful_stop(subject, stop_state(), github, NOW, TIMING)

    assert decide(tick) == ListRunners(ORG)
    assert decide(tick, {ListRunners(ORG): (runner(),)}) == RemoveRunner(ORG, 7)
    removed: dict[Step, Answer] = {
        ListRunners(ORG): (runner(),),
        RemoveRunner(ORG, 7): RemoveResult(RemoveOutcome.REMOVED),
    }
    done = decide(tick, removed)
    assert done.done and done.state.outcome == "Unregistered"  # type: ignore[attr-defined]


def test_stop_of_a_busy_ephemeral_runner_waits_for_its_job() -> None:
    subject = StopSubject(ORG, NAME, 7, RUNNING, ephemeral=True)
    answers = {RemoveRunner(ORG, 7): RemoveResult(RemoveOutcome.BUSY)}

    tick = decide(lambda g: tick_graceful_stop(subject, stop_state(), g, NOW, TIMING), answers)

    assert not tick.done  # type: ignore[attr-defined]
    assert tick.state.waiting_for_completion  # type: ignore[attr-defined]
    assert tick.retry_after == TIMING.retry_delay  # type: ignore[attr-defined]


def test_a_leftover_check_after_a_stop_asks_for_the_runners_name_not_the_whole_list() -> None:
    """The registration a stopped runner may have left is looked up by name with an answer
    newer than the stop: one page, however many runners the scope has."""
    stopped_at = NOW - timedelta(seconds=3)

    def check(github: Answers) -> object:
        return remove_leftover_registration(github, ORG, NAME, TIMING, stopped_at=stopped_at)

    assert decide(check) == FindRunner(ORG, NAME, stopped_at)
    left = {FindRunner(ORG, NAME, stopped_at): (runner(),)}
    assert decide(check, left) == RemoveRunner(ORG, 7, stopped_at)
    gone = decide(check, {FindRunner(ORG, NAME, stopped_at): ()})
    assert gone.done and gone.retry_after is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("asked", "fresh_for", "expected"),
    [
        (2, 60, "on-this-list"),  # listed after the stop: decided on it
        (-30, 60, "wait"),  # listed before; the next list is due within the patience
        (-30, 200, "wait"),  # lists paced 233 s apart: the next is waited for
        (-30, 700, "by-name"),  # paced farther apart than 10 minutes: asked by name
        (-500, 200, "wait"),  # the next of lists paced beyond 10 minutes comes within them
        (None, None, "by-name"),  # a list of unknown age
    ],
)
def test_a_patient_leftover_check_waits_for_the_scopes_next_list(
    asked: float | None, fresh_for: float | None, expected: str
) -> None:
    """A Runner being deleted can wait: an ephemeral runner that removed itself after its
    job costs no call at all (one per job before, the largest share for ephemeral runners)."""
    stopped_at = NOW - timedelta(seconds=3)
    asked_at = None if asked is None else stopped_at + timedelta(seconds=asked)
    fresh_until = None if fresh_for is None else NOW + timedelta(seconds=fresh_for)

    def check(github: Answers) -> object:
        return remove_leftover_registration(
            github, ORG, NAME, TIMING, stopped_at=stopped_at, now=NOW
        )

    listing = RunnerListing((runner(),), asked_at, fresh_until)
    answer = decide(check, {ListRunners(ORG): listing})
    if expected == "on-this-list":
        assert answer == RemoveRunner(ORG, 7, stopped_at)
        gone = RunnerListing((), asked_at, fresh_until)
        assert decide(check, {ListRunners(ORG): gone}).done  # type: ignore[attr-defined]
    elif expected == "wait":
        assert not answer.done  # type: ignore[attr-defined]
        assert fresh_for is not None
        assert answer.retry_after == pytest.approx(fresh_for + 1)  # type: ignore[attr-defined]
    else:
        assert answer == FindRunner(ORG, NAME, stopped_at)


@pytest.mark.parametrize(
    ("last_attempt", "expected_wait"),
    [
        (-20, 40.0),  # tried 20 s ago: the rest of the retry delay
        (-60, None),  # a retry delay ago: tried now
        (3600 * 24 * 365 * 70, None),  # ahead of now (a hand's, a clock's): tried now
    ],
    ids=["tried-20s-ago", "tried-a-delay-ago", "dated-ahead"],
)
def test_a_stopped_runners_next_delete_waits_out_the_retry_delay_only(
    last_attempt: float, expected_wait: float | None
) -> None:
    """Found by the hostile-input fuzzer's kind of record: a last attempt dated ahead of now
    put the pod's next DELETE off until that date, and the pod stayed terminating."""
    state = GracefulStopStatus(
        reason="PodDeleted",
        started_at=format_time(NOW - timedelta(minutes=5)),
        completed_at=format_time(NOW - timedelta(minutes=4)),
        outcome="PodStopped",
        runner_id=7,
        last_attempt_at=format_time(NOW + timedelta(seconds=last_attempt)),
    )

    def step(github: Answers) -> object:
        return remove_stopped_runner(github, ORG, NAME, state, NOW, TIMING)

    answer = decide(step)
    if expected_wait is None:
        assert answer == RemoveRunner(ORG, 7, NOW - timedelta(minutes=4))
    else:
        assert answer.retry_after == pytest.approx(expected_wait)  # type: ignore[attr-defined]


def test_a_leftover_check_with_no_stop_time_reads_the_shared_list() -> None:
    def check(github: Answers) -> object:
        return remove_leftover_registration(github, ORG, NAME, TIMING)

    assert decide(check) == ListRunners(ORG)
    other = GitHubRunner(id=8, name="another-runner", status="online", busy=False)
    assert decide(check, {ListRunners(ORG): (other,)}).done  # type: ignore[attr-defined]


# ------------------------------------------------------------------ the Runner


def runner_facts(
    pod: dict[str, object] | None,
    *,
    status: RunnerStatus | None = None,
    material: RegistrationMaterial | None = None,
    spec: dict[str, object] | None = None,
) -> RunnerFacts:
    parent = new_runner(spec or {"organization": "acme"}, name=NAME)
    parsed = ParsedRunner(
        Runner.model_validate(parent), (), jit=False, defaults=PodDefaults.from_settings(SETTINGS)
    )
    pod_object = None
    if pod is not None:
        pod_object = {**parsed.pod(), "status": pod}
        pod_object["metadata"] = {**pod_object["metadata"], "uid": "pod-1"}
    return RunnerFacts(
        parsed=parsed,
        scope=ORG,
        status=status or RunnerStatus(),
        pod_object=pod_object,
        pod=observe_pod(pod_object) if pod_object is not None else None,
        account=observe_account(None, pod_object),
        secret_observed=material is not None,
        material=material or RegistrationMaterial(),
        now=NOW,
        settings=SETTINGS,
        timing=TIMING,
    )


TOKEN = RegistrationToken(token="t0ken", expires_at=NOW + timedelta(hours=1))


def test_a_new_runner_asks_for_a_token_and_then_creates_its_pod_with_the_secret() -> None:
    facts = runner_facts(None)

    assert decide(lambda g: decide_sync(facts, g)) == IssueToken(ORG)
    plan = decide(lambda g: decide_sync(facts, g), {IssueToken(ORG): TOKEN})

    assert isinstance(plan, RunnerPlan)
    assert plan.pod is not None and plan.phase == "Created"
    assert plan.secret is not None and plan.secret.token == "t0ken"
    assert [event.reason for event in plan.events] == ["RegistrationTokenUpdated", "PodCreated"]


def test_a_running_registered_pod_is_kept_after_one_look_at_github() -> None:
    facts = runner_facts(running_status(format_time(NOW - timedelta(minutes=5))))

    assert decide(lambda g: decide_sync(facts, g)) == ListRunners(ORG)
    plan = decide(lambda g: decide_sync(facts, g), {ListRunners(ORG): (runner(),)})

    assert isinstance(plan, RunnerPlan)
    assert plan.pod is not None and plan.stop is None
    # A list of unknown age: when the next one is out is not known either.
    assert plan.runner_id == 7 and plan.resync == [SETTINGS.sync_period]


@pytest.mark.parametrize(
    ("served_for", "wait"),
    [(90, 91), (60, 61), (2, 5), (0, 60), (-10, 60), (400, 401), (3600, 3601), (3700, 60)],
)
def test_a_watched_runner_looks_again_just_after_its_scopes_next_list(
    served_for: float, wait: float
) -> None:
    """Busy and online change only with a new list: a look sooner reads the same list again.
    A list served for a couple of seconds more (another replica's is due) is looked at again
    after 5 s, not at once; one served longer than the configured period (the token's budget
    stretched it) is awaited too, up to an hour; one with no time left, or more than the
    longest period (another clock's), gives no time for the next: the sync period."""
    facts = runner_facts(running_status(format_time(NOW - timedelta(minutes=5))))
    fresh_until = NOW + timedelta(seconds=served_for)
    listing = RunnerListing(
        (runner(),), asked_at=NOW - timedelta(seconds=5), fresh_until=fresh_until
    )

    plan = decide(lambda g: decide_sync(facts, g), {ListRunners(ORG): listing})

    assert isinstance(plan, RunnerPlan)
    assert plan.stop is None and plan.resync == [pytest.approx(wait)]


@given(served_for=st.floats(-1e6, 1e6), period=st.floats(1, 3600), sync_period=st.floats(1, 3600))
def test_the_next_list_is_awaited_never_longer_than_its_period_and_never_before_it(
    served_for: float, period: float, sync_period: float
) -> None:
    settings = Settings(GITHUB_LIST_RUNNERS_CACHE_TTL=period, SYNC_PERIOD=sync_period)
    fresh_until = NOW + timedelta(seconds=served_for)
    served_for = (fresh_until - NOW).total_seconds()  # as times hold it: to the microsecond

    wait = next_list_wait(fresh_until, NOW, settings)

    if 0 < served_for <= max(period, MAX_LIST_PERIOD.total_seconds()):
        # look just after the list stops being served
        assert NOW + timedelta(seconds=wait) > fresh_until
        assert wait <= max(served_for + LIST_SETTLE_SECONDS, MIN_LIST_WAIT_SECONDS) + 1e-6
    else:
        assert wait == sync_period


def reported(
    held_for: float, *, runner_id: int | None = 7, online: bool = True, busy: bool = False
) -> RunnerStatus:
    """A status that has reported this view of the runner since `held_for` seconds ago."""
    return RunnerStatus(
        runner_id=runner_id,
        online=online,
        busy=busy,
        last_registration_check_time=format_time(NOW - timedelta(seconds=held_for)),
    )


@pytest.mark.parametrize(
    ("held_for", "wait"),
    [(0, 91), (100, 91), (182, 91), (400, 200), (600, 300), (3 * 3600, 300)],
)
def test_a_runner_whose_report_has_held_a_while_looks_again_less_often(
    held_for: float, wait: float
) -> None:
    """At the next list while what status reports changes; then after half as long as it has
    held, up to five minutes (`steady_watch_wait`)."""
    facts = runner_facts(
        running_status(format_time(NOW - timedelta(hours=4))), status=reported(held_for)
    )
    listing = RunnerListing(
        (runner(),), asked_at=NOW - timedelta(seconds=5), fresh_until=NOW + timedelta(seconds=90)
    )

    plan = decide(lambda g: decide_sync(facts, g), {ListRunners(ORG): listing})

    assert isinstance(plan, RunnerPlan)
    assert plan.stop is None and plan.resync == [pytest.approx(wait)]


@pytest.mark.parametrize(
    "found",
    [
        runner(busy=True),  # its job started: status still says idle
        runner(8),  # another registration under the name
        GitHubRunner(id=7, name=NAME, status="offline", busy=False),
        None,  # not listed
    ],
)
def test_a_runner_whose_report_changes_or_is_not_online_looks_again_at_the_next_list(
    found: GitHubRunner | None,
) -> None:
    facts = runner_facts(
        running_status(format_time(NOW - timedelta(minutes=5))), status=reported(3 * 3600)
    )
    listed = () if found is None else (found,)
    listing = RunnerListing(
        listed, asked_at=NOW - timedelta(seconds=5), fresh_until=NOW + timedelta(seconds=90)
    )

    plan = decide(lambda g: decide_sync(facts, g), {ListRunners(ORG): listing})

    assert isinstance(plan, RunnerPlan)
    assert min(plan.resync) == pytest.approx(91)


def test_a_runner_whose_pod_is_not_ready_looks_again_at_the_next_list() -> None:
    """Its node stopped reporting, or a probe fails: its runner may be going offline."""
    status = running_status(format_time(NOW - timedelta(hours=4)))
    status["conditions"][0]["status"] = "Unknown"
    facts = runner_facts(status, status=reported(3 * 3600))
    listing = RunnerListing(
        (runner(),), asked_at=NOW - timedelta(seconds=5), fresh_until=NOW + timedelta(seconds=90)
    )

    plan = decide(lambda g: decide_sync(facts, g), {ListRunners(ORG): listing})

    assert isinstance(plan, RunnerPlan)
    assert min(plan.resync) == pytest.approx(91)


@pytest.mark.parametrize(("recorded_ahead", "wait"), [(30, 91), (3600, 91)])
def test_a_report_time_ahead_of_now_is_not_counted_as_a_hold(
    recorded_ahead: float, wait: float
) -> None:
    """A time ahead of now (another replica's clock, a hand's edit) is no hold: the next list."""
    facts = runner_facts(
        running_status(format_time(NOW - timedelta(hours=4))), status=reported(-recorded_ahead)
    )
    listing = RunnerListing(
        (runner(),), asked_at=NOW - timedelta(seconds=5), fresh_until=NOW + timedelta(seconds=90)
    )

    plan = decide(lambda g: decide_sync(facts, g), {ListRunners(ORG): listing})

    assert isinstance(plan, RunnerPlan)
    assert plan.resync == [pytest.approx(wait)]


def test_a_report_time_far_ahead_does_not_freeze_status() -> None:
    """Found in review: status reporting a list an hour ahead outranked every list, so status
    stayed as it was; a time further ahead than clocks differ is not believed."""
    facts = runner_facts(
        running_status(format_time(NOW - timedelta(hours=4))), status=reported(-3600)
    )
    listing = RunnerListing(
        (runner(busy=True),),
        asked_at=NOW - timedelta(seconds=5),
        fresh_until=NOW + timedelta(seconds=90),
    )

    plan = decide(lambda g: decide_sync(facts, g), {ListRunners(ORG): listing})

    assert isinstance(plan, RunnerPlan)
    assert runner_status(facts, plan).busy is True


@given(list_wait=st.floats(0, 1e5), steady_for=st.floats(0, 1e7), more=st.floats(0, 1e7))
def test_a_steady_runner_never_looks_sooner_than_the_next_list_nor_later_than_the_cap(
    list_wait: float, steady_for: float, more: float
) -> None:
    wait = steady_watch_wait(list_wait, steady_for)

    assert wait >= list_wait
    assert wait <= max(list_wait, STEADY_WATCH_MAX_SECONDS)
    assert steady_watch_wait(list_wait, steady_for + more) >= wait  # never sooner for longer
    if steady_for <= 2 * list_wait:
        assert wait == list_wait  # while it changes, at every list


def test_github_unavailable_asks_again_after_the_sync_period() -> None:
    running = runner_facts(running_status(format_time(NOW - timedelta(minutes=5))))
    facts = replace(running, settings=Settings(SYNC_PERIOD=45))

    plan = decide(lambda g: decide_sync(facts, g), {ListRunners(ORG): GitHubError("down")})

    assert isinstance(plan, RunnerPlan)
    assert plan.pod is not None and plan.stop is None
    assert min(plan.resync) == 45


@pytest.mark.parametrize(
    ("served_for", "wait"),
    [(None, 60), (200, 201), (30, 31), (590, 541)],  # 541: just past the timeout (600 s)
)
def test_a_registering_runner_looks_again_when_there_is_a_new_list_to_look_in(
    served_for: float | None, wait: float
) -> None:
    """Its registration shows only in a new list: a look before reads the same list again.
    Without a time for the next list, every REGISTRATION_CHECK_INTERVAL (60 s); never past
    the registration timeout."""
    facts = runner_facts(running_status(format_time(NOW - timedelta(seconds=60))))
    fresh_until = None if served_for is None else NOW + timedelta(seconds=served_for)
    listing = RunnerListing((), asked_at=NOW - timedelta(seconds=5), fresh_until=fresh_until)

    plan = decide(lambda g: decide_sync(facts, g), {ListRunners(ORG): listing})

    assert isinstance(plan, RunnerPlan)
    assert plan.pod is not None and plan.stop is None
    assert min(plan.resync) == pytest.approx(wait)


def test_a_runner_that_never_registered_is_replaced_after_the_timeout() -> None:
    ready_since = NOW - timedelta(seconds=SETTINGS.registration_timeout + 1)
    facts = runner_facts(running_status(format_time(ready_since)))
    listed: dict[Step, Answer] = {ListRunners(ORG): ()}

    # Before it lets the pod go, GitHub is asked anew: the cached list may predate the
    # registration.
    assert decide(lambda g: decide_sync(facts, g), listed) == FindRunner(ORG, NAME, NOW)
    plan = decide(lambda g: decide_sync(facts, g), {**listed, FindRunner(ORG, NAME, NOW): ()})

    assert isinstance(plan, RunnerPlan)
    assert plan.stop is not None and plan.stop.reason == "RegistrationTimeout"
    assert plan.pod is None  # released: nothing was registered to wait for


def test_a_runner_registered_since_the_cached_list_is_not_taken_for_never_registered() -> None:
    ready_since = NOW - timedelta(seconds=SETTINGS.registration_timeout + 1)
    facts = runner_facts(running_status(format_time(ready_since)))
    answers: dict[Step, Answer] = {
        ListRunners(ORG): (),  # made before the runner registered
        FindRunner(ORG, NAME, NOW): (runner(busy=True),),
        RemoveRunner(ORG, 7): RemoveResult(RemoveOutcome.BUSY),
    }

    plan = decide(lambda g: decide_sync(facts, g), answers)

    assert isinstance(plan, RunnerPlan)
    assert plan.pod is not None  # kept: its runner works
    assert plan.stop is not None and plan.stop.runner_id == 7 and plan.stop.outcome is None


def test_github_unavailable_keeps_the_pod_and_decides_nothing() -> None:
    ready_since = NOW - timedelta(seconds=SETTINGS.registration_timeout + 1)
    facts = runner_facts(running_status(format_time(ready_since)))

    plan = decide(lambda g: decide_sync(facts, g), {ListRunners(ORG): RateLimitedError("rl", 30)})

    assert isinstance(plan, RunnerPlan)
    assert plan.pod is not None and plan.stop is None
    assert 30 in plan.resync


# What status reports of GitHub only moves forward: replicas list a scope at different moments,
# and a list older than the one status reports would turn it back (and the next replica's
# answer forth again, a status write and a sync each time).


def report(status: RunnerStatus, listing: RunnerListing) -> RunnerStatus:
    """The status a sync writes, given the status it read and the list its replica has."""
    ready_since = format_time(NOW - timedelta(seconds=SETTINGS.registration_timeout + 60))
    facts = runner_facts(running_status(ready_since), status=status)
    answers: dict[Step, Answer] = {
        ListRunners(ORG): listing,
        FindRunner(ORG, NAME, NOW): tuple(listing),  # GitHub asked anew says the same
    }
    plan = decide(lambda g: decide_sync(facts, g), answers)
    assert isinstance(plan, RunnerPlan)
    return runner_status(facts, plan)


def github_view(status: RunnerStatus) -> tuple[object, ...]:
    registered = next((c.status for c in status.conditions if c.type == "Registered"), None)
    return (status.runner_id, status.busy, registered)


def dated(seconds_ago: float, *runners: GitHubRunner) -> RunnerListing:
    return RunnerListing(runners, NOW - timedelta(seconds=seconds_ago))


def test_a_list_reports_what_it_says_and_when_it_was_asked_for() -> None:
    status = report(RunnerStatus(), dated(30, runner(busy=True)))

    assert github_view(status) == (7, True, "True")
    assert status.last_registration_check_time == format_time(NOW - timedelta(seconds=30))


def test_a_list_older_than_the_reported_one_changes_nothing() -> None:
    reported = report(RunnerStatus(), dated(30, runner(busy=True)))

    # Another replica's list from before: the runner idle, or not registered yet.
    for older in (dated(60, runner(busy=False)), dated(60)):
        facts_status = report(reported, older)
        assert facts_status == reported


def test_an_older_list_that_misses_the_runner_does_not_time_its_registration_out() -> None:
    ready_since = format_time(NOW - timedelta(seconds=SETTINGS.registration_timeout + 60))
    reported = report(RunnerStatus(), dated(30, runner()))
    facts = runner_facts(running_status(ready_since), status=reported)

    plan = decide(lambda g: decide_sync(facts, g), {ListRunners(ORG): dated(60)})

    assert isinstance(plan, RunnerPlan)
    assert plan.stop is None and plan.pod is not None


def test_a_newer_list_that_says_the_same_writes_nothing_new() -> None:
    reported = report(RunnerStatus(), dated(60, runner(busy=True)))

    assert report(reported, dated(10, runner(busy=True))) == reported
    turned = report(reported, dated(10, runner(busy=False)))
    assert github_view(turned) == (7, False, "True")
    assert turned.last_registration_check_time == format_time(NOW - timedelta(seconds=10))


LISTINGS = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=600),
        st.sampled_from([(), (runner(busy=False),), (runner(busy=True),), (runner(8),)]),
    ),
    min_size=1,
    max_size=12,
)


@given(LISTINGS)
@settings(max_examples=150, deadline=None)
def test_status_never_reports_a_list_older_than_the_one_it_reports(
    listings: list[tuple[int, tuple[GitHubRunner, ...]]],
) -> None:
    status = RunnerStatus()
    for seconds_ago, runners in listings:
        before = status
        status = report(status, dated(seconds_ago, *runners))
        checked_before = before.last_registration_check_time
        checked = status.last_registration_check_time
        assert checked_before is None or (checked is not None and checked >= checked_before)
        if github_view(status) != github_view(before):
            # Changed: to what this list says, dated by it, and it is not older than before.
            assert checked == format_time(NOW - timedelta(seconds=seconds_ago))
            found = next((r for r in runners if r.name == NAME), None)
            said = (found.id, found.busy, "True") if found else (*github_view(status)[:2], "False")
            assert github_view(status) == said


def test_finalize_of_a_busy_static_runner_keeps_its_pod() -> None:
    facts = runner_facts(
        running_status(format_time(NOW - timedelta(minutes=5))),
        spec={"organization": "acme", "ephemeral": False},
        status=RunnerStatus.model_validate({"registration": {"organization": "acme"}}),
    )
    answers: dict[Step, Answer] = {
        ListRunners(ORG): (runner(busy=True),),
        RemoveRunner(ORG, 7): RemoveResult(RemoveOutcome.BUSY),
    }

    plan = decide(lambda g: decide_finalize(facts, g), answers)

    assert isinstance(plan, RunnerPlan)
    assert plan.finalized is False and plan.pod is not None
    assert [event.reason for event in plan.events] == ["UnregistrationWaiting"]


def test_a_pod_gone_before_its_stop_found_the_registration_is_let_go_on_a_fresh_answer() -> None:
    """The stop waited for the runner to register (the cached list, made before the pod's
    runner registered, did not show it) when the pod went: evicted mid-job, say. That list
    still says "not registered", but only GitHub's answer from now tells what is left."""
    waiting = GracefulStopStatus(
        reason="RunnerDeleted",
        started_at=format_time(NOW - timedelta(seconds=60)),
        pod_uid="pod-1",
        message="not registered on GitHub (yet): waiting up to the registration timeout",
    )
    status = RunnerStatus.model_validate(
        {"registration": {"organization": "acme"}, "gracefulStop": waiting.to_wire()}
    )
    facts = runner_facts(None, status=status)
    stale: dict[Step, Answer] = {ListRunners(ORG): ()}
    fresh = FindRunner(ORG, NAME, NOW)

    assert decide(lambda g: decide_finalize(facts, g), stale) == fresh
    left = {**stale, fresh: (runner(),)}
    assert decide(lambda g: decide_finalize(facts, g), left) == RemoveRunner(ORG, 7, NOW)
    removed = {**left, RemoveRunner(ORG, 7, NOW): RemoveResult(RemoveOutcome.REMOVED)}
    plan = decide(lambda g: decide_finalize(facts, g), removed)
    assert isinstance(plan, RunnerPlan) and plan.finalized is True


# The invariant of the lifecycle: a pod whose runner may be working is never let go before
# GitHub let the runner go. Any answers GitHub may give, for any running pod with or without
# a stop in progress.

RUNNER_LISTS = st.one_of(
    st.just(()),
    st.builds(
        lambda busy, online: (
            replace(runner(busy=busy), status="online" if online else "offline"),
        ),
        st.booleans(),
        st.booleans(),
    ),
    st.just(GitHubError("unavailable", 502)),
    st.just(RateLimitedError("limited", 60)),
)
REMOVALS = st.sampled_from(list(RemoveOutcome)).map(lambda outcome: RemoveResult(outcome, 30))
CLEAN = {"Unregistered", "NotRegistered", "Forbidden"}


@settings(max_examples=200, deadline=None)
@given(
    listing=RUNNER_LISTS,
    fresh=RUNNER_LISTS,
    removal=REMOVALS,
    ready_for=st.floats(min_value=0, max_value=3600),
    finalize=st.booleans(),
    stopping=st.sampled_from([None, "ScaleDown", "TemplateChanged"]),
)
def test_no_running_pod_is_released_before_github_let_its_runner_go(
    listing: object,
    fresh: object,
    removal: RemoveResult,
    ready_for: float,
    finalize: bool,
    stopping: str | None,
) -> None:
    """`listing` is the cached list; `fresh`, GitHub's answer when asked anew."""
    status = RunnerStatus.model_validate(
        {
            "registration": {"organization": "acme"},
            **(
                {
                    "gracefulStop": {
                        "reason": stopping,
                        "startedAt": format_time(NOW),
                        "podUid": "pod-1",
                    }
                }
                if stopping
                else {}
            ),
        }
    )
    ready_since = format_time(NOW - timedelta(seconds=ready_for))
    facts = runner_facts(running_status(ready_since), status=status)
    ready_for = (NOW - parse_time(ready_since)).total_seconds()  # as the pod records it: whole s
    answers: dict[Step, Answer] = {
        ListRunners(ORG): listing,  # type: ignore[dict-item]
        FindRunner(ORG, NAME, NOW): fresh,  # type: ignore[dict-item]
        RemoveRunner(ORG, 7): removal,
    }
    decision = decide_finalize if finalize else decide_sync

    plan = decide(lambda g: decision(facts, g), answers)

    assert isinstance(plan, RunnerPlan)
    if plan.pod is None:
        assert plan.stop is not None
        registered = any(isinstance(answer, tuple) and answer for answer in (listing, fresh))
        if registered:
            assert plan.stop.outcome in CLEAN
        else:
            # Nothing on GitHub: let go only past the registration timeout.
            assert plan.stop.outcome in CLEAN
            assert ready_for >= SETTINGS.registration_timeout


# ------------------------------------------------------------------ the runner-pod decorator


def decorated_pod(
    *, deleting: bool = False, annotations: dict[str, str] | None = None
) -> dict[str, object]:
    metadata: dict[str, object] = {
        "name": NAME,
        "namespace": "default",
        "uid": "pod-1",
        "labels": {"actions-runner": ""},
        "annotations": annotations or {},
    }
    if deleting:
        metadata["deletionTimestamp"] = format_time(NOW)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "containers": [
                {
                    "name": "runner",
                    "env": [
                        {"name": "RUNNER_NAME", "value": NAME},
                        {"name": "RUNNER_ORG", "value": "acme"},
                        {"name": "RUNNER_EPHEMERAL", "value": "true"},
                    ],
                }
            ]
        },
        "status": running_status(format_time(NOW - timedelta(minutes=5))),
    }


def test_decorator_sync_records_the_runner_id_once_github_lists_it() -> None:
    pod = read_runner_pod(decorated_pod())

    assert decide(lambda g: decide_runner_id(pod, NOW, SETTINGS, g)) == ListRunners(ORG)
    absent = decide(lambda g: decide_runner_id(pod, NOW, SETTINGS, g), {ListRunners(ORG): ()})
    found = decide(
        lambda g: decide_runner_id(pod, NOW, SETTINGS, g), {ListRunners(ORG): (runner(),)}
    )

    assert absent.runner_id is None and absent.retry_after == SETTINGS.registration_check_interval  # type: ignore[attr-defined]
    assert found.runner_id == 7  # type: ignore[attr-defined]


def test_decorator_finalize_holds_a_busy_runners_pod_and_releases_it_once_removed() -> None:
    pod = read_runner_pod(decorated_pod(deleting=True))
    listed: dict[Step, Answer] = {ListRunners(ORG): (runner(busy=True),)}

    busy = decide(
        lambda g: decide_pod_stop(pod, NOW, TIMING, g),
        {**listed, RemoveRunner(ORG, 7): RemoveResult(RemoveOutcome.BUSY)},
    )
    removed = decide(
        lambda g: decide_pod_stop(pod, NOW, TIMING, g),
        {**listed, RemoveRunner(ORG, 7): RemoveResult(RemoveOutcome.REMOVED)},
    )

    assert not busy.finalized and busy.state.waiting_for_completion  # type: ignore[attr-defined]
    assert removed.finalized and removed.state.outcome == "Unregistered"  # type: ignore[attr-defined]


def test_a_decision_replayed_with_the_same_answers_decides_the_same() -> None:
    """`resolve` runs a decision again with each new answer: it must not depend on anything
    else (a clock read, a counter), or the replay would decide differently."""
    facts = runner_facts(running_status(format_time(NOW - timedelta(minutes=5))))
    answers: dict[Step, Answer] = {ListRunners(ORG): (runner(),)}
    first = decide(lambda g: decide_sync(facts, g), answers)
    second = decide(lambda g: decide_sync(facts, g), answers)
    assert first == second


# ------------------------------------------------------------------ the RunnerSet


def runner_set_facts(
    desired: int, members: tuple[ObservedMember, ...] = (), *, jit: bool = False
) -> RunnerSetFacts:
    runner_set = RunnerSet.model_validate(
        {
            "apiVersion": "actions.summerwind.dev/v1alpha1",
            "kind": "RunnerSet",
            "metadata": {"name": "set", "namespace": "default", "uid": "set-uid"},
            "spec": {
                "organization": "acme",
                "selector": {"matchLabels": {"app": "set"}},
                "serviceName": "set",
                "template": {"metadata": {"labels": {"app": "set"}}},
            },
        }
    )
    return RunnerSetFacts(
        runner_set=runner_set,
        status=RunnerSetStatus(),
        members=members,
        pod_slots=frozenset(),
        pods_observed=False,
        claim_names=frozenset(),
        desired=desired,
        pool_size=desired,
        effective_time=None,
        jit=jit,
        defaults=PodDefaults.from_settings(SETTINGS),
        now=NOW,
        settings=SETTINGS,
        timing=TIMING,
    )


def member(name: str, created: str) -> ObservedMember:
    pod = observe_pod(
        {
            "metadata": {"name": f"{name}-0", "uid": f"{name}-uid", "labels": {}},
            "spec": {"containers": [{"name": "runner"}]},
            "status": running_status(format_time(NOW - timedelta(minutes=5))),
        }
    )
    return ObservedMember(
        sts={"metadata": {"name": name, "annotations": {}}, "spec": {"replicas": 1}},
        name=name,
        created=created,
        terminating=False,
        scaled_to_zero=False,
        template_hash=None,
        slot=None,
        stop=None,
        pod_object=None,
        pod=pod,
        secret=None,
        material=RegistrationMaterial(),
        scope=None,
    )


def test_a_runner_set_member_registers_under_its_pods_own_runner_name() -> None:
    """A template that sets RUNNER_NAME itself: the leftover check after a stop looks for the
    name the runner registered under, not the pod's."""
    plain = member("set-a", "2026-01-01T00:00:00Z")
    named = replace(
        plain,
        pod_object={
            "metadata": {"name": "set-a-0"},
            "spec": {
                "containers": [
                    {"name": "runner", "env": [{"name": "RUNNER_NAME", "value": "ci-1"}]}
                ]
            },
        },
    )
    assert (plain.registered_name, named.registered_name) == ("set-a-0", "ci-1")


def listed(name: str, runner_id: int, *, busy: bool) -> GitHubRunner:
    return GitHubRunner(id=runner_id, name=f"{name}-0", status="online", busy=busy)


def test_scale_up_lists_then_asks_one_token_for_every_new_runner() -> None:
    facts = runner_set_facts(3)
    answers: dict[Step, Answer] = {ListRunners(ORG): ()}

    assert decide(lambda g: rs_decide_sync(facts, g), answers) == IssueToken(ORG)
    plan = decide(lambda g: rs_decide_sync(facts, g), {**answers, IssueToken(ORG): TOKEN})

    assert isinstance(plan, RunnerSetPlan)
    assert plan.created == 3 and plan.next_index == 3
    kinds = [child["kind"] for child in plan.new_children]
    assert kinds == ["StatefulSet", "Secret"] * 3


def test_scale_up_in_jit_mode_asks_one_config_per_runner() -> None:
    facts = runner_set_facts(2, jit=True)

    step = decide(lambda g: rs_decide_sync(facts, g), {ListRunners(ORG): ()})

    assert isinstance(step, GenerateJitConfig) and step.name.endswith("-0")


def test_scale_down_stops_the_idle_runner_and_never_the_busy_one() -> None:
    busy, idle = member("set-a", "2026-01-01T00:00:00Z"), member("set-b", "2025-12-01T00:00:00Z")
    facts = runner_set_facts(1, (busy, idle))
    answers: dict[Step, Answer] = {
        ListRunners(ORG): (listed("set-a", 1, busy=True), listed("set-b", 2, busy=False)),
        RemoveRunner(ORG, 2): RemoveResult(RemoveOutcome.REMOVED),
    }

    plan = decide(lambda g: rs_decide_sync(facts, g), answers)

    assert isinstance(plan, RunnerSetPlan)
    stops = {m.observed.name: m.stop for m in plan.members}
    assert stops["set-a"] is None
    assert stops["set-b"] is not None and stops["set-b"].outcome == "Unregistered"
    assert [m.release for m in plan.members] == [False, True]


def test_scale_down_waits_while_github_cannot_say_who_is_busy() -> None:
    facts = runner_set_facts(0, (member("set-a", "2026-01-01T00:00:00Z"),))

    plan = decide(lambda g: rs_decide_sync(facts, g), {ListRunners(ORG): GitHubError("x", 502)})

    assert isinstance(plan, RunnerSetPlan)
    assert all(m.stop is None and m.keep for m in plan.members)
    assert plan.conditions["GitHubAvailable"][0] == "False"


# The questions a controller carries out before deciding must be the ones the decision asks
# next, whatever GitHub answered: a question asked for nothing could cost a GitHub call.


@settings(max_examples=300, deadline=None)
@given(
    pod=st.sampled_from(["none", "running", "exited", "deleting"]),
    stop=st.sampled_from(["none", "this pod", "this pod, id known", "an earlier pod"]),
    jit=st.booleans(),
    material_id=st.sampled_from([None, 42]),
    registered=st.booleans(),
    finalizing=st.booleans(),
    listing=RUNNER_LISTS,
    removal=REMOVALS,
)
def test_the_questions_carried_out_ahead_are_the_ones_the_decision_asks_next(
    pod: str,
    stop: str,
    jit: bool,
    material_id: int | None,
    registered: bool,
    finalizing: bool,
    listing: Answer,
    removal: RemoveResult,
) -> None:
    pod_status = {
        "none": None,
        "running": running_status(format_time(NOW - timedelta(minutes=5))),
        "exited": running_status(format_time(NOW - timedelta(minutes=5)), exit_code=0),
        "deleting": running_status(format_time(NOW - timedelta(minutes=5))),
    }[pod]
    recorded: dict[str, object] = {}
    if stop != "none":
        recorded = {
            "reason": "ScaleDown",
            "startedAt": format_time(NOW),
            "podUid": "pod-0" if stop == "an earlier pod" else "pod-1",
            **({"runnerId": 9} if stop == "this pod, id known" else {}),
        }
    status = RunnerStatus.model_validate(
        {
            **({"registration": {"organization": "acme"}} if registered else {}),
            **({"gracefulStop": recorded} if recorded else {}),
        }
    )
    facts = runner_facts(
        pod_status, status=status, material=RegistrationMaterial(runner_id=material_id)
    )
    facts = replace(facts, parsed=ParsedRunner(facts.runner, (), jit, facts.parsed.defaults))
    if pod == "deleting" and facts.pod is not None:
        facts = replace(facts, pod=replace(facts.pod, terminating=True))
    decision = decide_finalize if finalizing else decide_sync

    answers = Answers()
    while (ahead := next_certain_question(facts, answers, finalizing=finalizing)) is not None:
        if answers.answer_to(ahead) is not None:
            break
        asked = _asked_with(decision, facts, answers)
        assert asked == ahead
        answers = answers.with_answer(ahead, listing if isinstance(ahead, ListRunners) else removal)


def _asked_with(decision: object, facts: RunnerFacts, answers: Answers) -> object:
    assert callable(decision)
    try:
        decision(facts, answers)
    except NeedAnswer as need:
        return need.step
    return None


def test_the_stops_of_several_runners_are_asked_together_not_one_run_each() -> None:
    members = tuple(member(f"set-{i}", f"2026-01-01T00:00:0{i}Z") for i in range(4))
    facts = runner_set_facts(1, members)
    github = InMemoryGitHub(ManualClock())
    for observed in members:
        github.register(ORG, observed.runner_name)
    runs = 0

    def counted(answers: Answers) -> RunnerSetPlan:
        nonlocal runs
        runs += 1
        return rs_decide_sync(facts, answers)

    plan = resolve(counted, github, ahead=partial(rs_next_certain_question, facts))

    assert sum(1 for m in plan.members if m.stop is not None) == 3
    assert github.count("remove_runner") == 3
    assert runs == 2  # (the list asked ahead) the three DELETEs at once, then the decision


def test_a_set_goes_only_once_no_registration_is_left_under_its_names() -> None:
    """A JIT config generated by a call whose answer never arrived has no StatefulSet: the set's
    finalize removes it; a runner of another set with a similar name is left alone."""
    facts = runner_set_facts(0)
    prefix = f"set-{uid_tag('set-uid')}"
    orphan = GitHubRunner(id=5, name=f"{prefix}7-0", status="offline", busy=False)
    other = GitHubRunner(id=6, name=f"{prefix}7-x-0", status="online", busy=False)
    listed_both: dict[Step, Answer] = {ListRunners(ORG): (orphan, other)}

    asked = decide(lambda g: rs_decide_finalize(facts, g), listed_both)
    done = decide(
        lambda g: rs_decide_finalize(facts, g),
        {**listed_both, RemoveRunner(ORG, 5): RemoveResult(RemoveOutcome.REMOVED)},
    )

    assert asked == RemoveRunner(ORG, 5)
    assert isinstance(done, RunnerSetPlan) and done.finalized is True
