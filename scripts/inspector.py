#!/usr/bin/env python3
"""Drive ``agent-memory mcp`` with the MCP Inspector's CLI: list every tool, call every tool, read, prompt.

The Inspector (npm ``@modelcontextprotocol/inspector``) is an independent TypeScript client, so this
checks the server against software that shares no code with it. Each Inspector call starts its own
server process on one temporary root: a store written by one process is read by the next.

    python scripts/inspector.py            # install the Inspector if needed, then run
    python scripts/inspector.py --install  # only install it

The Inspector (about 110 MB of node_modules, about a minute) is installed on first use into
``$AGENT_MEMORY_INSPECTOR_DIR``, default ``~/.cache/agent-memory/mcp-inspector-<version>``, and reused
after. ``make install`` does not install it: it needs node and npm, which the Python package does not.
Exit status: 0 every check passed, 1 a check failed, 77 node or npm is missing (nothing was run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the scenario every face is tested with

from data import SCENARIO  # noqa: E402

from amplifier_module_tool_agent_memory.tools import TOOLS  # noqa: E402

VERSION = "2.12.0"
PACKAGE = f"@modelcontextprotocol/inspector@{VERSION}"
SKIP = 77
# The Inspector gives a server 15 s to connect by default; a loaded machine starting the SDK can take longer.
CONNECT_TIMEOUT_MS = "120000"
IDENTITY = "inspector"


def install_dir() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    default = cache / "agent-memory" / f"mcp-inspector-{VERSION}"
    return Path(os.environ.get("AGENT_MEMORY_INSPECTOR_DIR") or default)


def ensure_inspector() -> Path:
    """The Inspector's CLI, installed into the cache folder on first use (atomically: concurrent runs are safe)."""
    target = install_dir()
    binary = target / "node_modules" / ".bin" / "mcp-inspector"
    if binary.exists():
        return binary
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".inspector-", dir=target.parent))
    print(f"installing {PACKAGE} into {target} (about 110 MB, once)", file=sys.stderr)
    subprocess.run(
        ["npm", "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--loglevel=error", PACKAGE],
        check=True, timeout=900,
    )
    try:
        staging.rename(target)
    except OSError:  # another run finished first
        shutil.rmtree(staging, ignore_errors=True)
    return binary


class Inspector:
    """One Inspector CLI call per method, each against a fresh ``agent-memory mcp`` on the same root."""

    def __init__(self, binary: Path, root: Path) -> None:
        self.binary = binary
        self.server = [sys.executable, "-m", "amplifier_module_tool_agent_memory", "mcp",
                       "--identity", IDENTITY, "--root", str(root)]
        self.timings: list[tuple[str, float]] = []

    def __call__(self, method: str, *options: str) -> dict[str, Any]:
        started = time.perf_counter()
        done = subprocess.run(
            [str(self.binary), "--cli", "--connect-timeout", CONNECT_TIMEOUT_MS, "--method", method, *options,
             "--", *self.server],
            capture_output=True, text=True, timeout=600,
        )
        self.timings.append((f"{method} {' '.join(options)[:40]}", time.perf_counter() - started))
        # Exit 5 is the Inspector saying the tool answered isError (the result is still on stdout).
        if done.returncode not in ((0, 5) if method == "tools/call" else (0,)):
            raise AssertionError(f"inspector {method} {options} exited {done.returncode}: {done.stderr[-2000:]}")
        result: dict[str, Any] = json.loads(done.stdout)
        return result


def tool_args(args: dict[str, Any]) -> list[str]:
    # Every value as JSON, so a text that looks like a number stays text.
    return ["--tool-arg", *(f"{key}={json.dumps(value)}" for key, value in args.items())] if args else []


def run(inspector: Inspector) -> list[str]:
    """Every check; returns the failures (empty when all passed)."""
    failures: list[str] = []

    def check(ok: bool, what: str) -> None:
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    listed = [tool["name"] for tool in inspector("tools/list")["tools"]]
    check(listed == [spec.name for spec in TOOLS], f"tools/list names every tool of the table ({len(listed)})")
    outputs: dict[str, dict[str, Any]] = {}
    called: set[str] = set()
    for step in SCENARIO:
        result = inspector("tools/call", "--tool-name", step.tool, *tool_args(step.args(outputs)))
        error = bool(result.get("isError"))
        body = json.loads(result["content"][0]["text"]) if error else result.get("structuredContent") or {}
        called.add(step.tool)
        detail = body.get("error", {}).get("message", "") if error else ""
        check(error is not step.ok and body.get("error" if error else "identity") is not None,
              f"tools/call {step.tool} ({step.label}) {'error: ' + detail if error else 'ok'}")
        if not error:
            outputs[step.label] = body
    check(called == set(listed), "every listed tool was called")

    resources = inspector("resources/list")["resources"]
    uris = [r["uri"] for r in resources]
    check(all(u.startswith(f"memory://{IDENTITY}/") for u in uris) and len(uris) > 1, f"resources/list ({len(uris)})")
    memory_uri = f"memory://{IDENTITY}/memories/{outputs['new']['id']}"
    read = inspector("resources/read", "--uri", memory_uri)
    check(json.loads(read["contents"][0]["text"])["memory"]["id"] == outputs["new"]["id"], "resources/read a memory")
    other = subprocess.run(
        [str(inspector.binary), "--cli", "--connect-timeout", CONNECT_TIMEOUT_MS, "--method", "resources/read",
         "--uri", "memory://someone-else/memories",
         "--", *inspector.server], capture_output=True, text=True, timeout=600,
    )
    check(other.returncode != 0 and "serves identity" in other.stdout + other.stderr,
          "resources/read of another identity is refused")
    prompts = [p["name"] for p in inspector("prompts/list")["prompts"]]
    check({"memory-workflow", "start-task"} <= set(prompts), f"prompts/list ({', '.join(prompts)})")
    got = inspector("prompts/get", "--prompt-name", "start-task", "--prompt-args", "task=rotate the TLS certificate")
    check("rotate the TLS certificate" in got["messages"][0]["content"]["text"], "prompts/get start-task")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="only install the Inspector")
    args = parser.parse_args()
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        what = " and ".join(missing)
        print(f"SKIP: {what} not found: the MCP Inspector needs Node.js (20+) and npm", file=sys.stderr)
        return SKIP
    binary = ensure_inspector()
    if args.install:
        print(binary)
        return 0
    with tempfile.TemporaryDirectory(prefix="agent-memory-inspector-") as root:
        inspector = Inspector(binary, Path(root))
        started = time.perf_counter()
        failures = run(inspector)
        total = time.perf_counter() - started
    times = sorted(t for _, t in inspector.timings)
    median = times[len(times) // 2]
    print(f"{len(times)} Inspector calls in {total:.1f} s (each starts a server; median {median:.2f} s, "
          f"max {times[-1]:.2f} s)")
    print("every check passed" if not failures else f"{len(failures)} checks failed: {'; '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
