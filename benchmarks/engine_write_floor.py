"""The engine's floor for an import with vectors: Qdrant Edge alone, none of our import code timed.

Run ``python benchmarks/engine_write_floor.py --file DIR/memories-100000.jsonl --n 25000`` (an ``export
--with-vectors`` file, e.g. the one ``benchmarks/scale.py`` writes). The first ``--n`` memories are turned,
once and untimed, into what an import hands the engine: the point id, the two 384-d vectors as lists and the
stored payload (built by the importer, so its fields and sizes are the real ones). Then only the engine's
own steps are timed, each into a fresh shard of the memory collection's settings (``edge_config``):

- ``points``: building the binding's ``qe.Point`` objects (the binding converts every payload value and
  vector element), from lists (what the import passes) and, for comparison, from numpy rows;
- ``update B``: ``shard.update(upsert_points)`` of batches of B points (B in ``--batches``), the payload
  indexes created first (as a store has them);
- variants at ``--batch``: no payload indexes; the payload indexes created after the bulk write (their
  creation timed with it); the engine's WAL on (the store runs without it: the journal is the log);
- ``build``: the one ``optimize()`` an import runs per segment (HNSW of both vectors, 4-bit copies,
  payload-aware links), after the write;
- the GIL: a Python thread counting in a loop while the main thread is inside ``update`` and inside
  ``optimize``, as a share of its count while the main thread sleeps (1.0: released, 0: held);
- ``pipelined``: the import's shape with the engine's update on its own thread: one thread parses the raw
  lines (``json.loads``, base64, ``tolist``, ``qe.Point``), the other writes; against the same work in one
  thread.

Printed: CPU microseconds a memory (process CPU: every thread, the engine's included) and wall microseconds a
memory, median and p95 over the batches, and the whole step's rate per CPU-second and per wall-second. Wall
times are noisy on a shared machine (compare the rows of one run; CPU is steadier). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import base64
import json
import queue
import random
import resource
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import p50_p95, print_table

# A prepared memory: id, {name: vector (a float32 row; a list once handed to the engine)}, payload (sealed,
# as the store writes it). Rows, not lists, are held: 25k memories' vectors as Python floats would take 600 MB.
Prepared = tuple[str, dict[str, Any], dict[str, Any]]


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Timing:
    """Per-batch CPU and wall microseconds a memory, and the step's totals."""

    name: str
    cpu_us: list[float] = field(default_factory=list)
    wall_us: list[float] = field(default_factory=list)
    memories: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0
    note: str = ""

    def add(self, count: int, cpu: float, wall: float) -> None:
        self.cpu_us.append(cpu / count * 1e6)
        self.wall_us.append(wall / count * 1e6)
        self.memories += count
        self.cpu_s += cpu
        self.wall_s += wall

    def timed(self, count: int, step: Callable[[], Any]) -> Any:
        cpu, wall = _cpu_s(), time.perf_counter()
        out = step()
        self.add(count, _cpu_s() - cpu, time.perf_counter() - wall)
        return out

    def row(self) -> list[Any]:
        cpu50, cpu95 = p50_p95(self.cpu_us)
        wall50, wall95 = p50_p95(self.wall_us)
        return [
            self.name,
            round(cpu50),
            round(cpu95),
            round(wall50),
            round(wall95),
            round(self.memories / max(1e-9, self.cpu_s)),
            round(self.memories / max(1e-9, self.wall_s)),
            self.note,
        ]


def prepare(path: Path, n: int) -> tuple[list[str], list[Prepared]]:
    """The file's first ``n`` lines, and each memory as the import hands it to the engine (untimed)."""
    from amplifier_module_tool_agent_memory.maintenance.transfer import parse_line
    from amplifier_module_tool_agent_memory.memory.importing import MemoryImporter
    from amplifier_module_tool_agent_memory.memory.ranking import CTX
    from amplifier_module_tool_agent_memory.store.contract import DENSE, sealed

    builder = MemoryImporter(None, None, 0)  # type: ignore[arg-type]  # only its record-to-memory step
    lines: list[str] = []
    out: list[Prepared] = []
    with open(path, encoding="utf-8") as fh:
        for _, text in zip(range(n), fh, strict=False):
            line = parse_line(text, as_lists=False)
            assert line.vectors is not None
            payload = sealed(builder._memory(line.record).to_payload())
            lines.append(text)
            out.append((str(line.record.id), {DENSE: line.vectors[0], CTX: line.vectors[1]}, payload))
    return lines, out


def new_shard(work: Path, name: str, indexes: bool = True, wal: bool = False) -> Any:
    """A fresh shard of the memory collection's settings (payload indexes created unless ``indexes`` is off)."""
    import qdrant_edge as qe

    from amplifier_module_tool_agent_memory.memory.service import MEMORIES
    from amplifier_module_tool_agent_memory.store.edge_settings import edge_config

    path = work / name
    shutil.rmtree(path, ignore_errors=True)
    config = edge_config(MEMORIES, 384)
    if wal:
        config = qe.EdgeConfig(
            vectors=config.vectors, payload_memory=config.payload_memory, wal_enabled=True, optimizers=config.optimizers
        )
    shard = qe.EdgeShard.create(str(path), config)
    if indexes:
        create_indexes(shard)
    return shard


