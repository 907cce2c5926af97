"""The plan cache through the plan_* tools: hits, misses, overwrite, rewards, staleness, isolation, events."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from amplifier_core import HookResult

from amplifier_module_tool_agent_memory.plans.service import plan_id_for
from amplifier_module_tool_agent_memory.runtime import AgentMemory

FASTER = "Make the player move faster"
FASTER_PLAN = [
    {"tool": "code_search", "args": {"query": "player movement speed"}},
    {"tool": "edit_file", "args": {"path": "src/Player.cs", "find": "speed = 5f", "replace": "speed = 7.5f"}},
]
MUSIC = "Set the background music volume to 50 percent"
MUSIC_PLAN = [{"tool": "edit_file", "args": {"path": "config/audio.json", "set": {"music_volume": 0.5}}}]
GZIP = "Compress the nightly log archive with gzip"
GZIP_PLAN = [{"tool": "run_command", "args": {"command": "gzip -9 /var/log/nightly.tar"}}]


async def store(call: Any, tools: dict[str, Any], prompt: str, actions: list[dict[str, Any]]) -> dict[str, Any]:
    return await call(tools["plan_store"], {"prompt": prompt, "actions": actions})


async def lookup(call: Any, tools: dict[str, Any], prompt: str, **extra: Any) -> dict[str, Any]:
    return await call(tools["plan_lookup"], {"prompt": prompt, **extra})


async def reward(call: Any, tools: dict[str, Any], **args: Any) -> dict[str, Any]:
    return await call(tools["plan_reward"], args)


def ema(score: float, outcomes: list[bool], alpha: float = 0.3) -> float:
    """The issue's update rule applied in order."""
    for success in outcomes:
        score = alpha * (1.0 if success else 0.0) + (1.0 - alpha) * score
    return score


async def test_mount_registers_the_plan_tools(tools: dict[str, Any]) -> None:
    assert {"plan_lookup", "plan_store", "plan_reward"} <= set(tools)


async def test_stored_plan_is_returned_for_the_same_prompt(tools: dict[str, Any], call: Any) -> None:
    stored = await store(call, tools, FASTER, FASTER_PLAN)
    hit = await lookup(call, tools, "make the player move faster.")
    assert hit["hit"] is True
    assert hit["plan_id"] == stored["plan_id"]
    assert hit["actions"] == FASTER_PLAN
    assert hit["prompt"] == FASTER
    assert hit["score"] == 1.0
    assert hit["answer"] == "hit"


async def test_a_trivial_rewording_is_a_certified_hit(tools: dict[str, Any], call: Any) -> None:
    stored = await store(call, tools, GZIP, GZIP_PLAN)
    hit = await lookup(call, tools, "Could you compress the nightly log archives with gzip, please?")
    assert (hit["hit"], hit["answer"], hit["plan_id"]) == (True, "hit", stored["plan_id"])
    assert hit["decided_by"] == "certify"
    assert "replay" in hit["next"] and "plan_reward" in hit["next"]


async def test_a_loose_rewording_is_a_candidate_with_what_differs(tools: dict[str, Any], call: Any) -> None:
    stored = await store(call, tools, GZIP, GZIP_PLAN)
    out = await lookup(call, tools, "Use gzip to compress the nightly log archive")
    assert (out["hit"], out["answer"]) == (False, "candidate")
    first = out["candidates"][0]
    assert (first["plan_id"], first["prompt"], first["actions"]) == (stored["plan_id"], GZIP, GZIP_PLAN)
    assert first["differences"] == ["order: with gzip -> use gzip to", "qualifier: with -> (none)",
                                    "qualifier: (none) -> use to"]
    assert (first["uses"], first["steps"], first["score"]) == (0, 1, 1.0)
    assert "derived_from" in out["next"] and "plan afresh" in out["next"]


