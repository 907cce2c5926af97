"""Scale: import and serve 10k, 100k and 1M memories on one identity.

Run ``python benchmarks/scale.py`` (``--sizes 10000,100000`` for a shorter run). Each phase runs
in its own fresh subprocess, so its peak RSS (``ru_maxrss``) is its own:

- ``vectors`` (once, cached under ``--work-dir``): the first ``--base`` LoCoMo turns
  (``../shared/data/locomo``) are embedded with the local model, content and context window
  (the previous turn, then this one: what an import embeds).
- ``file`` N: an ``export --with-vectors`` file of N memories. Memory ``i`` is base turn
  ``i % base``, tagged with its variant ``i // base`` ("(take 7)") so every text is distinct;
  its two vectors are the base turn's plus Gaussian noise (sigma ``--noise`` per dimension,
  renormalised: cosine ~0.97 to the base at the default), so no two memories share a vector.
  Creation times advance one minute per memory.
- ``import`` N: ``agent-memory import`` of that file (vectors used, nothing embedded): rate,
  peak RSS, the index build it ends with (``--worker import --no-build``: the same import building
  no index, to compare the write cost alone with it).
- ``embed``: import rate with the local model on ``--embed-sample`` memories (vectors ignored),
  and, in the same process just before, the model's own rate on the same texts (content and
  context window of each memory, embedded as an import embeds them): the import's share of
  the ceiling.
- ``serve`` N: a new process mounts the module (amplifier_core's MockCoordinator), tells it the
  session is ready (``on_session_ready``, as amplifier-core does: it starts the warm-up, model
  and store on a background thread), waits for the warm-up to finish (``warm_up_ms``: from
  session ready; ``--no-wait-warm`` calls at once instead, so the first call waits for what is
  still loading), then calls ``memory_search`` once (``open_first_search_ms`` is from the
  process start to its answer; ``first_search_ms`` the call alone), then ``--queries`` searches
  (LoCoMo questions, distinct: the query embedding is included) and ``--stores`` stores (unseen
  turns), and reports p50/p95, the slowest call, serving RSS and the store's disk size.

Absolute times are noisy on a shared machine: compare rows of one run. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA_DIR, p50_p95, peak_rss_mb, print_table, rss_now_mb

LOCOMO = DATA_DIR / "locomo" / "locomo-dev.json"
IDENTITY = "scale"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _turns() -> list[str]:
    from locomo import sessions, turn_content

    data = json.loads(LOCOMO.read_text())
    return [turn_content(t) for sample in data for s in sessions(sample["conversation"]) for t in s]


def _questions() -> list[str]:
    data = json.loads(LOCOMO.read_text())
    return list(dict.fromkeys(str(q["question"]) for sample in data for q in sample["qa"] if q.get("question")))


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def _embedder() -> Any:
    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.embeddings.providers import get_embedder

    return get_embedder(parse_config({}).embeddings)


def worker_vectors(opts: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    out = opts.work_dir / f"base-{opts.base}.npz"
    if out.exists():
        return {"cached": str(out)}
    turns = _turns()[: opts.base]
    ctx = [turns[i] if i == 0 else f"{turns[i - 1]}\n{turns[i]}" for i in range(len(turns))]
    embedder = _embedder()
    started = time.perf_counter()
    vecs = np.asarray(embedder.embed_documents(turns + ctx), dtype=np.float32)
    seconds = time.perf_counter() - started
    np.savez(out, dense=vecs[: len(turns)], ctx=vecs[len(turns) :], model=np.array(embedder.model_id))
    return {"texts": 2 * len(turns), "texts_per_s": round(2 * len(turns) / seconds, 1)}


def _base(opts: argparse.Namespace) -> tuple[list[str], Any, Any, str]:
    import numpy as np

    data = np.load(opts.work_dir / f"base-{opts.base}.npz")
    return _turns()[: opts.base], data["dense"], data["ctx"], str(data["model"])


def _noisy(rng: Any, vecs: Any, sigma: float) -> Any:
    import numpy as np

    out = vecs + rng.normal(0.0, sigma, vecs.shape).astype(np.float32)
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype("<f4")


def _content(turns: list[str], i: int) -> str:
    variant = i // len(turns)
    return turns[i % len(turns)] + (f" (take {variant})" if variant else "")


def worker_file(opts: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    path = opts.work_dir / f"memories-{opts.n}.jsonl"
    if path.exists():
        return {"cached": str(path), "bytes": path.stat().st_size}
    turns, dense, ctx, model = _base(opts)
    rng = np.random.default_rng(opts.n)
    tmp = path.with_suffix(".partial")
    started = time.perf_counter()
    with open(tmp, "w", encoding="utf-8") as fh:
        for start in range(0, opts.n, 10_000):
            idx = np.arange(start, min(opts.n, start + 10_000))
            base = idx % len(turns)
            d, c = _noisy(rng, dense[base], opts.noise), _noisy(rng, ctx[base], opts.noise)
            for k, i in enumerate(idx.tolist()):
                line = {
                    "id": str(uuid.UUID(int=i + 1)),
                    "content": _content(turns, i),
                    "kind": "note",
                    "created_at": (T0 + timedelta(minutes=i)).isoformat(),
                    "vectors": {
                        "model": model,
                        "dense": base64.b64encode(d[k].tobytes()).decode(),
                        "ctx": base64.b64encode(c[k].tobytes()).decode(),
                    },
                }
                fh.write(json.dumps(line) + "\n")
    tmp.replace(path)
    return {"seconds": round(time.perf_counter() - started, 1), "bytes": path.stat().st_size}


def _root(opts: argparse.Namespace, n: int) -> Path:
    return opts.work_dir / f"store-{n}"


def _cpu_s() -> float:
    """CPU seconds this process and its finished children spent so far, every thread (less sensitive to a
    loaded machine than wall time; an import with vectors reads its file in a child process)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _import(root: Path, path: Path, *extra: str) -> dict[str, Any]:
    from amplifier_module_tool_agent_memory.cli.main import main

    out = root.parent / f"{root.name}-import.json"
    cpu = _cpu_s()
    started = time.perf_counter()
    saved = sys.stdout
    with open(out, "w") as fh:
        sys.stdout = fh
        try:
            code = main(["import", str(path), "--root", str(root), "--identity", IDENTITY, "--json", *extra])
        finally:
            sys.stdout = saved
    seconds = time.perf_counter() - started
    if code != 0:
        raise RuntimeError(f"import failed with exit code {code}")
    return {"seconds": seconds, "cpu_s": _cpu_s() - cpu, **json.loads(out.read_text())}


