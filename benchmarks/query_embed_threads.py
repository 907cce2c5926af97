"""Recall's query embedding with 1 and with 2 onnxruntime intra-op threads, side by side in one run.

Run ``python benchmarks/query_embed_threads.py`` (quiet machine) and ``--busy 2`` (two spinning processes hold
the cores, as an agent's host or another tool would). Each LoCoMo question, cut to recall's query words, is
embedded by both sessions in alternating order (the real local model, two sessions of it); per session it prints
wall and process CPU (all threads: the intra-op pool's spinning counts), ms p50 / p95. Absolute times move with
the machine's load; the two columns of one run do not drift apart. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sys
import time

from _common import DATA_DIR, p50_p95

DATA = DATA_DIR / "locomo" / "locomo-dev.json"


def spin(stop_at: float) -> None:
    """Hold one core until ``stop_at`` (a busy host's other work)."""
    while time.time() < stop_at:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompts", type=int, default=200, help="questions embedded by each session")
    parser.add_argument("--busy", type=int, default=0, help="spinning processes during the measurement")
    parser.add_argument("--threads", default="1,2", help="intra-op thread counts compared")
    args = parser.parse_args()
    if not DATA.exists():
        print(f"SKIP: LoCoMo data not found at {DATA} (it lives in ../shared/data, outside the repository)")
        return 0
    from amplifier_module_tool_agent_memory.config import EmbeddingConfig, RecallConfig
    from amplifier_module_tool_agent_memory.embeddings.providers import LocalEmbedder
    from amplifier_module_tool_agent_memory.memory.recall import embedding_text

    counts = [int(n) for n in args.threads.split(",")]
    # Separate sessions, not the process-wide cached embedder: no query cache, one session per thread count.
    embedders = {n: LocalEmbedder(EmbeddingConfig(threads=n)) for n in counts}
    words = RecallConfig().query_words
    pool = [str(q["question"]) for s in json.loads(DATA.read_text()) for q in s["qa"]]
    random.Random(7).shuffle(pool)
    texts = [embedding_text(p, words) for p in pool[: args.prompts]]
    for embedder in embedders.values():
        for text in texts[:5]:
            embedder.embed_query(text)  # load the session, warm its arena
    stop_at = time.time() + 3600
    spinners = [multiprocessing.Process(target=spin, args=(stop_at,), daemon=True) for _ in range(args.busy)]
    for proc in spinners:
        proc.start()
    walls: dict[int, list[float]] = {n: [] for n in counts}
    cpus: dict[int, list[float]] = {n: [] for n in counts}
    try:
        for i, text in enumerate(texts):
            for n in counts if i % 2 == 0 else list(reversed(counts)):
                time.sleep(0.01)  # between prompts the pool goes idle, as between turns
                cpu0, wall0 = time.process_time(), time.perf_counter()
                embedders[n].embed_query(text)
                walls[n].append((time.perf_counter() - wall0) * 1000)
                cpus[n].append((time.process_time() - cpu0) * 1000)
    finally:
        for proc in spinners:
            proc.terminate()
    print(f"{len(texts)} questions (<= {words} words), {args.busy} spinning processes, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; ms p50 / p95")
    print(f"{'intra-op threads':<18}{'wall p50':>10}{'p95':>8}{'cpu p50':>10}{'p95':>8}")
    for n in counts:
        (w50, w95), (c50, c95) = p50_p95(walls[n]), p50_p95(cpus[n])
        print(f"{n:<18}{w50:>10.2f}{w95:>8.2f}{c50:>10.2f}{c95:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
