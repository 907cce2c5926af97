"""Streaming import and export (maintenance/transfer.py): the whole file checked first, bounded
batches, vectors carried by an export and reused by an import of the same model."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.cli.main import main
from amplifier_module_tool_agent_memory.embeddings.providers import LOCAL_MODEL_ID, CachedEmbedder
from amplifier_module_tool_agent_memory.maintenance import transfer
from amplifier_module_tool_agent_memory.maintenance.transfer import (
    ImportFileError,
    check_import,
    import_checked,
)
from amplifier_module_tool_agent_memory.memory.models import MemoryStoreInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
FACTS = (
    "We chose PostgreSQL for the billing service",
    "The user prefers tabs over spaces in Go code",
    "The nightly backup runs at 02:00 UTC",
    "Deploys to production need two approvals",
)


def _line(i: int, content: str | None = None, minutes: int | None = None, record_id: str | None = None) -> str:
    stamp = T0 + timedelta(minutes=i if minutes is None else minutes)
    return json.dumps(
        {
            "id": record_id or str(uuid.UUID(int=i + 1)),
            "content": content or f"note number {i}",
            "created_at": stamp.isoformat(),
        }
    )


def _cli(root: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, Any, str]]:
    def run(*argv: str, identity: str = "alice") -> tuple[int, Any, str]:
        code = main([*argv, "--root", str(root), "--identity", identity, "--json"])
        out, err = capsys.readouterr()
        return code, (json.loads(out) if out.strip() else None), err

    return run


class _Recorder:
    """A writer that only records what it is handed (the batching logic does not depend on a store)."""

    def __init__(self, parsed: list[int]) -> None:
        self.parsed = parsed
        self.batches: list[list[Any]] = []
        self.parsed_at_write: list[int] = []

    def write(self, records: Sequence[Any], vectors: Sequence[Any] | None = None) -> None:
        self.batches.append(list(records))
        self.parsed_at_write.append(self.parsed[0])

    def finish(self) -> dict[str, Any]:
        return {"imported": sum(len(b) for b in self.batches)}

    def close(self) -> None:
        self.batches.clear()


def test_import_reads_the_file_in_bounded_batches_oldest_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n, batch = 1_000, 64
    path = tmp_path / "many.jsonl"
    # Written newest first: the write order must be by creation, whatever the file's.
    path.write_text("\n".join(_line(i, minutes=n - i) for i in range(n)) + "\n")
    parsed = [0]
    real_parse = transfer.parse_line

    def counting_parse(text: str) -> Any:
        parsed[0] += 1
        return real_parse(text)

    checked = check_import(str(path))
    monkeypatch.setattr(transfer, "parse_line", counting_parse)
    recorder = _Recorder(parsed)
    result = import_checked(checked, {"memory": lambda: recorder}, use_vectors=False, batch=batch)
    checked.close()
    assert result == {"imported": n}
    assert [len(b) for b in recorder.batches] == [batch] * (n // batch) + [n % batch]
    # Each batch is handed over as soon as it is read: never more than one batch (plus the line that
    # closed it) parsed ahead of the writer.
    assert all(at <= (k + 1) * batch + 1 for k, at in enumerate(recorder.parsed_at_write))
    created = [r.created_at for b in recorder.batches for r in b]
    assert created == sorted(created) and len(set(created)) == n


def test_the_checked_file_keeps_places_not_records(tmp_path: Path) -> None:
    path = tmp_path / "dup.jsonl"
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    path.write_text(
        "\n".join(
            [
                _line(0, "first wording", record_id=first),
                _line(1, record_id=second),
                _line(2, "last wording", record_id=first),
            ]
        )
        + "\n\n"
    )
    checked = check_import(str(path))
    assert (checked.read, checked.repeated, checked.to_write) == (3, 1, 2)
    assert not any(isinstance(v, list) for v in vars(checked).values())  # no list of records is held
    lines = [line for b in checked.batches(10) for line in b]
    checked.close()
    # The last line of a repeated id wins, at its own place in the creation order.
    assert [(line.record.id, line.record.content) for line in lines] == [
        (second, "note number 1"),
        (first, "last wording"),
    ]


def test_a_bad_last_line_writes_nothing(
    root: Path, embedder: CachedEmbedder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _cli(root, capsys)
    path = tmp_path / "bad-last.jsonl"
    path.write_text("\n".join([*(_line(i) for i in range(300)), '{"id": "not-a-uuid", "content": "x"}']) + "\n")
    code, _, err = run("import", str(path))
    assert code == 2
    assert "line 301" in err and "nothing was imported" in err
    assert not (root / "alice").exists()  # not even a store was created


def test_every_bad_line_is_counted_and_the_first_ones_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(["not json", *(_line(i) for i in range(5)), "[1]", '{"content": "no id"}'] * 5) + "\n")
    with pytest.raises(ImportFileError) as caught:
        check_import(str(path))
    message = str(caught.value)
    assert message.startswith(f"{path}: 15 of 40 lines are invalid")
    assert "line 1: not valid JSON" in message and "line 7: must be a JSON object" in message
    assert "(and 5 more)" in message


def test_progress_counts_checked_lines_and_written_records(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join([_line(i) for i in range(10)] + [_line(3)]) + "\n")
    checked_steps: list[int] = []
    written_steps: list[int] = []
    checked = check_import(str(path), checked_steps.append)
    import_checked(
        checked, {"memory": lambda: _Recorder([0])}, use_vectors=False, batch=4, advance=written_steps.append
    )
    checked.close()
    assert sum(checked_steps) == 11
    assert written_steps == [4, 4, 2]


def _store_facts(make_runtime: Callable[..., AgentMemory]) -> None:
    rt = make_runtime("alice")
    for fact in FACTS:
        rt.memory().store(MemoryStoreInput(content=fact, kind="fact"))
    rt.close()


def _points(make_runtime: Callable[..., AgentMemory], identity: str) -> dict[str, tuple[str, Any]]:
    from amplifier_module_tool_agent_memory.store.query import Scroll

    rt = make_runtime(identity)
    points, _ = rt.memory().coll.scroll(Scroll(limit=100, with_vector=True))
    rt.close()
    return {p.payload["content"]: (p.id, p.vector) for p in points}


def test_vectors_round_trip_and_nothing_is_embedded(
    root: Path, make_runtime: Callable[..., AgentMemory], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _store_facts(make_runtime)
    run = _cli(root, capsys)
    dump = tmp_path / "with-vectors.jsonl"
    assert run("export", "--out", str(dump), "--with-vectors")[1]["exported"] == len(FACTS)
    first = json.loads(dump.read_text().splitlines()[0])
    assert first["vectors"]["model"] == LOCAL_MODEL_ID and set(first["vectors"]) == {"model", "dense", "ctx"}
    code, result, err = run("import", str(dump), identity="bob")
    assert code == 0, err
    assert result["imported"] == len(FACTS) and result["embedded"] == 0
    assert result["vectors"] == {"models": [LOCAL_MODEL_ID], "used": True}
    alice, bob = _points(make_runtime, "alice"), _points(make_runtime, "bob")
    assert set(alice) == set(bob) == set(FACTS)
    for content, (point_id, vectors) in alice.items():
        assert bob[content][0] == point_id
        assert bob[content][1] == vectors  # bit for bit: float32 in, float32 out
    code, found, _ = run("search", "which database does billing use?", identity="bob")
    assert found["results"][0]["content"] == FACTS[0]


def test_vectors_of_another_model_are_refused_and_nothing_is_written(
    root: Path, make_runtime: Callable[..., AgentMemory], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _store_facts(make_runtime)
    run = _cli(root, capsys)
    dump = tmp_path / "v.jsonl"
    run("export", "--out", str(dump), "--with-vectors")
    other = tmp_path / "other-model.jsonl"
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    for line in lines:
        line["vectors"]["model"] = "fastembed:BAAI/bge-small-en-v1.5"
    other.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, _, err = run("import", str(other), identity="bob")
    assert code == 1
    error = json.loads(err)["error"]
    assert error["type"] == "model_mismatch"
    assert "'fastembed:BAAI/bge-small-en-v1.5'" in error["message"] and LOCAL_MODEL_ID in error["message"]
    assert "nothing was imported" in error["message"] and "--reembed" in error["message"]
    assert run("list", identity="bob")[1]["memories"] == []
    # --reembed embeds them with the store's model instead.
    code, result, err = run("import", str(other), "--reembed", identity="bob")
    assert code == 0, err
    assert result["embedded"] == len(FACTS) and result["vectors"]["used"] is False


def test_a_damaged_vector_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "damaged.jsonl"
    good = json.loads(_line(0))
    good["vectors"] = {"model": LOCAL_MODEL_ID, "dense": "AAAA", "ctx": "!!"}
    path.write_text(_line(1) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(ImportFileError, match=r"line 2: vectors.dense is not a list of float32"):
        check_import(str(path))


def _vector_file(path: Path, n: int) -> None:
    """``n`` memories with vectors of the local model (random unit vectors: nothing here depends on their
    meaning), one with a secret to redact and a few with tags, as ``export --with-vectors`` writes them."""
    import base64

    import numpy as np

    rng = np.random.default_rng(5)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            line = json.loads(_line(i, "the deploy token is ghp_" + "a1" * 18 if i == 7 else None))
            if i % 5 == 0:
                line["tags"] = ["ops", f"t{i}"]
            vectors = rng.normal(size=(2, 384)).astype("<f4")
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            line["vectors"] = {
                "model": LOCAL_MODEL_ID,
                "dense": base64.b64encode(vectors[0].tobytes()).decode(),
                "ctx": base64.b64encode(vectors[1].tobytes()).decode(),
            }
            fh.write(json.dumps(line) + "\n")


def _stored(make_runtime: Callable[..., AgentMemory], identity: str) -> dict[str, tuple[Any, dict[str, Any]]]:
    """Every point of the identity: id -> (vectors, payload without the import's own thread id)."""
    from amplifier_module_tool_agent_memory.store.query import Scroll

    rt = make_runtime(identity)
    points, _ = rt.memory().coll.scroll(Scroll(limit=1000, with_vector=True))
    rt.close()
    return {str(p.id): (p.vector, {k: v for k, v in p.payload.items() if k not in ("thread", "_sum")}) for p in points}


def test_a_child_process_builds_the_memories_and_the_store_gets_what_one_process_writes(
    root: Path,
    make_runtime: Callable[..., AgentMemory],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from amplifier_module_tool_agent_memory.maintenance import import_pipeline
    from amplifier_module_tool_agent_memory.memory.importing import MemoryImporter

    n = 150
    dump = tmp_path / "with-vectors.jsonl"
    _vector_file(dump, n)
    run = _cli(root, capsys)
    monkeypatch.setattr(import_pipeline, "MIN_RECORDS", n + 1)  # one process
    code, alone, err = run("import", str(dump), identity="alone")
    assert code == 0, err
    from_child: list[int] = []
    write_points = MemoryImporter.write_points

    def counted(self: MemoryImporter, points: list[Any]) -> None:
        from_child.append(len(points))
        write_points(self, points)

    monkeypatch.setattr(MemoryImporter, "write_points", counted)
    monkeypatch.setattr(import_pipeline, "MIN_RECORDS", n)
    code, piped, err = run("import", str(dump), identity="piped")
    assert code == 0, err
    assert sum(from_child) == n and max(from_child) <= 64  # every memory came from the child, batch by batch
    assert piped["imported"] == alone["imported"] == n and piped["embedded"] == 0
    one, two = _stored(make_runtime, "alone"), _stored(make_runtime, "piped")
    assert set(one) == set(two) and len(one) == n
    for point_id, (vectors, payload) in one.items():
        assert two[point_id][0] == vectors  # bit for bit
        assert two[point_id][1] == payload  # redacted, the context window, seq: all as one process writes them
    secret = one[str(uuid.UUID(int=8))][1]["content"]
    assert "ghp_" not in secret and "[REDACTED" in secret


def test_a_file_changed_after_the_check_stops_the_child_and_writes_nothing(
    root: Path, make_runtime: Callable[..., AgentMemory], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from amplifier_module_tool_agent_memory.maintenance import import_pipeline
    from amplifier_module_tool_agent_memory.maintenance.transfer import memory_writer

    n = 20
    dump = tmp_path / "with-vectors.jsonl"
    _vector_file(dump, n)
    monkeypatch.setattr(import_pipeline, "MIN_RECORDS", n)
    checked = check_import(str(dump))
    data = bytearray(dump.read_bytes())
    data[data.index(b"note number 3")] = ord("N")  # same size, another byte
    dump.write_bytes(bytes(data))
    os.utime(dump, ns=(checked.places.stat[1] + 10**9, checked.places.stat[1] + 10**9))
    rt = make_runtime("bob")
    try:
        with pytest.raises(ImportFileError, match="changed"):
            import_checked(
                checked,
                {"memory": memory_writer(rt.memory())},
                use_vectors=True,
                memories_first=import_pipeline.write_memories,
            )
        assert rt.memory().coll.count() == 0
    finally:
        checked.close()
        rt.close()
