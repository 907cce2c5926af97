"""PlanRecord: a plan's payload converts to its record and back unchanged; the updates a use and a reward
write come from the plans' record module, and what the plan service writes is exactly its record."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from amplifier_module_tool_agent_memory.plans.models import (
    FRESH,
    STALE,
    PlanFields,
    PlanRecord,
    PlanRewardInput,
    PlanStoreInput,
    reward_payload,
    use_payload,
)
from amplifier_module_tool_agent_memory.runtime import AgentMemory

T0 = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
PLAN = PlanRecord(
    prompt="deploy the billing service to staging", prompt_norm="deploy the billing service to staging",
    actions=[{"tool": "bash", "args": {"command": "make deploy ENV=staging"}}], score=0.75, stale=False, uses=3,
    rewards=2, successes=1, failures=1, created_at=T0, updated_at=T0, last_used_at=T0, rewarded_at=T0,
    derived_from="00000000-0000-4000-8000-000000000021",
)


def test_a_plan_round_trips_through_its_payload_and_its_status_follows_stale() -> None:
    payload = PLAN.to_payload()
    assert payload["status"] == FRESH and payload["created_at"] == "2026-01-10T09:00:00.000000Z"
    assert PlanRecord.from_payload(payload) == PLAN
    assert PlanRecord.from_payload(payload).to_payload() == payload
    stale = PLAN.model_copy(update={"stale": True, "stale_reason": "a tool call failed"})
    assert stale.to_payload()["status"] == STALE
    # A field an older version wrote (the old matcher's signature) is left behind on reading.
    assert PlanRecord.from_payload({**payload, "sig": [1, 2], "sig_rule": "v1"}) == PLAN


def test_use_and_reward_updates() -> None:
    assert use_payload(4, T0) == {"uses": 4, "last_used_at": "2026-01-10T09:00:00.000000Z"}
    update = reward_payload(
        PlanFields(PLAN.to_payload()), success=False, score=0.3, stale=True, stale_reason="score fell", at=T0, used=True
    )
    assert update == {
        "score": 0.3, "stale": True, "status": STALE, "stale_reason": "score fell", "rewards": 3, "successes": 1,
        "failures": 2, "rewarded_at": "2026-01-10T09:00:00.000000Z", "uses": 4,
        "last_used_at": "2026-01-10T09:00:00.000000Z",
    }
    # A plan already stale without a reason (an older version) stays stale.
    kept = reward_payload(PlanFields(PLAN.to_payload()), success=True, score=0.9, stale=True, stale_reason=None, at=T0,
                          used=False)
    assert kept["stale"] is True and kept["status"] == STALE and "uses" not in kept


def test_what_the_plan_service_writes_is_exactly_its_record(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = make_runtime().plans()
    out = svc.store(PlanStoreInput.model_validate(
        {"prompt": "rotate the staging database credentials", "actions": [{"tool": "bash", "args": {"cmd": "x"}}]}
    ))
    svc.reward(PlanRewardInput(plan_id=out.plan_id, success=False))
    raw = dict(svc.coll.retrieve([out.plan_id])[0].payload or {})
    assert raw["rewards"] == 1 and raw["failures"] == 1
    # Compared without nulls: the server backend's stand-in (qdrant-client local mode) drops a null field.
    assert _set(PlanRecord.from_payload(raw).to_payload()) == _set(raw)


def _set(payload: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in payload.items() if v is not None}