def create_indexes(shard: Any) -> None:
    from amplifier_module_tool_agent_memory.memory.service import MEMORIES
    from amplifier_module_tool_agent_memory.store.edge_settings import create_index_operation

    for index in MEMORIES.indexes:
        shard.update(create_index_operation(MEMORIES, index))


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def as_lists(batch: list[Prepared]) -> list[Prepared]:
    """The batch with its vectors as lists, what the import passes to ``qe.Point`` (done untimed)."""
    return [(pid, {k: v.tolist() for k, v in vectors.items()}, payload) for pid, vectors, payload in batch]


def build_points(batch: list[Prepared]) -> list[Any]:
    import qdrant_edge as qe

    return [qe.Point(pid, dict(vectors), payload) for pid, vectors, payload in batch]


def measure_points(prepared: list[Prepared], batch: int) -> list[Timing]:
    """qe.Point from lists (the import's input) and from numpy rows, CPU per memory."""
    lists = Timing("qe.Point, vectors as lists (what the import passes)")
    arrays = Timing("qe.Point, vectors as numpy rows")
    for part in chunks(prepared, batch):
        listed = as_lists(part)
        lists.timed(len(part), lambda listed=listed: build_points(listed))
        arrays.timed(len(part), lambda part=part: build_points(part))
    return [lists, arrays]


def write_all(
    shard: Any, prepared: list[Prepared], batch: int, timing: Timing, flush: tuple[int, Timing] | None = None
) -> None:
    """Upsert every prepared point in batches; only ``update`` is timed (the points are built untimed).

    ``flush``: every that many points also ``shard.flush()``, timed apart (its cost a memory written since the
    last flush), as the import's checkpoints do.
    """
    import qdrant_edge as qe

    since = 0
    for part in chunks(prepared, batch):
        op = qe.UpdateOperation.upsert_points(build_points(as_lists(part)))
        timing.timed(len(part), lambda op=op: shard.update(op))
        since += len(part)
        if flush is not None and since >= flush[0]:
            flush[1].timed(since, shard.flush)
            since = 0
    if flush is not None and since:
        flush[1].timed(since, shard.flush)  # the rest, as an import's last checkpoint does


class Counter:
    """A Python thread counting in a loop: how far it gets while the main thread is inside the engine.

    Started only around the GIL probes: its own CPU time (``cpu_s``) is taken off the process's in the build's
    figure, and it runs nowhere else, so the other rows' CPU is the engine's and ours alone.
    """

    def __init__(self) -> None:
        self.count = 0
        self.cpu_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for _ in range(1000):
                self.count += 1
            self.cpu_s = time.thread_time()

    def rate_during(self, step: Callable[[], Any]) -> tuple[float, Any]:
        start, started = self.count, time.perf_counter()
        out = step()
        return (self.count - start) / max(1e-9, time.perf_counter() - started), out

    def share(self, step: Callable[[], Any]) -> tuple[float, Any]:
        """Its rate during ``step`` as a share of its rate while this thread sleeps."""
        during, out = self.rate_during(step)
        idle, _ = self.rate_during(lambda: time.sleep(0.5))
        return during / max(1e-9, idle), out

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def parse_raw(text: str, payload: dict[str, Any]) -> Prepared:
    """A line to the engine's input with nothing of ours: JSON, base64 to float32, lists; the payload is the one
    prepared for it (the import's, so the engine converts and stores the same fields)."""
    import numpy as np

    data = json.loads(text)
    block = data.pop("vectors")
    vectors = {k: np.frombuffer(base64.b64decode(block[k]), dtype="<f4").tolist() for k in ("dense", "ctx")}
    return str(data.pop("id")), vectors, payload


def serial(lines: list[tuple[str, dict[str, Any]]], shard: Any, batch: int, timing: Timing) -> None:
    import qdrant_edge as qe

    for part in chunks(lines, batch):

        def step(part: list[tuple[str, dict[str, Any]]] = part) -> None:
            shard.update(qe.UpdateOperation.upsert_points(build_points([parse_raw(*t) for t in part])))

        timing.timed(len(part), step)


