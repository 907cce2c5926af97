"""Secrets never reach long-term memory: memory_store redacts content, tags and files before
anything is embedded or written, and says which fields it redacted."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.runtime import AgentMemory

GITHUB = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
CONTENT = f"The deploy bot authenticates to GitHub with {GITHUB} from the CI secrets store"
REDACTED_CONTENT = "The deploy bot authenticates to GitHub with [REDACTED:github_token] from the CI secrets store"


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def _store_secret(call: Any, tools: dict[str, Any]) -> dict[str, Any]:
    return await call(tools["memory_store"], {
        "content": CONTENT, "tags": ["ci", f"aws:{AWS_ID}"], "files": [f"keys/{STRIPE}.txt"], "kind": "fact",
    })


async def test_store_reports_every_redacted_field_by_pattern(tools: dict[str, Any], call: Any) -> None:
    out = await _store_secret(call, tools)
    assert out["created"] is True
    assert out["redacted"] == {
        "content": ["github_token"],
        "tags": ["aws_access_key_id"],
        "files": ["stripe_key"],
    }


async def test_the_result_never_repeats_the_secret(tools: dict[str, Any], call: Any) -> None:
    out = await _store_secret(call, tools)
    for secret in (GITHUB, AWS_ID, STRIPE):
        assert secret not in repr(out)


async def test_get_returns_the_redacted_content_tags_and_files(tools: dict[str, Any], call: Any) -> None:
    memory_id = (await _store_secret(call, tools))["id"]
    memory = (await call(tools["memory_get"], {"id": memory_id}))["memory"]
    assert memory["content"] == REDACTED_CONTENT
    assert memory["tags"] == ["ci", "aws:[REDACTED:aws_access_key_id]"]
    assert memory["files"] == ["keys/[REDACTED:stripe_key].txt"]


async def test_search_never_returns_the_secret_even_when_queried_for_it(tools: dict[str, Any], call: Any) -> None:
    memory_id = (await _store_secret(call, tools))["id"]
    for query in (GITHUB, "GitHub token of the deploy bot", AWS_ID):
        out = await call(tools["memory_search"], {"query": query})
        assert [r["id"] for r in out["results"]] == [memory_id]
        for secret in (GITHUB, AWS_ID, STRIPE):
            assert secret not in repr(out)


async def test_list_never_returns_the_secret(tools: dict[str, Any], call: Any) -> None:
    await _store_secret(call, tools)
    out = await call(tools["memory_list"], {})
    assert out["count"] == 1
    for secret in (GITHUB, AWS_ID, STRIPE):
        assert secret not in repr(out)


async def test_the_embedding_is_computed_from_the_redacted_text(
    make_runtime: Callable[..., AgentMemory], embedder: CachedEmbedder, runtime_tools: Any, call: Any
) -> None:
    rt = make_runtime()
    memory_id = (await _store_secret(call, runtime_tools(rt)))["id"]
    [record] = rt.memory().coll.retrieve([memory_id], with_vector=True)
    stored = list(record.vector["dense"])
    [of_redacted, of_raw] = embedder.embed_documents([REDACTED_CONTENT, CONTENT])
    assert _cosine(stored, of_redacted) > 0.99999
    assert _cosine(stored, of_raw) < 0.999


async def test_nothing_on_disk_contains_the_secret(tools: dict[str, Any], root: Any, call: Any) -> None:
    await _store_secret(call, tools)
    tools["memory_store"].runtime.close()
    # Everything the test wrote: the storage root, and the stand-in server's files beside it (server backend).
    files = [path.read_bytes() for path in root.parent.rglob("*") if path.is_file()]
    # The redacted content itself is on disk in plain bytes, so a leaked secret would be too.
    assert any(b"[REDACTED:github_token] from the CI" in data for data in files)
    for secret in (GITHUB, AWS_ID, STRIPE):
        assert not any(secret.encode() in data for data in files), secret


async def test_a_memory_without_secrets_reports_no_redaction(tools: dict[str, Any], call: Any) -> None:
    out = await call(tools["memory_store"], {"content": "The deploy bot runs every hour"})
    assert "redacted" not in out


async def test_the_same_text_with_a_different_secret_is_an_exact_duplicate(tools: dict[str, Any], call: Any) -> None:
    first = await call(tools["memory_store"], {"content": "staging password: hunter2-one"})
    second = await call(tools["memory_store"], {"content": "staging password: correct-horse"})
    assert second["duplicate"] is True
    assert second["id"] == first["id"]
    assert second["redacted"] == {"content": ["password_assignment"]}
