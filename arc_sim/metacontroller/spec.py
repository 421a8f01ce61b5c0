"""CompositeController and DecoratorController objects, read into what the emulator acts on."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from arc_sim.metacontroller.endpoint import (
    CredentialRef,
    UnresolvableCredential,
    credential_ref,
    resolve_header,
)
from arc_sim.metacontroller.resources import ResourceCatalog, ResourceType, UnknownResource
from arc_sim.store import KubeObject, ObjectStore

DEFAULT_HOOK_TIMEOUT_SECONDS = 10.0
MINIMUM_RESYNC_PERIOD_SECONDS = 1.0

Method = Literal["OnDelete", "Recreate", "InPlace", "RollingRecreate", "RollingInPlace"]
_METHODS = ("OnDelete", "Recreate", "InPlace", "RollingRecreate", "RollingInPlace")


class InvalidController(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Hook:
    url: str
    timeout: float
    version: Literal["v1", "v2"]
    strict: bool
    """Strict response decoding: unknown or duplicate fields fail the call."""
    credential: CredentialRef | None = None
    """Where the Authorization header comes from (the hook's own, or its endpoint config's)."""
    authorization: str | None = None
    """The header itself, resolved from the Secret when the controller starts."""

    @property
    def v2(self) -> bool:
        return self.version == "v2"


@dataclass(frozen=True, slots=True)
class Hooks:
    sync: Hook | None
    finalize: Hook | None
    customize: Hook | None


@dataclass(frozen=True, slots=True)
class ChildRule:
    type: ResourceType
    method: str


@dataclass(frozen=True, slots=True)
class UpdateStrategies:
    """Update methods keyed by (group, kind): Metacontroller ignores the version here."""

    methods: dict[tuple[str, str], str]

    def method(self, group: str, kind: str) -> str:
        return self.methods.get((group, kind)) or "OnDelete"


@dataclass(frozen=True, slots=True)
class CompositeSpec:
    name: str
    controller: KubeObject
    parent: ResourceType
    parent_selector: dict[str, Any] | None
    ignore_status_changes: bool
    children: tuple[ChildRule, ...]
    strategies: UpdateStrategies
    generate_selector: bool
    resync_period: float | None
    hooks: Hooks

    @property
    def finalizer(self) -> str:
        return f"metacontroller.io/compositecontroller-{self.name}"


@dataclass(frozen=True, slots=True)
class DecoratedRule:
    type: ResourceType
    label_selector: dict[str, Any] | None
    annotation_selector: dict[str, Any] | None
    ignore_status_changes: bool


@dataclass(frozen=True, slots=True)
class DecoratorSpec:
    name: str
    controller: KubeObject
    resources: tuple[DecoratedRule, ...]
    attachments: tuple[ChildRule, ...]
    strategies: UpdateStrategies
    resync_period: float | None
    hooks: Hooks

    @property
    def finalizer(self) -> str:
        return f"metacontroller.io/decoratorcontroller-{self.name}"


ControllerSpec = CompositeSpec | DecoratorSpec


def read_controller(obj: KubeObject, catalog: ResourceCatalog) -> ControllerSpec:
    name = (obj.get("metadata") or {}).get("name")
    if not name:
        raise InvalidController(f"{obj.get('kind')} without metadata.name")
    spec = obj.get("spec") or {}
    try:
        if obj.get("kind") == "CompositeController":
            return _composite(name, obj, spec, catalog)
        if obj.get("kind") == "DecoratorController":
            return _decorator(name, obj, spec, catalog)
    except (UnknownResource, UnresolvableCredential, KeyError, TypeError) as error:
        raise InvalidController(f"{obj.get('kind')} {name}: {error}") from error
    raise InvalidController(f"not a Metacontroller controller: {obj.get('kind')}")


def with_credentials(spec: ControllerSpec, store: ObjectStore) -> ControllerSpec:
    """The spec with each hook's Authorization header read from its Secret, as Metacontroller
    does once when a controller starts (a later change of the Secret is not seen)."""
    try:
        hooks = Hooks(
            *(
                replace(hook, authorization=resolve_header(hook.credential, store))
                if hook is not None and hook.credential is not None
                else hook
                for hook in (spec.hooks.sync, spec.hooks.finalize, spec.hooks.customize)
            )
        )
    except UnresolvableCredential as error:
        kind = "CompositeController" if isinstance(spec, CompositeSpec) else "DecoratorController"
        message = f"{kind} {spec.name}: can't resolve endpoint config: {error}"
        raise InvalidController(message) from None
    return replace(spec, hooks=hooks)


def _composite(
    name: str, obj: KubeObject, spec: dict[str, Any], catalog: ResourceCatalog
) -> CompositeSpec:
    parent = spec["parentResource"]
    children = tuple(_child_rule(rule, catalog) for rule in spec.get("childResources") or [])
    return CompositeSpec(
        name=name,
        controller=obj,
        parent=catalog.resource(parent["apiVersion"], parent["resource"]),
        parent_selector=parent.get("labelSelector"),
        ignore_status_changes=bool(parent.get("ignoreStatusChanges")),
        children=children,
        strategies=_strategies(children),
        generate_selector=bool(spec.get("generateSelector")),
        resync_period=_resync_period(spec),
        hooks=_hooks(spec.get("hooks") or {}, spec.get("endpointConfigs") or []),
    )


def _decorator(
    name: str, obj: KubeObject, spec: dict[str, Any], catalog: ResourceCatalog
) -> DecoratorSpec:
    resources = tuple(
        DecoratedRule(
            type=catalog.resource(rule["apiVersion"], rule["resource"]),
            label_selector=rule.get("labelSelector"),
            annotation_selector=rule.get("annotationSelector"),
            ignore_status_changes=bool(rule.get("ignoreStatusChanges")),
        )
        for rule in spec.get("resources") or []
    )
    attachments = tuple(_child_rule(rule, catalog) for rule in spec.get("attachments") or [])
    return DecoratorSpec(
        name=name,
        controller=obj,
        resources=resources,
        attachments=attachments,
        strategies=_strategies(attachments),
        resync_period=_resync_period(spec),
        hooks=_hooks(spec.get("hooks") or {}, spec.get("endpointConfigs") or []),
    )


def _child_rule(rule: dict[str, Any], catalog: ResourceCatalog) -> ChildRule:
    method = (rule.get("updateStrategy") or {}).get("method") or "OnDelete"
    if method not in _METHODS:
        raise InvalidController(f"unknown update method {method!r}")
    return ChildRule(catalog.resource(rule["apiVersion"], rule["resource"]), method)


def _strategies(rules: tuple[ChildRule, ...]) -> UpdateStrategies:
    return UpdateStrategies({(rule.type.group, rule.type.kind): rule.method for rule in rules})


def _resync_period(spec: dict[str, Any]) -> float | None:
    seconds = spec.get("resyncPeriodSeconds")
    if seconds is None:
        return None
    return max(float(seconds), MINIMUM_RESYNC_PERIOD_SECONDS)


def _hooks(hooks: dict[str, Any], endpoint_configs: list[dict[str, Any]]) -> Hooks:
    return Hooks(
        sync=_hook(hooks.get("sync"), endpoint_configs),
        finalize=_hook(hooks.get("finalize"), endpoint_configs),
        customize=_hook(hooks.get("customize"), endpoint_configs),
    )


def _hook(hook: dict[str, Any] | None, endpoint_configs: list[dict[str, Any]]) -> Hook | None:
    if not hook:
        return None
    webhook = hook.get("webhook")
    if not webhook:
        raise InvalidController("a hook without a webhook")
    version: Literal["v1", "v2"]
    match hook.get("version") or "v1":
        case "v1":
            version = "v1"
        case "v2":
            version = "v2"
        case other:
            raise InvalidController(f"unknown hook version {other!r}")
    mode = webhook.get("responseUnMarshallMode") or ("strict" if version == "v2" else "loose")
    timeout = parse_duration(webhook["timeout"]) if webhook.get("timeout") else 0.0
    url = webhook_url(webhook)
    return Hook(
        url=url,
        timeout=timeout if timeout > 0 else DEFAULT_HOOK_TIMEOUT_SECONDS,
        version=version,
        strict=mode == "strict",
        credential=credential_ref(webhook, url, endpoint_configs),
    )


def webhook_url(webhook: dict[str, Any]) -> str:
    """`url` wins; otherwise `proto://name.namespace:port/path` from `service` and `path`."""
    if webhook.get("url"):
        return str(webhook["url"])
    service = webhook.get("service")
    if not service:
        raise InvalidController("a webhook needs url or service")
    protocol = service.get("protocol") or "http"
    port = service.get("port") or 80
    path = webhook.get("path") or ""
    return f"{protocol}://{service['name']}.{service['namespace']}:{port}{path}"


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_duration(text: str) -> float:
    """A Go duration (`10s`, `1m30s`, `500ms`) in seconds."""
    sign, rest = (-1.0, text[1:]) if text.startswith("-") else (1.0, text.lstrip("+"))
    if rest == "0":
        return 0.0
    position, total = 0, 0.0
    while position < len(rest):
        match = _DURATION_PART.match(rest, position)
        if match is None:
            raise InvalidController(f"invalid duration {text!r}")
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if not rest:
        raise InvalidController(f"invalid duration {text!r}")
    return sign * total