@pytest.mark.parametrize(
    ("stored_prompt", "near_miss", "difference"),
    [
        ("Sync the calendar from Outlook to Google", "Sync the calendar from Google to Outlook",
         "order: outlook to google -> google to outlook"),
        ("Point the webhook at https://hooks.acme.io/build", "Point the webhook at http://hooks.acme.io/build",
         "url: https://hooks.acme.io/build -> http://hooks.acme.io/build"),
        ("Fix the typo in docs/setup.md", "Fix the typo in docs/usage.md", "path: docs/setup.md -> docs/usage.md"),
        ("Allow only the admin role to call DELETE /api/projects/{id}.",
         "Allow only the admin role to call PUT /api/projects/{id}.", "content: delete -> put"),
        ("Archive the invoices older than a year", "Archive the unpaid invoices older than a year",
         "qualifier: (none) -> unpaid"),
        ("Enable the audit log on the billing service", "Disable the audit log on the billing service",
         "polarity: enable -> disable"),
    ],
)
async def test_a_near_miss_is_a_candidate_naming_what_differs(
    tools: dict[str, Any], stored_prompt: str, near_miss: str, difference: str, call: Any
) -> None:
    stored = await store(call, tools, stored_prompt, GZIP_PLAN)
    out = await lookup(call, tools, near_miss)
    assert (out["hit"], out["answer"]) == (False, "candidate")
    nearest = out["candidates"][0]
    assert nearest["plan_id"] == stored["plan_id"]
    assert nearest["differences"] == [difference]


async def test_candidates_come_nearest_first_and_long_actions_are_trimmed(tools: dict[str, Any], call: Any) -> None:
    long_plan = [{"tool": "edit_file", "args": {"path": f"src/f{k}.py", "replace": "x" * 500}} for k in range(12)]
    await store(call, tools, FASTER, long_plan)
    await store(call, tools, "Make the player move slower", FASTER_PLAN)
    out = await lookup(call, tools, "Make the player walk faster")
    assert out["answer"] == "candidate"
    scores = [c["similarity"] for c in out["candidates"]]
    assert scores == sorted(scores, reverse=True) and len(scores) == 2
    faster = next(c for c in out["candidates"] if c["prompt"] == FASTER)
    assert faster["steps"] == 12 and len(faster["actions"]) == 8
    assert faster["actions"][0]["args"]["replace"].endswith("... [300 more chars]")
    assert "plan_get" in faster["trimmed"]


async def test_an_unrelated_request_is_a_miss_without_candidates(tools: dict[str, Any], call: Any) -> None:
    await store(call, tools, FASTER, FASTER_PLAN)
    await store(call, tools, MUSIC, MUSIC_PLAN)
    out = await lookup(call, tools, "What is the weather like in Lisbon tomorrow?")
    assert out["answer"] == "miss" and out["candidates"] == [] and "plan afresh" in out["next"]


async def test_the_floor_decides_between_candidate_and_miss(mount_tools: Callable[..., Any], call: Any) -> None:
    low, _ = await mount_tools(plans={"candidate_floor": 0.0})
    await store(call, low, FASTER, FASTER_PLAN)
    assert (await lookup(call, low, "Make the dough rise faster"))["answer"] == "candidate"
    high, _ = await mount_tools(agent_identity="bob", plans={"candidate_floor": 0.99})
    await store(call, high, FASTER, FASTER_PLAN)
    assert (await lookup(call, high, "Make the player walk faster"))["answer"] == "miss"
    assert (await lookup(call, high, "please make the player move faster"))["answer"] == "hit"  # certified: any floor


async def test_the_old_threshold_setting_keeps_its_meaning_or_is_refused(mount_tools: Callable[..., Any]) -> None:
    from amplifier_module_tool_agent_memory.config import ConfigError, parse_config

    assert parse_config({"plans": {"similarity_threshold": 0.7}}).plans.candidate_floor == 0.7
    with pytest.raises(ConfigError, match="replaced by candidate_floor"):
        parse_config({"plans": {"similarity_threshold": 0.7, "candidate_floor": 0.5}})


async def test_a_rewarded_candidate_counts_a_use(tools: dict[str, Any], call: Any) -> None:
    stored = await store(call, tools, FASTER, FASTER_PLAN)
    out = await lookup(call, tools, "Make the player walk faster")
    assert out["candidates"][0]["uses"] == 0
    await reward(call, tools, plan_id=stored["plan_id"], success=True)
    assert (await lookup(call, tools, FASTER))["uses"] == 2  # the candidate's use, then this hit


