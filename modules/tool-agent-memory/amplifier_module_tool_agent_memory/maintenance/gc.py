"""Collecting garbage (``agent-memory gc``): expired working-memory items, and deleted points' text left in
the engine's files (a purge waiting for an idle collection, or one a session that ended without close left)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import MemoryConfig
    from ..identity import ResolvedIdentity


def collect_garbage(config: MemoryConfig, identity: ResolvedIdentity, limit: int | None = None) -> dict[str, Any]:
    """Sweep expired cache items (at most ``limit``), then run every due engine purge; what was done."""
    from ..cache.service import CACHE
    from ..memory.service import MEMORIES
    from ..plans.service import PLANS
    from ..runtime import AgentMemory
    from ..store.edge_collection import EdgeCollection

    removed = 0
    purges: list[dict[str, Any]] = []
    folder = config.resolved_root() / identity.name
    embedded = config.storage.backend == "edge"
    # Only collections that exist: do not create an embedded store (or a collection) just to find nothing.
    specs = [spec for spec in (MEMORIES, CACHE, PLANS) if (folder / spec.name).is_dir()] if embedded else []
    if not embedded or specs:
        rt = AgentMemory(config, identity, session_id="cli")
        try:
            if not embedded or CACHE in specs:
                removed = rt.cache().sweep_expired(limit=limit)
            # After the sweep: its deletes are purged too. A purge above storage.purge_prompt_max_points waits
            # for the collection to be idle; gc runs it (or any left by a session that ended without close) now.
            for spec in specs:
                coll = rt.store().collection(spec)
                if isinstance(coll, EdgeCollection):
                    purges.append(coll.purge_due())
        finally:
            rt.close()
    return {"removed": removed, "identity": identity.name, "purges": purges}
