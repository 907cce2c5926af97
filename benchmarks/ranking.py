"""The ranking after the fused query (``memory/ranking.py`` ``rerank``, shared by recall and memory_search) of this
tree against another revision's, on the same candidates.

The candidates are read once, by this tree: the fused query (ranking fields only, as recall and memory_search ask) of
every LoCoMo dev question (categories 1-4) against the 10k store of ``benchmarks/recall.py`` and against its own
conversation's store (``--store-dir``: the folder recall.py filled). Each side then ranks them in its own process (the
base with its own package first on the path), rounds alternating, and reports ``rerank``'s thread CPU per call
(p50 / p95) and how many questions' answers (ids, scores, payloads) differ from this tree's, for recall's limit (10) and
the fused list's (50). A change to the ranking's code that keeps every answer prints 0 differing. Run:
``python benchmarks/ranking.py --store-dir DIR --base REV``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from _common import DATA_DIR, p50_p95

DATA = DATA_DIR / "locomo" / "locomo-dev.json"
FILL = "recall-fill-10000"
LIMITS = (10, 50)


def read_candidates(root: Path) -> dict[str, Any]:
    """Every question's 50 fused candidates (id, score, ranking fields) from the 10k store and its own store."""
    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.memory.ranking import RANK_FIELDS, build_request
    from amplifier_module_tool_agent_memory.runtime import AgentMemory

    cfg = parse_config({"storage_root": str(root)})
    lists: list[list[tuple[str, float, dict[str, Any]]]] = []
    now = ""
    for sample in json.loads(DATA.read_text()):
        asked = [str(q["question"]) for q in sample["qa"] if q.get("category") in (1, 2, 3, 4)]
        for ident in (FILL, f"locomo-{sample['sample_id']}"):
            runtime = AgentMemory(cfg, ResolvedIdentity(ident, "config"))
            svc = runtime.memory()
            now = svc.clock().isoformat()
            for question in asked:
                request = build_request(question, svc.embedder.embed_query(question), None, svc.params)
                points = svc.coll.query(replace(request, with_payload=RANK_FIELDS))
                lists.append([(str(p.id), float(p.score), dict(p.payload or {})) for p in points])
            runtime.close()
    return {"now": now, "lists": lists}


def rank_side(candidates: Path, out: Path, rounds: int) -> None:
    """This process's package ranks every list: thread CPU per call, and its answers for each limit."""
    from datetime import datetime

    from amplifier_module_tool_agent_memory.memory.ranking import RetrievalParams, rerank

    data = json.loads(candidates.read_text())
    now, params = datetime.fromisoformat(data["now"]), RetrievalParams()
    lists = [[SimpleNamespace(id=i, score=s, payload=p) for i, s, p in points] for points in data["lists"]]
    ms: list[float] = []
    for _ in range(rounds):
        for points in lists:
            started = time.thread_time()
            rerank(points, LIMITS[0], now, params)
            ms.append((time.thread_time() - started) * 1000)
    answers = {str(limit): [[[h.id, h.score, h.payload] for h in rerank(points, limit, now, params)]
                            for points in lists] for limit in LIMITS}
    out.write_text(json.dumps({"ms": ms, "answers": answers}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store-dir", help="the folder benchmarks/recall.py filled (its 10k and LoCoMo stores)")
    parser.add_argument("--base", help="a git revision ranked beside this tree")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each side, alternating")
    parser.add_argument("--rank-only", nargs=2, metavar=("CANDIDATES", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank_only:
        rank_side(Path(args.rank_only[0]), Path(args.rank_only[1]), 3)
        return 0
    if not DATA.exists():
        print(f"SKIP: LoCoMo data not found at {DATA} (it lives in ../shared/data, outside the repository)")
        return 0
    if not args.store_dir or not (Path(args.store_dir) / FILL).exists():
        print("SKIP: --store-dir must name a folder benchmarks/recall.py filled (run it with --store-dir first)")
        return 0
    from speed import base_env, extract_base

    workdir = Path(tempfile.mkdtemp(prefix="ranking-bench-"))
    candidates = workdir / "candidates.json"
    candidates.write_text(json.dumps(read_candidates(Path(args.store_dir))))
    sides: dict[str, dict[str, str] | None] = {"this tree": None}
    if args.base:
        sides[args.base] = base_env(extract_base(args.base, workdir / f"base-src-{args.base}"))
    ms: dict[str, list[float]] = {name: [] for name in sides}
    answers: dict[str, dict[str, Any]] = {}
    for round_no in range(args.rounds):
        order = list(sides.items()) if round_no % 2 == 0 else list(reversed(sides.items()))
        for name, env in order:
            out = workdir / f"side-{round_no}-{len(ms[name])}.json"
            subprocess.run([sys.executable, str(Path(__file__).resolve()), "--rank-only", str(candidates), str(out)],
                           check=True, env=env)
            result = json.loads(out.read_text())
            ms[name].extend(result["ms"])
            answers.setdefault(name, result["answers"])
    mine = answers["this tree"]
    count = len(mine[str(LIMITS[0])])
    print(f"rerank of {count} candidate lists (LoCoMo dev questions x the 10k store and their own), {args.rounds} "
          "rounds, sides alternating; thread CPU ms per call p50 / p95, and answers differing from this tree's:")
    for name in sides:
        p50, p95 = p50_p95(ms[name])
        differing = [sum(a != b for a, b in zip(mine[str(limit)], answers[name][str(limit)], strict=True))
                     for limit in LIMITS]
        print(f"  {name:<12}{p50:>7.3f} /{p95:>6.3f}   differing: " +
              ", ".join(f"{d} of {count} (limit {limit})" for d, limit in zip(differing, LIMITS, strict=True)))
    print("(timings on a shared machine are noisy: compare the sides of one run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
