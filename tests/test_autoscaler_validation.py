"""HRA spec values the CRD admits but no answer can honour, and what status says of them.

ARC has no validating webhook for HorizontalRunnerAutoscalers, and its controller uses such
values as they are: `maxReplicas: -1` becomes the deployment's replica count. Here a spec like
that gets `ScalingActive=False` (reason InvalidSpec) naming the field, and everything the HRA
already has stays: its previous `desiredReplicas` and its reservations. A trigger duration the
webhook receiver replaces with ten minutes is noted in the `ScalingActive` message instead,
and sizing goes on.

Messages name fields, never their values: a spec field may hold a token pasted into the wrong
place, and status is readable by everyone who may read the HRA.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from hooks.autoscaler.validation import spec_problems, trigger_duration_notes
from hooks.clock import ManualClock, format_time
from hooks.resources.autoscaler import HorizontalRunnerAutoscalerSpec, ScaleUpTrigger
from tests.test_autoscaler_hook import (
    SYNC,
    T0,
    Cluster,
    autoscaler,
    child_names,
    condition,
    reservation,
)

PASTED = "ghp_PASTEDBYMISTAKE0123456789abcdefghijklmn"  # what a status must never show
SOON = format_time(T0.replace(hour=1))  # the clock starts at T0
EARLIER = format_time(T0.replace(year=2025))
ALL_KEPT = ["job-1", "job-2"]


def spec(**fields: Any) -> HorizontalRunnerAutoscalerSpec:
    return HorizontalRunnerAutoscalerSpec.model_validate(
        {"minReplicas": 1, "maxReplicas": 10, **fields}
    )


def spec_reservation(replicas: int) -> dict[str, Any]:
    return {"name": "release", "expirationTime": SOON, "replicas": replicas}


def active_override(min_replicas: int) -> dict[str, Any]:
    """A one-off override that is active at the clock's start."""
    return {"startTime": EARLIER, "endTime": SOON, "minReplicas": min_replicas}


# ------------------------------------------------------------------ the rules


@pytest.mark.parametrize(
    ("fields", "problems"),
    [
        ({}, []),
        ({"minReplicas": 0, "maxReplicas": 0}, []),
        ({"minReplicas": 3, "maxReplicas": 3}, []),
        ({"minReplicas": -5, "maxReplicas": 1}, []),  # ARC's default of 1 applies
        ({"scaleDownDelaySecondsAfterScaleOut": 0}, []),
        ({"capacityReservations": [spec_reservation(0)]}, []),
        ({"scheduledOverrides": [active_override(10)]}, []),
        ({"maxReplicas": -1}, ["spec.maxReplicas must be 0 or more"]),
        (
            {"minReplicas": 4, "maxReplicas": 3},
            ["spec.minReplicas must not be greater than spec.maxReplicas"],
        ),
        (
            {"minReplicas": -1, "maxReplicas": 0},
            [
                "spec.minReplicas must not be greater than spec.maxReplicas "
                "(a negative minReplicas counts as 1)"
            ],
        ),
        (
            {"scaleDownDelaySecondsAfterScaleOut": -1},
            ["spec.scaleDownDelaySecondsAfterScaleOut must be 0 or more"],
        ),
        (
            {"capacityReservations": [spec_reservation(1), spec_reservation(-3)]},
            ["spec.capacityReservations[1].replicas must be 0 or more"],
        ),
        (
            {"scheduledOverrides": [active_override(-1)]},
            ["spec.scheduledOverrides[0].minReplicas must be 0 or more"],
        ),
        # ARC sizes to an override's minimum above maxReplicas (its "prepare for spikes").
        ({"scheduledOverrides": [active_override(11)]}, []),
        (
            {"maxReplicas": -2, "scaleDownDelaySecondsAfterScaleOut": -60},
            [
                "spec.maxReplicas must be 0 or more",
                "spec.scaleDownDelaySecondsAfterScaleOut must be 0 or more",
            ],
        ),
    ],
)
def test_spec_problems(fields: dict[str, Any], problems: list[str]) -> None:
    assert spec_problems(spec(**fields)) == problems


@pytest.mark.parametrize(
    ("duration", "note"),
    [
        (None, None),
        ("", None),
        ("0s", None),  # how Kubernetes writes ARC's unset duration
        ("30m", None),
        ("1h30m", None),
        (
            "forever",
            "spec.scaleUpTriggers[0].duration is not a Go duration (such as 30m or 1h30m, at "
            "most 2562047h): reservations last 10m instead",
        ),
        (
            "30",  # no unit: Go refuses it
            "spec.scaleUpTriggers[0].duration is not a Go duration (such as 30m or 1h30m, at "
            "most 2562047h): reservations last 10m instead",
        ),
        (
            "9999999h",  # beyond Go's int64 of nanoseconds
            "spec.scaleUpTriggers[0].duration is not a Go duration (such as 30m or 1h30m, at "
            "most 2562047h): reservations last 10m instead",
        ),
        (
            "-30m",
            "spec.scaleUpTriggers[0].duration is negative: reservations last 10m instead",
        ),
    ],
)
def test_trigger_duration_notes(duration: str | None, note: str | None) -> None:
    notes = trigger_duration_notes([ScaleUpTrigger(duration=duration)])

    assert notes == ([] if note is None else [note])