async def test_an_adapted_plan_is_stored_derived_from_its_template(tools: dict[str, Any], call: Any) -> None:
    template = await store(call, tools, "Allow only admins to call DELETE /api/projects/{id}", FASTER_PLAN)
    adapted = await call(tools["plan_store"], {
        "prompt": "Allow only admins to call PUT /api/projects/{id}", "actions": MUSIC_PLAN,
        "derived_from": template["plan_id"]})
    got = await call(tools["plan_get"], {"plan_id": adapted["plan_id"]})
    assert got["derived_from"] == template["plan_id"] and got["actions"] == MUSIC_PLAN
    err = await call.error(tools["plan_store"], {"prompt": "x y", "actions": MUSIC_PLAN,
                                                      "derived_from": plan_id_for("never stored")})
    assert err["type"] == "not_found"


async def test_plans_can_be_listed_read_and_forgotten(tools: dict[str, Any], call: Any) -> None:
    faster = await store(call, tools, FASTER, FASTER_PLAN)
    await store(call, tools, MUSIC, MUSIC_PLAN)
    listed = await call(tools["plan_list"], {})
    assert listed["total"] == 2 and [p["prompt"] for p in listed["plans"]] == [MUSIC, FASTER]
    only = await call(tools["plan_list"], {"contains": "player"})
    assert [p["plan_id"] for p in only["plans"]] == [faster["plan_id"]]
    got = await call(tools["plan_get"], {"plan_id": faster["plan_id"]})
    assert got["actions"] == FASTER_PLAN
    gone = await call(tools["plan_forget"], {"plan_id": faster["plan_id"]})
    assert gone == {"plan_id": faster["plan_id"], "forgotten": True, "prompt": FASTER, "identity": "alice"}
    assert (await lookup(call, tools, FASTER))["hit"] is False
    err = await call.error(tools["plan_forget"], {"plan_id": faster["plan_id"]})
    assert err["type"] == "not_found"


async def test_lookup_in_an_empty_cache_is_a_miss_without_candidates(tools: dict[str, Any], call: Any) -> None:
    out = await lookup(call, tools, FASTER)
    assert (out["hit"], out["answer"], out["candidates"]) == (False, "miss", [])


async def test_top_k_bounds_the_candidates_considered(tools: dict[str, Any], call: Any) -> None:
    await store(call, tools, FASTER, FASTER_PLAN)
    await store(call, tools, MUSIC, MUSIC_PLAN)
    await store(call, tools, "Double the jump height of the player", MUSIC_PLAN)
    out = await lookup(call, tools, "Make the player jump faster", top_k=2)
    assert out["hit"] is False
    assert len(out["candidates"]) <= 2 and out["candidates"]


async def test_storing_a_prompt_with_the_same_normal_form_overwrites_its_plan(tools: dict[str, Any], call: Any) -> None:
    first = await store(call, tools, FASTER, FASTER_PLAN)
    second = await store(call, tools, "  make the PLAYER move faster! ", MUSIC_PLAN)
    assert second["plan_id"] == first["plan_id"]
    assert (first["created"], second["created"], second["overwritten"]) == (True, False, True)
    hit = await lookup(call, tools, FASTER)
    assert hit["actions"] == MUSIC_PLAN


async def test_overwrite_resets_the_score(tools: dict[str, Any], call: Any) -> None:
    stored = await store(call, tools, FASTER, FASTER_PLAN)
    await reward(call, tools, plan_id=stored["plan_id"], success=False)
    await store(call, tools, FASTER, FASTER_PLAN)
    assert (await lookup(call, tools, FASTER))["score"] == 1.0


async def test_reward_updates_the_score_by_exponential_moving_average(tools: dict[str, Any], call: Any) -> None:
    plan_id = (await store(call, tools, FASTER, FASTER_PLAN))["plan_id"]
    outcomes = [False, True, False, True, True]
    for success in outcomes:
        out = await reward(call, tools, plan_id=plan_id, success=success)
    assert out["score"] == pytest.approx(ema(1.0, outcomes), abs=1e-6)
    assert out["stale"] is False


