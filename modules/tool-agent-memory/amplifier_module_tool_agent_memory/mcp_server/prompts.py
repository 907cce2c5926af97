"""The server's prompts: when to search memory, when to store, when to look up and cache plans.

Plain text built from the tool names of the table, so a renamed tool cannot leave a prompt behind.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PromptArg:
    name: str
    description: str
    required: bool = True


@dataclass(frozen=True)
class PromptText:
    """One prompt: its name, what it is for, its arguments and its text (``{arg}`` filled in)."""

    name: str
    title: str
    description: str
    text: str
    arguments: tuple[PromptArg, ...] = ()

    def render(self, values: dict[str, str], identity: str) -> str:
        """The text with the arguments and the server's identity filled in; ValueError names a missing one."""
        missing = [a.name for a in self.arguments if a.required and not values.get(a.name, "").strip()]
        if missing:
            raise ValueError(f"prompt {self.name} needs argument {missing[0]!r}")
        known = {a.name: values.get(a.name, "") for a in self.arguments}
        return self.text.format(identity=identity, **known)


WORKFLOW = PromptText(
    name="memory-workflow",
    title="How to use long-term memory",
    description="When to search memory, when to store in it, and when to look up and cache plans.",
    text=(
        "You have a long-term memory (identity {identity}) that outlives this conversation.\n\n"
        "Search it (memory_search) before you answer anything that may depend on earlier work: the user's "
        "preferences, decisions taken, facts about their projects, people, systems or past incidents. Read "
        "one result in full with memory_get when its summary is not enough.\n\n"
        "Store (memory_store) what a later session would need and cannot easily find again: a decision and "
        "its reason, a stated preference, a durable fact, an event worth remembering. One statement per "
        "memory, in plain words, with kind and tags. Do not store secrets (they are redacted anyway), "
        "passing chatter, or what the code or documents already say. When a fact changes, store the new "
        "statement: it supersedes the older one (the answer shows which); if that link is wrong, undo it "
        "with memory_unlink. Delete a wrong memory with memory_forget.\n\n"
        "Before planning a multi-step task, call plan_lookup with the request. On 'hit' replay the actions; "
        "on 'candidate' check that the stored request asks for the same thing before replaying; on 'miss' "
        "plan from scratch. After a task solved by a sequence of tool calls, cache it with plan_store; after "
        "replaying a cached plan, report with plan_reward whether it worked.\n\n"
        "For notes that matter only during the current task, use the working-memory cache (cache_write, "
        "cache_search, cache_pack) instead of long-term memory."
    ),
    arguments=(),
)

START_TASK = PromptText(
    name="start-task",
    title="Start a task with what memory knows",
    description="Look up a cached plan and the relevant memories for a task before working on it.",
    text=(
        "Task: {task}\n\n"
        "Before you start: call plan_lookup with this task as the prompt, and memory_search with the task's "
        "key terms. Use what they return (a plan to replay or confirm, decisions and preferences that apply). "
        "When you are done: store new durable facts or decisions with memory_store, and cache the tool "
        "sequence that solved the task with plan_store (or report a replayed plan's outcome with plan_reward)."
    ),
    arguments=(PromptArg("task", "The task you are about to work on."),),
)

PROMPTS: tuple[PromptText, ...] = (WORKFLOW, START_TASK)
PROMPTS_BY_NAME = {p.name: p for p in PROMPTS}
