"""The `arc-hooks` command line: its version, help and exit codes, and the simulated world's
commands, which it offers only when that package is installed."""

from __future__ import annotations

import argparse
from importlib.metadata import EntryPoint, version
from pathlib import Path

import pytest

import hooks.__main__ as cli


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])

    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"arc-hooks {version('arc-hooks')}"


def test_serve_help_gives_defaults_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])

    text = capsys.readouterr().out
    assert "(default: 127.0.0.1)" in text and "(default: 8080)" in text
    assert "exit status" in text


def test_the_simulated_worlds_commands_are_offered(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])

    text = capsys.readouterr().out
    assert "simulate" in text and "demo" in text


def test_simulate_reports_an_unreadable_scenario_with_status_2(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("duration: [not, a, duration]\n")

    assert cli.main(["simulate", str(broken)]) == 2


def test_a_simulation_stopped_with_ctrl_c_ends_with_a_line_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(_args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    offered = cli.plugin_commands
    monkeypatch.setattr(
        cli, "plugin_commands", lambda commands: {**offered(commands), "demo": interrupted}
    )

    assert cli.main(["demo"]) == 130
    assert capsys.readouterr().err == "arc-hooks demo: interrupted\n"


def test_a_command_whose_package_is_not_installed_is_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The image carries the product only: the simulated world's entry points are declared
    there, but cannot be loaded."""
    missing = EntryPoint(name="demo", value="not_installed.cli:add_demo", group=cli.COMMANDS_GROUP)
    monkeypatch.setattr(cli, "entry_points", lambda group: [missing])
    commands = argparse.ArgumentParser().add_subparsers()

    assert cli.plugin_commands(commands) == {}


@pytest.mark.parametrize(("name", "value"), [("LOG_LEVEL", "BOGUS"), ("SYNC_PERIOD", "abc")])
def test_serve_refuses_a_bad_setting_with_status_2_and_says_which(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)

    assert cli.main(["serve"]) == 2
    assert name in capsys.readouterr().err


def test_log_level_is_read_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    from hooks.settings import Settings

    monkeypatch.setenv("LOG_LEVEL", " warning ")

    assert Settings().log_level == "WARNING"
