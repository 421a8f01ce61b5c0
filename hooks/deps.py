"""What every hook handler is given: GitHub, the clock and the settings, and what follows
from them. One value for every controller, built once per server."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from hooks.clock import Clock
from hooks.github.clients import GitHubClients, PortBuilder
from hooks.github.credentials import Credentials
from hooks.github.port import GitHubPort
from hooks.lifecycle.graceful_stop import StopTiming
from hooks.memo import Memo, ObjectMemo
from hooks.settings import Settings

if TYPE_CHECKING:
    from hooks.autoscaler.controller import AutoscalerObservation
    from hooks.github.scaleset.service import ScaleSetPort

# Memo sizes, per Runner a replica keeps parsed (`HOOK_MEMO_RUNNERS`). Metacontroller syncs
# every Runner in turn, so a memo smaller than the Runners it serves evicts each entry before
# it is used again: all of them must fit, or the memo spares nothing.
CHILDREN_PER_RUNNER = 3
"""Children read before, by uid and resourceVersion (a few KB each): a set's Runners and
members, an HRA's reservations, and each Runner's own pod and Secret."""
MEMBERS_PER_RUNNER = 2
"""Objects of large requests kept decoded, by their JSON text (`hooks.request_reader`; a few
KB each): a set's Runners or StatefulSets and an HRA's reservations, with room for the
versions they had before."""
PROBLEMS_PER_RUNNER = 4
PARSED_TEXT_PER_RUNNER = 8 * 1024
"""JSON text of the parents and statuses kept parsed, per Runner on average at most (a Runner is
about 2 KB): a memo counted by entries alone held 2.5 MB for each version of a 1 MB spec."""
"""Spec problems, by a digest of the parent (about 200 bytes each): kept for more Runners
than are kept parsed."""


@dataclass(frozen=True)
class HookDeps:
    github: GitHubPort
    clock: Clock
    settings: Settings
    # Receives each HorizontalRunnerAutoscaler's answer (the server records ARC's gauges).
    observe_autoscaler: Callable[[AutoscalerObservation], None] | None = None
    # Receives each RunnerDeployment's and RunnerSet's size: kind, namespace, name, replicas.
    observe_size: Callable[[str, str, str, int], None] | None = None
    # Parents parsed before, by their stable JSON text: a parse costs more than the sync.
    parsed_parents: Memo[Hashable, Any] = field(init=False, compare=False, repr=False)
    # Spec problems found before, by a digest of what parsed parents are keyed by.
    parsed_problems: Memo[bytes, tuple[str, ...]] = field(init=False, compare=False, repr=False)
    # Children read before, by (uid, resourceVersion), which name one state of an object.
    observed_children: Memo[Hashable, Any] = field(init=False, compare=False, repr=False)
    # Children read before, by the very object the request reader handed out (the same for
    # the same JSON text): a set's sync finds its unchanged children without reading them.
    children_by_object: ObjectMemo[Any] = field(init=False, compare=False, repr=False)
    # Statuses parsed before, by their JSON text: most syncs find the status they last wrote.
    parsed_statuses: Memo[Hashable, Any] = field(init=False, compare=False, repr=False)
    # Builds the port for a resource's own credentials Secret (None: the server has no way to).
    build_credentials_port: PortBuilder | None = field(default=None, compare=False, repr=False)
    # Runner scale sets (None: the server cannot reach them; scale-set mode reports that).
    scale_sets: ScaleSetPort | None = field(default=None, compare=False, repr=False)
    github_clients: GitHubClients = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        clients = GitHubClients(self.github, self.build_credentials_port)
        object.__setattr__(self, "github_clients", clients)
        runners = self.settings.hook_memo_runners
        text_budget = runners * PARSED_TEXT_PER_RUNNER
        for name, entries, weight in (
            ("parsed_parents", runners, text_budget),
            ("parsed_problems", runners * PROBLEMS_PER_RUNNER, None),
            ("observed_children", runners * CHILDREN_PER_RUNNER, None),
            ("parsed_statuses", runners, text_budget),
        ):
            object.__setattr__(self, name, Memo(entries, weight))
        by_object = ObjectMemo[Any](runners * CHILDREN_PER_RUNNER)
        object.__setattr__(self, "children_by_object", by_object)

    def github_for(self, credentials: Credentials) -> GitHubPort:
        """The port for a resource: its own credentials Secret's, or (None) the server's."""
        return self.github_clients.port(credentials)

    @cached_property
    def timing(self) -> StopTiming:
        return StopTiming.from_settings(self.settings)

    @property
    def sync_period(self) -> float:
        return self.settings.sync_period

    @property
    def default_scale_down_delay(self) -> timedelta:
        return timedelta(seconds=self.settings.default_scale_down_delay)

    def with_common_labels(self, labels: list[str]) -> list[str]:
        """A set's runner labels with ARC's --common-runner-labels appended: those it lacks,
        each once (GitHub compares labels without case)."""
        seen = {label.casefold() for label in labels}
        common = []
        for label in self.settings.common_runner_labels:
            if label.casefold() not in seen:
                seen.add(label.casefold())
                common.append(label)
        return [*labels, *common] if common else labels
