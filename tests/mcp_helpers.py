"""Shared by the MCP tests: a scenario that calls every tool of the table, and what two answers share.

The scenario is a list of steps; a step's arguments may use earlier steps' outputs (the id a store
returned). Each face runs it with its own ids, so answers are compared with ids and times replaced.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amplifier_module_tool_agent_memory.tools import TOOLS_BY_NAME

Outputs = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Step:
    """One tool call: ``label`` names its output for later steps; ``ok`` whether it must succeed."""

    label: str
    tool: str
    args: Callable[[Outputs], dict[str, Any]]
    ok: bool = True


def _fixed(args: dict[str, Any]) -> Callable[[Outputs], dict[str, Any]]:
    return lambda _outputs: args


ACTIONS = [
    {"tool": "bash", "args": {"command": "make deploy ENV=staging"}},
    {"tool": "bash", "args": {"command": "make smoke"}},
]
TASK = "task:demo"
# A made-up key in the shape of an OpenAI project key: the redaction rules recognise it.
SECRET = "sk-proj-4fJ9xQ2mZ7LbW1cR8tY6uV3nK0pH5sDg"

SCENARIO: tuple[Step, ...] = (
    Step("old", "memory_store", _fixed(
        {"content": "The billing service stores invoices in PostgreSQL 16.", "kind": "fact", "tags": ["billing"]})),
    Step("new", "memory_store", _fixed(
        {"content": "The billing service now stores invoices in MySQL 8.", "kind": "fact"})),
    Step("again", "memory_store", _fixed({"content": "The user prefers short answers.", "kind": "preference"})),
    Step("search", "memory_search", _fixed({"query": "Which database holds the billing invoices?"})),
    Step("get", "memory_get", lambda o: {"id": o["old"]["id"]}),
    Step("list", "memory_list", _fixed({"limit": 10})),
    Step("unlink", "memory_unlink", lambda o: {"id": o["new"]["id"]}),
    Step("link", "memory_link", lambda o: {"id": o["new"]["id"], "supersedes": o["old"]["id"]}),
    Step("backup", "memory_store", _fixed(
        {"content": "The file server is backed up every night at 1 am.", "kind": "fact"})),
    Step("restate", "memory_store", _fixed(
        {"content": "Every night at 1 am the file server is backed up.", "kind": "fact"})),
    Step("unmerge", "memory_unmerge", lambda o: {
        "id": o["restate"]["id"], "wording": "Every night at 1 am the file server is backed up."}),
    Step("write", "cache_write", _fixed({"content": "The user wants pnpm, never npm.", "kind": "fact", "scope": TASK})),
    Step("warn", "cache_write", _fixed(
        {"content": "Do not touch the prod database.", "kind": "warning", "scope": TASK})),
    Step("csearch", "cache_search", _fixed({"query": "which package manager", "scope": TASK})),
    Step("cget", "cache_get", lambda o: {"block_id": o["write"]["block_id"]}),
    Step("pack", "cache_pack", _fixed({"scope": TASK})),
    Step("compact", "cache_compact", _fixed({"scope": TASK})),
    Step("pstore", "plan_store", _fixed({"prompt": "Deploy the web app to staging and run the smoke tests",
                                          "actions": ACTIONS})),
    Step("hit", "plan_lookup", _fixed({"prompt": "Deploy the web app to staging and run the smoke tests"})),
    Step("miss", "plan_lookup", _fixed({"prompt": "Bake a chocolate cake for twelve people"})),
    Step("reward", "plan_reward", lambda o: {"plan_id": o["pstore"]["plan_id"], "success": True}),
    Step("plist", "plan_list", _fixed({})),
    Step("pget", "plan_get", lambda o: {"plan_id": o["pstore"]["plan_id"]}),
    Step("pforget", "plan_forget", lambda o: {"plan_id": o["pstore"]["plan_id"]}),
    Step("forget", "memory_forget", lambda o: {"id": o["again"]["id"]}),
    # A secret is redacted before it is stored, and never echoed by an error.
    Step("secret", "memory_store", _fixed({"content": f"Staging deploys use the key {SECRET} from the vault.",
                                           "kind": "fact"})),
    Step("secret-id", "memory_get", _fixed({"id": SECRET}), ok=False),
    # Wrong input: answered as an error that names the field, the same on every face.
    Step("bad-type", "memory_store", _fixed({"content": 5}), ok=False),
    Step("bad-limit", "memory_search", _fixed({"query": "billing", "limit": 0}), ok=False),
    Step("bad-id", "memory_get", _fixed({"id": "not-an-id"}), ok=False),
    Step("unknown-field", "cache_write", _fixed({"content": "x", "kind": "fact", "colour": "red"}), ok=False),
    Step("gone", "memory_get", lambda o: {"id": o["again"]["id"]}, ok=False),
)


def scenario() -> list[Step]:
    """The steps whose tool this version has (plan_list/get/forget arrive with their engineer's work)."""
    return [step for step in SCENARIO if step.tool in TOOLS_BY_NAME]


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?")


def comparable(value: Any) -> Any:
    """``value`` with ids and times replaced by placeholders and floats rounded (scores carry recency)."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    if isinstance(value, float):
        return round(value, 2)
    if isinstance(value, str):
        return _TIME.sub("<time>", _UUID.sub("<id>", value))
    return value


def server_params(root: Path, identity: str = "alice", *extra: str) -> Any:
    """How a client starts ``agent-memory mcp`` for ``identity`` on ``root`` (this interpreter, no shell)."""
    from mcp import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k != "AMPLIFIER_AGENT_IDENTITY"}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "amplifier_module_tool_agent_memory", "mcp", "--identity", identity, "--root", str(root), *extra],
        env=env,
    )


def events_in(log: str) -> list[dict[str, Any]]:
    """The JSON event lines of a server's stderr."""
    found = []
    for line in log.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if "event" in record:
                found.append(record)
    return found
