"""Working-memory cache benchmark: 20 closed blocks of ~40 items each (LoCoMo turns as item text).

Prints p50/p95 latencies of cache_write, cache_pack (cold, cold with a query, fresh) and
cache_search through the tools, as an agent calls them, and the token reduction of a
600-token pack against the full blocks it stands for. Targets (issue 3): pack p95 <= 15 ms
cold and <= 1 ms fresh, search p95 <= 20 ms including the query embedding, write p95 <= 15 ms,
reduction >= 10x. Run: python benchmarks/cache.py [--blocks 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA_DIR, p50_p95, peak_rss_mb, print_table

LOCOMO = DATA_DIR / "locomo" / "locomo-dev.json"
KINDS = ["fact"] * 10 + ["decision"] * 4 + ["snippet"] * 3 + ["warning"] * 3


def load_texts() -> list[str]:
    """LoCoMo turns joined to 150-240 characters (~46 tokens an item, so ~40 items fill a 1,850-token block)."""
    samples = json.loads(LOCOMO.read_text())
    turns: list[str] = []
    for sample in samples:
        conv = sample["conversation"]
        for key in sorted(k for k in conv if k.startswith("session_") and not k.endswith("date_time")):
            turns.extend(f"{t['speaker']}: {t['text']}" for t in conv[key] if isinstance(t, dict))
    texts, current = [], ""
    for turn in turns:
        current = f"{current} {turn}".strip()
        if len(current) >= 150:
            texts.append(current[:240])
            current = ""
    return texts


def ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


async def run(blocks: int) -> None:
    from amplifier_module_tool_agent_memory.amplifier.tools import build_tools
    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.runtime import AgentMemory
    from amplifier_module_tool_agent_memory.tokens import count_tokens

    texts = load_texts()
    rng = random.Random(7)
    root = tempfile.mkdtemp(prefix="cache-bench-")
    rt = AgentMemory(parse_config({"storage_root": root}), ResolvedIdentity("bench", "config"))
    tools = {t.name: t for t in build_tools(rt)}
    rt.cache().embedder.embed_query("warm up")
    rt.store()

    async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await tools[name].execute(args)
        if not result.success:
            raise RuntimeError(result.error)
        out: dict[str, Any] = result.output
        return out

    write_ms: list[float] = []
    closed = merged = replaced = 0
    items_written = 0
    text_iter = iter(texts)
    while closed < blocks:
        kind = rng.choice(KINDS)
        args: dict[str, Any] = {"kind": kind, "content": next(text_iter), "importance": round(rng.random(), 2)}
        if kind == "snippet":
            args["file_ref"] = f"src/module_{rng.randrange(60)}.py:{rng.randrange(400)}"
        started = time.perf_counter()
        out = await call("cache_write", args)
        write_ms.append(ms(started))
        items_written += 1
        merged += out["merged"]
        replaced += "superseded" in out  # a distinct chat remark taken for a new value would hide the older
        closed += out["block_status"] == "closed"
    for _ in range(10):  # a partly filled open block, as in a live session
        await call("cache_write", {"kind": "fact", "content": next(text_iter)})

    queries = [t.split(": ", 1)[-1][:80] for t in rng.sample(texts[: items_written], 60)]
    cold_ms, cold_query_ms, fresh_ms, fresh_service_ms, search_ms = [], [], [], [], []
    for _ in range(40):
        await call("cache_write", {"kind": "fact", "content": next(text_iter)})  # invalidates the last pack
        started = time.perf_counter()
        await call("cache_pack", {"token_budget": 600})
        cold_ms.append(ms(started))
    for i in range(40):
        started = time.perf_counter()
        await call("cache_pack", {"token_budget": 600, "query": queries[i]})
        cold_query_ms.append(ms(started))
    pack = await call("cache_pack", {"token_budget": 600})
    for _ in range(200):
        started = time.perf_counter()
        fresh = await call("cache_pack", {"token_budget": 600})
        fresh_ms.append(ms(started))
        assert fresh["is_fresh"]
    from amplifier_module_tool_agent_memory.cache.models import CachePackInput

    svc, inp = rt.cache(), CachePackInput(token_budget=600)
    for _ in range(200):
        started = time.perf_counter()
        svc.pack(inp)
        fresh_service_ms.append(ms(started))
    for q in queries[40:60]:
        started = time.perf_counter()
        hits = await call("cache_search", {"query": q})
        search_ms.append(ms(started))
    assert hits

    embedder = rt.cache().embedder
    embed_doc_ms, embed_query_ms = [], []
    for text in texts[items_written + 100 : items_written + 140]:
        started = time.perf_counter()
        embedder.embed_documents([text])
        embed_doc_ms.append(ms(started))
    for i, q in enumerate(queries[:40]):
        started = time.perf_counter()
        embedder.embed_query(f"{q} ({i})")
        embed_query_ms.append(ms(started))

    found = await call("cache_search", {"query": "anything", "limit": 20})
    block_ids = {h["block_id"] for h in found["results"]}
    full_block_tokens = 0
    for block_id in block_ids:
        result = await tools["cache_get"].execute({"block_id": block_id})
        full_block_tokens += count_tokens(result.get_serialized_output())

    print(f"cache benchmark: {blocks} closed blocks, {items_written} writes ({merged} merged, "
          f"{replaced} replaced an older item), "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rows = [
        ("cache_write", len(write_ms), *p50_p95(write_ms), "<= 15"),
        ("cache_pack cold (no query)", len(cold_ms), *p50_p95(cold_ms), "<= 15"),
        ("cache_pack cold + query embed", len(cold_query_ms), *p50_p95(cold_query_ms), "-"),
        ("cache_pack fresh (tool)", len(fresh_ms), *p50_p95(fresh_ms), "<= 1"),
        ("cache_pack fresh (service)", len(fresh_service_ms), *p50_p95(fresh_service_ms), "<= 1"),
        ("cache_search (incl. embed)", len(search_ms), *p50_p95(search_ms), "<= 20"),
    ]
    rows += [
        ("(embed one item, for scale)", len(embed_doc_ms), *p50_p95(embed_doc_ms), "-"),
        ("(embed one query, for scale)", len(embed_query_ms), *p50_p95(embed_query_ms), "-"),
    ]
    print_table(("op", "n", "p50 ms", "p95 ms", "target p95 ms"), rows)
    included = sum(len(pack.get(k, [])) for k in ("facts", "decisions", "snippets", "warnings"))
    print(f"600-token pack: token_count {pack['token_count']}, {included} items in full, "
          f"summary {count_tokens(pack.get('summary', ''))} tokens, {pack['omitted']} items omitted")
    print(f"full items it stands for (full_tokens): {pack['full_tokens']} tokens -> "
          f"{pack['full_tokens'] / pack['token_count']:.1f}x reduction")
    print(f"cache_get of all {len(block_ids)} blocks: {full_block_tokens} tokens -> "
          f"{full_block_tokens / pack['token_count']:.1f}x reduction (target >= 10x)")
    print(f"peak RSS {peak_rss_mb():.0f} MiB")
    rt.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=20)
    args = parser.parse_args()
    if not LOCOMO.exists():
        print(f"skipped: {LOCOMO} not found (the benchmark reads LoCoMo turns as item text)")
        return 0
    asyncio.run(run(args.blocks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
