"""What each page of the viewer asks for: validate the query, ask a service, shape the answer.

Reads go straight to the services with the tools' own input models (the same validation and the
same hybrid search as ``memory_search``) and emit no event: looking is not something the agent
did, so it stays out of the activity charts, and it touches nothing (the working-memory view reads
a fresh copy of a scope without access counts, TTLs or the pack cache). The two actions, forget and
unlink, go through the tool table like any tool call, so they are validated, redacted and recorded
exactly as ``memory_forget`` and ``memory_unlink``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from .. import activity
from ..errors import InvalidInput
from ..validation import describe_validation_error

if TYPE_CHECKING:
    from ..runtime import AgentMemory

# Query parameters that may repeat (a filter on any of several tags or files).
_LISTS = {"tags", "files"}
_FLAGS = {"include_superseded"}


def _params(query: dict[str, list[str]], allowed: set[str]) -> dict[str, Any]:
    """The page's query string as a tool input: repeated keys become lists, blanks are left out."""
    unknown = sorted(set(query) - allowed - {"token"})
    if unknown:
        raise InvalidInput(f"unknown parameter {unknown[0]!r}; this page takes {', '.join(sorted(allowed))}")
    data: dict[str, Any] = {}
    for key, values in query.items():
        kept = [v for v in values if v.strip()]
        if key == "token" or not kept:
            continue
        if key in _LISTS:
            data[key] = kept
        elif key in _FLAGS:
            if kept[-1] not in ("true", "false"):
                raise InvalidInput(f"field '{key}': must be true or false")
            data[key] = kept[-1] == "true"
        else:
            data[key] = kept[-1]
    return data


M = TypeVar("M", bound=BaseModel)


def _validated(model: type[M], data: dict[str, Any]) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(describe_validation_error(exc)) from exc


def _int(data: dict[str, Any], key: str) -> None:
    if key in data:
        try:
            data[key] = int(data[key])
        except ValueError as exc:
            raise InvalidInput(f"field '{key}': must be a whole number") from exc


def summary(rt: AgentMemory) -> dict[str, Any]:
    """The identity, its memories by kind and its plans: the header of every page."""
    counts = rt.memory().counts_by_kind()
    return {
        "identity": rt.identity_name,
        "memories": sum(counts.values()),
        "by_kind": counts,
        "plans": rt.plans().count(),
    }


def memories(rt: AgentMemory, query: dict[str, list[str]]) -> dict[str, Any]:
    """Search (with ``query``) or browse, newest first, with the filters kind, tags, files, since, until
    and include_superseded; browsing pages on with ``before``."""
    from ..memory.models import MemoryListInput, MemorySearchInput

    data = _params(query, {"query", "kind", "tags", "files", "since", "until", "include_superseded", "before", "limit"})
    _int(data, "limit")
    if "query" in data:
        data.pop("before", None)
        search = _validated(MemorySearchInput, {"limit": 20, **data})
        results = rt.memory().search(search)
        return {"mode": "search", "memories": results, "count": len(results), "next_before": None}
    return {"mode": "browse", **rt.memory().list(_validated(MemoryListInput, data))}


def memory(rt: AgentMemory, memory_id: str) -> dict[str, Any]:
    """One memory in full with its update chain, oldest first, each step saying when it was linked."""
    from ..memory.models import MemoryIdInput

    args = _validated(MemoryIdInput, {"id": memory_id})
    view = rt.memory().get(args.id)
    chain = view.get("chain") or []
    timeline = []
    for position, member in enumerate(chain):
        step = dict(member)
        if position > 0:
            # A memory supersedes the one before it from the moment it was stored.
            step["linked_at"] = member.get("created_at")
            step["replaces"] = chain[position - 1]["id"]
        step["current"] = member["id"] == memory_id
        timeline.append(step)
    return {"memory": view, "timeline": timeline}


def working_memory(rt: AgentMemory, query: dict[str, list[str]]) -> dict[str, Any]:
    """The scopes, and one scope's blocks, live items and pack for a budget: read without touching."""
    data = _params(query, {"scope", "budget"})
    _int(data, "budget")
    budget = data.get("budget", rt.config.cache.default_pack_budget)
    if not isinstance(budget, int) or not 50 <= budget <= 100_000:
        raise InvalidInput("field 'budget': must be a whole number from 50 to 100000")
    cache = rt.cache()
    scopes = cache.scopes()
    scope = data.get("scope") or (scopes[0] if scopes else None)
    if scope is None:
        return {"scopes": [], "scope": None}
    return {"scopes": scopes, **cache.peek(str(scope), budget)}


def plans(rt: AgentMemory, query: dict[str, list[str]]) -> dict[str, Any]:
    """Cached plans, most recently updated first (the same page as ``plan_list``)."""
    from ..plans.models import PlanListInput

    data = _params(query, {"stale", "contains", "offset", "limit"})
    _int(data, "offset")
    _int(data, "limit")
    if "stale" in data:
        if data["stale"] not in ("true", "false"):
            raise InvalidInput("field 'stale': must be true or false")
        data["stale"] = data["stale"] == "true"
    return rt.plans().list_plans(_validated(PlanListInput, data))


def plan(rt: AgentMemory, plan_id: str) -> dict[str, Any]:
    """One plan in full: prompt, steps, uses, score, outcomes."""
    from ..plans.models import PlanIdInput

    return rt.plans().get(_validated(PlanIdInput, {"plan_id": plan_id}).plan_id)


def activity_days(rt: AgentMemory) -> dict[str, Any]:
    """Stores, searches, recalls and plan answers per day, with latency p50/p95 (the activity log)."""
    folder = rt.activity_folder()
    return activity.daily(activity.read(folder) if folder is not None else [])


async def act(rt: AgentMemory, action: str, memory_id: str) -> dict[str, Any]:
    """Forget or unlink a memory through the tool table (validated, redacted and recorded as the tool)."""
    from ..tools.call import call_tool
    from ..tools.table import TOOLS_BY_NAME

    spec = TOOLS_BY_NAME[{"forget": "memory_forget", "unlink": "memory_unlink"}[action]]
    answer = await call_tool(spec, rt, {"id": memory_id})
    if not answer.ok:
        assert answer.error is not None
        return {"ok": False, "error": answer.error}
    return {"ok": True, "result": answer.output}
