"""Runner lists shared by the hook replicas, through one ConfigMap per scope.

Listing a scope's runners is the steady cost of GitHub's API: one call per 100 runners, once
per list period (`GITHUB_LIST_RUNNERS_CACHE_TTL`). When each replica lists for itself the cost
grows with the replicas. With a board, the first replica whose copy is out of date *claims* the
next list in the scope's ConfigMap (an update conditional on the resourceVersion it read, so
one replica wins), lists GitHub and publishes the answer there; the others read that answer.

Correctness never depends on the board: an answer counts as of the time it was asked for, the
cache uses it only while it is fresher than what the caller knows, and a board that cannot be
read, claimed or written costs one GitHub list, as without it.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import orjson

from hooks.clock import Clock, format_time, parse_optional_time
from hooks.github.list_pacing import MAX_LIST_PERIOD
from hooks.github.port import GitHubRunner, Scope

log = logging.getLogger(__name__)

NAME_PREFIX = "arc-hooks-runners-"
SCOPE_ANNOTATION = "arc-hooks.dev/scope"
CLAIM_ANNOTATION = "arc-hooks.dev/listing-since"
DATA_KEY = "runners.json.gz"

CLAIM_SECONDS = 30.0
"""A claim older than this is abandoned (its replica died or GitHub did not answer): another
replica may claim the list."""

MAX_ENCODED_BYTES = 900_000
"""A ConfigMap holds at most 1 MiB; a larger list (hundreds of thousands of runners) is kept
by each replica for itself."""

KubeObject = dict[str, Any]


class BoardUnavailable(Exception):
    """The ConfigMap could not be read or written (no access, API server down, timeout)."""


class ConfigMaps(Protocol):
    """The three calls the board makes, blocking (it runs in the hook's worker thread)."""

    def get(self, namespace: str, name: str) -> KubeObject | None:
        """The ConfigMap, or None when there is none; raises BoardUnavailable."""
        ...

    def create(self, obj: KubeObject) -> bool:
        """False when it exists already; raises BoardUnavailable."""
        ...

    def merge_patch(self, namespace: str, name: str, patch: KubeObject) -> bool:
        """False on a conflict (a `metadata.resourceVersion` in the patch no longer current)
        or when the ConfigMap is gone; raises BoardUnavailable."""
        ...


@dataclass(frozen=True, slots=True)
class SharedList:
    """A scope's runners as GitHub listed them at `asked_at`, to be served for `period`
    (None: the reader's own configured period)."""

    asked_at: datetime
    runners: tuple[GitHubRunner, ...]
    period: timedelta | None = None


@dataclass(frozen=True, slots=True)
class BoardEntry:
    """What the scope's ConfigMap says (all None: there is none, or nothing readable)."""

    listed: SharedList | None = None
    claimed_at: datetime | None = None
    version: str | None = None
    exists: bool = False

    def claimed_by_another(self, now: datetime) -> bool:
        """A replica began a list less than CLAIM_SECONDS ago and has not published it."""
        if self.claimed_at is None:
            return False
        if self.listed is not None and self.listed.asked_at >= self.claimed_at:
            return False
        return timedelta(0) <= now - self.claimed_at < timedelta(seconds=CLAIM_SECONDS)


def config_map_name(scope: Scope) -> str:
    """A DNS label, stable across processes: the scope's hash (its path may hold '/')."""
    return NAME_PREFIX + hashlib.sha256(str(scope).encode()).hexdigest()[:20]


def encode(listed: SharedList) -> str:
    rows = [
        [r.id, r.name, r.status, r.busy, list(r.labels), r.ephemeral, r.runner_group_id]
        for r in listed.runners
    ]
    document: dict[str, Any] = {"askedAt": format_time(listed.asked_at), "runners": rows}
    if listed.period is not None:
        document["periodSeconds"] = listed.period.total_seconds()
    return base64.b64encode(gzip.compress(orjson.dumps(document), mtime=0)).decode()


def decode(text: object) -> SharedList | None:
    """The list a ConfigMap holds; None for anything unreadable (it is then ignored)."""
    if not isinstance(text, str):
        return None
    try:
        document = orjson.loads(gzip.decompress(base64.b64decode(text, validate=True)))
        asked_at = parse_optional_time(document["askedAt"])
        runners = tuple(_runner(row) for row in document["runners"])
        period = _period(document.get("periodSeconds"))
    except (ValueError, TypeError, KeyError, OSError, EOFError, gzip.BadGzipFile):
        return None
    return None if asked_at is None else SharedList(asked_at, runners, period)


def _period(seconds: object) -> timedelta | None:
    """A published period; an unreadable or absurd one counts as none (the reader's own)."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return None
    if not 0 < seconds <= MAX_LIST_PERIOD.total_seconds():
        return None
    return timedelta(seconds=seconds)


def _runner(row: Any) -> GitHubRunner:
    runner_id, name, status, busy, labels, ephemeral, group = row
    if not (
        isinstance(runner_id, int)
        and isinstance(name, str)
        and isinstance(status, str)
        and isinstance(busy, bool)
        and isinstance(labels, list)
        and all(isinstance(label, str) for label in labels)
        and (ephemeral is None or isinstance(ephemeral, bool))
        and (group is None or isinstance(group, int))
    ):
        raise ValueError("not a runner row")
    return GitHubRunner(runner_id, name, status, busy, tuple(labels), ephemeral, group)


def read_entry(obj: KubeObject | None) -> BoardEntry:
    if obj is None:
        return BoardEntry()
    metadata = _mapping(obj.get("metadata"))
    annotations = _mapping(metadata.get("annotations"))
    data = _mapping(obj.get("binaryData"))
    claim = annotations.get(CLAIM_ANNOTATION)
    version = metadata.get("resourceVersion")
    return BoardEntry(
        listed=decode(data.get(DATA_KEY)),
        claimed_at=parse_optional_time(claim) if isinstance(claim, str) else None,
        version=version if isinstance(version, str) else None,
        exists=True,
    )


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class RunnerListBoard:
    """The scopes' shared lists in ConfigMaps of one namespace (the hooks' own)."""

    def __init__(self, config_maps: ConfigMaps, namespace: str, clock: Clock) -> None:
        self._config_maps = config_maps
        self._namespace = namespace
        self._clock = clock

    def read(self, scope: Scope) -> BoardEntry:
        """Raises BoardUnavailable."""
        return read_entry(self._config_maps.get(self._namespace, config_map_name(scope)))

    def claim(self, scope: Scope, seen: BoardEntry) -> bool:
        """Mark the scope's next list as ours, if the ConfigMap is still as `seen`. True: no
        other replica claimed it since. Raises BoardUnavailable."""
        since = format_time(self._clock.now())
        name = config_map_name(scope)
        if not seen.exists:
            return self._config_maps.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": name,
                        "namespace": self._namespace,
                        "labels": {"app.kubernetes.io/managed-by": "arc-hooks"},
                        "annotations": {SCOPE_ANNOTATION: str(scope), CLAIM_ANNOTATION: since},
                    },
                }
            )
        patch = {
            "metadata": {"resourceVersion": seen.version, "annotations": {CLAIM_ANNOTATION: since}}
        }
        return self._config_maps.merge_patch(self._namespace, name, patch)

    def publish(self, scope: Scope, listed: SharedList) -> None:
        """Write the list and lift the claim. Never raises: the list is still good to its
        caller, and the other replicas list for themselves."""
        encoded = encode(listed)
        if len(encoded) > MAX_ENCODED_BYTES:
            log.info("the runner list of %s is too large to share", scope)
            return
        patch = {
            "metadata": {"annotations": {CLAIM_ANNOTATION: None}},
            "binaryData": {DATA_KEY: encoded},
        }
        try:
            if not self._config_maps.merge_patch(self._namespace, config_map_name(scope), patch):
                log.info("shared runner list of %s is gone; not published", scope)
        except BoardUnavailable as error:
            log.warning("cannot publish the runner list of %s: %s", scope, error)
