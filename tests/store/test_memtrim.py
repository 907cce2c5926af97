"""Returning memory to the OS: what is dropped, and what must survive."""

from __future__ import annotations

import mmap
import sys
from pathlib import Path

import pytest

from amplifier_module_tool_agent_memory.store.memtrim import release_heap, release_mapped_pages

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")

SIZE = 8 * 1024 * 1024


def _rss_file_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssFile:"):
                return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


def _touch(view: mmap.mmap) -> int:
    return sum(view[i] for i in range(0, len(view), mmap.PAGESIZE))


def _data_file(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "segment.dat"
    path.write_bytes(bytes(range(256)) * (SIZE // 256))
    return path


def test_released_pages_leave_the_resident_set_and_read_back_the_same(tmp_path: Path) -> None:
    path = _data_file(tmp_path / "store")
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as view:
        checksum = _touch(view)
        before = _rss_file_kib()
        advised = release_mapped_pages(tmp_path / "store")
        after = _rss_file_kib()
        assert advised >= SIZE
        assert before - after >= SIZE // 1024 * 3 // 4
        assert _touch(view) == checksum


def test_files_outside_the_folder_stay_resident(tmp_path: Path) -> None:
    path = _data_file(tmp_path / "other")
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as view:
        _touch(view)
        assert release_mapped_pages(tmp_path / "store") == 0


def test_private_writable_mappings_keep_their_changes(tmp_path: Path) -> None:
    path = _data_file(tmp_path / "store")
    with path.open("r+b") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY) as view:
        view[0:5] = b"hello"
        release_mapped_pages(tmp_path / "store")
        assert view[0:5] == b"hello"


def _rss_anon_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    raise AssertionError("no RssAnon in /proc/self/status")


def test_freed_heap_goes_back_to_the_os() -> None:
    # 64 KiB blocks come from glibc's heap (below its mmap threshold); every other one stays
    # allocated, so the freed half is spread through the heap rather than at its top.
    blocks = [bytearray(64 * 1024) for _ in range(2000)]
    kept = blocks[::2]
    del blocks
    before = _rss_anon_kib()
    release_heap()
    after = _rss_anon_kib()
    assert before - after >= 32 * 1000 * 3 // 4
    assert len(kept) == 1000
