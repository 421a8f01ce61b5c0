"""The simulated world as the hook server reaches it: GitHub and the Kubernetes API.

When hook calls overlap in threads (`metacontroller.concurrency: threads`) the product's code
runs on several threads at once, but the world behind its ports is one process that is not
thread-safe. Each port is wrapped so that a call into the world holds the world's lock: the
world answers one request at a time, as a server serializes what it applies, while the
product's own code (its caches, decisions, memory) runs unsynchronized, as in production.
GitHub calls are also charged to the hook call being answered (`count_github_call`): they are
what makes a hook call slow.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from arc_sim.metacontroller.transport import count_github_call

T = TypeVar("T")


class _Guarded:
    def __init__(self, target: object, lock: threading.RLock, *, charge: bool) -> None:
        self._target = target
        self._lock = lock
        self._charge = charge

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value) or name.startswith("__"):
            return value
        lock, charge = self._lock, self._charge
        if inspect.iscoroutinefunction(value):

            @functools.wraps(value)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                with lock:  # the wrapped coroutines never wait on anything but the world
                    return await value(*args, **kwargs)

            wrapper: Callable[..., Any] = guarded_async
        else:

            @functools.wraps(value)
            def guarded(*args: Any, **kwargs: Any) -> Any:
                if charge:
                    count_github_call()
                with lock:
                    return value(*args, **kwargs)

            wrapper = guarded
        self.__dict__[name] = wrapper  # later look-ups skip __getattr__
        return wrapper


def github_side(port: T, lock: threading.RLock) -> T:
    """`port` (a GitHub port) with every call charged to the hook call and made under `lock`."""
    return cast(T, _Guarded(port, lock, charge=True))


def kube_side(port: T, lock: threading.RLock) -> T:
    """`port` (a Kubernetes port) with every call made under `lock`."""
    return cast(T, _Guarded(port, lock, charge=False))
