"""The `liza` client as its own distribution (agents/client/pyproject.toml): built from this
checkout and installed alone into a fresh virtualenv, as on an agent machine, it runs — and
brings none of the server's frameworks along."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.live_server import ROOT

CLIENT = ROOT / "agents" / "client"


def _run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_every_client_subpackage_is_in_the_distribution():
    listed = set(tomllib.loads((CLIENT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"
    ])  # fmt: skip
    found = {
        ".".join(("agents", "client", *init.parent.relative_to(CLIENT).parts))
        for init in CLIENT.rglob("__init__.py")
        if "build" not in init.parts
    }
    assert found == listed


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("agent-machine")
    wheels, venv, source = root / "wheels", root / "venv", root / "client"
    # Built from a copy: setuptools leaves build/ in the folder it builds, which is the
    # checkout's own source otherwise.
    shutil.copytree(CLIENT, source, ignore=shutil.ignore_patterns("__pycache__", "build"))
    built = _run(
        sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", wheels, source,
        cwd=root,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    # The virtualenv without a pip of its own, filled by this one (`pip --python`), and no
    # bytecode compiled at install: ensurepip and compiling every installed module cost ~10 s
    # of CPU and prove nothing about the client (what it imports is compiled when it runs).
    assert _run(sys.executable, "-m", "venv", "--without-pip", venv).returncode == 0
    (wheel,) = wheels.glob("liza_client-*.whl")
    installed = _pip(venv, "install", "--quiet", "--no-compile", wheel, cwd=root)
    assert installed.returncode == 0, installed.stderr
    return venv


def _pip(venv: Path, *args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """This environment's pip, acting on the virtualenv `venv`."""
    return _run(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", *args, cwd=cwd)


def test_the_client_installs_alone_and_runs(client_venv):
    for command in (["--help"], ["supervise", "--help"], ["mcp", "--help"]):
        answer = _run(client_venv / "bin" / "liza", *command, cwd=client_venv)
        assert answer.returncode == 0, answer.stderr
        assert "Usage:" in answer.stdout
    # The profiles and their playbooks (package data) came along.
    profiles = _run(client_venv / "bin" / "liza", "agents", cwd=client_venv)
    assert profiles.returncode == 0, profiles.stderr
    assert "claude" in profiles.stdout and "aider" in profiles.stdout
    playbook = _run(
        client_venv / "bin" / "python", "-c",
        "from importlib.resources import files;"
        "print(files('agents.client.playbooks').joinpath('coder.md').read_text()[:40])",
        cwd=client_venv,
    )  # fmt: skip
    assert playbook.returncode == 0 and playbook.stdout.strip(), playbook.stderr

    frozen = _pip(client_venv, "freeze").stdout.lower()
    for server_only in ("django", "djangorestframework", "channels", "psycopg", "daphne"):
        assert f"\n{server_only}==" not in f"\n{frozen}", frozen
    assert "\nhttpx==" in f"\n{frozen}" and "\nmcp==" in f"\n{frozen}"
    # The package of the server's Django app is not there: only its client part.
    packaged = _run(
        client_venv / "bin" / "python", "-c",
        "import agents, agents.client; print(list(agents.__path__)); print(agents.client.__file__)",
        cwd=client_venv,
    )  # fmt: skip
    assert packaged.returncode == 0, packaged.stderr
    assert "site-packages" in packaged.stdout and str(ROOT) not in packaged.stdout
