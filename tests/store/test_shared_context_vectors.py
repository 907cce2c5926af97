"""A shared store's context vectors written after the answer (memory/context_vectors.py): a client whose owner
dies before the completion loses nothing, and the next owner's open writes the vector.

The client is a child process whose completions are held forever; the owner is killed after the client's answer,
then the client too: the memory must be in the store with its marker, and repaired when the store is next opened.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from test_sharing import Proc, processes  # noqa: F401 - the fixture, shared with the sharing tests

from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.memory.record import CTX_PENDING
from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.runtime import AgentMemory

FIRST = "The staging database is restored from the nightly snapshot at 02:00 UTC."
SECOND = "Invoices for the Berlin office are approved by Marta Nowak."

# A client of the running owner: stores two memories with every completion held, prints the second's id and
# waits to be killed.
_CLIENT = r"""
import json, sys, threading
from amplifier_module_tool_agent_memory.config import parse_config
from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
from amplifier_module_tool_agent_memory.memory.context_vectors import ContextVectors
from amplifier_module_tool_agent_memory.memory.models import MemoryStoreInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory

ContextVectors.complete = lambda *args: threading.Event().wait()  # held forever
root, first, second = sys.argv[1:4]
rt = AgentMemory(parse_config({"storage_root": root}), ResolvedIdentity("alice", "config"), session_id="client")
svc = rt.memory()
svc.store(MemoryStoreInput(content=first))
print(json.dumps({"id": svc.store(MemoryStoreInput(content=second)).id, "owner": rt.store().is_owner}), flush=True)
threading.Event().wait()
"""


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def test_a_client_whose_owner_dies_before_the_completion_loses_nothing_and_the_next_open_repairs_it(
    processes: Callable[[str], Proc],  # noqa: F811 - the imported fixture
    make_runtime: Callable[..., AgentMemory],
    embedder: CachedEmbedder,
    root: Path,
) -> None:
    owner = processes("session-owner")
    assert owner.hello["owner"]
    client = subprocess.Popen(
        [sys.executable, "-c", _CLIENT, str(root), FIRST, SECOND],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    try:
        assert client.stdout is not None
        answer = json.loads(client.stdout.readline())
        assert answer["owner"] is False  # stored through the owner
        owner.proc.send_signal(signal.SIGKILL)
        owner.proc.wait(timeout=30)
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait(timeout=30)
    memory_id = answer["id"]
    rt = make_runtime(session_id="next")
    records = rt.store().collection(MEMORIES).retrieve([memory_id], with_vector=True)
    assert records, "the acknowledged memory was lost"
    assert dict(records[0].payload or {})[CTX_PENDING] is True  # the completion never ran
    svc = rt.memory()  # the next owner's open repairs it
    assert svc.settle(120) == 0
    [record] = rt.store().collection(MEMORIES).retrieve([memory_id], with_vector=True)
    assert CTX_PENDING not in dict(record.payload or {})
    window = embedder.embed_documents([f"{FIRST}\n{SECOND}"])[0]
    assert _cosine(list(dict(record.vector or {})["ctx"]), window) > 0.99999