async def test_reward_reports_the_previous_and_new_score(tools: dict[str, Any], call: Any) -> None:
    plan_id = (await store(call, tools, FASTER, FASTER_PLAN))["plan_id"]
    out = await reward(call, tools, plan_id=plan_id, success=False)
    assert (out["previous_score"], out["score"]) == (1.0, pytest.approx(0.7))


async def test_reported_tool_failure_makes_the_plan_stale_at_once(tools: dict[str, Any], call: Any) -> None:
    plan_id = (await store(call, tools, FASTER, FASTER_PLAN))["plan_id"]
    out = await reward(call, tools, plan_id=plan_id, success=False, tool_failure=True)
    assert out["score"] == pytest.approx(0.7)
    assert out["stale"] is True
    assert "tool call" in out["stale_reason"]


async def test_score_below_the_floor_makes_the_plan_stale(tools: dict[str, Any], call: Any) -> None:
    plan_id = (await store(call, tools, FASTER, FASTER_PLAN))["plan_id"]
    # 1.0 -> 0.7 -> 0.49 -> 0.343 -> 0.2401 -> 0.16807: only the fifth failure crosses 0.2
    states = [(await reward(call, tools, plan_id=plan_id, success=False))["stale"] for _ in range(5)]
    assert states == [False, False, False, False, True]


async def test_stale_plan_is_never_a_hit(tools: dict[str, Any], call: Any) -> None:
    plan_id = (await store(call, tools, FASTER, FASTER_PLAN))["plan_id"]
    await reward(call, tools, plan_id=plan_id, success=False, tool_failure=True)
    for prompt in (FASTER, "please make the player move faster"):
        out = await lookup(call, tools, prompt)
        assert out["hit"] is False
        assert all(c["plan_id"] != plan_id for c in out["candidates"])


async def test_success_rewards_do_not_revive_a_stale_plan(tools: dict[str, Any], call: Any) -> None:
    plan_id = (await store(call, tools, FASTER, FASTER_PLAN))["plan_id"]
    await reward(call, tools, plan_id=plan_id, success=False, tool_failure=True)
    out = await reward(call, tools, plan_id=plan_id, success=True)
    assert out["stale"] is True
    assert (await lookup(call, tools, FASTER))["hit"] is False


async def test_storing_the_prompt_again_revives_a_stale_plan(tools: dict[str, Any], call: Any) -> None:
    plan_id = (await store(call, tools, FASTER, FASTER_PLAN))["plan_id"]
    await reward(call, tools, plan_id=plan_id, success=False, tool_failure=True)
    again = await store(call, tools, FASTER, MUSIC_PLAN)
    assert again["revived"] is True
    hit = await lookup(call, tools, FASTER)
    assert (hit["hit"], hit["plan_id"], hit["score"], hit["actions"]) == (True, plan_id, 1.0, MUSIC_PLAN)


async def test_reward_by_prompt_targets_the_plan_that_answers_it(tools: dict[str, Any], call: Any) -> None:
    plan_id = (await store(call, tools, FASTER, FASTER_PLAN))["plan_id"]
    await store(call, tools, MUSIC, MUSIC_PLAN)
    out = await reward(call, tools, prompt="please make the player move faster", success=False)
    assert out["plan_id"] == plan_id


async def test_reward_by_prompt_of_a_different_request_is_not_found(tools: dict[str, Any], call: Any) -> None:
    await store(call, tools, FASTER, FASTER_PLAN)
    err = await call.error(tools["plan_reward"], {"prompt": "Make the player move slower", "success": False})
    assert err["type"] == "not_found"


async def test_reward_of_an_unknown_plan_id_is_not_found(tools: dict[str, Any], call: Any) -> None:
    err = await call.error(tools["plan_reward"], {"plan_id": plan_id_for("never stored"), "success": True})
    assert err["type"] == "not_found"
    assert "no plan with id" in err["message"]


