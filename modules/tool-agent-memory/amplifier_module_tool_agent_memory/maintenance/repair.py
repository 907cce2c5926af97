"""Rebuilding an embedded store's engine files from its journals (``agent-memory repair``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .stores import Meter, NoMeter, embedded_store_path, recorded_store

if TYPE_CHECKING:
    from ..config import MemoryConfig


def repair(config: MemoryConfig, identity: str, meter: Callable[[str], Meter] | None = None) -> list[dict[str, Any]]:
    """Rebuild every collection that has a journal; per collection, what was done.

    ``meter``: the progress meter of one collection's rebuild, by collection name.
    """
    from ..cache.service import CACHE
    from ..memory.service import MEMORIES
    from ..plans.service import PLANS
    from ..store.edge import JOURNAL_DIR, rebuild_collection

    path = embedded_store_path(
        config, identity, "repair rebuilds an embedded store from its journal; a Qdrant server keeps its own data"
    )
    results = []
    with recorded_store(path.parent, identity) as store:
        for spec in (MEMORIES, CACHE, PLANS):
            if not (store.path / JOURNAL_DIR / spec.name).is_dir():
                continue
            progress = meter(spec.name) if meter is not None else NoMeter()

            def set_total(total: int, bar: Meter = progress) -> None:
                bar.total = total

            results.append(rebuild_collection(store, spec, progress.advance, set_total))
            progress.finish()
    return results
