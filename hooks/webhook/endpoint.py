"""`/webhook/github`: GitHub's deliveries over HTTP, answered before GitHub's 10-second limit,
with one log line and the delivery metrics per call. The receiver decides."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from hooks.clock import Clock
from hooks.github.port import GitHubPort, RunnerGroupInfo
from hooks.kube.port import KubePort
from hooks.redaction import mask_credentials
from hooks.request_body import BodyTooLarge, BudgetSpent, ByteBudget, body_within
from hooks.settings import Settings
from hooks.telemetry import WebhookLabels, record_delivery
from hooks.webhook.decision import Decision
from hooks.webhook.receiver import FAILED, REJECTED, Reply, WebhookReceiver
from hooks.webhook.targets import GroupScope, RunnerGroup, RunnerGroupVisibility
from hooks.workers import CallRunner

log = logging.getLogger("arc_hooks.hooks")

MAX_WEBHOOK_BYTES = 1024 * 1024
"""The events handled (`workflow_job`, `ping`) carry tens of kilobytes; GitHub's own cap, for
any event, is 25 MB."""

WEBHOOK_BODIES_BUDGET = 32 * 1024 * 1024
"""What the deliveries being read at once may hold together (`ByteBudget`), well within the
receiver's 256 MiB container: beyond it a delivery gets 503, and GitHub shows it as failed."""

WEBHOOK_BODY_SECONDS = 2.0
"""How long a delivery's body may take to arrive. GitHub sends it at once; an upload held open
would keep its share of `WEBHOOK_BODIES_BUDGET` for the whole deadline otherwise."""

TOO_LARGE = Reply(413, "payload too large", outcome=REJECTED)
TOO_MANY_AT_ONCE = Reply(503, "too many deliveries being read at once", outcome=FAILED)
TOO_SLOW = Reply(
    408, f"the body did not arrive within {WEBHOOK_BODY_SECONDS:g} s", outcome=REJECTED
)
"""The answers the endpoint gives before the receiver reads a delivery."""

WEBHOOK_DEADLINE_SECONDS = 8.0
"""GitHub gives up on a delivery after 10 s; answer before it does."""


def webhook_route(
    settings: Settings,
    github: GitHubPort,
    clock: Clock,
    kube: KubePort,
    workers: CallRunner,
) -> Route:
    receiver = _receiver(settings, github, clock, kube, workers)
    labels_of = WebhookLabels.from_settings(settings)
    return Route("/webhook/github", _endpoint(receiver, labels_of), methods=["GET", "POST"])


def _receiver(
    settings: Settings,
    github: GitHubPort,
    clock: Clock,
    kube: KubePort,
    workers: CallRunner,
) -> WebhookReceiver:
    secret = settings.github_webhook_secret_token
    visibility: RunnerGroupVisibility | None = None
    if settings.webhook_runner_group_visibility and settings.has_github_credentials:
        visibility = functools.partial(_visible_runner_groups, github)

    async def run_blocking(call: Callable[[], Decision]) -> Decision:
        return await workers.run(call)

    async def job_status(repository: str, run_id: int, job_id: int) -> str | None:
        return await workers.run(_job_status, github, repository, run_id, job_id)

    return WebhookReceiver(
        kube,
        clock,
        secret=secret.get_secret_value().encode() if secret else None,
        allow_unsigned=settings.webhook_allow_unsigned,
        namespace=settings.watch_namespace or None,
        targets_ttl=settings.webhook_targets_cache_ttl,
        runner_group_visibility=visibility,
        # Only the visibility lookup blocks; without it, deciding needs no thread hop.
        run_blocking=run_blocking if visibility is not None else None,
        job_status=job_status if settings.has_github_credentials else None,
        common_labels=settings.common_runner_labels,
    )


def _job_status(github: GitHubPort, repository: str, run_id: int, job_id: int) -> str | None:
    jobs = github.list_workflow_jobs(repository, run_id)
    return next((job.status for job in jobs if job.id == job_id), None)


def _visible_runner_groups(
    github: GitHubPort, organization: str, repository_name: str
) -> list[RunnerGroup]:
    return [
        _runner_group(group)
        for group in github.visible_runner_groups(organization, repository_name)
    ]


def _runner_group(group: RunnerGroupInfo) -> RunnerGroup:
    """As ARC reads GitHub's answer: the default group has no name, inherited ones are the
    enterprise's."""
    scope = GroupScope.ENTERPRISE if group.inherited else GroupScope.ORGANIZATION
    return RunnerGroup(scope, "" if group.default else group.name)


def _endpoint(receiver: WebhookReceiver, labels_of: WebhookLabels) -> Callable[[Request], Any]:
    budget = ByteBudget(WEBHOOK_BODIES_BUDGET)

    async def endpoint(request: Request) -> Response:
        if request.method in ("GET", "HEAD"):  # a probe, not a delivery
            return PlainTextResponse("webhook server is running")
        started = time.perf_counter()
        try:
            async with asyncio.timeout(WEBHOOK_DEADLINE_SECONDS):
                reply = receiver.answer_unread(request.headers) or await _read_and_handle(
                    receiver, request, budget
                )
        except TimeoutError:
            reply = Reply(503, "timed out before GitHub's 10-second limit", outcome=FAILED)
        except ClientDisconnect:  # anyone can do it: no error, and not the API server failing
            reply = Reply(400, "the sender disconnected before its body arrived", outcome=REJECTED)
        except Exception:
            log.exception("webhook failed")
            reply = Reply(500, "internal error; see the logs", outcome=FAILED)
        elapsed = time.perf_counter() - started
        record_delivery(reply, elapsed, labels_of)
        log.log(
            logging.INFO if reply.status < 500 else logging.WARNING,
            "webhook",
            extra={
                "delivery": request.headers.get("x-github-delivery", "-"),
                "event": reply.event or "-",
                "action": reply.action or "-",
                "outcome": reply.outcome,
                "status": reply.status,
                "autoscaler": reply.autoscaler or "-",
                "detail": reply.message,
                "duration_ms": round(elapsed * 1000, 2),
            },
        )
        # GitHub shows the answer in the hook's delivery log: a token quoted from the
        # payload (a label, an event name) is masked there as in our own log.
        return PlainTextResponse(mask_credentials(reply.message), status_code=reply.status)

    return endpoint


async def _read_and_handle(
    receiver: WebhookReceiver, request: Request, budget: ByteBudget
) -> Reply:
    try:
        async with asyncio.timeout(WEBHOOK_BODY_SECONDS):
            body = await body_within(request, MAX_WEBHOOK_BYTES, budget)
    except BodyTooLarge:
        return TOO_LARGE
    except BudgetSpent:
        return TOO_MANY_AT_ONCE
    except TimeoutError:
        return TOO_SLOW
    return await receiver.handle(request.headers, body)
