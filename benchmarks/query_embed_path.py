"""Recall's query embedding through fastembed's ``embed`` and through the local provider's direct path, side by side.

Run ``python benchmarks/query_embed_path.py``. Each LoCoMo question, cut to recall's query words, is embedded both
ways by ONE session of the real local model (the same weights, the same arena), in alternating order; it prints the
largest absolute difference of any vector component (the direct path must give the same vectors, so stores and
queries agree) and, per path, wall and thread CPU, ms p50 / p95. Absolute times move with the machine's load; the
two columns of one run do not drift apart. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable

from _common import DATA_DIR, p50_p95

DATA = DATA_DIR / "locomo" / "locomo-dev.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompts", type=int, default=200, help="questions embedded by each path")
    args = parser.parse_args()
    if not DATA.exists():
        print(f"SKIP: LoCoMo data not found at {DATA} (it lives in ../shared/data, outside the repository)")
        return 0
    from amplifier_module_tool_agent_memory.config import EmbeddingConfig, RecallConfig
    from amplifier_module_tool_agent_memory.embeddings.providers import LocalEmbedder
    from amplifier_module_tool_agent_memory.memory.recall import embedding_text

    embedder = LocalEmbedder(EmbeddingConfig())  # not the cached process-wide one: no query cache
    words = RecallConfig().query_words
    pool = [str(q["question"]) for s in json.loads(DATA.read_text()) for q in s["qa"]]
    random.Random(7).shuffle(pool)
    texts = [embedding_text(p, words) for p in pool[: args.prompts]]
    paths: dict[str, Callable[[str], list[float]]] = {
        "fastembed embed": lambda text: embedder.embed_documents([text])[0],
        "direct": embedder.embed_query,
    }
    for text in texts[:5]:
        for path in paths.values():
            path(text)  # load the session, warm its arena
    walls: dict[str, list[float]] = {name: [] for name in paths}
    cpus: dict[str, list[float]] = {name: [] for name in paths}
    worst = 0.0
    for i, text in enumerate(texts):
        vectors = {}
        for name in list(paths) if i % 2 == 0 else list(reversed(paths)):
            time.sleep(0.005)  # between prompts, as between turns
            cpu0, wall0 = time.thread_time(), time.perf_counter()
            vectors[name] = paths[name](text)
            walls[name].append((time.perf_counter() - wall0) * 1000)
            cpus[name].append((time.thread_time() - cpu0) * 1000)
        old, new = vectors.values()
        worst = max(worst, max(abs(a - b) for a, b in zip(old, new, strict=True)))
    print(f"{len(texts)} questions (<= {words} words), {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"max abs difference of the vectors: {worst:.3g}")
    print(f"{'path':<18}{'wall p50':>10}{'p95':>8}{'cpu p50':>10}{'p95':>8}")
    for name in paths:
        (w50, w95), (c50, c95) = p50_p95(walls[name]), p50_p95(cpus[name])
        print(f"{name:<18}{w50:>10.2f}{w95:>8.2f}{c50:>10.2f}{c95:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