def _skip_builds() -> None:
    """Make imports build no index (``--no-build``: the write cost alone, measured beside an import that builds)."""
    from amplifier_module_tool_agent_memory.memory.importing import MemoryImporter

    def release_only(self: MemoryImporter, min_unindexed: int) -> None:
        self._since_build = 0
        self._release()  # what the build step does besides building: the written pages unmapped

    MemoryImporter._build = release_only  # type: ignore[method-assign]


def worker_import(opts: argparse.Namespace) -> dict[str, Any]:
    import resource
    import shutil

    root = _root(opts, opts.n)
    shutil.rmtree(root, ignore_errors=True)
    if opts.no_build:
        _skip_builds()
    result = _import(root, opts.work_dir / f"memories-{opts.n}.jsonl")
    index_s = float(result.get("index_seconds", 0.0))
    return {
        "imported": result["imported"],
        "embedded": result["embedded"],
        "seconds": round(result["seconds"], 1),
        "rate": round(result["imported"] / result["seconds"], 1),
        "rate_before_index": round(result["imported"] / max(1e-9, result["seconds"] - index_s), 1),
        "index_s": index_s,
        "cpu_s": round(result["cpu_s"], 1),
        "per_cpu_s": round(result["imported"] / result["cpu_s"], 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        # The reader process of an import with vectors (maintenance/import_pipeline.py), 0 when none ran.
        "child_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }


def worker_embed(opts: argparse.Namespace) -> dict[str, Any]:
    import shutil

    turns, _, _, _ = _base(opts)
    n = opts.embed_sample
    # Unseen wordings of the base turns (variant 10_000+), so no query cache or store answers.
    contents = [_content(turns, 10_000 * len(turns) + i) for i in range(n)]
    texts = contents + [contents[0]] + [f"{contents[i - 1]}\n{contents[i]}" for i in range(1, n)]
    embedder = _embedder()
    embedder.embed_documents(texts[:4])  # the model loaded, its session built
    cpu = _cpu_s()
    started = time.perf_counter()
    embedder.embed_documents(texts)
    ceiling = n / (time.perf_counter() - started)
    ceiling_cpu = n / (_cpu_s() - cpu)
    path = opts.work_dir / f"embed-{n}.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i, content in enumerate(contents):
            stamp = (T0 + timedelta(minutes=i)).isoformat()
            fh.write(json.dumps({"id": str(uuid.UUID(int=10**9 + i)), "content": content, "created_at": stamp}) + "\n")
    root = opts.work_dir / "store-embed"
    shutil.rmtree(root, ignore_errors=True)
    result = _import(root, path)
    rate = result["imported"] / result["seconds"]
    shutil.rmtree(root, ignore_errors=True)
    return {
        "memories": n,
        "ceiling_per_s": round(ceiling, 1),
        "import_per_s": round(rate, 1),
        "share": round(rate / ceiling, 3),
        "ceiling_per_cpu_s": round(ceiling_cpu, 1),
        "import_per_cpu_s": round(result["imported"] / result["cpu_s"], 1),
        "cpu_share": round(result["imported"] / result["cpu_s"] / ceiling_cpu, 3),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def _disk_bytes(root: Path) -> int:
    return sum(f.stat().st_blocks * 512 for f in root.rglob("*") if f.is_file())


def worker_serve(opts: argparse.Namespace) -> dict[str, Any]:
    import random

    t0 = time.perf_counter()
    from amplifier_core.testing import MockCoordinator

    import amplifier_module_tool_agent_memory as agent_memory

    root, copied_s = _serving_copy(opts)
    turns = _turns()
    questions = _questions()
    random.Random(7).shuffle(questions)
    queries = questions[: opts.queries + 1]
    result: dict[str, Any] = {}
    slowest = [0.0]

    async def timed(tool: Any, args: dict[str, Any]) -> float:
        started = time.perf_counter()
        res = await tool.execute(args)
        spent = time.perf_counter() - started
        if not res.success:
            raise RuntimeError(f"{tool.name} failed: {res.error}")
        slowest[0] = max(slowest[0], spent)
        return spent

    async def run() -> None:
        coordinator = MockCoordinator()
        cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root), "agent_identity": IDENTITY})
        tools = dict(coordinator.mount_points["tools"])
        search, store = tools["memory_search"], tools["memory_store"]
        ready = time.perf_counter()
        await agent_memory.on_session_ready(coordinator)
        warming = getattr(search.runtime, "_warming", None)
        if warming is not None and not opts.no_wait_warm:
            warming.join()
            result["warm_up_ms"] = _ms(time.perf_counter() - ready)
        first = await timed(search, {"query": queries[0], "limit": 5})
        result["open_first_search_ms"] = _ms(time.perf_counter() - t0)
        result["first_search_ms"] = _ms(first)
        samples = [await timed(search, {"query": q, "limit": 5}) for q in queries[1:]]
        result["search_p50_ms"], result["search_p95_ms"] = (_ms(v) for v in p50_p95(samples))
        # Unseen turns (a variant no size reaches), stored as notes.
        samples = []
        for j in range(opts.stores):
            content = _content(turns, 50_000 * len(turns) + opts.stores_from + j * 7)
            samples.append(await timed(store, {"content": content, "kind": "note"}))
        result["store_p50_ms"], result["store_p95_ms"] = (_ms(v) for v in p50_p95(samples))
        result["slowest_call_ms"] = _ms(slowest[0])
        result["serving_rss_mb"] = round(peak_rss_mb(), 1)
        result["rss_now"] = {k: round(v, 1) for k, v in rss_now_mb().items()}
        await cleanup()

    asyncio.run(run())
    result["disk_mb"] = round(_disk_bytes(root / IDENTITY) / 2**20, 1)
    result["served_copy"] = str(root)
    if copied_s is not None:
        result["copied_s"] = copied_s
    return result


