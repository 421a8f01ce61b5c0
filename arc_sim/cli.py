"""`arc-hooks simulate` and `arc-hooks demo`: the simulated world's commands.

They are registered under the `arc_hooks.commands` entry-point group, so the product's command
line offers them when this package is installed and never imports it otherwise.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

Command = Callable[[argparse.Namespace], int]

DEFAULT_PROGRESS_MINUTES = 10
"""`simulate --progress-every`: one progress line per this many virtual minutes off a terminal."""


def add_simulate(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> Command:
    parser = commands.add_parser(
        "simulate",
        help="replay a scenario file in the simulated world (docs/scenarios.md)",
        description="Replay a scenario in virtual time and print its summary.",
        epilog="exit status: 0 when every invariant holds; 1 when one fails (named on "
        "stderr); 2 for a usage error or a scenario file that cannot be read or is invalid; "
        "130 when interrupted (Ctrl-C)",
    )
    parser.add_argument(
        "file",
        type=Path,
        metavar="FILE",
        help="the scenario: a YAML file of manifests, jobs and a timeline of disruptions "
        "(docs/scenarios.md; examples in scenarios/)",
    )
    parser.add_argument(
        "--json", action="store_true", help="end with the summary as one line of JSON"
    )
    parser.add_argument(
        "--stress",
        action="store_true",
        help="run the scenario unchanged under Metacontroller's stress profile: informer lag "
        "of seconds, 10%% write conflicts, hook replicas restarting mid-call (docs/scenarios.md)",
    )
    parser.add_argument(
        "--progress-every",
        type=_minutes,
        default=DEFAULT_PROGRESS_MINUTES,
        metavar="MINUTES",
        help="progress on stderr: on a terminal one line updated in place, otherwise a line "
        "every MINUTES of virtual time; timeline events get lines of their own "
        "(default: %(default)s; 0: no progress)",
    )
    return _simulate


def _minutes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of minutes (0 or more)")
    return value


def add_demo(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> Command:
    demo = commands.add_parser(
        "demo",
        help="watch the system at work in the simulated world",
        description="Run a RunnerDeployment with a HorizontalRunnerAutoscaler through a "
        "virtual hour in the simulated world (two bursts of jobs, a hook replica failing for "
        "five minutes, then the teardown), printing its progress and a summary.",
        epilog="exit status: 0 when every invariant holds; 1 when one fails; 2 for a usage "
        "error; 130 when interrupted (Ctrl-C)",
    )
    demo.add_argument(
        "--scale-set",
        action="store_true",
        help="the same deployment with one annotation: scaled by a runner scale set and the "
        "listener, with no webhook (README, Scale-set mode)",
    )
    return _demo


def _simulate(args: argparse.Namespace) -> int:
    from arc_sim.progress import Progress
    from arc_sim.scenario import ScenarioError, load_scenario, stressed
    from arc_sim.world import World

    file: Path = args.file
    logging.disable(logging.WARNING)  # the hooks' own log lines would drown the summary
    try:
        scenario = load_scenario(file)
    except ScenarioError as error:
        print(f"arc-hooks simulate: {file}: {error}", file=sys.stderr)
        return 2
    if args.stress:
        scenario = stressed(scenario)
    world = World(scenario)
    # Progress goes to stderr, so that stdout holds the summary alone (`--json`).
    every: int = args.progress_every
    progress = Progress(sys.stderr, scenario, every_minutes=every) if every else None
    try:
        summary = world.run(progress)
    finally:  # end the live line, also before a traceback
        if progress is not None:
            progress.close()
    if progress is not None:
        progress.report_end(summary)
    if args.json:
        print(json.dumps(summary.to_json(), separators=(",", ":")))
    else:
        print(summary.table())
    failed = summary.invariants.failed()
    if failed:
        print(f"invariants failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _demo(args: argparse.Namespace) -> int:
    from arc_sim.demo import run_demo

    logging.disable(logging.WARNING)
    summary = run_demo(scale_set=args.scale_set)
    return 0 if summary.invariants.hold() else 1
