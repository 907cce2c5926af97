"""Test data shared by several test folders: texts, times, settings and the MCP scenario (constants and pure
generators only; the helpers that do something are fixtures in tests/conftest.py and tests/mcp/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

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

# The working-memory cache
SECTION_NAMES = ("facts", "decisions", "snippets", "warnings")
# Tests that are not about dedup switch it off (cosine >= 1.0 only for identical vectors) so that
# short templated items never merge by accident.
NO_DEDUP: dict[str, Any] = {"dedup_threshold": 1.0}


def filler(i: int, chars: int) -> str:
    """A distinct item text of exactly ``chars`` characters."""
    head = f"item {i:04d}: "
    body = ("lorem ipsum dolor sit amet " * (chars // 20 + 2))[: chars - len(head)]
    return head + body


# The MCP scenario: every tool of the table called once (tests/mcp)
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
