"""`--help` as a newcomer reads it: every `arc-hooks` command states its exit status, and every
benchmark prints its usage and exits instead of running."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

import hooks.__main__ as cli

COMMANDS = ("serve", "listen", "crds", "simulate", "demo")
BENCHMARKS = (
    "bench_breakdown",
    "bench_many_autoscalers",
    "bench_many_repositories",
    "bench_replicaset",
    "bench_runner_hooks",
    "bench_scale",
    "bench_simulation",
    "bench_webhook",
)


def help_text(
    main: Callable[[Sequence[str]], int], argv: list[str], capsys: pytest.CaptureFixture[str]
) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return " ".join(captured.out.split())  # argparse wraps lines where it likes


def test_the_commands_are_the_ones_checked(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_text(cli.main, ["--help"], capsys)

    offered = text.split("{", 1)[1].split("}", 1)[0]
    assert sorted(offered.split(",")) == sorted(COMMANDS)
    assert "exit status: 2 for a usage error" in text


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_states_its_exit_status(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = help_text(cli.main, [command, "--help"], capsys)

    assert "exit status: 0 " in text
    assert "2 for a usage error" in text


def test_serve_names_its_startup_failure(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_text(cli.main, ["serve", "--help"], capsys)

    assert "unusable TLS files" in text and "3 when a port cannot be listened on" in text


def test_listen_names_missing_credentials(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_text(cli.main, ["listen", "--help"], capsys)

    assert "2 for a usage error, invalid settings in the environment or no GitHub credentials" in (
        text
    )


def test_crds_gives_its_directory_and_the_checks_status(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = help_text(cli.main, ["crds", "--help"], capsys)

    assert f"(default: {cli.DEFAULT_CRD_DIR}," in text
    assert "1 with --check when one is stale or missing" in text


def test_simulate_explains_its_file(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_text(cli.main, ["simulate", "--help"], capsys)

    assert "FILE the scenario: a YAML file" in text
    assert "1 when one fails" in text


def test_listen_without_credentials_exits_2_as_its_help_says(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("GITHUB_TOKEN", "GITHUB_APP_ID", "GITHUB_APP_INSTALLATION_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GITHUB_APP_PRIVATE_KEY", raising=False)
    # The test process keeps its own logging: the command would route it to stdout as JSON.
    monkeypatch.setattr("hooks.logs.configure_logging", lambda *args, **kwargs: None)

    assert cli.main(["listen", "--metrics-port", "0"]) == 2
    assert "no GitHub credentials" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["serve", "listen"])
def test_invalid_settings_exit_2_without_echoing_the_value(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOOK_MEMO_RUNNERS", "not-a-number-s3cr3t")

    assert cli.main([command]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"arc-hooks {command}: HOOK_MEMO_RUNNERS: ")
    assert "s3cr3t" not in err


def test_every_benchmark_is_checked() -> None:
    bench = Path(__file__).resolve().parent.parent / "bench"
    on_disk = {path.stem for path in bench.glob("bench_*.py")}
    assert on_disk == set(BENCHMARKS)


@pytest.mark.parametrize("name", BENCHMARKS)
def test_each_benchmark_prints_its_usage_instead_of_running(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = importlib.import_module(f"bench.{name}")

    def ran(*args: object, **kwargs: object) -> None:
        raise AssertionError("--help ran the benchmark")

    # What every benchmark runs: a simulated world, or the hook server itself.
    for target in ("World", "create_app"):
        if hasattr(module, target):
            monkeypatch.setattr(module, target, ran)

    text = help_text(module.main, ["--help"], capsys)

    assert text.startswith(f"usage: python -m bench.{name} ")
    assert module.__doc__ is not None
    first_paragraph = " ".join(module.__doc__.split("\n\n")[0].split())
    assert first_paragraph in text  # whole, not cut at the docstring's first line
