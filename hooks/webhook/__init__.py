"""The GitHub webhook receiver's logic: plain functions, no HTTP and no Kubernetes client.

The HTTP endpoint wires them in order:

1. `verify_signature(secret, raw_body, X-Hub-Signature-256, X-Hub-Signature)` when a secret
   is configured;
2. `parse_event(X-GitHub-Event, payload_from_body(Content-Type, raw_body))`;
3. `decide(event, targets, now=clock.now())`, with the HRAs joined to their scale targets
   (`ScaleTarget.from_objects`);
4. create or delete the reservation the `Decision` names, and answer its `message`.

Every `WebhookError` is a delivery that cannot be acted on.
"""

from hooks.webhook.decision import (
    NO_TARGET_MESSAGE,
    PONG,
    Action,
    Decision,
    Lookup,
    decide,
    find_scale_target,
    reservation_name,
)
from hooks.webhook.events import (
    MalformedPayloadError,
    PingEvent,
    UnsupportedEventError,
    WebhookError,
    WebhookEvent,
    WorkflowJobEvent,
    parse_event,
    payload_from_body,
)
from hooks.webhook.signature import verify_signature
from hooks.webhook.targets import (
    DEFAULT_RESERVATION_DURATION,
    GroupScope,
    RunnerGroup,
    RunnerGroupVisibility,
    ScaleTarget,
    TargetRunners,
    in_precedence_order,
    runner_group_from_github,
)

__all__ = [
    "DEFAULT_RESERVATION_DURATION",
    "NO_TARGET_MESSAGE",
    "PONG",
    "Action",
    "Decision",
    "GroupScope",
    "Lookup",
    "MalformedPayloadError",
    "PingEvent",
    "RunnerGroup",
    "RunnerGroupVisibility",
    "ScaleTarget",
    "TargetRunners",
    "UnsupportedEventError",
    "WebhookError",
    "WebhookEvent",
    "WorkflowJobEvent",
    "decide",
    "find_scale_target",
    "in_precedence_order",
    "parse_event",
    "payload_from_body",
    "reservation_name",
    "runner_group_from_github",
    "verify_signature",
]
