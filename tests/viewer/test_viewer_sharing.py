"""The viewer is one more process on the identity: opening it never locks a session out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "amplifier_module_tool_agent_memory"]


def _get(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=120) as response:
        body: dict[str, object] = json.loads(response.read())
        return body


def test_a_cli_process_stores_while_the_viewer_runs_and_the_viewer_sees_it(root: Path) -> None:
    env = {**os.environ, "AMPLIFIER_MEMORY_ROOT": str(root)}
    viewer = subprocess.Popen(
        [*CLI, "ui", "--identity", "alice", "--no-browser"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert viewer.stdout is not None
        url = viewer.stdout.readline().strip()  # the first line: the URL with its token
        assert url.startswith("http://127.0.0.1:") and "?token=" in url, url
        base, token = url.split("/?token=")
        stored = subprocess.run(
            [*CLI, "store", "--identity", "alice", "--kind", "fact", "--json",
             "The nightly backup runs at 02:30 on the NAS."],
            capture_output=True, text=True, env=env, timeout=300,
        )
        assert stored.returncode == 0, stored.stderr
        memory_id = json.loads(stored.stdout)["id"]
        page = _get(f"{base}/api/memories?token={token}")
        assert [m["id"] for m in page["memories"]] == [memory_id]  # type: ignore[index]
    finally:
        viewer.terminate()
        viewer.wait(timeout=60)
