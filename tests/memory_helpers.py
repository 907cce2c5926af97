"""Small helpers shared by the long-term memory tests (not fixtures: plain functions and data)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from amplifier_core import ToolResult

from amplifier_module_tool_agent_memory.amplifier.tools import build_tools
from amplifier_module_tool_agent_memory.runtime import AgentMemory

# Twenty-five memories on unrelated topics: no two are near duplicates of each other.
DISTINCT_FACTS: tuple[str, ...] = (
    "The billing service stores invoices in PostgreSQL 16.",
    "Alice prefers tabs over spaces in Go code.",
    "The staging cluster runs in the eu-west-1 region.",
    "We decided to drop support for Python 3.9 in March.",
    "The logo uses the hex colour #1f6feb as its primary blue.",
    "Deploys are frozen every Friday after 3pm.",
    "The mobile app is written in Kotlin and SwiftUI.",
    "Customer support tickets are triaged in Zendesk.",
    "The data warehouse is refreshed nightly at 02:00 UTC.",
    "Bob is allergic to peanuts; order lunch accordingly.",
    "The search index is rebuilt whenever the schema changes.",
    "Our office plants are watered on Mondays and Thursdays.",
    "The CI pipeline caches pip wheels between runs.",
    "Marketing wants the newsletter sent on the first Tuesday of the month.",
    "The legacy FTP server will be switched off in December.",
    "Unit prices are rounded half-even to two decimals.",
    "The team offsite will take place in Lisbon this year.",
    "Feature flags are managed with LaunchDarkly.",
    "The on-call rotation changes every Wednesday at noon.",
    "The README must mention the minimum supported Rust version.",
    "Images larger than 5 MB are resized before upload.",
    "The coffee machine on the third floor is broken again.",
    "Passwords are hashed with argon2id.",
    "The quarterly planning meeting is held in the large boardroom.",
    "Error budgets are reviewed at the monthly reliability review.",
)

T0 = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)

# The Qdrant server backend as tests reach it: conftest's ``server`` fixture answers this URL
# with qdrant-client's local mode.
SERVER_URL = "http://qdrant.test:6333"
SERVER: dict[str, Any] = {"storage": {"backend": "server", "url": SERVER_URL}}


class ManualClock:
    """A clock the test moves by hand; inject it as ``runtime.clock`` before the first tool call."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now = self.now + timedelta(**delta)
        return self.now


def runtime_tools(rt: AgentMemory) -> dict[str, Any]:
    """The module's tools bound to an already built runtime (so its clock can be injected)."""
    return {tool.name: tool for tool in build_tools(rt)}


def output_of(result: ToolResult) -> dict[str, Any]:
    """The output of a successful tool call; fails the test with the tool's message otherwise."""
    assert result.success, result.error
    assert isinstance(result.output, dict)
    return result.output


def error_of(result: ToolResult) -> dict[str, Any]:
    """The error of a failed tool call; fails the test if the call succeeded."""
    assert not result.success, f"expected a failure, got {result.output!r}"
    assert isinstance(result.error, dict)
    return result.error


async def store_memory(tools: dict[str, Any], content: str, kind: str = "fact", **fields: Any) -> dict[str, Any]:
    """memory_store through the tool; its output."""
    return output_of(await tools["memory_store"].execute({"content": content, "kind": kind, **fields}))


async def get_memory(tools: dict[str, Any], memory_id: str) -> dict[str, Any]:
    """memory_get through the tool; the memory it returns."""
    return dict(output_of(await tools["memory_get"].execute({"id": memory_id}))["memory"])


async def search_memories(tools: dict[str, Any], query: str, **fields: Any) -> list[dict[str, Any]]:
    """memory_search through the tool; its results, best first."""
    return list(output_of(await tools["memory_search"].execute({"query": query, **fields}))["results"])
