"""Index builds in a child process, swapped into the serving shard (issue 21: no call over 1 s).

Qdrant Edge's ``optimize()`` holds the Python lock for the whole build (no binding call releases it), so a
build on a background thread of the serving process stalls every tool call for minutes. Instead:

1. the serving process copies the shard's unindexed (plain) segments into a build folder beside the shard,
   with the shard's config: a shard of its own, holding only the memories not yet indexed;
2. a child process (this module's ``main``, at a lower priority) loads that copy, builds its index and
   closes it: the serving process keeps answering, since the build holds the child's lock, not its own;
3. the serving process closes its shard, moves the built segments in and the plain segments they were
   copied from out, loads the shard again and replays from its journal every change made since the copy.

What a call can still wait for is step 3: closing and loading the shard, which grows with the store, not
with the build. The journal makes the swap safe: the checkpoint is set back to the copy's sequence before
any segment moves, so a crash anywhere in step 3 leaves segments that the next open completes by replay
(a point found in both an old and a built segment has the same version in both: Edge keeps one).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

logger = logging.getLogger(__name__)

SEGMENTS = "segments"
CONFIG = "edge_config.json"
# Below the serving process: the build is background work, the calls come first.
CHILD_NICE = 10


def build_folder(shard: Path) -> Path:
    """Where a shard's child build works: beside the shard (same file system: the swap is a rename)."""
    return shard.parent / f".{shard.name}.build"


def plain_segments(shard: Path) -> list[str]:
    """The shard's segments that hold a vector without an HNSW index (searched by brute force)."""
    names = []
    folder = shard / SEGMENTS
    for segment in sorted(folder.iterdir()) if folder.is_dir() else []:
        try:
            config = json.loads((segment / "segment.json").read_text())["config"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # an unfinished segment (no segment.json): Edge skips it at load
        vectors = config.get("vector_data") or {}
        if any((v.get("index") or {}).get("type") == "plain" for v in vectors.values()):
            names.append(segment.name)
    return names


def copy_for_build(shard: Path, names: list[str]) -> Path:
    """A shard of its own under :func:`build_folder`: the config and copies of the named segments."""
    target = build_folder(shard)
    shutil.rmtree(target, ignore_errors=True)
    (target / SEGMENTS).mkdir(parents=True)
    shutil.copy2(shard / CONFIG, target / CONFIG)
    for name in names:
        shutil.copytree(shard / SEGMENTS / name, target / SEGMENTS / name)
    return target


def start_child(folder: Path) -> subprocess.Popen[bytes]:
    """The child process that builds the index of the shard copied to ``folder``."""
    return subprocess.Popen(
        [sys.executable, "-m", __name__, str(folder)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def built_segments(folder: Path, copied: list[str]) -> list[str]:
    """The segments the child's build left that are not the copies it started from (complete ones only)."""
    segments = folder / SEGMENTS
    return sorted(s.name for s in segments.iterdir() if s.name not in copied and (s / "version.info").exists())


def swap_segments(shard: Path, folder: Path, built: list[str], replaced: list[str]) -> None:
    """Move the built segments into the (closed) shard, then the plain segments they replace out of it (into
    the build folder, deleted by :func:`discard` once the shard is serving again: renames only, here).

    In this order, so that a crash in between leaves every point in some segment (the journal's replay,
    from the copy's sequence, completes the rest)."""
    for name in built:
        os.replace(folder / SEGMENTS / name, shard / SEGMENTS / name)
    old = folder / "replaced"
    old.mkdir(exist_ok=True)
    for name in replaced:
        os.replace(shard / SEGMENTS / name, old / name)


def discard(folder: Path) -> None:
    """Delete a build folder (a failed or abandoned build; the shard never saw it)."""
    shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Child: load the copied shard, build its index, close it (exit 0), or say why not (exit 1)."""
    import qdrant_edge as qe

    args = sys.argv[1:] if argv is None else argv
    with contextlib.suppress(OSError):
        os.nice(CHILD_NICE)
    try:
        shard = qe.EdgeShard.load(args[0])
        try:
            shard.optimize()
        finally:
            shard.close()
    except Exception as exc:  # reported to the parent on stderr; its shard is untouched
        logging.basicConfig(stream=sys.stderr)
        logger.error("index build failed: %s", exc)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
