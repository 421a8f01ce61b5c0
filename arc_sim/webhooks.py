"""GitHub's webhooks in the simulated world: `workflow_job` payloads, signed deliveries, losses.

GitHub posts a `workflow_job` event when a job is queued, starts and completes. Deliveries are
lossy (GitHub does not retry a failed one) and may come twice with the same delivery id; the
`WebhookSender` reproduces both, in virtual time, from its own seeded generator.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import random
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from arc_sim.events import EventLoop
from arc_sim.github_api import (
    ACTOR,
    DOTCOM_API,
    DOTCOM_WEB,
    job_json,
    minimal_repository_json,
    node_id,
    simple_user_json,
)
from arc_sim.github_jobs import JobEvent, covers
from arc_sim.github_state import GitHubState
from hooks.github.port import Scope

Json = dict[str, Any]
Deliver = Callable[[dict[str, str], bytes], int]

USER_AGENT = "GitHub-Hookshot/b8c2f1a"
WORKFLOW_JOB = "workflow_job"
# Account creation time written into payloads: fixed, so payloads are deterministic.
CREATED_AT = "2020-01-01T00:00:00Z"


def signature_256(secret: str | bytes, body: bytes) -> str:
    """The `X-Hub-Signature-256` value: HMAC-SHA256 of the raw body, keyed by the secret."""
    key = secret.encode() if isinstance(secret, str) else secret
    return "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()


def signature_1(secret: str | bytes, body: bytes) -> str:
    """The legacy `X-Hub-Signature` (HMAC-SHA1) GitHub still sends beside the SHA-256 one."""
    key = secret.encode() if isinstance(secret, str) else secret
    return "sha1=" + hmac.new(key, body, hashlib.sha1).hexdigest()


# Payloads


def workflow_job_payload(
    state: GitHubState, event: JobEvent, *, installation_id: int | None = None
) -> Json:
    """The `workflow_job` payload GitHub.com sends for `event`.

    `organization` is there when the repository's owner is an organization, `enterprise` when
    that organization belongs to one, `installation` when the hook is a GitHub App's.
    """
    job = event.job
    payload: Json = {
        "action": event.action,
        "workflow_job": job_json(job, DOTCOM_API, DOTCOM_WEB),
        "repository": repository_json(state, job.repository),
        "sender": simple_user_json(state, ACTOR, DOTCOM_API, DOTCOM_WEB),
    }
    owner = job.owner
    if state.owner_type(owner) == "Organization":
        payload["organization"] = organization_json(state, owner)
    enterprise = state.enterprise_of(owner)
    if enterprise is not None:
        payload["enterprise"] = enterprise_json(state, enterprise)
    if installation_id is not None:
        payload["installation"] = {
            "id": installation_id,
            "node_id": node_id("IntegrationInstallation", installation_id),
        }
    return payload


def repository_json(state: GitHubState, repository: str) -> Json:
    """`repository` of a webhook: the REST minimal repository and the fields webhooks add."""
    body = minimal_repository_json(state, repository, DOTCOM_API, DOTCOM_WEB)
    web = f"{DOTCOM_WEB}/{repository}"
    return {
        **body,
        "clone_url": f"{web}.git",
        "git_url": f"git://github.com/{repository}.git",
        "ssh_url": f"git@github.com:{repository}.git",
        "svn_url": web,
        "mirror_url": None,
        "homepage": None,
        "language": None,
        "license": None,
        "default_branch": "main",
        "archived": False,
        "disabled": False,
        "has_downloads": True,
        "has_issues": True,
        "has_projects": True,
        "has_wiki": True,
        "has_pages": False,
        "forks": 0,
        "forks_count": 0,
        "open_issues": 0,
        "open_issues_count": 0,
        "stargazers_count": 0,
        "watchers": 0,
        "watchers_count": 0,
        "size": 0,
        "visibility": "private",
        "created_at": CREATED_AT,
        "updated_at": CREATED_AT,
        "pushed_at": CREATED_AT,
    }


def organization_json(state: GitHubState, login: str) -> Json:
    org_id = state.account_id("account", login)
    url = f"{DOTCOM_API}/orgs/{login}"
    return {
        "login": login,
        "id": org_id,
        "node_id": node_id("Organization", org_id),
        "url": url,
        "repos_url": f"{url}/repos",
        "events_url": f"{url}/events",
        "hooks_url": f"{url}/hooks",
        "issues_url": f"{url}/issues",
        "members_url": f"{url}/members{{/member}}",
        "public_members_url": f"{url}/public_members{{/member}}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{org_id}?v=4",
        "description": None,
    }


def enterprise_json(state: GitHubState, slug: str) -> Json:
    enterprise_id = state.account_id("enterprise", slug)
    return {
        "id": enterprise_id,
        "node_id": node_id("Enterprise", enterprise_id),
        "slug": slug,
        "name": slug,
        "description": None,
        "website_url": None,
        "html_url": f"{DOTCOM_WEB}/enterprises/{slug}",
        "avatar_url": f"https://avatars.githubusercontent.com/b/{enterprise_id}?v=4",
        "created_at": CREATED_AT,
        "updated_at": CREATED_AT,
    }


# Deliveries


@dataclass
class Delivery:
    """One POST GitHub made, or would have made had the delivery not been lost."""

    delivery_id: str
    event: str
    action: str
    headers: dict[str, str]
    body: bytes = field(repr=False)
    created_at: datetime  # when GitHub decided to send it
    job_id: int | None = None
    lost: bool = False  # never sent
    copy: int = 1  # 2 for the duplicate of a delivery, sent with the same delivery id
    delivered_at: datetime | None = None
    status: int | None = None  # the receiver's answer

    def payload(self) -> Json:
        data: Json = json.loads(self.body)
        return data


class WebhookSender:
    """GitHub's side of one webhook: signs payloads and delivers them on the event loop.

    Each event is delivered `delay_seconds` after it happened; a share `loss_rate` is lost (never
    delivered, as GitHub does not retry), a share `duplicate_rate` delivered twice under the same
    delivery id. `scope` limits a repository, organization or enterprise hook to the jobs it
    would see; without one the hook sees every job, as a GitHub App installed everywhere does.
    """

    def __init__(
        self,
        loop: EventLoop,
        deliver: Deliver,
        *,
        secret: str,
        loss_rate: float = 0.0,
        duplicate_rate: float = 0.0,
        delay_seconds: float = 1.0,
        hook_id: int = 1,
        scope: Scope | None = None,
        installation_id: int | None = None,
    ) -> None:
        for name, rate in (("loss_rate", loss_rate), ("duplicate_rate", duplicate_rate)):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, not {rate}")
        self.loop = loop
        self.deliver = deliver
        self.secret = secret
        self.loss_rate = loss_rate
        self.duplicate_rate = duplicate_rate
        self.delay_seconds = delay_seconds
        self.hook_id = hook_id
        self.scope = scope
        self.installation_id = installation_id
        # Seeded from the loop once: deliveries stay the same whatever else draws from the loop.
        self._random = random.Random(loop.rng.getrandbits(64))
        self._state: GitHubState | None = None
        self.deliveries: list[Delivery] = []

    def watch(self, state: GitHubState) -> None:
        """Send a `workflow_job` event for each job change of `state`."""
        self._state = state
        state.add_job_listener(self.on_job_event)

    def on_job_event(self, event: JobEvent) -> None:
        state = self._state
        if state is None:
            raise RuntimeError("on_job_event needs watch(state) first")
        if self.scope is not None and not covers(
            self.scope, event.job.repository, state.enterprise_of
        ):
            return
        payload = workflow_job_payload(state, event, installation_id=self.installation_id)
        self.send(WORKFLOW_JOB, payload, job_id=event.job.id)

    def send(self, event: str, payload: Json, *, job_id: int | None = None) -> list[Delivery]:
        """Schedule the delivery of one event; returns its delivery records (one, or two for a
        duplicate). A lost delivery is recorded but never scheduled."""
        body = orjson.dumps(payload)  # compact UTF-8, as GitHub sends it
        delivery_id = str(uuid.UUID(int=self._random.getrandbits(128), version=4))
        # Both draws always happen, so one rate does not shift the other's sequence.
        lost = self._random.random() < self.loss_rate
        duplicated = self._random.random() < self.duplicate_rate
        headers = self._headers(event, delivery_id, body)
        copies = 2 if duplicated and not lost else 1
        records = [
            Delivery(
                delivery_id=delivery_id,
                event=event,
                action=str(payload.get("action", "")),
                headers=headers,
                body=body,
                created_at=self.loop.now,
                job_id=job_id,
                lost=lost,
                copy=copy,
            )
            for copy in range(1, copies + 1)
        ]
        self.deliveries += records
        if not lost:
            for record in records:
                self.loop.call_later(
                    self.delay_seconds,
                    functools.partial(self._post, record),
                    f"webhook {event} {record.action} {delivery_id}",
                )
        return records

    def counts(self) -> Counter[str]:
        """Deliveries by fate: `lost`, `duplicate`, `pending`, and `status <code>` when sent."""
        counts: Counter[str] = Counter()
        for record in self.deliveries:
            if record.lost:
                counts["lost"] += 1
                continue
            if record.copy > 1:
                counts["duplicate"] += 1
            counts["pending" if record.status is None else f"status {record.status}"] += 1
        return counts

    def _post(self, record: Delivery) -> None:
        record.delivered_at = self.loop.now
        record.status = self.deliver(dict(record.headers), record.body)

    def _headers(self, event: str, delivery_id: str, body: bytes) -> dict[str, str]:
        target_type, target_id = self._target()
        return {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery_id,
            "X-GitHub-Hook-ID": str(self.hook_id),
            "X-GitHub-Hook-Installation-Target-Type": target_type,
            "X-GitHub-Hook-Installation-Target-ID": str(target_id),
            "X-Hub-Signature": signature_1(self.secret, body),
            "X-Hub-Signature-256": signature_256(self.secret, body),
        }

    def _target(self) -> tuple[str, int]:
        """What the hook is installed on, as GitHub names it in the target headers."""
        state, scope = self._state, self.scope
        if state is None or scope is None:
            return "integration", self.hook_id
        if scope.repository:
            return "repository", state.account_id("repository", scope.repository)
        if scope.organization:
            return "organization", state.account_id("account", scope.organization)
        return "business", state.account_id("enterprise", scope.enterprise)