def pipelined(lines: list[tuple[str, dict[str, Any]]], shard: Any, batch: int, timing: Timing) -> None:
    """Parsing and ``qe.Point`` on a producer thread, ``update`` on this one; whole-run totals only."""
    import qdrant_edge as qe

    ready: queue.Queue[Any] = queue.Queue(maxsize=2)

    def produce() -> None:
        for part in chunks(lines, batch):
            ready.put((len(part), qe.UpdateOperation.upsert_points(build_points([parse_raw(*t) for t in part]))))
        ready.put(None)

    cpu, wall = _cpu_s(), time.perf_counter()
    producer = threading.Thread(target=produce)
    producer.start()
    last_cpu, last_wall = cpu, wall
    while (item := ready.get()) is not None:
        count, op = item
        shard.update(op)
        now_cpu, now_wall = _cpu_s(), time.perf_counter()
        timing.add(count, now_cpu - last_cpu, now_wall - last_wall)
        last_cpu, last_wall = now_cpu, now_wall
    producer.join()


def main() -> None:
    import qdrant_edge as qe

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, required=True, help="an export --with-vectors file")
    parser.add_argument("--n", type=int, default=25_000)
    parser.add_argument("--batches", default="100,500,1000,2500,5000", help="update batch sizes to compare")
    parser.add_argument("--batch", type=int, default=1000, help="the batch of the variants")
    parser.add_argument("--no-build", action="store_true", help="skip the index build (it takes minutes)")
    parser.add_argument("--work-dir", type=Path, default=None)
    opts = parser.parse_args()
    if not opts.file.exists():
        print(f"skipped: {opts.file} is missing")
        return
    started = time.perf_counter()
    lines, prepared = prepare(opts.file, opts.n)
    print(f"{len(prepared)} memories prepared in {time.perf_counter() - started:.0f} s", flush=True)
    work = Path(tempfile.mkdtemp(prefix="engine-floor-", dir=opts.work_dir))
    timings: list[Timing] = []
    gil: list[list[Any]] = []

    def report(timing: Timing) -> None:
        print(json.dumps(dict(zip(COLUMNS, timing.row(), strict=True))), flush=True)
        timings.append(timing)

    def fresh_write(name: str, folder: str, batch: int, indexes: bool = True, wal: bool = False) -> Any:
        shard = new_shard(work, folder, indexes=indexes, wal=wal)
        timing = Timing(name)
        write_all(shard, prepared, batch, timing)
        report(timing)
        return shard

    try:
        for timing in measure_points(prepared, opts.batch):
            report(timing)
        batches = [int(b) for b in opts.batches.split(",")]
        # A shuffled order, so no batch size always runs first (the page cache, the machine's load).
        random.Random(3).shuffle(batches)
        for size in batches:
            fresh_write(f"update, batches of {size}", f"b{size}", size).close()
        shard = fresh_write(f"update, no payload indexes ({opts.batch})", "noidx", opts.batch, indexes=False)
        after = Timing(f"the payload indexes created after that write ({opts.batch})")
        after.timed(len(prepared), lambda: create_indexes(shard))
        report(after)
        shard.close()
        fresh_write(f"update, the engine's WAL on ({opts.batch})", "wal", opts.batch, wal=True).close()
        for every in (2000, 10_000):
            shard = new_shard(work, f"flush{every}")
            flushes = Timing(f"flush() every {every} points (cost a memory flushed)")
            write_all(shard, prepared, opts.batch, Timing("write"), (every, flushes))
            report(flushes)
            shard.close()
        shard = fresh_write(f"update, before the build ({opts.batch})", "build", opts.batch)
        counter = Counter()
        try:
            if not opts.no_build:
                build = Timing("build: one optimize() of the segment")
                cpu, wall, counted = _cpu_s(), time.perf_counter(), counter.cpu_s
                during, _ = counter.rate_during(shard.optimize)
                build.add(len(prepared), _cpu_s() - cpu - (counter.cpu_s - counted), time.perf_counter() - wall)
                report(build)
                idle, _ = counter.rate_during(lambda: time.sleep(0.5))
                gil.append(["optimize()", round(during / max(1e-9, idle), 2)])
            shard.close()
            shard = new_shard(work, "gil")
            for part in chunks(prepared[: 5 * opts.batch], opts.batch):
                op = qe.UpdateOperation.upsert_points(build_points(as_lists(part)))
                share, _ = counter.share(lambda op=op: shard.update(op))
                gil.append([f"update of {len(part)} points", round(share, 2)])
            shard.close()
        finally:
            counter.stop()
        for name, run in (("serial", serial), ("pipelined", pipelined)):
            shard = new_shard(work, name)
            timing = Timing(f"raw lines -> engine, {name} ({opts.batch})")
            run([(t, p[2]) for t, p in zip(lines, prepared, strict=True)], shard, opts.batch, timing)
            report(timing)
            shard.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{len(prepared)} memories with vectors into fresh shards of the memory collection's settings")
    print_table(COLUMNS, [t.row() for t in timings])
    print("\nA Python thread's progress while the main thread is inside the engine (1.0: the GIL is released)")
    print_table(["inside", "share of its idle rate"], gil)


COLUMNS = ["step", "CPU us p50", "CPU us p95", "wall us p50", "wall us p95", "per CPU-s", "per wall-s", "note"]


if __name__ == "__main__":
    main()
