"""Pydantic models at the plan cache's edges: the plan_* tool inputs and the stored plan.

Each input model is also the tool's JSON Schema (see ``tools/spec.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationInfo, field_validator

from ..redaction import names_in, redact, redact_json
from ..store.contract import iso
from ..validation import ToolInput, check_point_id, parse_timestamp

MAX_PROMPT_CHARS = 2_000
MAX_STEPS = 50
MAX_PLAN_BYTES = 64 * 1024
MAX_TOOL_NAME = 200
MAX_TOP_K = 20


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain non-whitespace text")
    return value


def plan_json_bytes(actions: list[dict[str, Any]]) -> int:
    """Size of the plan as compact UTF-8 JSON: the 64 KB rule is measured on this."""
    return len(json.dumps(actions, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


class _Input(ToolInput):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class PlanAction(_Input):
    """One step of a plan: a tool name and its arguments."""

    tool: str = Field(..., min_length=1, max_length=MAX_TOOL_NAME, description="Tool name (non-empty).")
    args: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments (a JSON object).")

    @field_validator("tool")
    @classmethod
    def _tool_not_blank(cls, value: str) -> str:
        return _not_blank(value).strip()


class PlanStoreInput(_Input):
    """Remember the tool sequence that solved a request."""

    prompt: str = Field(
        ..., min_length=1, max_length=MAX_PROMPT_CHARS, description="The request the plan solved (1-2,000 chars)."
    )
    actions: list[PlanAction] = Field(
        ..., min_length=1, max_length=MAX_STEPS, description="Ordered {tool, args} steps (1-50, at most 64 KB JSON)."
    )

    derived_from: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="The plan_id of the candidate this plan adapts (plan_lookup answered 'candidate').",
    )

    @field_validator("prompt")
    @classmethod
    def _prompt_not_blank(cls, value: str) -> str:
        return _not_blank(value)

    @field_validator("derived_from")
    @classmethod
    def _template_id(cls, value: str | None) -> str | None:
        return None if value is None else check_point_id(value)

    @field_validator("actions")
    @classmethod
    def _size(cls, actions: list[PlanAction]) -> list[PlanAction]:
        try:
            size = plan_json_bytes([a.model_dump() for a in actions])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"every args value must be JSON-serialisable ({exc})") from exc
        if size > MAX_PLAN_BYTES:
            raise ValueError(f"the plan is {size} bytes of JSON, more than the {MAX_PLAN_BYTES} allowed")
        return actions


def redact_plan(inp: PlanStoreInput) -> tuple[PlanStoreInput, dict[str, list[str]]]:
    """The plan with every secret in its prompt, tool names and args (keys and values, at any depth)
    redacted, and ``{"prompt" | "actions": [rule names]}`` for the parts that changed."""
    prompt, prompt_hits = redact(inp.prompt)
    action_hits: list[str] = []
    actions = []
    for action in inp.actions:
        tool, tool_hits = redact(action.tool)
        action_hits.extend(tool_hits)
        args = cast(dict[str, Any], redact_json(action.args, action_hits))
        # Already validated; redaction only swaps strings for markers, so the step stays valid.
        actions.append(PlanAction.model_construct(tool=tool, args=args))
    report = {name: names_in(hits) for name, hits in (("prompt", prompt_hits), ("actions", action_hits)) if hits}
    return inp.model_copy(update={"prompt": prompt, "actions": actions}), report


class PlanLookupInput(_Input):
    """Find a cached plan for a request."""

    prompt: str = Field(..., min_length=1, max_length=MAX_PROMPT_CHARS, description="The request to solve.")
    top_k: int | None = Field(
        None, ge=1, le=MAX_TOP_K, description="Nearest cached plans to consider (1-20; default from config, 3)."
    )

    @field_validator("prompt")
    @classmethod
    def _prompt_not_blank(cls, value: str) -> str:
        return _not_blank(value)


class PlanListInput(_Input):
    """List the cached plans (newest first), to review or forget a bad one."""

    limit: int = Field(20, ge=1, le=200, description="Plans per page (1-200).")
    offset: int = Field(0, ge=0, le=1_000_000, description="Plans to skip (for the next page).")
    stale: bool | None = Field(None, description="Only stale (true) or only fresh (false) plans; all by default.")
    contains: str | None = Field(None, min_length=1, max_length=200, description="Only prompts containing this.")


class PlanIdInput(_Input):
    """One cached plan, by the plan_id plan_lookup or plan_list gave."""

    plan_id: str = Field(..., min_length=1, max_length=64, description="The plan's id.")

    @field_validator("plan_id")
    @classmethod
    def _uuid(cls, value: str) -> str:
        return check_point_id(value)


class PlanRewardInput(_Input):
    """Report whether a replayed plan worked."""

    plan_id: str | None = Field(None, min_length=1, max_length=64, description="The plan_id plan_lookup returned.")
    prompt: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_PROMPT_CHARS,
        validate_default=True,
        description="Or the request whose plan to reward (give plan_id or prompt, not both).",
    )
    success: StrictBool = Field(..., description="true if replaying the plan solved the request.")
    tool_failure: StrictBool = Field(
        False, validate_default=True, description="true if a step's tool call failed (marks the plan stale)."
    )

    @field_validator("plan_id")
    @classmethod
    def _uuid(cls, value: str | None) -> str | None:
        return None if value is None else check_point_id(value)

    @field_validator("prompt")
    @classmethod
    def _one_target(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            _not_blank(value)
        if "plan_id" not in info.data:
            return value  # plan_id itself was invalid: that error is already reported
        if (info.data["plan_id"] is None) == (value is None):
            raise ValueError("give exactly one of 'plan_id' or 'prompt'")
        return value

    @field_validator("tool_failure")
    @classmethod
    def _failure_is_not_success(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("success") is True:
            raise ValueError("can only be true when 'success' is false")
        return value


# A plan's payload also carries its status, the keyword plan_lookup filters fresh plans by.
FRESH = "fresh"
STALE = "stale"


class PlanRecord(BaseModel):
    """A stored plan (the point's payload, minus the signature the matcher keeps beside it)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    prompt: str
    prompt_norm: str
    actions: list[dict[str, Any]]
    score: float = Field(1.0, ge=0.0, le=1.0)
    stale: bool = False
    uses: int = Field(0, ge=0)
    rewards: int = Field(0, ge=0)
    successes: int = Field(0, ge=0)
    failures: int = Field(0, ge=0)
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None = None
    rewarded_at: datetime | None = None
    stale_reason: str | None = None
    derived_from: str | None = None
    """The plan this one adapts (a candidate the agent changed a parameter of)."""

    @field_validator("created_at", "updated_at", "last_used_at", "rewarded_at", mode="before")
    @classmethod
    def _iso(cls, value: object) -> datetime | None:
        return None if value is None else parse_timestamp(value)

    def to_payload(self) -> dict[str, Any]:
        """The plan's payload as stored: times as RFC 3339 UTC (what the datetime index parses), and its status."""
        payload = self.model_dump(mode="json")
        for key in ("created_at", "updated_at", "last_used_at", "rewarded_at"):
            value = getattr(self, key)
            payload[key] = iso(value) if value is not None else None
        payload["status"] = STALE if self.stale else FRESH
        return payload

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> PlanRecord:
        """A plan as read from the store (its status, which follows ``stale``, and fields an older version
        wrote, such as the old matcher's signature, are left behind)."""
        return cls.model_validate({k: v for k, v in payload.items() if k in cls.model_fields})


def use_payload(uses: int, at: datetime) -> dict[str, Any]:
    """The update that counts a use of a plan (its new count, and when)."""
    return {"uses": uses, "last_used_at": iso(at)}


def reward_payload(
    plan: PlanFields,
    *,
    success: bool,
    score: float,
    stale: bool,
    stale_reason: str | None,
    at: datetime,
    used: bool,
) -> dict[str, Any]:
    """The update a reward writes to the stored ``plan``: the new score and status, the counters, and the use of
    a replayed candidate (``used``)."""
    update: dict[str, Any] = {
        "score": score,
        "stale": stale,
        "status": STALE if stale else FRESH,
        "stale_reason": stale_reason if stale else None,
        "rewards": plan.rewards + 1,
        "successes": plan.successes + (1 if success else 0),
        "failures": plan.failures + (0 if success else 1),
        "rewarded_at": iso(at),
    }
    if used:
        update.update(use_payload(plan.uses + 1, at))
    return update


class PlanExportRecord(PlanRecord):
    """One plan as ``agent-memory export`` writes it (a line beside the memories) and import reads it."""

    record: Literal["plan"] = "plan"
    plan_id: str

    @field_validator("plan_id")
    @classmethod
    def _uuid(cls, value: str) -> str:
        return check_point_id(value)

    @field_validator("prompt")
    @classmethod
    def _prompt_size(cls, value: str) -> str:
        if not value.strip() or len(value) > MAX_PROMPT_CHARS:
            raise ValueError(f"must be 1-{MAX_PROMPT_CHARS} characters of text")
        return value


# The counters a plan keeps (history: an overwrite of the plan keeps them).
COUNTERS = ("uses", "rewards", "successes", "failures")
# Fields plans stored by older versions carry that are never shown: the old matcher's signature, and the status
# (it follows ``stale``).
_NOT_SHOWN = frozenset({"sig", "sig_rule", "status"})


class PlanFields:
    """Typed reads of a plan's payload as the store returned it, without validating it.

    plan_lookup reads a few fields of each nearest plan, and a plan stored by an older version may lack a field
    :class:`PlanRecord` requires: reading it whole would fail a lookup on it. Each field keeps the default its
    readers always had; counters default to 0.
    """

    __slots__ = ("_payload",)

    def __init__(self, payload: Mapping[str, Any]) -> None:
        self._payload = payload

    @property
    def prompt(self) -> str:
        return str(self._payload.get("prompt", ""))

    @property
    def actions(self) -> list[dict[str, Any]]:
        return list(self._payload.get("actions") or [])

    @property
    def score(self) -> float:
        return float(self._payload.get("score", 0.0))

    @property
    def stale(self) -> bool:
        return bool(self._payload.get("stale"))

    @property
    def stale_reason(self) -> str | None:
        return self._payload.get("stale_reason")

    @property
    def uses(self) -> int:
        return int(self._payload.get("uses", 0))

    @property
    def rewards(self) -> int:
        return int(self._payload.get("rewards", 0))

    @property
    def successes(self) -> int:
        return int(self._payload.get("successes", 0))

    @property
    def failures(self) -> int:
        return int(self._payload.get("failures", 0))

    @property
    def counts(self) -> dict[str, int]:
        """Every counter by name."""
        return {name: int(self._payload.get(name, 0)) for name in COUNTERS}

    @property
    def derived_from(self) -> str | None:
        return self._payload.get("derived_from")

    @property
    def created_at(self) -> str | None:
        """As stored (RFC 3339 UTC)."""
        return self._payload.get("created_at")

    @property
    def updated_at(self) -> str | None:
        return self._payload.get("updated_at")

    @property
    def last_used_at(self) -> str | None:
        return self._payload.get("last_used_at")

    @property
    def rewarded_at(self) -> str | None:
        return self._payload.get("rewarded_at")

    def shown(self, plan_id: str) -> dict[str, Any]:
        """The plan as plan_get returns it: every stored field but the matcher's internals and the status."""
        return {"plan_id": plan_id, **{k: v for k, v in self._payload.items() if k not in _NOT_SHOWN}}

    def exported(self, plan_id: str) -> PlanExportRecord:
        """The plan as one export line (fields an older version wrote and export does not know are left out)."""
        known = {k: v for k, v in self._payload.items() if k in PlanExportRecord.model_fields}
        return PlanExportRecord.model_validate({**known, "plan_id": plan_id})
