"""ConfigMaps for the shared runner lists (`hooks.github.shared_lists.ConfigMaps`), over the
server's asynchronous `KubePort`.

The board is used from a hook's worker thread (the GitHub adapter blocks), while the Kubernetes
client lives on the server's event loop: `OnServerLoop` hands each request to the loop that
dispatched the thread's call (`hooks.workers.dispatching_loop`) and waits for its answer, with a
timeout. The simulated world, whose hooks run on the loop itself
and whose API server never waits, runs the coroutines in place instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from hooks.github.shared_lists import BoardUnavailable
from hooks.kube.port import CONFIG_MAPS, AlreadyExists, KubeError, KubeObject, KubePort, NotFound
from hooks.workers import dispatching_loop

T = TypeVar("T")
CoroutineRunner = Callable[[Coroutine[Any, Any, Any]], Any]

DEFAULT_TIMEOUT_SECONDS = 5.0
CONFLICT = 409


class KubeConfigMaps:
    def __init__(self, kube: KubePort, run: CoroutineRunner) -> None:
        self._kube = kube
        self._run = run

    def get(self, namespace: str, name: str) -> KubeObject | None:
        try:
            found: KubeObject = self._run(self._kube.get(CONFIG_MAPS, namespace, name))
        except NotFound:
            return None
        except KubeError as error:
            raise BoardUnavailable(str(error)) from error
        return found

    def create(self, obj: KubeObject) -> bool:
        try:
            self._run(self._kube.create(CONFIG_MAPS, obj))
        except AlreadyExists:
            return False
        except KubeError as error:
            raise BoardUnavailable(str(error)) from error
        return True

    def merge_patch(self, namespace: str, name: str, patch: KubeObject) -> bool:
        try:
            self._run(self._kube.merge_patch(CONFIG_MAPS, namespace, name, patch))
        except NotFound:
            return False
        except KubeError as error:
            if error.status == CONFLICT:
                return False
            raise BoardUnavailable(str(error)) from error
        return True


class OnServerLoop:
    """Runs a coroutine on the server's event loop from another thread, and waits for it."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self._timeout = timeout
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Use this loop, not the one that dispatched the calling thread's work."""
        self._loop = loop

    def __call__(self, coroutine: Coroutine[Any, Any, T]) -> T:
        loop = self._loop or dispatching_loop()
        if loop is None or loop.is_closed():
            coroutine.close()
            raise BoardUnavailable("the server's event loop is not running")
        if _running_loop() is loop:
            coroutine.close()  # waiting here would block the loop the answer needs
            raise BoardUnavailable("the board is not reached from the event loop")
        future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        try:
            return future.result(self._timeout)
        except concurrent.futures.TimeoutError as error:
            future.cancel()
            raise BoardUnavailable(f"no answer within {self._timeout:g} s") from error


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
