"""`arc-hooks demo` as a newcomer reads it: the timeline marks its hook outage and teardown,
and the summary's figures are explained with this run's numbers."""

from __future__ import annotations

import functools
import io
import logging
import re

import pytest

from arc_sim.demo import demo_scenario, run_demo
from arc_sim.progress import MARK
from arc_sim.summary import Summary

# The runs are cached per process: one worker runs every test of the file.
pytestmark = pytest.mark.xdist_group("demo")


@functools.cache
def demo() -> tuple[str, Summary]:
    """One in-process run (a few seconds), shared by the tests below."""
    out = io.StringIO()  # not a terminal: one line per interval
    logging.disable(logging.WARNING)  # as the command does: the hooks' log lines stay out
    try:
        summary = run_demo(out)
    finally:
        logging.disable(logging.NOTSET)
    return out.getvalue(), summary


def marks() -> list[tuple[int, str]]:
    text, _ = demo()
    found = re.findall(rf"^t=\s*(\d+)m  {MARK} (.*)$", text, flags=re.MULTILINE)
    return [(int(minute), what) for minute, what in found]


def explanation() -> str:
    text, _ = demo()
    _, _, after = text.partition("What the figures mean:")
    return " ".join(after.split())  # unwrapped


def test_the_demo_holds_its_invariants() -> None:
    _, summary = demo()

    assert summary.invariants.hold()
    assert summary.jobs.completed == summary.jobs.submitted == 50


def test_the_timeline_marks_the_hook_outage_and_the_teardown_in_order() -> None:
    scenario = demo_scenario()
    (entry,) = scenario.timeline
    assert entry.hook_outage is not None
    start = int(entry.at // 60)
    end = int((entry.at + entry.hook_outage.duration) // 60)

    events = [(minute, what.split(":")[0].split(" (")[0]) for minute, what in marks()]

    assert events == [
        (start, "hook outage begins"),
        (end, "hook outage ends"),
        (60, "teardown begins"),
        (60, "teardown done"),
    ]
    begins = marks()[0][1]
    assert "hook replica 0 of 2 answers every hook call with HTTP 503 for 5 min" in begins


def test_the_intro_says_what_the_marks_are() -> None:
    text, _ = demo()
    intro = text.split("\n\n", 1)[0]

    assert f"Lines with {MARK} mark the timeline" in intro


def test_the_figures_are_explained_after_the_summary() -> None:
    text, _ = demo()

    summary_at = text.index("noLeakedRegistrations  ok")
    explained_at = text.index("What the figures mean:")
    assert summary_at < explained_at
    for heading in (
        "maxReplicas",
        "lost deliveries",
        "duplicated deliveries",
        "hook errors",
        "invariants",
    ):
        assert re.search(rf"^  {heading} ", text[explained_at:], flags=re.MULTILINE), heading


def test_max_replicas_is_explained_with_the_hras_limit() -> None:
    assert "The HRA's spec.maxReplicas is 12: it never asks for more runners." in explanation()
    assert "jobs waited for a runner to free up" in explanation()


def test_lost_and_duplicated_deliveries_are_counted_and_explained() -> None:
    text = explanation()

    lost = re.search(r"(\d+) workflow_job deliveries, (\d+) lost", text)
    assert lost is not None and 0 < int(lost[2]) < int(lost[1])
    assert "GitHub never sent them and does not retry" in text
    duplicated = re.search(r"(\d+) deliveries were sent twice\. They change nothing", text)
    assert duplicated is not None and int(duplicated[1]) > 0


def test_hook_errors_during_the_outage_are_called_expected_and_harmless() -> None:
    _, summary = demo()
    text = explanation()

    counted = re.search(r"(\d+) hook calls failed, (\d+) of them during the hook outage", text)
    assert counted is not None
    assert int(counted[1]) == summary.hooks.errors > 0
    assert int(counted[2]) == summary.hooks.errors  # every error fell within the outage
    assert "They are expected and harmless" in text
    assert "No call failed outside the outage." in text


@functools.cache
def scale_set_demo() -> tuple[str, Summary]:
    out = io.StringIO()
    logging.disable(logging.WARNING)
    try:
        summary = run_demo(out, scale_set=True)
    finally:
        logging.disable(logging.NOTSET)
    return out.getvalue(), summary


def test_the_scale_set_demo_is_the_same_deployment_with_one_annotation() -> None:
    webhook, scale_set = demo_scenario(), demo_scenario(scale_set=True)
    changed = [
        (a["kind"], b["metadata"])
        for a, b in zip(webhook.objects, scale_set.objects, strict=True)
        if a != b
    ]
    ((kind, metadata),) = changed
    assert kind == "RunnerDeployment"
    assert metadata["annotations"] == {"arc-hooks.dev/scale-set": "octo-runners"}
    # The same jobs, asking for the scale set by its name (its one label on GitHub).
    renamed = [job.model_copy(update={"labels": ["octo-runners"]}) for job in webhook.jobs]
    assert scale_set.jobs == renamed and scale_set.webhooks.loss_rate == 1.0


def test_the_scale_set_demo_runs_every_job_with_no_webhook_delivered() -> None:
    text, summary = scale_set_demo()
    assert summary.invariants.hold()
    assert summary.jobs.completed == summary.jobs.submitted == 50
    explained = " ".join(text.partition("What the figures mean:")[2].split())
    assert re.search(r"\d+ workflow_job deliveries were sent and 0 arrived", explained)
    assert re.search(r"acquired 50 jobs", explained)
