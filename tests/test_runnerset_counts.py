"""A RunnerSet's `registeredReplicas` and `busyReplicas` (`hooks.runnerset.report.runner_counts`),
which PercentageRunnersBusy reads: runners started after their scope's list was asked are not
in it, and are counted as the listed ones are, not as idle."""

from __future__ import annotations

from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from hooks.github.port import GitHubRunner
from hooks.resources.runner import GracefulStopStatus
from hooks.resources.runnerset import RunnerSetStatus
from hooks.runnerset.decide import Member
from hooks.runnerset.report import runner_counts

STOP = GracefulStopStatus(reason="ScaleDown", started_at="2026-01-01T00:00:00Z")


def member(kind: str) -> Member:
    """`busy`, `idle` (listed), `new` (started after the list), `offline`, `stopping-busy`."""
    runner = {
        "busy": GitHubRunner(1, "r", "online", busy=True),
        "idle": GitHubRunner(1, "r", "online", busy=False),
        "offline": GitHubRunner(1, "r", "offline", busy=False),
        "stopping-busy": GitHubRunner(1, "r", "online", busy=True),
    }.get(kind)
    stop = STOP if kind == "stopping-busy" else None
    made = Member(observed=cast(Any, None), stop=stop, github_runner=runner)
    made.newer_than_list = kind == "new"
    return made


def counts(kinds: list[str], previous: RunnerSetStatus | None = None) -> tuple[int, int]:
    kept = [member(kind) for kind in kinds]
    active = [m for m in kept if m.stop is None]
    return runner_counts(kept, active, previous or RunnerSetStatus())


def test_a_set_turning_over_all_at_once_holds_its_last_busy_count() -> None:
    """Found by an independent run: 7 of 8 runners newer than the list read as idle every third
    minute while all 8 were busy, and the HRA scaled the set down into a backlog."""
    all_busy = RunnerSetStatus(registered_replicas=8, busy_replicas=8)
    assert counts(["busy", *["new"] * 7], all_busy) == (8, 8)
    assert counts(["busy", *["new"] * 7]) == (8, 1)  # nothing known of before: as listed
    # Held, never grown: an idle set's new runners do not turn busy from the last count.
    half_busy = RunnerSetStatus(registered_replicas=8, busy_replicas=4)
    registered, busy = counts([*["busy"] * 4, *["new"] * 4], half_busy)
    assert (registered, busy) == (8, 4)
    assert counts([*["busy"] * 4, *["new"] * 12], RunnerSetStatus(busy_replicas=busy)) == (16, 4)


KINDS = st.lists(st.sampled_from(["busy", "idle", "new", "offline", "stopping-busy"]))


@given(kinds=KINDS, previous_registered=st.integers(0, 50), previous_busy=st.integers(0, 60))
def test_the_counts_are_bounded_and_exact_without_runners_newer_than_the_list(
    kinds: list[str], previous_registered: int, previous_busy: int
) -> None:
    previous = RunnerSetStatus(registered_replicas=previous_registered, busy_replicas=previous_busy)
    registered, busy = counts(kinds, previous)

    assert 0 <= busy <= registered <= len(kinds)
    listed_busy = kinds.count("busy") + kinds.count("stopping-busy")
    assert busy >= listed_busy
    assert busy <= max(listed_busy, previous_busy)  # never grown from an estimate
    if "new" not in kinds:
        listed_online = kinds.count("busy") + kinds.count("idle") + kinds.count("stopping-busy")
        assert (registered, busy) == (listed_online, listed_busy)
