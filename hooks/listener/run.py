"""`arc-hooks listen` in a process: the fleet's listeners on threads (a long poll blocks), the
Kubernetes calls on an event loop of their own, metrics over HTTP.

One replica per cluster is enough. A second one is a warm standby: the service gives each scale
set one session, so it waits (`STANDBY_SECONDS`) and takes over when the first one's session
is deleted (a clean stop) or expires (a crash). Neither ever adds to the other's count.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from collections.abc import Callable

from hooks.clock import Clock, SystemClock
from hooks.github.port import Scope
from hooks.github.scaleset.client import ScaleSetClient
from hooks.github.scaleset.service import config_url
from hooks.kube.cluster import ClusterKube
from hooks.kube.config_maps import OnServerLoop
from hooks.kube.port import KubePort
from hooks.listener.fleet import ListenerFleet
from hooks.listener.metrics import PrometheusObserver
from hooks.listener.sink import KubeListenerSink
from hooks.listener.worker import ScaleSetListener
from hooks.settings import Settings

log = logging.getLogger("arc_hooks.listener")

REFRESH_SECONDS = 30.0
EMPTY_POLL_PAUSE = 1.0
"""After a poll that came back empty: GitHub holds a long poll about 50 s, so this costs
nothing, but a proxy that answers at once must not make the loop spin."""


def listener_owner() -> str:
    """The session's owner name: the pod's name (HOSTNAME), as GitHub's listener uses."""
    return os.environ.get("HOSTNAME") or socket.gethostname()


class ListenerProcess:
    def __init__(
        self,
        client_for: Callable[[Scope], ScaleSetClient],
        kube: KubePort,
        *,
        owner: str,
        clock: Clock,
        namespace: str | None = None,
        refresh_seconds: float = REFRESH_SECONDS,
    ) -> None:
        self.stop_requested = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(
            target=self._loop.run_forever, name="listener-kube", daemon=True
        )
        run = OnServerLoop()
        run.bind(self._loop)
        self.sink = KubeListenerSink(kube, run, namespace)
        self.fleet = ListenerFleet(
            client_for, self.sink, owner=owner, clock=clock, observer=PrometheusObserver()
        )
        self.refresh_seconds = refresh_seconds
        self._threads: dict[int, threading.Thread] = {}

    def run(self) -> None:
        """Until `stop_requested` is set; then every session is deleted."""
        self._loop_thread.start()
        try:
            while not self.stop_requested.is_set():
                try:
                    started, _ = self.fleet.reconcile(self.sink.targets())
                except Exception as error:  # the API server may be away for a while
                    log.warning("listener: targets not read: %s", error)
                    started = []
                for listener in started:
                    self._start(listener)
                self.stop_requested.wait(self.refresh_seconds)
        finally:
            self.fleet.close()
            self._loop.call_soon_threadsafe(self._loop.stop)

    def _start(self, listener: ScaleSetListener) -> None:
        def loop() -> None:
            key = listener.target.key
            while not self.stop_requested.is_set() and self.fleet.listeners.get(key) is listener:
                next_ = listener.step()
                wait = max(next_.after, EMPTY_POLL_PAUSE) if next_.polled_empty else next_.after
                if wait > 0:
                    self.stop_requested.wait(wait)

        thread = threading.Thread(
            target=loop, name=f"listener-{listener.target.scale_set_name}", daemon=True
        )
        self._threads[id(listener)] = thread
        thread.start()


def listener_from_settings(settings: Settings, namespace: str | None = None) -> ListenerProcess:
    """The listener with the server's GitHub credentials and the pod's cluster access."""
    from github import Github

    from hooks.github.pygithub_adapter import scale_set_auth_from_settings

    clock = SystemClock()
    auth = scale_set_auth_from_settings(settings, clock)
    Github(auth=auth, base_url=settings.api_base_url)  # binds the auth to a requester

    def client_for(scope: Scope) -> ScaleSetClient:
        return ScaleSetClient(
            config_url(settings, scope),
            lambda: auth.token,
            clock=clock,
            api_url=settings.api_base_url,
        )

    return ListenerProcess(
        client_for, ClusterKube(), owner=listener_owner(), clock=clock, namespace=namespace
    )