async def test_hits_count_the_plan_uses(tools: dict[str, Any], call: Any) -> None:
    await store(call, tools, FASTER, FASTER_PLAN)
    uses = [(await lookup(call, tools, FASTER))["uses"] for _ in range(3)]
    assert uses == [1, 2, 3]


async def test_plans_are_private_to_their_identity(mount_tools: Callable[..., Any], call: Any) -> None:
    alice, _ = await mount_tools(agent_identity="alice")
    bob, _ = await mount_tools(agent_identity="bob")
    stored = await store(call, alice, FASTER, FASTER_PLAN)
    assert (await lookup(call, bob, FASTER))["hit"] is False
    err = await call.error(bob["plan_reward"], {"plan_id": stored["plan_id"], "success": False})
    assert err["type"] == "not_found"
    assert (await lookup(call, alice, FASTER))["score"] == 1.0


async def test_tunables_come_from_the_config(mount_tools: Callable[..., Any], call: Any) -> None:
    tools, _ = await mount_tools(plans={"ema_alpha": 0.5, "stale_score": 0.6})
    plan_id = (await store(call, tools, FASTER, FASTER_PLAN))["plan_id"]
    out = await reward(call, tools, plan_id=plan_id, success=False)
    assert (out["score"], out["stale"]) == (0.5, True)


async def test_every_plan_event_carries_identity_plan_id_similarity_and_latency(
    mount_tools: Callable[..., Any], tool_timer: float, call: Any
) -> None:
    tools, coordinator = await mount_tools()
    seen: list[tuple[str, dict[str, Any]]] = []

    async def record(event: str, data: dict[str, Any]) -> HookResult:
        seen.append((event, dict(data)))
        return HookResult(action="continue")

    for event in ("plan:hit", "plan:candidate", "plan:miss", "plan:stored", "plan:reward", "plan:stale"):
        coordinator.hooks.register(event, record, name=f"test-{event}")
    plan_id = (await store(call, tools, FASTER, FASTER_PLAN))["plan_id"]
    await lookup(call, tools, FASTER)
    await lookup(call, tools, "Make the player move faster than 9 m/s")
    await reward(call, tools, plan_id=plan_id, success=False, tool_failure=True)
    assert [e for e, _ in seen] == ["plan:stored", "plan:hit", "plan:candidate", "plan:reward", "plan:stale"]
    for event, data in seen:
        assert data["identity"] == "alice", event
        assert data["plan_id"] == plan_id, event
        assert "similarity" in data, event
        assert data["latency_ms"] == tool_timer, event  # the call's own start-to-end time
    assert seen[1][1]["similarity"] == pytest.approx(1.0, abs=1e-3)


async def test_a_candidate_answer_emits_its_own_event(mount_tools: Callable[..., Any], call: Any) -> None:
    tools, coordinator = await mount_tools()
    seen: list[tuple[str, dict[str, Any]]] = []

    async def record(event: str, data: dict[str, Any]) -> HookResult:
        seen.append((event, dict(data)))
        return HookResult(action="continue")

    coordinator.hooks.register("plan:candidate", record, name="test-candidate")
    plan_id = (await store(call, tools, GZIP, GZIP_PLAN))["plan_id"]
    await lookup(call, tools, "Shrink last night's logs into a gzip bundle")
    assert [(e, d["plan_id"], d["count"]) for e, d in seen] == [("plan:candidate", plan_id, 0)]


async def test_building_the_index_keeps_every_plan_findable(
    make_runtime: Callable[..., AgentMemory], runtime_tools: Any, call: Any
) -> None:
    rt = make_runtime()
    tools = runtime_tools(rt)
    plan_id = (await store(call, tools, FASTER, FASTER_PLAN))["plan_id"]
    await store(call, tools, MUSIC, MUSIC_PLAN)
    assert rt.plans().unindexed() == 2
    # Two unindexed plans make a build due: it runs (seconds spent, not 0.0 for "nothing due"). Edge keeps
    # so small a collection a brute-force segment (nothing to link), so every plan must stay findable.
    assert rt.plans().build_index() > 0.0
    assert (await lookup(call, tools, "please make the player move faster"))["plan_id"] == plan_id
