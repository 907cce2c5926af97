"""How fast ``agent-memory mcp`` answers its first ``tools/list``, and its memory before and after the model loads.

Each round starts, side by side in one run (absolute times are noisy on a shared machine; compare the
rows): a bare Python (``python -c pass``), Python importing only the MCP SDK's server (the floor any
server on the SDK pays), and ``agent-memory mcp`` itself, driven over raw stdio: initialize,
``tools/list`` (timed from the spawn), then one ``memory_search`` (the call that loads the model and
opens the store). CPU seconds are the server's own (user + system, from /proc), which the machine's
load changes less than wall time. RSS is read from /proc after ``tools/list`` and after the first call.

    python benchmarks/mcp_startup.py --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from _common import p50_p95, print_table

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (Linux /proc; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of ``pid`` in MiB."""
    values = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(value.split()[0]) / 1024
    except OSError:
        return float("nan"), float("nan")
    return values.get("VmRSS", float("nan")), values.get("VmHWM", float("nan"))


def _send(stdin: IO[str], message: dict[str, Any]) -> None:
    stdin.write(json.dumps(message) + "\n")
    stdin.flush()


def _answer(stdout: IO[str], request_id: int) -> dict[str, Any]:
    while True:
        line = stdout.readline()
        if not line:
            raise RuntimeError("the server closed stdout")
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == request_id:
            return message


def timed_command(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of a command that exits by itself."""
    started = time.perf_counter()
    before = os.times()
    subprocess.run(argv, check=True)
    after = os.times()
    return time.perf_counter() - started, (after.children_user - before.children_user) + (
        after.children_system - before.children_system)


def one_server(root: Path) -> dict[str, float]:
    argv = [sys.executable, "-m", "amplifier_module_tool_agent_memory", "mcp", "--identity", "bench",
            "--root", str(root)]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
        _answer(proc.stdout, 1)
        _send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        _answer(proc.stdout, 2)
        listed = time.perf_counter() - started
        listed_cpu = cpu_seconds(proc.pid)
        rss_listed, _ = rss_mb(proc.pid)
        # The fast start answers initialize and tools/list itself; prompts/list waits for the SDK's server.
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 3, "method": "prompts/list"})
        _answer(proc.stdout, 3)
        sdk_ready = time.perf_counter() - started
        call_started = time.perf_counter()
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                           "params": {"name": "memory_search", "arguments": {"query": "what did we decide"}}})
        answer = _answer(proc.stdout, 4)
        if answer["result"].get("isError"):
            raise RuntimeError(f"memory_search failed: {answer['result']}")
        first_call = time.perf_counter() - call_started
        rss_loaded, hwm = rss_mb(proc.pid)
    finally:
        proc.stdin.close()
        proc.wait(timeout=120)
    return {"tools_list_s": listed, "tools_list_cpu_s": listed_cpu, "first_sdk_answer_s": sdk_ready,
            "first_call_s": first_call,
            "rss_listed_mb": rss_listed, "rss_loaded_mb": rss_loaded, "hwm_mb": hwm}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="mcp-startup-") as tmp:
        for n in range(args.rounds):
            for name, argv in (("python -c pass", [sys.executable, "-c", "pass"]),
                               ("import the SDK server", [sys.executable, "-c",
                                                          "import mcp.server.lowlevel, mcp.server.stdio"])):
                wall, cpu = timed_command(argv)
                rows.setdefault(f"{name}: wall s", []).append(wall)
                rows.setdefault(f"{name}: CPU s", []).append(cpu)
            for key, value in one_server(Path(tmp) / f"root-{n}").items():
                rows.setdefault(f"agent-memory mcp: {key}", []).append(value)
    table = [(name, f"{p50_p95(v)[0]:.3f}", f"{p50_p95(v)[1]:.3f}") for name, v in rows.items()]
    load = os.getloadavg()[0]
    print(f"{args.rounds} rounds, side by side; load average at the end {load:.1f} on {os.cpu_count()} CPUs")
    print_table(("measure", "median", "p95"), table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
