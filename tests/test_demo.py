"""`make demo` as a new user runs it: scripts/demo.sh in a fresh folder laid out like the clone (the sample
logs, the script, the virtualenv in .venv/), and the hints it prints at the end run as printed from a shell
whose PATH does not hold memdream (issue 21.7: "try `memdream rollback --dry-run`" was "command not found")."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent


def without_memdream(path: str) -> str:
    """PATH without any folder that holds a memdream command (a fresh clone's shell)."""
    return os.pathsep.join(folder for folder in path.split(os.pathsep)
                           if folder and not (Path(folder) / "memdream").exists())


def test_the_demos_hints_run_as_printed(tmp_path: Path) -> None:
    venv_bin = Path(sys.executable).parent
    assert (venv_bin / "memdream").exists(), "memdream is installed next to the interpreter (make test does that)"
    clone = tmp_path / "clone"
    (clone / ".venv").mkdir(parents=True)
    (clone / ".venv" / "bin").symlink_to(venv_bin)
    for name in ("sample-memory", "scripts"):
        (clone / name).symlink_to(REPOSITORY / name)
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("MEMDREAM_", "VIRTUAL_ENV"))}
    env["PATH"] = without_memdream(env.get("PATH", ""))
    demo = subprocess.run(["bash", "scripts/demo.sh", ".venv/bin"], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=600)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    closing = demo.stdout[demo.stdout.index("\nDemo memory left in "):]
    hints = re.findall(r"`([^`]+)`", closing)
    assert any("rollback --dry-run" in hint for hint in hints), closing
    for hint in hints:
        if "install" in hint:
            continue  # installs for the user: not run by a test
        done = subprocess.run(["bash", "-c", hint], cwd=clone, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{hint}: {done.stderr}"
    assert ".venv/bin/memdream rollback --dry-run -m demo-memory" in closing
    assert "pipx install ." in hints and "uv tool install ." in hints  # for everyday use
