"""Target keys, runner groups beyond ARC's tables (tests/test_arc_runner_groups.py), durations."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hooks.resources.runner import RunnerConfig
from hooks.webhook import GroupScope, RunnerGroup, TargetRunners, in_precedence_order
from hooks.webhook import runner_group_from_github as from_github
from hooks.webhook.duration import parse_go_duration

ORG_DEFAULT = RunnerGroup(GroupScope.ORGANIZATION)
ORG_CUSTOM = RunnerGroup(GroupScope.ORGANIZATION, "myorg1group1")
ENTERPRISE_DEFAULT = RunnerGroup(GroupScope.ENTERPRISE)
ENTERPRISE_CUSTOM = RunnerGroup(GroupScope.ENTERPRISE, "myenterprisegroup1")


def test_groups_of_equal_precedence_keep_their_order_and_appear_once() -> None:
    second = RunnerGroup(GroupScope.ORGANIZATION, "second")
    groups = [second, ORG_CUSTOM, RunnerGroup(GroupScope.ORGANIZATION, "SECOND"), ORG_DEFAULT]
    assert in_precedence_order(groups) == [ORG_DEFAULT, second, ORG_CUSTOM]


def test_groups_from_githubs_runner_group_list() -> None:
    # GitHub's `default` and `inherited` flags give the group's scope and kind.
    assert from_github({"id": 1, "name": "Default", "default": True}) == ORG_DEFAULT
    assert from_github({"id": 2, "name": "Default", "default": True, "inherited": True}) == (
        ENTERPRISE_DEFAULT
    )
    assert from_github({"id": 3, "name": "myorg1group1", "default": False}) == ORG_CUSTOM
    assert from_github({"id": 4, "name": "myenterprisegroup1", "inherited": True}) == (
        ENTERPRISE_CUSTOM
    )


@pytest.mark.parametrize(
    ("group", "enterprise", "key"),
    [
        (ORG_DEFAULT, "ent", "myorg"),
        (ORG_CUSTOM, "ent", "myorg/group/myorg1group1"),
        (ENTERPRISE_DEFAULT, "ent", "enterprises/ent"),
        (ENTERPRISE_CUSTOM, "ent", "enterprises/ent/group/myenterprisegroup1"),
        (ENTERPRISE_DEFAULT, None, None),
        (ORG_DEFAULT, None, "myorg"),
    ],
)
def test_group_keys(group: RunnerGroup, enterprise: str | None, key: str | None) -> None:
    assert group.key("myorg", enterprise) == key


@pytest.mark.parametrize(
    ("config", "keys", "group"),
    [
        ({"repository": "Owner/Repo"}, {"owner/repo"}, None),
        ({"organization": "Org"}, {"org"}, ORG_DEFAULT),
        (
            {"organization": "org", "group": "G"},
            {"org/group/g"},
            RunnerGroup(GroupScope.ORGANIZATION, "G"),
        ),
        ({"enterprise": "ent"}, {"enterprises/ent"}, ENTERPRISE_DEFAULT),
        (
            {"enterprise": "ent", "group": "g"},
            {"enterprises/ent/group/g"},
            RunnerGroup(GroupScope.ENTERPRISE, "g"),
        ),
        # A group needs an organization or an enterprise; ARC ignores it otherwise.
        ({"repository": "o/r", "group": "g"}, {"o/r"}, None),
        ({}, set(), None),
    ],
)
@pytest.mark.parametrize("kind", ["RunnerDeployment", "RunnerSet"])
def test_target_keys(
    kind: str, config: dict[str, str], keys: set[str], group: RunnerGroup | None
) -> None:
    runners = TargetRunners.from_config(kind, "runners", RunnerConfig.model_validate(config))
    assert runners.keys() == keys
    assert runners.runner_group() == group


def test_missing_labels() -> None:
    runners = TargetRunners("RunnerDeployment", "r", organization="o", labels=("Linux", "GPU"))
    assert runners.missing_labels(["SELF-HOSTED", "linux", "gpu"]) == []
    assert runners.missing_labels(["linux", "x64", "arm64"]) == ["x64", "arm64"]
    assert runners.missing_labels(["x64", "linux", "arm64", "gpu"], limit=2) == ["x64", "arm64"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", timedelta(0)),
        ("-0", timedelta(0)),
        ("10m", timedelta(minutes=10)),
        ("+10m", timedelta(minutes=10)),
        ("-1h", timedelta(hours=-1)),
        ("1h30m15s", timedelta(hours=1, minutes=30, seconds=15)),
        ("1.5h", timedelta(minutes=90)),
        (".5s", timedelta(milliseconds=500)),
        ("5.s", timedelta(seconds=5)),
        ("300ms", timedelta(milliseconds=300)),
        ("2us", timedelta(microseconds=2)),
        ("2µs", timedelta(microseconds=2)),
        ("2μs", timedelta(microseconds=2)),
        ("1500ns", timedelta(microseconds=1)),
        ("1m1m", timedelta(minutes=2)),
    ],
)
def test_go_durations(text: str, expected: timedelta) -> None:
    assert parse_go_duration(text) == expected


@pytest.mark.parametrize(
    "text", ["", "-", "10", "1d", "m", ".s", "1h 30m", "1H", "ten minutes", "1h-5m", "3000000h"]
)
def test_invalid_go_durations(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_go_duration(text)


@pytest.mark.parametrize("text", ["1" * 20_000, "1" * 20_000 + "h", "1." * 10_000])
def test_a_long_invalid_duration_is_refused_and_quoted_short(text: str) -> None:
    """A number of 20,000 digits has one way to be read (the regular expression does not try
    every split of it, which took seconds), and the error quotes only its start."""
    with pytest.raises(ValueError, match="invalid duration") as refused:
        parse_go_duration(text)
    assert len(str(refused.value)) < 100
