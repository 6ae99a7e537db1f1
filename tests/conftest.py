"""Fixtures: a bare environment like cron's, real git memories under tmp_path, a CLI runner."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

from memdream import yamlio
from memdream.cli import app
from memdream.commands.init import init_memory

FIXED_NOW = "2026-11-30T12:00:00Z"

# Hypothesis's per-example deadline and its "too slow" health check are timing tests: on a shared 2-core
# machine, or beside the other workers of the suite, a slow example fails a property that holds (seen: a
# DeadlineExceeded in test_jsonio at load 3). Speed is measured in bench/, not here.
settings.register_profile("memdream", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("memdream")


def before_the_clock(path: Path) -> None:
    """Date a file written after FIXED_NOW an hour before it: adapters that take a file's modification
    time as its events' time would otherwise see a file written today as written in the future of the
    test's clock. A file a test dated itself keeps its time."""
    from datetime import datetime, timedelta

    fixed = datetime.fromisoformat(FIXED_NOW.replace("Z", "+00:00")).timestamp()
    if path.stat().st_mtime > fixed:
        moment = fixed - timedelta(hours=1).total_seconds()
        os.utime(path, (moment, moment))


@pytest.fixture(autouse=True)
def bare_environment(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No git identity, no global git config, no colour, a fixed clock, no tenant root nor user settings
    (HOME is a fresh folder): what cron gives memdream."""
    make_bare(monkeypatch, tmp_path_factory.mktemp("home"))


def make_bare(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """The environment of :func:`bare_environment`, for a fixture shared by a module's tests (it is built
    before any test's own fixtures: ``with pytest.MonkeyPatch.context() as patch: make_bare(patch, home)``)."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "no-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("MEMDREAM_NOW", FIXED_NOW)
    for name in list(os.environ):
        if name.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_", "MEMDREAM_MEMORY", "MEMDREAM_DEBUG", "GITHUB_",
                            "MEMDREAM_ROOT", "MEMDREAM_TENANT", "XDG_CONFIG_HOME")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("EMAIL", raising=False)


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    """A fresh memory made by `memdream init`: a real git repository with its first commit."""
    root = tmp_path / "mem"
    init_memory(root)
    return root


class Run:
    """Invoke the command line users run (the typer app behind `memdream` and `python -m memdream`)
    in-process; stdout and stderr kept apart."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str | os.PathLike[str], input: str | None = None) -> Any:
        return self.runner.invoke(app, [os.fspath(arg) for arg in args], input=input, catch_exceptions=False)


@pytest.fixture
def run() -> Run:
    return Run()


def card_data(**overrides: Any) -> dict[str, Any]:
    """A valid fact card as a mapping; override any field, or drop one with ``field=None``."""
    data: dict[str, Any] = {
        "id": "f-000001",
        "type": "fact",
        "subject": "export-bucket",
        "attribute": "region",
        "value": "eu-central-1",
        "statement": "The export bucket lives in eu-central-1.",
        "status": "verified",
        "confidence": 0.9,
        "evidence": [{"ref": "log://s-1#r1", "stance": "supports", "kind": "observation"}],
        "created_at": "2026-11-07T09:40:00Z",
        "updated_at": "2026-11-07T09:40:00Z",
        "ttl_policy": "decay-90d",
    }
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not None}


@pytest.fixture
def write_card(memory: Path) -> Callable[..., Path]:
    """Write a card file into the fixture memory (folder from its type, archive on request)."""

    def write(archived: bool = False, text: str | None = None, **overrides: Any) -> Path:
        data = card_data(**overrides)
        layer = {"fact": "facts", "strategy": "strategies", "lesson": "lessons"}[data["type"]]
        path = memory / ("archive" if archived else "cards") / layer / f"{data['id']}.yaml"
        path.write_text(text if text is not None else yamlio.dumps(data), encoding="utf-8")
        return path

    return write


@pytest.fixture
def chdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], None]]:
    yield monkeypatch.chdir
