"""An emulator of Metacontroller (CompositeController and DecoratorController) for the
simulated world, following the Metacontroller hook contract
(`shared/docs/metacontroller-contract.md`) item by item.

Modules, from the edge in: `transport` (how a call reaches the hook server), `webhook` (HTTP
rules of a call), `wire` (the JSON), `spec` and `resources` (controllers and the types they
name), `cache` (the informer cache), `workqueue`, `children` (claim and apply), `merge` (the
three-way merge), `customize`, `finalizers`, then `composite`, `decorator` and `emulator`.

Where it differs from Metacontroller v4.17, on purpose:
- Rolling* update methods act as Recreate/InPlace: no ControllerRevisions, one hook call.
- Only the default dynamic-apply strategy; no server-side apply, no etag cache, no TLS/auth
  endpoint configs (the transport decides where a call goes).
- Hook calls take no virtual time; instead a worker stays busy `sync_seconds` per sync.
- The cache never lags: the store tells its watchers of every change synchronously.
- `SyncError` Warning events are kept in `EmulatorStats.recent_errors`, not in the store.
- Strict decoding rejects duplicate keys anywhere in an answer (Go's strict decoder does not
  look inside children, which it decodes as unstructured objects).
- A related rule with neither `names` nor `labelSelector` selects nothing; a namespaced
  parent's rule without `namespace` or `namespaceSelector` looks in the parent's namespace.
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
