"""The MCP Inspector's CLI (an independent TypeScript client) lists and calls every tool: scripts/inspector.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "inspector.py"


# 37 Inspector calls, each starting a server that loads the model (about 5 minutes on a busy 2-core machine).
@pytest.mark.timeout(3000)
@pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="node/npm not found: the MCP Inspector run (scripts/inspector.py) needs Node.js 20+ and npm",
)
def test_the_mcp_inspector_lists_and_calls_every_tool() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "every check passed" in done.stdout
    assert "FAIL" not in done.stdout
