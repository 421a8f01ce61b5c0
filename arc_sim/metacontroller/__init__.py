"""An emulator of Metacontroller (CompositeController and DecoratorController) for the
simulated world, following the Metacontroller hook contract
(`shared/docs/metacontroller-contract.md`) item by item; docs/metacontroller-emulation.md lists
what it models, from which file of Metacontroller's source, and what it leaves out.

Modules, from the edge in: `transport` (how a call reaches the hook server), `webhook` (HTTP
rules of a call), `wire` (the JSON), `spec` and `resources` (controllers and the types they
name), `cache` (the informer cache), `realism` (latency, lag, conflicts), `fibers` (syncs
that wait in virtual time), `conflicts`, `workqueue`, `children` (claim and apply), `merge` (the
three-way merge), `customize`, `finalizers`, then `composite`, `decorator` and `emulator`.

Where it differs from Metacontroller v4.17, on purpose:
- Rolling* update methods act as Recreate/InPlace: no ControllerRevisions, one hook call.
- Only the default dynamic-apply strategy; no server-side apply, no etag cache, no TLS/auth
  endpoint configs (the transport decides where a call goes).
- How unfriendly the world is comes from `realism.Realism` (workers, hook latency and the
  timeout, informer lag, write conflicts, restarting replicas); `Realism.friendly()` (the
  constructor's default) makes calls take no virtual time and the cache never lag. Syncs wait
  for their hook calls on `fibers`; the calls of one virtual instant overlap in the hook server.
- `SyncError` Warning events are kept in `EmulatorStats.recent_errors`, not in the store.
- Strict decoding rejects duplicate keys anywhere in an answer (Go's strict decoder does not
  look inside children, which it decodes as unstructured objects).
- Types are known from built-ins and the CustomResourceDefinitions loaded with the
  manifests; loading a CRD with the status subresource turns it on in the store.
"""

from arc_sim.metacontroller.emulator import MetacontrollerEmulator
from arc_sim.metacontroller.stats import EmulatorStats, SyncErrorEvent
from arc_sim.metacontroller.transport import (
    AsgiTransport,
    HookReply,
    HookTimeout,
    HookTransport,
    HookUnreachable,
    LoopbackTransport,
    ReplicaFault,
)

__all__ = [
    "AsgiTransport",
    "EmulatorStats",
    "HookReply",
    "HookTimeout",
    "HookTransport",
    "HookUnreachable",
    "LoopbackTransport",
    "MetacontrollerEmulator",
    "ReplicaFault",
    "SyncErrorEvent",
]
