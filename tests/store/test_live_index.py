"""The journal's index of live ids (store/live_index.py): UUIDs in sorted arrays, the rest in a dict,
and a journal of UUID ids persisted, reopened from its index file and changed afterwards."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from amplifier_module_tool_agent_memory.store import journal as journal_module
from amplifier_module_tool_agent_memory.store.journal import Change, Journal
from amplifier_module_tool_agent_memory.store.live_index import LiveIndex


def _ids(n: int, seed: int = 3) -> list[str]:
    rng = np.random.default_rng(seed)
    return [str(uuid.UUID(bytes=rng.bytes(16), version=4)) for _ in range(n)]


def _reloaded(index: LiveIndex) -> LiveIndex:
    high, low, loc, rest = index.to_arrays()
    return LiveIndex.from_arrays(high, low, loc, rest)


def test_single_record_uuids_go_to_the_arrays_and_come_back_by_id() -> None:
    ids = _ids(50)
    index = LiveIndex()
    for n, pid in enumerate(ids):
        index.add(pid, 1000 + n)
    index.add("not-a-uuid", 5000)
    index.add(ids[7], 6000)
    high, _low, _loc, rest = index.to_arrays()
    # 49 single-record UUIDs in the arrays; the id with two records and the plain id in the rest.
    assert len(high) == 49
    assert rest == {ids[7]: [1007, 6000], "not-a-uuid": [5000]}
    again = _reloaded(index)
    assert len(again) == 51
    assert again.get(ids[0]) == [1000]
    assert again.get(ids[7]) == [1007, 6000]
    assert again.get(str(uuid.uuid4())) is None
    assert again.ids() == [*ids, "not-a-uuid"]


def test_changes_after_loading_move_an_id_out_of_the_arrays() -> None:
    ids = _ids(20)
    index = LiveIndex()
    for n, pid in enumerate(ids):
        index.add(pid, 10 * n)
    loaded = _reloaded(index)
    loaded.add(ids[3], 999)
    assert loaded.get(ids[3]) == [30, 999]
    assert loaded.pop(ids[4]) == [40]
    assert ids[4] not in loaded and loaded.pop(ids[4]) is None
    loaded.replace(ids[5], [51])
    loaded.replace(ids[6], [])
    assert loaded.get(ids[5]) == [51]
    assert ids[6] not in loaded
    assert len(loaded) == 18
    # Saved and loaded again, the changes hold.
    again = _reloaded(loaded)
    assert again.get(ids[3]) == [30, 999] and again.get(ids[5]) == [51]
    assert ids[4] not in again and ids[6] not in again
    assert again.ids() == [pid for pid in ids if pid not in (ids[4], ids[6])]


def test_persisting_compacts_the_written_ids_into_the_arrays_and_they_stay_changeable() -> None:
    ids = _ids(30)
    index = LiveIndex()
    for n, pid in enumerate(ids[:20]):
        index.add(pid, 100 + n)
    index.add("plain-id", 7)
    high, _low, _loc, rest = index.to_arrays()
    # Persisting moved the single-record UUIDs out of the dict (a long import keeps a small dict).
    assert len(high) == 20 and rest == {"plain-id": [7]} and index._more == {"plain-id": [7]}
    # Written after the persist: in the dict until the next one; changes to compacted ids still move them.
    for n, pid in enumerate(ids[20:]):
        index.add(pid, 200 + n)
    index.add(ids[2], 300)
    assert index.pop(ids[3]) == [103]
    assert len(index._more) == 12
    high, _low, _loc, rest = index.to_arrays()
    assert len(high) == 28 and set(rest) == {"plain-id", ids[2]} and len(index) == 30
    assert index.get(ids[2]) == [102, 300] and index.get(ids[25]) == [205] and ids[3] not in index
    assert index.ids() == ["plain-id", *(pid for pid in ids if pid != ids[3])]


def test_ids_that_share_their_high_half_are_found_by_their_low_half() -> None:
    # UUID(int=n) ids (the scale benchmark's) all have the high half 0, and a few share a low half too.
    ids = [str(uuid.UUID(int=n)) for n in range(1, 2001)] + [str(uuid.UUID(int=(5 << 64) | n)) for n in (1, 7)]
    index = LiveIndex()
    for n, pid in enumerate(ids):
        index.add(pid, n)
    loaded = _reloaded(index)
    assert [loaded.get(pid) for pid in ids] == [[n] for n in range(len(ids))]
    assert loaded.get(str(uuid.UUID(int=2001))) is None and loaded.get(str(uuid.UUID(int=(5 << 64) | 2))) is None
    assert loaded.pop(ids[999]) == [999] and ids[999] not in loaded and ids[1000] in loaded
    assert str(uuid.UUID(int=(4 << 64) | 1)) not in loaded and ids[-1] in loaded


def test_a_non_canonical_uuid_spelling_is_kept_as_written() -> None:
    upper = str(uuid.uuid4()).upper()
    index = LiveIndex()
    index.add(upper, 7)
    again = _reloaded(index)
    assert again.ids() == [upper]
    assert str(uuid.UUID(upper)) not in again


def test_unsorted_arrays_are_refused() -> None:
    high = np.array([2, 1], dtype="<u8")
    with pytest.raises(ValueError):
        LiveIndex.from_arrays(high, np.zeros(2, dtype="<u8"), np.zeros(2, dtype="<u8"), {})


def _write(journal: Journal, ids: list[str]) -> None:
    journal.append([Change("upsert", (pid,), {"content": f"text {pid}"}, {"dense": [0.25] * 4}) for pid in ids])


def test_a_journal_of_uuids_reopens_from_its_index_and_keeps_every_change(tmp_path: Path) -> None:
    ids = _ids(30)
    journal = Journal(tmp_path / "j")
    journal.open()
    _write(journal, ids)
    journal.close()

    again = Journal(tmp_path / "j")
    report = again.open()
    assert not report.full_scan and report.bytes_read == 0
    assert again.live_ids() == ids
    again.append([Change("payload", (ids[2],), {"content": "changed"})])
    again.append([Change("delete", (ids[9],))])
    latest = again.latest(ids[2])
    assert latest is not None and latest[0] == {"content": "changed"} and latest[1] == {"dense": [0.25] * 4}
    # Forgetting after a reopen removes the text from the segments.
    again.purge([ids[9]])
    again.close()
    on_disk = b"".join(p.read_bytes() for p in (tmp_path / "j").glob("*.jnl"))
    assert f"text {ids[9]}".encode() not in on_disk

    third = Journal(tmp_path / "j")
    assert not third.open().full_scan
    assert third.live_ids() == [pid for pid in ids if pid != ids[9]]
    latest = third.latest(ids[2])
    assert latest is not None and latest[0] == {"content": "changed"}
    # The same answer as reading every segment.
    full = Journal(tmp_path / "j")
    full.open(full_scan=True)
    assert full.live_ids() == third.live_ids()


def test_an_index_file_of_version_1_is_still_read(tmp_path: Path) -> None:
    ids = _ids(12)
    journal = Journal(tmp_path / "j")
    journal.open()
    _write(journal, ids)
    journal.close()
    # Rewrite the index in the version 1 layout: every id in JSON, then counts and locations.
    index = tmp_path / "j" / journal_module.INDEX
    data = index.read_bytes()
    body = memoryview(data)[journal_module._HEAD.size :]
    (head_len,) = journal_module._U32.unpack_from(body, 0)
    head = journal_module.json.loads(bytes(body[4 : 4 + head_len]))
    head["version"] = 1
    del head["uuids"]
    reopened = Journal(tmp_path / "j")
    reopened.open(full_scan=True)
    locs = [reopened._locs.get(pid) for pid in ids]
    head_b = journal_module.json.dumps(head).encode()
    ids_b = journal_module.json.dumps(ids).encode()
    counts = np.array([len(w or []) for w in locs], dtype="<u4").tobytes()
    flat = np.array([x for w in locs for x in (w or [])], dtype="<u8").tobytes()
    v1 = b"".join([journal_module._U32.pack(len(head_b)), head_b, journal_module._U32.pack(len(ids_b)), ids_b,
                   counts, flat])
    index.write_bytes(journal_module._HEAD.pack(journal_module._INDEX_MAGIC, len(v1), journal_module.zlib.crc32(v1))
                      + v1)

    again = Journal(tmp_path / "j")
    report = again.open()
    assert not report.full_scan
    assert again.live_ids() == ids