# ------------------------------------------------------------------ the hook


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"maxReplicas": -1}, "spec.maxReplicas must be 0 or more"),
        (
            {"minReplicas": 5, "maxReplicas": 3},
            "spec.minReplicas must not be greater than spec.maxReplicas",
        ),
        (
            {"scaleDownDelaySecondsAfterScaleOut": -600},
            "spec.scaleDownDelaySecondsAfterScaleOut must be 0 or more",
        ),
        (
            {"capacityReservations": [spec_reservation(-3)]},
            "spec.capacityReservations[0].replicas must be 0 or more",
        ),
        (
            {"scheduledOverrides": [active_override(-2)]},
            "spec.scheduledOverrides[0].minReplicas must be 0 or more",
        ),
    ],
)
def test_an_invalid_spec_keeps_the_answer_and_the_reservations(
    client: TestClient, clock: ManualClock, fields: dict[str, Any], message: str
) -> None:
    cluster = Cluster(client, clock, autoscaler(status={"desiredReplicas": 2}, **fields))
    cluster.add(reservation("job-1", clock.now()), reservation("job-2", clock.now()))

    answer = cluster.sync()

    scaling = condition(answer)
    assert (scaling["status"], scaling["reason"], scaling["message"]) == (
        "False",
        "InvalidSpec",
        message,
    )
    assert answer["status"]["desiredReplicas"] == 2
    assert child_names(answer) == ALL_KEPT
    assert all("startTime" not in child["spec"] for child in answer["children"])


def test_a_fixed_spec_is_sized_again(client: TestClient, clock: ManualClock) -> None:
    cluster = Cluster(client, clock, autoscaler(status={"desiredReplicas": 2}, maxReplicas=-1))
    cluster.add(reservation("job-1", clock.now()))
    assert condition(cluster.sync())["status"] == "False"

    cluster.hra["spec"]["maxReplicas"] = 10
    answer = cluster.sync()

    assert condition(answer)["status"] == "True"
    assert answer["status"]["desiredReplicas"] == 1  # min 0 + job-1


@pytest.mark.parametrize(
    ("duration", "note"),
    [
        (
            "forever",
            "spec.scaleUpTriggers[0].duration is not a Go duration (such as 30m or 1h30m, at "
            "most 2562047h): reservations last 10m instead",
        ),
        ("-30m", "spec.scaleUpTriggers[0].duration is negative: reservations last 10m instead"),
    ],
)
def test_an_unusable_trigger_duration_is_noted_and_scaling_goes_on(
    client: TestClient, clock: ManualClock, duration: str, note: str
) -> None:
    hra = autoscaler(scaleUpTriggers=[{"githubEvent": {"workflowJob": {}}, "duration": duration}])
    cluster = Cluster(client, clock, hra)
    cluster.add(reservation("job-1", clock.now()))

    answer = cluster.sync()

    scaling = condition(answer)
    assert (scaling["status"], scaling["reason"]) == ("True", "Suggested")
    assert scaling["message"].startswith("1 replicas: no metric suggestion, 1 reserved")
    assert scaling["message"].endswith(f"min 0, max 10; {note}")
    assert answer["status"]["desiredReplicas"] == 1

    cluster.hra["spec"]["scaleUpTriggers"][0]["duration"] = "30m"
    assert "duration" not in condition(cluster.sync())["message"]