def _serving_copy(opts: argparse.Namespace) -> tuple[Path, float | None]:
    """The store a serve run uses: a copy of ``store-N`` (``store-N-serve``, made once and kept), never the
    imported store itself, whose stores would change what the next run measures (and it may be someone
    else's). A new copy has new inodes, so its first open reads the whole journal once (the journal's index
    records each file's inode): run the serve phase once to prime a new copy before measuring it."""
    import shutil

    source = _root(opts, opts.n)
    copy = source.parent / f"{source.name}-serve"
    if opts.fresh_copy:
        shutil.rmtree(copy, ignore_errors=True)
    if copy.exists():
        return copy, None
    started = time.perf_counter()
    shutil.copytree(source, copy.parent / f"{copy.name}.partial", symlinks=True, dirs_exist_ok=True)
    (copy.parent / f"{copy.name}.partial").rename(copy)
    return copy, round(time.perf_counter() - started, 1)


WORKERS = {
    "vectors": worker_vectors,
    "file": worker_file,
    "import": worker_import,
    "embed": worker_embed,
    "serve": worker_serve,
}


def run_worker(name: str, opts: argparse.Namespace, n: int = 0, *extra: str) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        name,
        "--n",
        str(n),
        "--work-dir",
        str(opts.work_dir),
        "--base",
        str(opts.base),
        "--noise",
        str(opts.noise),
        "--queries",
        str(opts.queries),
        "--stores",
        str(opts.stores),
        "--embed-sample",
        str(opts.embed_sample),
        *extra,
    ]
    print(f"[{time.strftime('%H:%M:%S')}] {name} {n or ''}", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=opts.timeout)
    if done.returncode != 0:
        raise RuntimeError(f"worker {name} {n} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"  {json.dumps(result)}", file=sys.stderr, flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--work-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "agent-memory-scale")
    parser.add_argument("--base", type=int, default=2000, help="distinct LoCoMo turns embedded once")
    parser.add_argument("--noise", type=float, default=0.012, help="per-dimension sigma added to the base vectors")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--stores", type=int, default=100)
    parser.add_argument("--embed-sample", type=int, default=500)
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--skip-embed", action="store_true", help="skip the import rate with the local model")
    parser.add_argument("--no-build", action="store_true", help="import worker: build no index (the write cost alone)")
    parser.add_argument("--worker", choices=sorted(WORKERS))
    parser.add_argument("--n", type=int, default=0)
    parser.add_argument("--no-wait-warm", action="store_true", help="serve: call at once, not after the warm-up")
    parser.add_argument("--fresh-copy", action="store_true",
                        help="serve: copy store-N to store-N-serve again (else the kept copy is served)")
    parser.add_argument("--stores-from", type=int, default=0,
                        help="serve: first variant of the stored turns (another value for each run on one store, so "
                        "a run's stores are new memories, not duplicates of an earlier run's)")
    opts = parser.parse_args()
    if opts.worker:
        print(json.dumps(WORKERS[opts.worker](opts)))
        return
    if not LOCOMO.exists():
        print(f"skipped: {LOCOMO} is missing")
        return
    opts.work_dir.mkdir(parents=True, exist_ok=True)
    run_worker("vectors", opts)
    rows = []
    for n in (int(s) for s in opts.sizes.split(",")):
        run_worker("file", opts, n)
        imp = run_worker("import", opts, n)
        srv = run_worker("serve", opts, n, "--fresh-copy")  # the store was just imported again
        rows.append(
            [
                n,
                imp["rate"],
                imp["rate_before_index"],
                imp["index_s"],
                imp["peak_rss_mb"],
                srv["open_first_search_ms"],
                srv["search_p50_ms"],
                srv["search_p95_ms"],
                srv["store_p50_ms"],
                srv["store_p95_ms"],
                srv["slowest_call_ms"],
                srv["serving_rss_mb"],
                srv["disk_mb"],
            ]
        )
    print("\nImport with vectors (export --with-vectors), then serving through the mounted tools")
    print_table(
        [
            "N",
            "import/s",
            "before index/s",
            "index s",
            "import RSS MB",
            "open+1st ms",
            "search p50",
            "search p95",
            "store p50",
            "store p95",
            "slowest ms",
            "serve RSS MB",
            "disk MB",
        ],
        rows,
    )
    if not opts.skip_embed:
        emb = run_worker("embed", opts)
        print("\nImport with the local model (vectors ignored), against the model alone on the same texts")
        print_table(
            ["memories", "model alone/s", "import/s", "share", "per CPU s: model", "import", "share", "RSS MB"],
            [
                [
                    emb["memories"],
                    emb["ceiling_per_s"],
                    emb["import_per_s"],
                    emb["share"],
                    emb["ceiling_per_cpu_s"],
                    emb["import_per_cpu_s"],
                    emb["cpu_share"],
                    emb["peak_rss_mb"],
                ]
            ],
        )


if __name__ == "__main__":
    main()
