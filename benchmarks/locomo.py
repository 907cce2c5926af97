"""LoCoMo retrieval benchmark: evidence recall@5/@10/@20 of ``memory_search``.

Every turn of each conversation in ``../shared/data/locomo/locomo-dev.json`` is stored
through the real ``memory_store`` tool (content ``"<speaker>: <text>"`` plus the image
caption when there is one), one identity per conversation, on the embedded default
(Qdrant Edge + the local model). Every question of categories 1-4 with evidence is asked
through ``memory_search`` with the default settings; recall@k is the share of a
question's evidence turns among the top k results, averaged over questions.

Run: ``python benchmarks/locomo.py`` (about 2 minutes on 2 cores). Skips cleanly when
the data is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import DATA_DIR

DATA = DATA_DIR / "locomo" / "locomo-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10, 20)


def turn_content(turn: dict[str, Any]) -> str:
    """The memory text of one turn."""
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    if caption:
        text += f" [image: {caption}]"
    return text


def sessions(conversation: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The conversation's sessions in order."""
    numbers = sorted(
        int(key.split("_")[1]) for key in conversation if key.startswith("session_") and key.count("_") == 1
    )
    return [conversation[f"session_{n}"] for n in numbers]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def run_sample(
    sample: dict[str, Any], root: Path, max_k: int, index: bool = False
) -> tuple[list[tuple[int, dict[int, float]]], list[float]]:
    """Store one conversation under its own identity, ask its questions; per-question recall by k."""
    from amplifier_core.testing import MockCoordinator

    import amplifier_module_tool_agent_memory as agent_memory

    coordinator = MockCoordinator()
    identity = f"locomo-{sample['sample_id']}"
    cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root), "agent_identity": identity})
    tools = coordinator.mount_points["tools"]
    store, search = tools["memory_store"], tools["memory_search"]

    ids_of_turn: dict[str, str] = {}
    for session in sessions(sample["conversation"]):
        for turn in session:
            result = await store.execute({"content": turn_content(turn)})
            if not result.success:
                raise RuntimeError(f"memory_store failed: {result.error}")
            ids_of_turn[turn["dia_id"]] = result.output["id"]
    # The context vectors are written after each store's answer: the questions are asked of a settled store.
    store.runtime.memory().settle()
    if index:
        # A conversation is far below the size that builds the index on its own: build it, so the
        # searches go through the HNSW graph and the quantized vectors a large store uses.
        store.runtime.memory().coll.optimize()

    scores: list[tuple[int, dict[int, float]]] = []
    latencies: list[float] = []
    for qa in sample["qa"]:
        category = qa.get("category")
        evidence = [e for e in qa.get("evidence", []) if e in ids_of_turn]
        if category not in CATEGORIES or not evidence:
            continue
        started = time.perf_counter()
        result = await search.execute({"query": str(qa["question"]), "limit": max_k})
        latencies.append((time.perf_counter() - started) * 1000)
        if not result.success:
            raise RuntimeError(f"memory_search failed: {result.error}")
        ranked = [hit["id"] for hit in result.output["results"]]
        wanted = {ids_of_turn[e] for e in evidence}
        scores.append((category, {k: len(wanted & set(ranked[:k])) / len(wanted) for k in KS}))
    await cleanup()
    del tools, store, search, coordinator
    gc.collect()
    return scores, latencies


async def main_async(args: argparse.Namespace) -> int:
    if not DATA.exists():
        print(f"SKIP: LoCoMo data not found at {DATA} (it lives in ../shared/data, outside the repository)")
        return 0
    samples = json.loads(DATA.read_text())
    if args.layout:
        # A candidate layout of benchmarks/build_cost.py for the memory collection (new shards only: each
        # conversation's store is new).
        from build_cost import spec_of

        import amplifier_module_tool_agent_memory.memory.service as memory_service

        memory_service.MEMORIES = spec_of(args.layout)
    if args.limit:
        samples = samples[: args.limit]
    all_scores: list[tuple[int, dict[int, float]]] = []
    halves: tuple[list[float], list[float]] = ([], [])
    latencies: list[float] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="locomo-bench-") as tmp:
        for number, sample in enumerate(samples):
            scores, lat = await run_sample(sample, Path(tmp), max(KS), args.index)
            all_scores.extend(scores)
            halves[2 * number >= len(samples)].extend(s[10] for _, s in scores)
            latencies.extend(lat)
            print(f"  {sample['sample_id']}: {len(scores)} questions", file=sys.stderr)

    print(f"LoCoMo dev: {len(samples)} conversations, {len(all_scores)} questions (categories 1-4)")
    print(f"{'category':<14}{'n':>6}" + "".join(f"{'R@' + str(k):>9}" for k in KS))
    for category, name in CATEGORIES.items():
        rows = [s for c, s in all_scores if c == category]
        if rows:
            print(f"{name:<14}{len(rows):>6}" + "".join(f"{statistics.fmean(r[k] for r in rows):>9.3f}" for k in KS))
    print(f"{'overall':<14}{len(all_scores):>6}" + "".join(
        f"{statistics.fmean(s[k] for _, s in all_scores):>9.3f}" for k in KS
    ))
    # A setting chosen on one half of the conversations is reported on the other.
    print("R@10 by half of the conversations: " + ", ".join(
        f"{name} {statistics.fmean(h):.3f} ({len(h)})" for name, h in zip(("first", "second"), halves, strict=True) if h
    ))
    print(
        f"memory_search latency (tool path, limit {max(KS)}): median {statistics.median(latencies):.1f} ms, "
        f"p95 {percentile(latencies, 0.95):.1f} ms; total run {time.perf_counter() - started:.0f} s"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="only the first N conversations")
    parser.add_argument("--index", action="store_true",
                        help="build the vector index (HNSW, quantized vectors) after storing each conversation")
    parser.add_argument("--layout", default="", help="a layout of benchmarks/build_cost.py LAYOUTS for the memories")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
