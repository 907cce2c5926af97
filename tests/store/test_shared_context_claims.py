"""A shared store's claim files (store/claims.py): the process that takes the store over from a SIGKILLed owner
finds the owner's claim free, repairs what it left marked, and deletes the claim; a claim of a live process is
left to it."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_sharing import FACTS, Proc, _wait_written, processes  # noqa: F401 - the fixture, shared with the sharing tests

from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.memory.record import CTX_PENDING
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store.claims import CLAIMS_DIR, dead_claims

pytestmark = pytest.mark.slow


def _claims(root: Path) -> list[str]:
    folder = root / "alice" / CLAIMS_DIR
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def _gone(root: Path, claim: str, bound_s: float = 60.0) -> bool:
    """Polls until ``claim`` is deleted (the repair runs on another thread); False past ``bound_s``."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        if claim not in _claims(root):
            return True
        time.sleep(0.05)
    return False


def test_the_process_that_takes_over_from_a_killed_owner_repairs_through_its_claim(
    processes: Callable[[str], Proc],  # noqa: F811 - the imported fixture
    make_runtime: Callable[..., AgentMemory],
    embedder: CachedEmbedder,
    root: Path,
) -> None:
    doomed = processes("session-doomed")
    survivor = make_runtime(session_id="session-survivor")
    svc = survivor.memory()
    assert doomed.hello["owner"] and not survivor.store().is_owner
    assert svc.repairs_started == 0
    doomed.ask("store", content=FACTS[0])
    doomed.ask("stall_ctx")
    memory_id = doomed.ask("store", content=FACTS[1])["id"]
    [record] = svc.coll.retrieve([memory_id])
    assert (record.payload or {}).get(CTX_PENDING) is True
    [claim] = _claims(root)
    assert dead_claims(root / "alice" / CLAIMS_DIR) == [], "the live owner holds its claim"

    doomed.proc.send_signal(signal.SIGKILL)
    doomed.proc.wait(timeout=30)
    assert svc.coll.count() == 2  # a call: the survivor takes the store over
    assert survivor.store().is_owner
    assert _wait_written(svc.coll, memory_id, embedder), "the dead owner's marker was repaired"
    assert _gone(root, claim), "its claim goes once the repair finished"
    assert svc.repairs_started == 1
