"""Re-embedding an identity's store with another model (``agent-memory reindex``).

The memories and plans are read without the old model (it may no longer be installed), the
store's folder is moved aside, a fresh store is written with the configured model, and the old
folder is deleted only once that succeeded; any failure puts the old folder back.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .stores import MaintenanceError, Meter, NoMeter, embedded_store_path, recorded_store

if TYPE_CHECKING:
    from pathlib import Path

    from ..config import MemoryConfig
    from ..identity import ResolvedIdentity
    from ..memory.models import MemoryRecord

logger = logging.getLogger(__name__)

Warn = Callable[[str], None]


def read_store(
    config: MemoryConfig, root: Path, identity: str, warn: Warn | None = None
) -> tuple[str, list[MemoryRecord], list[tuple[str, dict[str, Any]]]]:
    """The store's model, memories and plans, read without its model; memories from the journal when the
    engine cannot open them (``warn`` is told so)."""
    from ..embeddings import get_embedder
    from ..errors import StoreDamagedError
    from ..memory.service import MEMORIES, MemoryService
    from ..plans.service import PLANS, stored_plans
    from ..store.rebuild import JournalView

    # Reading embeds nothing: the new model's embedder only satisfies the services' constructors.
    embedder = get_embedder(config.embeddings)
    with recorded_store(root, identity) as store:
        try:
            coll: Any = store.collection(MEMORIES)
        except StoreDamagedError as exc:
            if warn is not None:
                warn(f"{exc}; reading the memories from the journal")
            coll = JournalView(MEMORIES.name, store.journal_only(MEMORIES))
        records = list(MemoryService(coll, embedder, config.memory, thread="cli").export())
        plans: list[tuple[str, dict[str, Any]]] = []
        if (store.path / PLANS.name).is_dir():
            plans = list(stored_plans(store.collection(PLANS)))
        return store.model_id, records, plans


def reindex(
    config: MemoryConfig, identity: ResolvedIdentity, meter: Meter | None = None, warn: Warn | None = None
) -> dict[str, Any]:
    """Re-embed the identity's memories and plans with ``config``'s model into a fresh store; what was done.

    The working-memory cache is not carried over (its items are short-lived).
    """
    from ..runtime import AgentMemory

    meter = meter or NoMeter()
    path = embedded_store_path(
        config, identity.name, "reindex rebuilds an embedded store; on a server, export and import into new collections"
    )
    root = path.parent
    aside = root / f".{identity.name}.before-reindex"
    if aside.exists():
        raise MaintenanceError(
            f"{aside} is left from an earlier reindex: move it back to {path} or delete it, then retry"
        )
    old_model, records, plans = read_store(config, root, identity.name, warn)
    records.sort(key=lambda record: record.created_at)
    path.rename(aside)
    try:
        new = AgentMemory(config, identity, session_id="cli")
        try:
            meter.total = len(records) + len(plans)
            memory = new.memory()
            memory.coll.observer = meter.advance
            memory.import_records(records, batch=new.config.embeddings.batch_size)
            memory.coll.observer = None
            if plans:
                new.plans().restore_plans(plans, meter.advance)
            meter.finish()
            new_model = new.store().model_id
        finally:
            new.close()
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        aside.rename(path)
        raise
    shutil.rmtree(aside, ignore_errors=True)
    logger.info("store reindexed", extra={"identity": identity.name, "from": old_model, "to": new_model})
    return {
        "identity": identity.name,
        "from_model": old_model,
        "to_model": new_model,
        "memories": len(records),
        "plans": len(plans),
    }
