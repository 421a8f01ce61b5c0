"""Progress of a simulated run: a live line on a terminal, a line per virtual interval elsewhere,
the timeline marked in both, and `simulate` keeping stdout for the summary."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import hooks.__main__ as cli
from arc_sim.progress import CLEAR_LINE, MARK, Progress, milestones
from arc_sim.scenario import Scenario, load_scenario
from arc_sim.world import World

# A Runner (so hooks are called, and fail during the outage), a 3-minute outage of one of the two
# hook replicas, a deletion, and the teardown: 20 virtual minutes, well under a second of work.
SCENARIO = """
name: progress
seed: 3
duration: 20m
hookReplicas: 2
objects:
  - apiVersion: actions.summerwind.dev/v1alpha1
    kind: Runner
    metadata: {name: solo, namespace: default}
    spec: {organization: octo-org, ephemeral: false}
timeline:
  - {at: 4m, hookOutage: {replica: 1, duration: 3m}}
  - {at: 12m, delete: {kind: Runner, namespace: default, name: solo}}
teardown: true
"""

STATUS_LINE = re.compile(r"^t=\s*(\d+)m  (HRA desired .*)?runner pods .* jobs: .* done")
MARK_LINE = re.compile(rf"^t=\s*(\d+)m  {MARK} (.*)$")


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _quiet_hooks() -> Iterator[None]:
    # `simulate` silences the hooks' own log lines for the run; undo it for the tests after.
    yield
    logging.disable(logging.NOTSET)


def scenario() -> Scenario:
    return load_scenario(SCENARIO)


def run(out: io.StringIO, every: int = 10) -> Progress:
    progress = Progress(out, scenario(), every_minutes=every)
    world = World(scenario())
    summary = world.run(progress)
    progress.close()
    progress.report_end(summary)
    return progress


def test_the_timeline_is_marked_in_time_order() -> None:
    marks = milestones(scenario())

    assert [(m.at, m.text.split(":")[0]) for m in marks] == [
        (240.0, "hook outage begins"),
        (420.0, "hook outage ends"),
        (720.0, "delete Runner default/solo"),
        (1200.0, "teardown begins"),
    ]
    assert "hook replica 1 of 2 answers every hook call with HTTP 503 for 3 min" in marks[0].text


def test_a_pipe_gets_one_line_per_interval_and_a_line_per_timeline_event() -> None:
    out = io.StringIO()
    run(out, every=5)

    text = out.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    statuses = [int(m[1]) for line in lines if (m := STATUS_LINE.match(line))]
    marks = [(int(m[1]), m[2]) for line in lines if (m := MARK_LINE.match(line))]
    assert statuses == [5, 10, 15, 20]
    assert "HRA" not in text  # the scenario has no HorizontalRunnerAutoscaler to report on
    assert len(statuses) + len(marks) == len(lines)
    assert [(minute, text.split(" (")[0].split(":")[0]) for minute, text in marks] == [
        (4, "hook outage begins"),
        (7, "hook outage ends"),
        (12, "delete Runner default/solo"),
        (20, "teardown begins"),
        (20, "teardown done"),
    ]
    ended = marks[1][1]
    failed = re.search(r"\((\d+) hook calls? failed while it lasted\)", ended)
    assert failed is not None and int(failed[1]) > 0


def test_the_interval_spaces_the_lines() -> None:
    out = io.StringIO()
    run(out, every=10)

    statuses = [int(m[1]) for line in out.getvalue().splitlines() if (m := STATUS_LINE.match(line))]
    assert statuses == [10, 20]


def test_a_terminal_gets_one_line_updated_in_place_and_keeps_the_timeline() -> None:
    out = Terminal()
    progress = run(out)

    assert progress.live
    text = out.getvalue()
    assert text.endswith("\n")
    # Every virtual minute rewrites the live line: back to its start, erase, write.
    updates = [int(m[1]) for m in re.finditer(re.escape(CLEAR_LINE) + r"t=\s*(\d+)m", text)]
    assert updates[:20] == list(range(1, 21))
    # What stays on screen: each timeline line on its own, each live line's last state.
    screen = [line.rsplit(CLEAR_LINE, 1)[-1] for line in text.split("\n")[:-1]]
    marks = [m[2].split(" (")[0].split(":")[0] for line in screen if (m := MARK_LINE.match(line))]
    assert marks == [
        "hook outage begins",
        "hook outage ends",
        "delete Runner default/solo",
        "teardown begins",
        "teardown done",
    ]
    assert all(STATUS_LINE.match(line) or MARK_LINE.match(line) for line in screen)


def test_simulate_keeps_stdout_for_the_json_summary_and_reports_progress_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "progress.yaml"
    file.write_text(SCENARIO)

    assert cli.main(["simulate", str(file), "--json", "--progress-every", "5"]) == 0

    captured = capsys.readouterr()
    (line,) = captured.out.splitlines()
    assert json.loads(line)["scenario"] == "progress"
    errors = captured.err.splitlines()
    assert [int(m[1]) for e in errors if (m := STATUS_LINE.match(e))] == [5, 10, 15, 20]
    assert any(f"{MARK} teardown done" in e for e in errors)


def test_simulate_progress_can_be_turned_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "progress.yaml"
    file.write_text(SCENARIO)

    assert cli.main(["simulate", str(file), "--progress-every", "0"]) == 0

    captured = capsys.readouterr()
    assert captured.err == ""
    assert "noLeakedRegistrations" in captured.out


def test_simulate_refuses_a_negative_interval(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["simulate", "any.yaml", "--progress-every", "-5"])

    assert exited.value.code == 2
    assert "--progress-every" in capsys.readouterr().err


def test_closing_ends_the_live_line_so_what_follows_starts_on_its_own() -> None:
    """`simulate` and `demo` close the progress whatever happens, a crash included."""
    out = Terminal()
    world = World(scenario())
    progress = Progress(out, scenario())
    world.begin()
    world.run_to(120)
    progress(world)
    assert not out.getvalue().endswith("\n")

    progress.close()

    assert out.getvalue().startswith(CLEAR_LINE + "t=  2m")
    assert out.getvalue().endswith("\n")
    progress.close()  # once is enough
    assert out.getvalue().count("\n") == 1


TWO_OUTAGES = """
name: two-outages
seed: 2
duration: 12m
hookReplicas: 3
objects:
  - apiVersion: actions.summerwind.dev/v1alpha1
    kind: RunnerDeployment
    metadata: {name: app, namespace: ci}
    spec:
      replicas: 4
      template:
        spec: {organization: acme, labels: [linux], ephemeral: true}
timeline:
  - {at: 2m, hookOutage: {replica: 0, duration: 5m, mode: error}}
  - {at: 2m, hookOutage: {replica: 1, duration: 5m, mode: error}}
jobs:
  - {repository: acme/app, labels: [self-hosted, linux], count: 20, start: 1m, every: 20s,
     duration: 1m}
"""


def test_two_outages_at_once_each_count_their_own_replicas_failed_calls() -> None:
    """Found by an independent run: each line counted every failure of the window, whichever
    replica's, from the emulator's recent errors, which keep 1,000."""
    out = io.StringIO()
    progress = Progress(out, load_scenario(TWO_OUTAGES), every_minutes=5)
    world = World(load_scenario(TWO_OUTAGES))
    summary = world.run(progress)

    counts = [
        int(m[1])
        for m in re.finditer(r"hook outage ends: .*\((\d+) hook calls? failed", out.getvalue())
    ]
    assert len(counts) == 2 and all(counts)
    assert sum(counts) == summary.hooks.errors == progress.hook_errors_in_outages(world)
