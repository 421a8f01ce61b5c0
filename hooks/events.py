"""Kubernetes Events on runner lifecycle transitions, as ARC records them (`PodCreated`,
`RegistrationTokenUpdated`, `FailedUpdateRegistrationToken`, `PodDeleted`, ...).

Controllers only name what happened (`LifecycleEvent`, part of their answer); the HTTP edge
writes it through the Kubernetes port (the hook server may create Events and nothing else with
them). Hooks are called again and again with the same facts, so the recorder admits one event
per object and reason per `REPEAT_SECONDS`, and at most `EVENTS_PER_MINUTE` per process: a
storm of syncs never becomes a storm of writes. Writing an event never fails a hook.
"""

from __future__ import annotations

import logging
import threading
import zlib
from collections import OrderedDict, deque
from dataclasses import dataclass
from datetime import datetime

from hooks.clock import Clock, format_time
from hooks.kube.port import KubeError, KubeObject, KubePort, Resource
from hooks.redaction import mask_credentials

log = logging.getLogger("arc_hooks.events")

EVENTS = Resource("", "v1", "Event", "events")
COMPONENT = "arc-hooks"
REPEAT_SECONDS = 600.0
"""The same reason for the same object is recorded again only after this long."""
EVENTS_PER_MINUTE = 120
"""Per process, across all objects."""
REMEMBERED_KEYS = 20_000
"""(object, reason) pairs remembered for REPEAT_SECONDS; the oldest go first beyond this."""
MAX_MESSAGE = 1024


@dataclass(frozen=True)
class LifecycleEvent:
    """Something that happened to the object a hook is about. The message is shown to users
    (`kubectl describe`): it never carries a token, a JIT config or a key."""

    reason: str
    message: str
    warning: bool = False


class EventLimiter:
    """Which events to write now: once per object and reason per `repeat_seconds`, and at
    most `per_minute` in any minute. Thread-safe; time comes from the clock."""

    def __init__(
        self,
        clock: Clock,
        *,
        repeat_seconds: float = REPEAT_SECONDS,
        per_minute: int = EVENTS_PER_MINUTE,
        remembered: int = REMEMBERED_KEYS,
    ) -> None:
        self._clock = clock
        self._repeat = repeat_seconds
        self._per_minute = per_minute
        self._remembered = remembered
        self._last: OrderedDict[tuple[str, str], datetime] = OrderedDict()
        self._recent: deque[datetime] = deque()
        self._lock = threading.Lock()

    def admit(self, uid: str, reason: str) -> bool:
        now = self._clock.now()
        key = (uid, reason)
        with self._lock:
            while self._recent and (now - self._recent[0]).total_seconds() >= 60:
                self._recent.popleft()
            last = self._last.get(key)
            if last is not None and (now - last).total_seconds() < self._repeat:
                return False
            if len(self._recent) >= self._per_minute:
                return False
            self._recent.append(now)
            self._last[key] = now
            self._last.move_to_end(key)
            while len(self._last) > self._remembered:
                self._last.popitem(last=False)
            return True


def event_object(involved: KubeObject, event: LifecycleEvent, now: datetime) -> KubeObject:
    """A core/v1 Event about `involved` (an object as Metacontroller sent it)."""
    metadata = involved["metadata"]
    name = str(metadata["name"])
    namespace = str(metadata.get("namespace") or "default")
    stamp = format_time(now)
    reference: KubeObject = {
        "apiVersion": involved.get("apiVersion"),
        "kind": involved.get("kind"),
        "name": name,
        "namespace": namespace,
    }
    if metadata.get("uid"):
        reference["uid"] = metadata["uid"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            # As client-go names them: the object's name and a time-derived suffix. A name
            # cut short ends as a DNS label must, never in '-' or '.'.
            "name": f"{name[:200].rstrip('-.')}.{int(now.timestamp() * 1e9):x}{_tag(event.reason)}",
            "namespace": namespace,
        },
        "involvedObject": reference,
        "reason": event.reason,
        "message": mask_credentials(event.message)[:MAX_MESSAGE],
        "type": "Warning" if event.warning else "Normal",
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": COMPONENT,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def _tag(reason: str) -> str:
    """Three hex digits of the reason: two events of one object at the same instant differ."""
    return f"{zlib.crc32(reason.encode()) % 4096:03x}"


class EventRecorder:
    def __init__(self, kube: KubePort, clock: Clock, limiter: EventLimiter | None = None) -> None:
        self._kube = kube
        self._clock = clock
        self._limiter = limiter or EventLimiter(clock)

    async def record(self, involved: KubeObject, events: list[LifecycleEvent]) -> None:
        uid = str(involved["metadata"].get("uid") or involved["metadata"]["name"])
        for event in events:
            if not self._limiter.admit(uid, event.reason):
                continue
            try:
                await self._kube.create(EVENTS, event_object(involved, event, self._clock.now()))
            except KubeError as error:
                # An event is a courtesy: the hook's answer does not depend on it.
                detail = {"reason": event.reason, "detail": str(error)}
                log.debug("event not recorded", extra=detail)
