"""The journal (store/journal.py): every accepted change logged, checksummed, replayed, purged on forget;
and the CLI's progress line (cli/progress.py)."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from data import DISTINCT_FACTS

from amplifier_module_tool_agent_memory.cli.main import main
from amplifier_module_tool_agent_memory.cli.progress import Progress, wanted
from amplifier_module_tool_agent_memory.errors import StoreDamagedError
from amplifier_module_tool_agent_memory.memory.models import MemoryStoreInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store.journal import Change, Journal


def _store_all(rt: AgentMemory, facts: tuple[str, ...]) -> list[str]:
    return [rt.memory().store(MemoryStoreInput(content=fact)).id for fact in facts]


def _files_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_every_stored_memory_is_in_the_journal(make_runtime: Callable[..., AgentMemory], root: Path) -> None:
    rt = make_runtime()
    ids = _store_all(rt, DISTINCT_FACTS[:5])
    rt.close()
    journal = Journal(root / "alice" / "journal" / "memories")
    journal.open()
    assert set(journal.live_ids()) == set(ids)
    latest = journal.latest(ids[2])
    assert latest is not None and latest[0] is not None
    assert latest[0]["content"] == DISTINCT_FACTS[2]
    assert set(latest[1]) == {"dense", "ctx"}


def test_a_forgotten_memory_leaves_no_copy_of_its_text_in_the_journal(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    rt = make_runtime()
    ids = _store_all(rt, DISTINCT_FACTS[:6])
    rt.memory().forget(ids[3])
    rt.close()
    on_disk = _files_bytes(root / "alice" / "journal")
    assert DISTINCT_FACTS[3].encode() not in on_disk
    assert DISTINCT_FACTS[4].encode() in on_disk


def test_new_shards_keep_no_engine_wal(make_runtime: Callable[..., AgentMemory], root: Path) -> None:
    rt = make_runtime()
    _store_all(rt, DISTINCT_FACTS[:2])
    rt.close()
    assert not (root / "alice" / "memories" / "wal").exists()


def test_an_engine_that_lost_points_is_reported_with_the_repair_command(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    rt = make_runtime()
    _store_all(rt, DISTINCT_FACTS[:4])
    rt.close()
    mappings = next((root / "alice" / "memories" / "segments").glob("*/mutable_id_tracker.mappings"))
    mappings.write_bytes(mappings.read_bytes()[:21])  # only the first insert is left

    with pytest.raises(StoreDamagedError) as caught:
        make_runtime().memory()
    message = str(caught.value)
    assert "engine holds 1, its journal 4" in message
    assert "agent-memory repair --identity alice" in message


def test_export_reads_the_journal_when_the_engine_lost_points(
    make_runtime: Callable[..., AgentMemory], root: Path, tmp_path: Path
) -> None:
    rt = make_runtime()
    _store_all(rt, DISTINCT_FACTS[:4])
    rt.close()
    mappings = next((root / "alice" / "memories" / "segments").glob("*/mutable_id_tracker.mappings"))
    mappings.write_bytes(b"")

    out = tmp_path / "export.jsonl"
    assert main(["export", "--root", str(root), "--identity", "alice", "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 4


def test_repair_rebuilds_every_memory_from_the_journal(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    rt = make_runtime()
    ids = _store_all(rt, DISTINCT_FACTS[:5])
    rt.close()
    mappings = next((root / "alice" / "memories" / "segments").glob("*/mutable_id_tracker.mappings"))
    mappings.write_bytes(b"")

    assert main(["repair", "--root", str(root), "--identity", "alice"]) == 0
    listed = make_runtime().memory().export()
    assert {record.id for record in listed} == set(ids)


def test_a_damaged_frame_is_skipped_and_counted(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j")
    journal.open()
    for n in range(3):
        journal.append([Change("upsert", (f"id-{n}",), {"content": f"text {n}"}, {"dense": [0.5, 0.25]})])
    journal.close()
    segment = next((tmp_path / "j").glob("*.jnl"))
    data = bytearray(segment.read_bytes())
    third = len(data) // 3
    data[third + 20] ^= 0xFF  # a byte inside the second frame
    segment.write_bytes(bytes(data))

    again = Journal(tmp_path / "j")
    report = again.open()
    assert (report.records, report.damaged) == (2, 1)
    assert set(again.live_ids()) == {"id-0", "id-2"}


def test_a_refused_engine_write_leaves_no_journal_record(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j")
    journal.open()
    journal.append([Change("upsert", ("kept",), {"content": "kept"}, {"dense": [1.0]})])
    change = Change("upsert", ("refused",), {"content": "refused"}, {"dense": [1.0]})
    mark = journal.append([change])
    journal.rollback(mark, 1, [change])
    journal.close()

    again = Journal(tmp_path / "j")
    again.open()
    assert again.live_ids() == ["kept"]
    assert again.last_seq == 1


def test_vectors_round_trip_exactly_as_float32(tmp_path: Path) -> None:
    vector = [0.1, -2.5, 3.0e-7, 1234.5]
    journal = Journal(tmp_path / "j")
    journal.open()
    journal.append([Change("upsert", ("p",), {"content": "x"}, {"dense": vector})])
    latest = journal.latest("p")
    assert latest is not None
    import struct

    assert latest[1]["dense"] == [struct.unpack("<f", struct.pack("<f", v))[0] for v in vector]


# Progress of long CLI work.


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_count_rate_and_time_left() -> None:
    bar = Progress("imported", total=3000, stream=_Terminal())
    bar.done = 1000
    line = bar.line(now=bar._started + 10.0)
    assert line == "imported 1,000/3,000 (33%), 100/s, 20 s left"


def test_progress_is_drawn_on_a_terminal_only_without_json() -> None:
    assert wanted(as_json=False, stream=_Terminal())
    assert not wanted(as_json=True, stream=_Terminal())
    assert not wanted(as_json=False, stream=io.StringIO())


def test_a_disabled_progress_writes_nothing() -> None:
    stream = _Terminal()
    bar = Progress("imported", total=10, enabled=False, stream=stream)
    for _ in range(10):
        bar.advance()
    bar.finish()
    assert stream.getvalue() == ""


def test_an_overwritten_plan_leaves_no_copy_of_its_old_actions_in_the_journal(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    from amplifier_module_tool_agent_memory.plans.models import PlanStoreInput

    rt = make_runtime()

    def plan(command: str) -> PlanStoreInput:
        return PlanStoreInput.model_validate(
            {"prompt": "rotate the staging logs", "actions": [{"tool": "bash", "args": {"cmd": command}}]}
        )

    rt.plans().store(plan("logrotate --legacy-flag-zebra /etc/old.conf"))
    rt.plans().store(plan("logrotate /etc/new.conf"))
    rt.close()
    on_disk = _files_bytes(root / "alice" / "journal")
    assert b"legacy-flag-zebra" not in on_disk
    assert b"/etc/new.conf" in on_disk


def test_a_lost_journal_is_written_again_from_the_engine_on_open(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    import shutil

    rt = make_runtime()
    ids = _store_all(rt, DISTINCT_FACTS[:4])
    rt.close()
    shutil.rmtree(root / "alice" / "journal" / "memories")
    make_runtime().memory()  # opening completes the journal from the engine

    journal = Journal(root / "alice" / "journal" / "memories")
    journal.open()
    assert set(journal.live_ids()) == set(ids)


# The persisted index: opening reads only what was appended after it.


def _fill(journal: Journal, names: range) -> None:
    for n in names:
        journal.append([Change("upsert", (f"id-{n}",), {"content": f"text {n} " + "x" * 200}, {"dense": [0.5] * 8})])


@pytest.fixture()
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    import amplifier_module_tool_agent_memory.store.journal as journal_module

    monkeypatch.setattr(journal_module, "SEGMENT_BYTES", 2048)


def test_reopening_after_close_reads_no_segment(tmp_path: Path, small_segments: None) -> None:
    journal = Journal(tmp_path / "j")
    journal.open()
    _fill(journal, range(40))
    journal.append([Change("delete", ("id-3",))])
    journal.close()

    again = Journal(tmp_path / "j")
    report = again.open()
    assert (report.full_scan, report.bytes_read) == (False, 0)
    assert again.live_ids() == [f"id-{n}" for n in range(40) if n != 3]
    assert again.last_seq == 41


def test_writes_after_the_index_are_read_from_the_tail_only(tmp_path: Path, small_segments: None) -> None:
    journal = Journal(tmp_path / "j")
    journal.open()
    _fill(journal, range(30))
    journal.checkpoint()
    _fill(journal, range(30, 34))
    journal.sync()  # the process dies here: no close, no new index

    again = Journal(tmp_path / "j")
    report = again.open()
    assert not report.full_scan
    assert 0 < report.bytes_read < 4 * 2048
    assert again.live_ids() == [f"id-{n}" for n in range(34)]
    latest = again.latest("id-32")
    assert latest is not None and latest[0] == {"content": "text 32 " + "x" * 200}


def test_a_segment_damaged_after_the_index_makes_opening_read_every_segment(
    tmp_path: Path, small_segments: None
) -> None:
    journal = Journal(tmp_path / "j")
    journal.open()
    _fill(journal, range(30))
    journal.close()
    first = sorted((tmp_path / "j").glob("*.jnl"))[0]
    data = bytearray(first.read_bytes())
    data[40] ^= 0xFF  # inside the first frame, the file's size kept
    first.write_bytes(bytes(data))

    again = Journal(tmp_path / "j")
    report = again.open()
    assert report.full_scan
    assert report.damaged == 1
    assert "id-0" not in again.live_ids()


def test_a_purge_not_followed_by_an_index_is_noticed_on_open(tmp_path: Path, small_segments: None) -> None:
    journal = Journal(tmp_path / "j")
    journal.open()
    _fill(journal, range(30))
    journal.checkpoint()
    journal.append([Change("delete", ("id-2", "id-17"))])
    journal.purge(["id-2", "id-17"])
    journal.sync()  # the process dies before the index is written again

    again = Journal(tmp_path / "j")
    again.open()
    assert again.live_ids() == [f"id-{n}" for n in range(30) if n not in (2, 17)]
    # A record after a purged one moved within its rewritten segment: it is found where it is now.
    assert [again.latest(f"id-{n}") for n in (3, 18)] == [
        ({"content": f"text {n} " + "x" * 200}, {"dense": [0.5] * 8}) for n in (3, 18)
    ]
    assert b"text 17 " not in _files_bytes(tmp_path / "j")


def test_a_damaged_index_makes_opening_read_every_segment(tmp_path: Path, small_segments: None) -> None:
    journal = Journal(tmp_path / "j")
    journal.open()
    _fill(journal, range(12))
    journal.close()
    index = tmp_path / "j" / "index.bin"
    index.write_bytes(index.read_bytes()[:-3])

    again = Journal(tmp_path / "j")
    report = again.open()
    assert report.full_scan
    assert again.live_ids() == [f"id-{n}" for n in range(12)]
