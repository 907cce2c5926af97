"""The CLI as a user of the bundle reaches it: the module installed from its folder into a fresh
environment, as `uvx --from "git+<repo>@main#subdirectory=modules/tool-agent-memory"` or Amplifier's own
install does, then `agent-memory --help` and `python -m amplifier_module_tool_agent_memory --help`.

Kept cheap and offline: the fresh venv gets the module with `--no-deps` (pip still builds the wheel from
the folder, so the packaging itself is what is tested: console script, entry point, shipped model files),
and its dependencies come from the project's venv through a `.pth` file pointing at a view of that
venv's site-packages without amplifier-core and without our own package. The environment then holds
what uvx would give: the module and its dependencies, no Amplifier host.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

MODULE_DIR = Path(__file__).resolve().parents[2] / "modules" / "tool-agent-memory"
PACKAGE = "amplifier_module_tool_agent_memory"
HIDDEN = ("amplifier_core", "amplifier-core", PACKAGE, "__editable__", "_editable_impl_")

pytestmark = pytest.mark.slow


def _run(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, env=env, check=False)


def _clean_env() -> dict[str, str]:
    """The environment without what would let the test's own package leak into the fresh install."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with the module installed from its folder; returns the venv's bin folder."""
    base = tmp_path_factory.mktemp("fresh-install")
    venv = base / "venv"
    made = _run(sys.executable, "-m", "venv", "--without-pip", venv)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    # Dependencies without the host and without the editable copy of the module.
    deps = base / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(HIDDEN) and not entry.name.endswith(".pth"):
            (deps / entry.name).symlink_to(entry)
    (site / "project-deps.pth").write_text(f"{deps}\n")
    installed = _run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
                     MODULE_DIR, env=_clean_env())
    assert installed.returncode == 0, installed.stderr[-2000:]
    return venv / "bin"


def test_the_console_script_runs_from_a_fresh_install(fresh_env: Path) -> None:
    result = _run(fresh_env / "agent-memory", "--help", env=_clean_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: agent-memory")
    for command in ("export", "import", "gc", "inspect"):
        assert command in result.stdout


def test_python_dash_m_runs_the_same_command(fresh_env: Path) -> None:
    result = _run(fresh_env / "python", "-m", PACKAGE, "--help", env=_clean_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: agent-memory")


def test_the_fresh_install_is_the_one_that_runs_without_the_amplifier_host(fresh_env: Path) -> None:
    probe = (
        "import importlib.util, importlib.metadata as md, pathlib, sys\n"
        f"import {PACKAGE} as m\n"
        "print(pathlib.Path(m.__file__).resolve().is_relative_to(pathlib.Path(sys.prefix).resolve()))\n"
        "print(importlib.util.find_spec('amplifier_core') is None)\n"
        "print([e.value for e in md.entry_points(group='amplifier.modules') if e.name == 'tool-agent-memory'])\n"
        "print((pathlib.Path(m.__file__).parent / 'model_files' / 'tokenizer.json').is_file())\n"
    )
    result = _run(fresh_env / "python", "-c", probe, env=_clean_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:4] == ["True", "True", f"['{PACKAGE}:mount']", "True"]
