"""Scenario files: the documented format loads, and mistakes name their field."""

from __future__ import annotations

import pytest

from arc_sim.scenario import ScenarioError, load_scenario, parse_duration

EXAMPLE = """
name: example
seed: 3
duration: 2h
hookReplicas: 2
settings: {UNREGISTRATION_RETRY_DELAY: 30}
github: {rateLimitPerHour: 5000, errorRate: 0.0, latency: 50ms}
webhooks: {lossRate: 0.1, duplicateRate: 0.0, delay: 1s}
objects:
  - apiVersion: actions.summerwind.dev/v1alpha1
    kind: Runner
    metadata: {name: r1, namespace: default}
    spec: {organization: acme}
timeline:
  - {at: 10m, apply: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}}
  - {at: 30m, delete: {kind: Runner, namespace: default, name: r1}}
  - {at: 40m, evictPods: {namespace: default, labelSelector: {}, count: 2}}
jobs:
  - {repository: acme/app, labels: [self-hosted, linux], count: 100, start: 0s, every: 30s,
     duration: 5m}
teardown: true
"""


def test_the_documented_example_loads() -> None:
    scenario = load_scenario(EXAMPLE)

    assert scenario.duration == 7200
    assert scenario.github.latency == pytest.approx(0.05)
    assert scenario.webhooks.loss_rate == 0.1
    assert [entry.action for entry in scenario.timeline] == ["apply", "delete", "evict_pods"]
    assert scenario.timeline[2].evict_pods is not None
    assert scenario.timeline[2].evict_pods.count == 2
    assert scenario.jobs[0].every == 30 and scenario.jobs[0].duration == 300


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\nduration: soon", "duration: 'soon' is not a duration"),
        ("name: x\ntimeline: [{at: 1m}]", "timeline[0]: exactly one action is needed"),
        ("name: x\ntimeline: [{at: 1m, explode: {}}]", "timeline[0].explode: unknown field"),
        ("name: x\njobs: [{repository: nope}]", "jobs[0].repository"),
        ("name: x\nobjects: [{kind: Runner}]", "objects[0].apiVersion is required"),
        ("seed: 1", "name: Field required"),
        ("name: x\ngithub: {errorRate: 2}", "github.errorRate"),
        ("- a\n- b", "a YAML mapping"),
        ("name: [", "not valid YAML"),
        # A timeline that would test nothing, silently (found by an independent run):
        (
            "name: x\nduration: 1h\ntimeline: [{at: 2h, loseNode: node-1}]",
            "timeline[0]: at 7200 s, after the scenario's duration (3600 s)",
        ),
        (
            "name: x\ntimeline: [{at: 1m, hookOutage: {replica: 5, duration: 1m}}]",
            "timeline[0].hookOutage.replica: 5, but hook replicas are numbered from 0 to 1",
        ),
        (
            "name: x\ntimeline: [{at: 1m, restartListener: {replica: 3}}]",
            "timeline[0].restartListener.replica: 3, but the run has 0 listener replica(s)",
        ),
        ("name: x\ntimeline: [{at: 1m, loseNode: node-77}]", "no node 'node-77' at that time"),
        (
            "name: x\ntimeline: [{at: 1m, loseNode: node-1}, {at: 2m, drainNode: node-1}]",
            "timeline[1].drainNode: no node 'node-1' at that time",
        ),
    ],
)
def test_mistakes_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ScenarioError) as error:
        load_scenario(text + "\n")
    assert message in str(error.value)


def test_a_node_added_on_the_timeline_can_be_drained_later() -> None:
    text = "name: x\ntimeline: [{at: 2m, drainNode: extra}, {at: 1m, addNode: extra}]\n"
    assert [entry.action for entry in load_scenario(text).timeline] == ["drain_node", "add_node"]


def test_durations() -> None:
    assert parse_duration("1h30m") == 5400
    assert parse_duration("50ms") == pytest.approx(0.05)
    assert parse_duration(12) == 12
    with pytest.raises(ValueError):
        parse_duration("-5s")
