"""The MCP tests' fixtures: the scenario of every tool (data.SCENARIO), how a client starts the server, what two
answers share, and the events a server logged.

The scenario is a list of steps; a step's arguments may use earlier steps' outputs (the id a store
returned). Each face runs it with its own ids, so answers are compared with ids and times replaced.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from data import SCENARIO, Step

from amplifier_module_tool_agent_memory.tools import TOOLS_BY_NAME


def _scenario() -> list[Step]:
    """The steps whose tool this version has (plan_list/get/forget arrive with their engineer's work)."""
    return [step for step in SCENARIO if step.tool in TOOLS_BY_NAME]


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?")


def _comparable(value: Any) -> Any:
    """``value`` with ids and times replaced by placeholders and floats rounded (scores carry recency)."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    if isinstance(value, float):
        return round(value, 2)
    if isinstance(value, str):
        return _TIME.sub("<time>", _UUID.sub("<id>", value))
    return value


def _server_params(root: Path, identity: str = "alice", *extra: str) -> Any:
    """How a client starts ``agent-memory mcp`` for ``identity`` on ``root`` (this interpreter, no shell)."""
    from mcp import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k != "AMPLIFIER_AGENT_IDENTITY"}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "amplifier_module_tool_agent_memory", "mcp", "--identity", identity, "--root", str(root), *extra],
        env=env,
    )


def _events_in(log: str) -> list[dict[str, Any]]:
    """The JSON event lines of a server's stderr."""
    found = []
    for line in log.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if "event" in record:
                found.append(record)
    return found


@pytest.fixture
def scenario() -> list[Step]:
    """The steps whose tool this version has."""
    return _scenario()


@pytest.fixture
def comparable() -> Callable[[Any], Any]:
    """``comparable(answer)``: ids and times replaced by placeholders, floats rounded."""
    return _comparable


@pytest.fixture
def server_params() -> Callable[..., Any]:
    """``server_params(root, identity="alice", *extra)``: how a client starts ``agent-memory mcp``."""
    return _server_params


@pytest.fixture
def events_in() -> Callable[[str], list[dict[str, Any]]]:
    """``events_in(stderr)``: the JSON event lines a server logged."""
    return _events_in
