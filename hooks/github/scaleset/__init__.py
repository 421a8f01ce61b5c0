"""GitHub's runner scale-set protocol: the client a listener and the hooks use to reach the
Actions service (`client`), its types (`models`), rules (`rules`) and errors (`errors`).

Follows GitHub's Go client `actions/scaleset` (MIT license); see docs/design-notes.md,
"Runner scale sets (protocol)".
"""

from hooks.github.scaleset.client import MessageSession, ScaleSetClient, Sleeper, TokenSource
from hooks.github.scaleset.errors import (
    JobStillRunningError,
    MalformedResponseError,
    MessageQueueTokenExpiredError,
    RunnerExistsError,
    RunnerNotFoundError,
    ScaleSetConfigError,
    ScaleSetError,
    ScaleSetHTTPError,
    ScaleSetRateLimitedError,
    ScaleSetTransportError,
    SessionConflictError,
)
from hooks.github.scaleset.models import (
    JobAssigned,
    JobAvailable,
    JobCompleted,
    JobMessage,
    JobStarted,
    Label,
    RunnerGroup,
    RunnerReference,
    RunnerScaleSet,
    RunnerScaleSetJitRunnerConfig,
    RunnerScaleSetMessage,
    RunnerScaleSetSession,
    RunnerScaleSetSpec,
    RunnerScaleSetStatistic,
    RunnerSetting,
)
from hooks.github.scaleset.rules import GitHubConfig, RetryPolicy, SystemInfo

__all__ = [
    "GitHubConfig",
    "JobAssigned",
    "JobAvailable",
    "JobCompleted",
    "JobMessage",
    "JobStarted",
    "JobStillRunningError",
    "Label",
    "MalformedResponseError",
    "MessageQueueTokenExpiredError",
    "MessageSession",
    "RetryPolicy",
    "RunnerExistsError",
    "RunnerGroup",
    "RunnerNotFoundError",
    "RunnerReference",
    "RunnerScaleSet",
    "RunnerScaleSetJitRunnerConfig",
    "RunnerScaleSetMessage",
    "RunnerScaleSetSession",
    "RunnerScaleSetSpec",
    "RunnerScaleSetStatistic",
    "RunnerSetting",
    "ScaleSetClient",
    "ScaleSetConfigError",
    "ScaleSetError",
    "ScaleSetHTTPError",
    "ScaleSetRateLimitedError",
    "ScaleSetTransportError",
    "SessionConflictError",
    "Sleeper",
    "SystemInfo",
    "TokenSource",
]
