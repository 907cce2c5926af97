"""Property: for any sequence of writes, waits and compactions and any budget in range, the pack
never exceeds its budget, never shows an expired, evicted or replaced item, and always keeps the
highest-importance live warning that fits."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from data import DISTINCT_FACTS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.tokens import count_tokens

DEFAULT_TTL = 30.0
_identities = itertools.count()

write_op = st.tuples(
    st.just("write"),
    st.sampled_from(["fact", "decision", "snippet", "warning"]),
    st.integers(0, 11),
    st.floats(0.0, 1.0),
    st.sampled_from([None, 0.0, 1.0, 3.0, 10.0]),
    st.sampled_from([None, "src/a.py", "src/b.py:10"]),
)
wait_op = st.tuples(st.just("wait"), st.integers(1, 20))
close_op = st.tuples(st.just("close"))
ops = st.lists(st.one_of(write_op, write_op, write_op, wait_op, close_op), min_size=1, max_size=14)
budgets = st.one_of(st.integers(50, 160), st.integers(50, 8000))


@dataclass
class Modelled:
    line: str
    kind: str
    importance: float
    ttl: float
    touched: datetime
    file_ref: str | None

    def alive(self, now: datetime) -> bool:
        return self.ttl == 0 or now < self.touched + timedelta(minutes=self.ttl)


def _fits_alone(item: Modelled, out: dict[str, Any], budget: int) -> bool:
    """The pack with only this warning, its counters at their widest, is within budget."""
    included = sum(len(out.get(k, [])) for k in ("facts", "decisions", "snippets", "warnings"))
    minimal: dict[str, Any] = {
        "scope": out["scope"],
        "warnings": [item.line],
        "artifact_pointers": [item.file_ref] if item.file_ref else [],
        "token_count": budget,
        "full_tokens": out["full_tokens"],
        "omitted": out["omitted"] + included,
        "version": out["version"],
        "is_fresh": False,
        "identity": out["identity"],
    }
    return count_tokens(json.dumps(minimal)) <= budget


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops, budget=budgets, with_query=st.booleans())
def test_pack_respects_budget_expiry_eviction_and_warnings(
    make_runtime: Callable[..., AgentMemory],
    ops: list[tuple[Any, ...]],
    budget: int,
    with_query: bool,
    make_cache: Any,
    make_clock: Any,
) -> None:
    clock = make_clock()
    svc = make_cache(identity=f"prop{next(_identities)}", max_closed_blocks=2, clock=clock)
    model: dict[str, Modelled] = {}
    for n, op in enumerate(ops):
        if op[0] == "wait":
            clock.advance(minutes=op[1])
        elif op[0] == "close":
            svc.compact("default")
        else:
            _, kind, fact, importance, ttl, ref = op
            content = f"{DISTINCT_FACTS[fact]} (note {n})"
            fields: dict[str, Any] = {"importance": importance, "ttl_minutes": ttl, "file_ref": ref}
            out = svc.note(content, kind, **{k: v for k, v in fields.items() if v is not None})
            if "superseded" in out:
                # A write that changes a live item's value replaces it: the older is no longer live.
                model.pop(out["superseded"]["item_id"], None)
            item = model.get(out["item_id"])
            if out["merged"] and item is not None:
                item.importance = min(1.0, round(item.importance + 0.1, 6))
                item.touched = clock.now
                item.ttl = ttl if ttl is not None else item.ttl
            else:
                line = f"[{ref}] {content}" if ref else content
                model[out["item_id"]] = Modelled(
                    line, kind, importance, DEFAULT_TTL if ttl is None else ttl, clock.now, ref
                )
    out = svc.pack(token_budget=budget, **({"query": "deploy schedule and databases"} if with_query else {}))

    assert out["token_count"] == make_cache.rendered_tokens(out) <= budget
    by_line = {m.line: (item_id, m) for item_id, m in model.items()}
    shown = [line for k in ("facts", "decisions", "snippets", "warnings") for line in out.get(k, [])]
    stored = {str(r.id) for r in svc.coll.retrieve([by_line[line][0] for line in shown])}
    for line in shown:
        item_id, item = by_line[line]
        assert item.alive(clock.now), f"expired item in the pack: {line}"
        assert item_id in stored, f"evicted item in the pack: {line}"
    present = [
        m for item_id, m in model.items()
        if m.kind == "warning" and m.alive(clock.now) and svc.coll.retrieve([item_id])
    ]
    fitting = [m for m in present if _fits_alone(m, out, budget)]
    if fitting:
        top = max(m.importance for m in fitting)
        shown_importance = [m.importance for m in present if m.line in out.get("warnings", [])]
        assert shown_importance and max(shown_importance) >= top
