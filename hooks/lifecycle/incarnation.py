"""One incarnation of a runner: a pod, its registration, and whether it is still worth keeping.

Pure rules shared by the Runner and RunnerSet controllers: when a running pod has failed to
register, when to look at GitHub again, how long to wait after a failure, and the GitHub steps
that give a new pod its registration material (a token, or a just-in-time config).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from hooks.github.list_pacing import MAX_LIST_PERIOD
from hooks.github.port import (
    DEFAULT_RUNNER_GROUP_ID,
    GitHubError,
    GitHubRunner,
    RateLimitedError,
    Scope,
)
from hooks.lifecycle.steps import Answers
from hooks.runner.observed_pod import ObservedPod
from hooks.runner.registration import DEFAULT_RUNNER_GROUP, RegistrationMaterial, jit_labels
from hooks.settings import Settings


def registration_timed_out(
    pod: ObservedPod | None,
    found: GitHubRunner | None,
    now: datetime,
    timeout: float,
    listed_at: datetime | None = None,
) -> bool:
    """Ready for the whole registration timeout and still not online on GitHub, in a list
    asked for after the timeout ran out (`listed_at`, when known). A list paced longer than
    the timeout (a token shared by many scopes, or nearly spent) may predate the runner's
    registration: found by review, a runner online since shortly after its pod was ready was
    taken for never registered, and unregistered. The next list after the timeout decides:
    no call of its own."""
    if pod is None or pod.ready_since is None:
        return False
    deadline = pod.ready_since + timedelta(seconds=timeout)
    if now < deadline:
        return False
    if found is not None and found.online:
        return False
    return listed_at is None or listed_at >= deadline


def registration_checks(
    pod: ObservedPod | None,
    found: GitHubRunner | None,
    now: datetime,
    settings: Settings,
    list_fresh_until: datetime | None = None,
) -> tuple[float, ...]:
    """When to look again at a pod whose runner is not online yet: just after the runner list
    it was looked up in is replaced, when the cache says when (a look before reads the same
    list: `next_list_wait`), else every check interval; and just past the registration
    timeout."""
    if pod is None or (found is not None and found.online):
        return ()
    if list_fresh_until is None:
        waits = [settings.registration_check_interval]
    else:
        waits = [next_list_wait(list_fresh_until, now, settings)]
    if pod.ready_since is not None:
        elapsed = (now - pod.ready_since).total_seconds()
        waits.append(settings.registration_timeout - elapsed + 1)
    return tuple(waits)


LIST_SETTLE_SECONDS = 1.0
"""How long after a scope's list stops being served a Runner looks again: the first sync then
lists anew (one replica for all, through the shared board), and the others read that list."""

MIN_LIST_WAIT_SECONDS = 5.0
"""The shortest look-again for a list: one served while another replica's is due (for a couple
of seconds, `hooks.github.cached.BOARD_RECHECK`) is not asked for again and again."""


def next_list_wait(fresh_until: datetime | None, now: datetime, settings: Settings) -> float:
    """When a watched runner has something new to read: just after the runner list it read
    stops being served (`RunnerListing.fresh_until`); looking sooner reads the same list
    again. A list with no such time (not from the cache), or one past it or further off than a
    list's longest period (another clock's), gives no time for the next: the sync period, as
    ARC's controllers resync."""
    if fresh_until is None:
        return settings.sync_period
    remaining = (fresh_until - now).total_seconds()
    longest = max(settings.list_runners_cache_ttl, MAX_LIST_PERIOD.total_seconds())
    if not 0 < remaining <= longest:
        return settings.sync_period
    return max(remaining + LIST_SETTLE_SECONDS, MIN_LIST_WAIT_SECONDS)


STEADY_WATCH_MAX_SECONDS = 300.0
"""The longest a watched runner goes without looking at its scope's list: a Runner's status
reports `busy` and `online` at most this much late once they have held for twice as long."""


def steady_watch_wait(list_wait: float, steady_for: float) -> float:
    """When a running runner, online, looks at its scope's list again, given `list_wait`
    (`next_list_wait`) and how long what it reports (id, online, busy) has held: at the next
    list while that changes, then after half as long as it has held, up to
    `STEADY_WATCH_MAX_SECONDS`. Every Runner looking at every list costs one Metacontroller
    sync per runner per list, most of them for a runner idle or busy for hours; what depends
    on a change sooner reads the list itself (a stop, the HRA's busy count), and a change of
    the pod brings a sync at once."""
    return max(list_wait, min(steady_for / 2, STEADY_WATCH_MAX_SECONDS))


def retry_delay(error: GitHubError, default: float) -> float:
    """After a failed GitHub call: its rate limit's reset, else the configured delay."""
    return error.retry_after if isinstance(error, RateLimitedError) else default


FAILED_RETRY_MAX = 1800.0
"""The longest a Failed runner waits between pods (unless RUNNER_POD_FAILURE_BACKOFF_MAX is
longer)."""


def failure_backoff(failures: int, settings: Settings) -> float:
    """How long after its last failure a runner's next pod waits: doubling, capped. Once the
    runner reports Failed it keeps doubling from the cap, up to `FAILED_RETRY_MAX`: each new
    pod costs GitHub calls (a JIT config, removing the last registration), and a hundred
    runners failing on a bad image cost thousands an hour at the cap (found in review)."""
    if failures >= settings.pod_max_failures:
        cap = settings.pod_failure_backoff_max
        doubled = cap * 2 ** min(failures - settings.pod_max_failures, 16)
        return float(min(doubled, max(cap, FAILED_RETRY_MAX)))
    backoff = settings.pod_failure_backoff * 2 ** max(failures - 1, 0)
    return float(min(backoff, settings.pod_failure_backoff_max))


def new_token(github: Answers, scope: Scope) -> RegistrationMaterial:
    """A registration token for new pods (raises GitHubError)."""
    token = github.registration_token(scope)
    return RegistrationMaterial(token=token.token, expires_at=token.expires_at)


def new_jit_config(
    github: Answers,
    scope: Scope,
    runner_name: str,
    *,
    labels: Sequence[str],
    node_selector: Mapping[str, str],
    group: str | None,
    work_folder: str,
) -> RegistrationMaterial:
    """A just-in-time config for one runner, its own registration (raises ConflictError when
    the name is registered already, GitHubError otherwise)."""
    config = github.generate_jit_config(
        scope,
        runner_name,
        jit_labels(labels, node_selector),
        runner_group_id(github, scope, group),
        work_folder,
    )
    return RegistrationMaterial(jit_config=config.encoded_jit_config, runner_id=config.runner.id)


def runner_group_id(github: Answers, scope: Scope, group: str | None) -> int:
    """The id of the runner group a JIT config names (repositories have no groups; the default
    group is id 1, known without a call)."""
    if scope.repository or group in (None, "", DEFAULT_RUNNER_GROUP):
        return DEFAULT_RUNNER_GROUP_ID
    return github.runner_group_id(scope, group)