# Every free-form field the hook reads, holding a token: the status names the field instead.
LEAKS = [
    pytest.param({"metrics": [{"type": PASTED}]}, None, "spec.metrics[0].type", id="metric-type"),
    pytest.param(
        {"metrics": [{"type": "PercentageRunnersBusy"}, {"type": PASTED}]},
        None,
        "Metrics[1] of an unsupported type",
        id="second-metric-type",
    ),
    pytest.param(
        {"scaleTargetRef": {"kind": PASTED, "name": "example-runner-deployment"}},
        None,
        "spec.scaleTargetRef.kind",
        id="target-kind",
    ),
    pytest.param(
        {"scaleTargetRef": {"name": PASTED}}, None, "spec.scaleTargetRef.name", id="target-name"
    ),
    pytest.param(
        {
            "scheduledOverrides": [
                {"startTime": EARLIER, "endTime": SOON, "recurrenceRule": {"frequency": PASTED}}
            ]
        },
        None,
        "spec.scheduledOverrides[0].recurrenceRule.frequency",
        id="frequency",
    ),
    pytest.param(
        {"scheduledOverrides": [{"startTime": PASTED, "endTime": SOON}]},
        None,
        "spec.scheduledOverrides[0].startTime",
        id="override-start",
    ),
    pytest.param(
        {
            "scheduledOverrides": [
                {
                    "startTime": EARLIER,
                    "endTime": SOON,
                    "recurrenceRule": {"frequency": "Daily", "untilTime": PASTED},
                }
            ]
        },
        None,
        "spec.scheduledOverrides[0].recurrenceRule.untilTime",
        id="override-until",
    ),
    pytest.param(
        {"capacityReservations": [{"expirationTime": PASTED, "replicas": 1}]},
        None,
        "spec.capacityReservations[0].expirationTime",
        id="reservation-expiry",
    ),
    pytest.param(
        {},
        {"desiredReplicas": 3, "lastSuccessfulScaleOutTime": PASTED},
        "status.lastSuccessfulScaleOutTime",
        id="scale-out-time",
    ),
    pytest.param(
        {"scaleUpTriggers": [{"githubEvent": {"workflowJob": {}}, "duration": PASTED}]},
        None,
        "spec.scaleUpTriggers[0].duration",
        id="trigger-duration",
    ),
]


@pytest.mark.parametrize(("fields", "status", "field"), LEAKS)
def test_a_token_in_a_spec_field_is_named_not_shown(
    client: TestClient,
    clock: ManualClock,
    fields: dict[str, Any],
    status: dict[str, Any] | None,
    field: str,
) -> None:
    cluster = Cluster(client, clock, autoscaler(status=status, **fields))

    response = client.post(SYNC, json=cluster.request())

    assert response.status_code == 200, response.text
    conditions = response.json()["status"]["conditions"]
    assert PASTED not in repr(conditions)
    assert field in condition(response.json())["message"]
    if status is None:  # a status that held it already keeps it: nothing else may show it
        assert PASTED not in response.text


# ------------------------------------------------------------------ any integers


INTEGERS = st.integers(min_value=-(2**31), max_value=2**31) | st.integers(-3, 12)


@st.composite
def bounded_specs(draw: st.DrawFn) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "minReplicas": draw(INTEGERS),
        "maxReplicas": draw(INTEGERS),
        "scaleDownDelaySecondsAfterScaleOut": draw(st.none() | INTEGERS),
        "capacityReservations": [
            spec_reservation(replicas) for replicas in draw(st.lists(INTEGERS, max_size=3))
        ],
    }
    override_min = draw(st.none() | INTEGERS)
    if override_min is not None:
        fields["scheduledOverrides"] = [active_override(override_min)]
    return fields


def _expected_problem(fields: dict[str, Any]) -> bool:
    """The rules, restated from the fields as written."""
    maximum = fields["maxReplicas"]
    minimum = fields["minReplicas"] if fields["minReplicas"] >= 0 else 1
    overrides = [o["minReplicas"] for o in fields.get("scheduledOverrides", [])]
    delay = fields["scaleDownDelaySecondsAfterScaleOut"]
    return (
        maximum < 0
        or minimum > maximum
        or (delay is not None and delay < 0)
        or any(r["replicas"] < 0 for r in fields["capacityReservations"])
        or any(m < 0 for m in overrides)
    )


def test_any_integers_give_an_answer_never_below_zero(
    client: TestClient, clock: ManualClock
) -> None:
    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(fields=bounded_specs(), previous=st.integers(0, 50))
    def check(fields: dict[str, Any], previous: int) -> None:
        cluster = Cluster(client, clock, autoscaler(status={"desiredReplicas": previous}, **fields))
        cluster.add(reservation("job-1", clock.now()), reservation("job-2", clock.now()))

        answer = cluster.sync()  # asserts a 200

        desired = answer["status"]["desiredReplicas"]
        scaling = condition(answer)
        if _expected_problem(fields):
            assert (scaling["status"], scaling["reason"]) == ("False", "InvalidSpec")
            assert desired == previous
            assert child_names(answer) == ALL_KEPT
            return
        assert scaling["status"] == "True", scaling
        overrides = fields.get("scheduledOverrides", [])
        spec_min = fields["minReplicas"] if fields["minReplicas"] >= 0 else 1  # ARC's default
        minimum = overrides[0]["minReplicas"] if overrides else spec_min
        reserved = 2 + sum(r["replicas"] for r in fields["capacityReservations"])
        # No scale-out time in the previous status: nothing holds the answer up. Without a
        # metric the suggestion is the minimum, so (as in ARC) only the cap can apply, even to
        # an override's minimum above maxReplicas.
        assert desired == min(minimum + reserved, fields["maxReplicas"])
        assert desired >= 0

    check()
