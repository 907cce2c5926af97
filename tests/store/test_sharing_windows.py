"""What the sharing path does where Linux's calls are missing or behave otherwise (there is no Windows here: these
check the fallbacks' logic on Linux, by making the calls fail or go missing as they would there).

- Windows refuses ``os.replace`` onto a file another process has open: the owner record's publish tries again.
- Windows' ``os`` has no ``statvfs`` and its ``stat`` results no ``st_blocks``: the free-space gate and the
  store's size still answer.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

import amplifier_module_tool_agent_memory as package
from amplifier_module_tool_agent_memory.store import owner, space
from amplifier_module_tool_agent_memory.store.edge import acquire_store, release_store
from amplifier_module_tool_agent_memory.store.owner import REPLACE_TRIES, OwnerServer, read_owner, replace_retrying

PACKAGE = Path(package.__file__).parent


class _Busy:
    """``os.replace`` failing as Windows' does while a reader has the target open, ``busy`` times, then the real one."""

    def __init__(self, busy: int, error: type[OSError] = PermissionError) -> None:
        self.busy = busy
        self.error = error
        self.calls = 0
        self.real = os.replace

    def __call__(self, src: Any, dst: Any) -> None:
        self.calls += 1
        if self.calls <= self.busy:
            raise self.error(13, "The process cannot access the file because it is being used by another process")
        self.real(src, dst)


def _files(tmp_path: Path) -> tuple[Path, Path]:
    src, dst = tmp_path / "owner.tmp", tmp_path / "owner.json"
    src.write_text("new")
    dst.write_text("old")
    return src, dst


def test_a_busy_target_is_replaced_once_the_reader_lets_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    busy = _Busy(2)
    monkeypatch.setattr(os, "replace", busy)
    waits: list[float] = []
    src, dst = _files(tmp_path)
    replace_retrying(src, dst, sleep=waits.append)
    assert busy.calls == 3
    assert waits == [0.005, 0.01]  # short, growing
    assert dst.read_text() == "new" and not src.exists()


def test_a_target_busy_for_good_fails_after_a_bounded_number_of_tries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = _Busy(10**6)
    monkeypatch.setattr(os, "replace", busy)
    waits: list[float] = []
    src, dst = _files(tmp_path)
    with pytest.raises(PermissionError):
        replace_retrying(src, dst, sleep=waits.append)
    assert busy.calls == REPLACE_TRIES
    assert len(waits) == REPLACE_TRIES - 1 and sum(waits) < 1.0
    assert dst.read_text() == "old"


def test_another_error_is_not_tried_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    busy = _Busy(1, FileNotFoundError)
    monkeypatch.setattr(os, "replace", busy)
    src, dst = _files(tmp_path)
    with pytest.raises(FileNotFoundError):
        replace_retrying(src, dst, sleep=lambda _: None)
    assert busy.calls == 1


def test_an_owner_publishes_its_record_past_a_busy_old_one(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A dead owner's record is still there, held open by a reader for the first two tries.
    store = acquire_store(root, "alice", "test-model", 8)
    (store.path / owner.OWNER_FILE).write_text('{"token": "old", "address": "nowhere"}')
    busy = _Busy(2)
    monkeypatch.setattr(os, "replace", busy)
    server = OwnerServer(store.path, store.collection, {"model_id": "test-model", "dim": 8})
    try:
        server.start()
        record = read_owner(store.path)
        assert record is not None and record["token"] != "old" and record["pid"] == os.getpid()
        assert busy.calls == 3
    finally:
        server.stop()
        release_store(store)


def test_read_only_answers_without_statvfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "statvfs")
    assert space.is_read_only(tmp_path) is False
    tmp_path.chmod(0o500)
    try:
        assert space.is_read_only(tmp_path) is (os.geteuid() != 0)  # root may write anyway
    finally:
        tmp_path.chmod(0o700)


def test_a_stat_without_blocks_counts_the_file_whole(tmp_path: Path) -> None:
    windows_like = os.stat_result((0o100644, 1, 1, 1, 0, 0, 1234, 0, 0, 0))  # no st_blocks given: None
    assert space.allocated(windows_like) == 1234
    sparse = tmp_path / "sparse"
    with sparse.open("wb") as fh:
        fh.truncate(1 << 20)  # a hole: no blocks on Linux
    st = sparse.stat()
    assert space.allocated(st) == st.st_blocks * 512 < st.st_size


# Calls that Windows' os lacks, and where each is allowed: behind a getattr fallback (space.py), or in a function
# that returns before it where the platform lacks posix_fadvise (edge.py's readahead).
WINDOWS_LACKS = re.compile(r"\bos\.statvfs\(|\.st_blocks\b")
ALLOWED = {"store/space.py", "store/edge.py"}


def test_no_other_module_uses_statvfs_or_st_blocks() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).as_posix() not in ALLOWED
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if WINDOWS_LACKS.search(line)
    ]
    assert offenders == []
