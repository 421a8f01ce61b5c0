"""The listeners of a process: one per target, kept in step with the targets found."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from hooks.clock import Clock
from hooks.github.port import Scope
from hooks.github.scaleset.client import ScaleSetClient
from hooks.listener.targets import ListenerTarget
from hooks.listener.worker import ListenerObserver, ListenerSink, ScaleSetListener


class ListenerFleet:
    def __init__(
        self,
        client_for: Callable[[Scope], ScaleSetClient],
        sink: ListenerSink,
        *,
        owner: str,
        clock: Clock,
        observer: ListenerObserver | None = None,
    ) -> None:
        self._client_for = client_for
        self._clients: dict[Scope, ScaleSetClient] = {}
        self.sink = sink
        self.owner = owner
        self.clock = clock
        self.observer = observer
        self.listeners: dict[tuple[str, str, str], ScaleSetListener] = {}

    def reconcile(
        self, targets: Iterable[ListenerTarget]
    ) -> tuple[list[ScaleSetListener], list[ScaleSetListener]]:
        """Start a listener for each new target, retarget the others; the listeners of
        targets that are gone (or whose scale set changed) are closed. Returns (started,
        closed)."""
        started, closed = [], []
        wanted = {target.key: target for target in targets}
        for key, listener in list(self.listeners.items()):
            target = wanted.get(key)
            if target is None or target.scale_set_id != listener.target.scale_set_id:
                listener.close()
                closed.append(self.listeners.pop(key))
            else:
                listener.retarget(target)
        for key, target in wanted.items():
            if key not in self.listeners:
                listener = ScaleSetListener(
                    self._client(target.scope),
                    target,
                    self.sink,
                    owner=self.owner,
                    clock=self.clock,
                    observer=self.observer,
                )
                self.listeners[key] = listener
                started.append(listener)
        return started, closed

    def close(self) -> None:
        for listener in self.listeners.values():
            listener.close()
        self.listeners.clear()

    def _client(self, scope: Scope) -> ScaleSetClient:
        if scope not in self._clients:
            self._clients[scope] = self._client_for(scope)
        return self._clients[scope]
