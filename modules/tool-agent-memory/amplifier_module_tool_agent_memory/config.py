"""The module's configuration: one typed model with documented defaults.

The bundle's ``config:`` block (and a user's ``overrides.tool-agent-memory.config``)
arrives as a plain dict in ``mount``; :func:`parse_config` turns it into
:class:`MemoryConfig`. Unknown keys are refused so that a typo does not silently
fall back to a default.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from .errors import ConfigError
from .validation import describe_validation_error

logger = logging.getLogger(__name__)

DEFAULT_STORAGE_ROOT = "~/.amplifier/agent-memory"
ROOT_ENV = "AMPLIFIER_MEMORY_ROOT"
# The default root before 0.2. It is the store of the official amplifier-bundle-memory (a git
# repository with MEMORY.md), so nothing is written there any more and nothing is moved out of
# it automatically: the user is told where their stores are (see legacy_default_stores).
LEGACY_STORAGE_ROOT = "~/.amplifier/memory"
_warned_legacy: set[Path] = set()


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EmbeddingConfig(_Strict):
    """Which embedding model turns text into vectors."""

    provider: Literal["local", "fastembed", "openai"] = Field(
        "local",
        description="local: all-MiniLM-L6-v2 int8 shipped with the install (offline). "
        "fastembed: any fastembed model by name (downloads it when online). "
        "openai: the OpenAI embeddings API or any OpenAI-compatible server.",
    )
    model: str | None = Field(
        None,
        description="Model name. Defaults: fastembed BAAI/bge-small-en-v1.5, openai "
        "text-embedding-3-small. Ignored by local.",
    )
    base_url: str | None = Field(None, description="OpenAI-compatible server URL (openai only).")
    api_key: str | None = Field(
        None, description="API key (openai only); defaults to the OPENAI_API_KEY environment variable."
    )
    dimensions: int | None = Field(
        None, ge=1, le=8192, description="Vector size for openai models the module does not know."
    )
    batch_size: int = Field(
        64, ge=1, le=2048, description="Texts per batch on import (fastembed, openai; local embeds one per run)."
    )
    batch_workers: int | None = Field(
        None,
        ge=1,
        le=64,
        description="local: texts of one batch (an import) embedded at once, each in its own run "
        "(None: the number of cores). A tool call embeds one text and uses one.",
    )
    cache_dir: str | None = Field(
        None,
        description="Where local keeps its int8 graph, built once from the shipped model "
        "(default $AGENT_MEMORY_CACHE_DIR, else $XDG_CACHE_HOME/agent-memory, else ~/.cache/agent-memory).",
    )
    query_cache_size: int = Field(2048, ge=0, le=1_000_000, description="LRU size of query embeddings.")
    # One intra-op thread: a tool call embeds one short text, where a second thread buys little
    # and, with the other core busy (the agent's host, other tools), doubles the latency:
    # plan_lookup p95 at 10k plans 28.0 -> 8.7 ms, one cache item 20 -> 11 ms p50 under load.
    threads: int | None = Field(
        1, ge=1, le=64, description="onnxruntime intra-op threads for local/fastembed (None: all cores)."
    )
    timeout_s: float = Field(30.0, gt=0, description="Request timeout of the openai provider.")


class MemorySearchConfig(_Strict):
    """Long-term memory: deduplication and retrieval."""

    default_limit: int = Field(5, ge=1, le=20)
    # The comparison decides; this cosine only says which stored memories are worth comparing.
    # Chosen on half A of the updates dev file (benchmarks/updates.py): newer ranked above older
    # 0.97 / 0.91 / 0.77 / 0.74 at 0.5 / 0.6 / 0.7 / 0.8 (half B, held apart: 0.96 / 0.88 / 0.84 / 0.80).
    near_duplicate_threshold: float = Field(
        0.5,
        ge=0.5,
        le=1.0,
        description="Cosine at or above which a stored memory of the same kind is compared with a new one: "
        "the comparison then says restatement (merged), change (stored, supersedes it) or different.",
    )


class CacheConfig(_Strict):
    """Working-memory cache (cache_* tools)."""

    close_threshold_tokens: int = Field(1850, ge=50, le=100_000)
    max_closed_blocks: int = Field(20, ge=1, le=10_000)
    ttl_minutes: float = Field(30.0, ge=0, description="Item lifetime after its last write or access; 0 = never.")
    # As memory.near_duplicate_threshold: a gate for the comparison, chosen on half A of the updates
    # dev file: the pack holds the newer value and not the older 0.97 / 0.88 / 0.68 / 0.63 at
    # 0.5 / 0.6 / 0.7 / 0.8 (half B, held apart: 0.92 / 0.84 / 0.80 / 0.56).
    dedup_threshold: float = Field(
        0.5,
        ge=0.5,
        le=1.0,
        description="Cosine at or above which a live item of the same kind is compared with a new one: "
        "restatement (merged) or change (the new item replaces it).",
    )
    default_pack_budget: int = Field(600, ge=50, le=8000)
    fresh_seconds: float = Field(300.0, ge=0, description="How long an unchanged pack is served from the last build.")
    summariser: Literal["extractive", "llm"] = Field(
        "extractive", description="llm uses the session's provider and falls back to extractive."
    )
    sweep_batch: int = Field(64, ge=1, le=10_000, description="Expired items removed per write at most.")
    llm_timeout_s: float = Field(30.0, gt=0, le=600, description="How long the llm summariser may take per block.")


class PlanConfig(_Strict):
    """Plan cache (plan_* tools)."""

    # Chosen on dev.jsonl + dev-multidomain.jsonl (benchmarks/plans.py, floor sweep): at 0.40 the right plan is
    # offered for 0.995 of rewordings, 0.99 of unrelated requests get no candidate, 1.30 candidates an answer;
    # leave-one-domain-out picks 0.38-0.47 (docs/plans.md).
    candidate_floor: float = Field(
        0.40,
        ge=0.0,
        le=1.0,
        description="Cosine from which a stored plan that is not certified the same request is offered as a "
        "'candidate' (with what differs named); under it the lookup is a 'miss' with no candidates.",
    )
    similarity_threshold: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Replaced by candidate_floor (same meaning: the cosine from which a candidate is offered); "
        "still read as candidate_floor when that is not set.",
    )
    ema_alpha: float = Field(0.3, gt=0.0, le=1.0)
    stale_score: float = Field(0.2, ge=0.0, le=1.0)
    top_k: int = Field(3, ge=1, le=20)
    auto_capture: bool = Field(True, description="Store each successful turn's tool calls as the plan of its prompt.")
    capture_skip_tools: tuple[str, ...] = Field(
        (), description="More tool names auto-capture leaves out of plans (besides read-only lookups and our own)."
    )

    @model_validator(mode="before")
    @classmethod
    def _floor_from_old_name(cls, data: Any) -> Any:
        """``similarity_threshold`` (before issue 16) keeps its meaning: the cosine from which a candidate is
        offered, now ``candidate_floor``; both set to different values is refused."""
        if not isinstance(data, dict) or data.get("similarity_threshold") is None:
            return data
        old = data["similarity_threshold"]
        if "candidate_floor" in data and data["candidate_floor"] != old:
            raise ValueError("similarity_threshold was replaced by candidate_floor: set only candidate_floor")
        return {**data, "candidate_floor": old}


class RecallGateConfig(_Strict):
    """When recall injects anything: one recalled memory must match the prompt both by its words and by its
    meaning. Its relevance is coverage + cosine_weight * cosine, where coverage is the share of the prompt's
    content words (not names, not function words) the memory (with the remark before it) contains, by stem,
    and cosine the dense similarity of the two. Calibrated with benchmarks/recall.py on half of the LoCoMo dev
    conversations (most evidence injected while >= 0.75 of another conversation's questions, speakers renamed,
    get nothing) and reported on the other half; see docs/recall.md."""

    min_content_words: int = Field(
        1, ge=1, le=20, description="Words of the prompt other than names and function words it must have."
    )
    cosine_weight: float = Field(2.25, ge=0.0, le=10.0, description="Weight of the cosine in a memory's relevance.")
    min_relevance: float = Field(
        1.575, ge=0.0, le=11.0,
        description="Relevance (coverage + cosine_weight * cosine) one recalled memory must reach for anything "
        "to be injected.",
    )


class RecallConfig(_Strict):
    """Recall without being asked: relevant memories injected into each request of a turn (issue 18)."""

    enabled: bool = Field(True, description="Inject recalled memories (and the briefing) into the model's requests.")
    budget_tokens: int = Field(
        400, ge=50, le=8000, description="Most tokens (characters / 4) of the recalled block on one request."
    )
    briefing_tokens: int = Field(
        300, ge=0, le=8000,
        description="Most tokens of the session's briefing (standing preferences and decisions); 0: no briefing.",
    )
    max_memories: int = Field(8, ge=1, le=50, description="Most memories in the recalled block.")
    timeout_ms: float = Field(
        500.0, gt=0, le=60_000,
        description="Longest a request waits for recall; a late recall injects nothing into that request.",
    )
    sub_agents: Literal["recall", "full", "off"] = Field(
        "recall",
        description="What a sub-agent session (one with a parent) gets: recall for its prompts without the "
        "briefing, recall and briefing, or nothing.",
    )
    query_words: int = Field(
        6, ge=0, le=10_000,
        description="Most topic words of the prompt (its first ones, function and framing words left out, names "
        "kept) recall's query embedding reads, so its run is short and a long prompt costs what a question does; "
        "keyword search and the gate read the whole prompt. 0: the whole prompt as written.",
    )
    gate: RecallGateConfig = RecallGateConfig()


_PREFIX_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"


class StorageConfig(_Strict):
    """Where the stores live: embedded Qdrant Edge folders, or a Qdrant server shared by processes."""

    backend: Literal["edge", "server"] = Field(
        "edge",
        description="edge: one embedded store per identity under storage_root, shared by the processes of one "
        "machine (the first to open it serves the others over a local socket; docs/sharing.md). "
        "server: a Qdrant server or cluster at url, shared by every process of an identity.",
    )
    url: str | None = Field(
        None,
        validate_default=True,
        description="Qdrant server URL, e.g. http://localhost:6333 (required when backend is server).",
    )
    api_key: str | None = Field(
        None, description="Qdrant API key; defaults to the QDRANT_API_KEY environment variable."
    )
    collection_prefix: str = Field(
        "agent_memory",
        pattern=_PREFIX_PATTERN,
        description="Server collections are named {prefix}__{identity}__{collection}; letters, digits, '-' and "
        "single '_' (no '__'), at most 64 characters.",
    )
    timeout_s: float = Field(10.0, gt=0, le=600, description="Server request timeout.")
    # Measured with benchmarks/engine_purge.py (memories, index built, loaded 2-core machine): one engine purge
    # took 0.50 s at 1k points, 1.05 s at 5k, 1.67 s at 10k, 2.32 s at 20k, 25-28 s at 100k. A write waits for
    # a running purge: the default keeps a prompt purge under ~2 s.
    purge_prompt_max_points: int = Field(
        10_000,
        ge=0,
        description="Embedded store: a forget in a collection of at most this many points is purged from the "
        "engine's files promptly (a purge took <= ~2 s up to 10k memories); in a larger one the purge, which "
        "holds writes for its whole run (25-28 s at 100k), waits until the collection is idle "
        "(purge_idle_seconds), the store closes or `agent-memory gc` runs it.",
    )
    purge_idle_seconds: float = Field(
        30.0,
        gt=0,
        le=86_400,
        description="Embedded store: how long a collection above purge_prompt_max_points must go without a write "
        "before its due purge runs (longer than the pauses inside one agent turn, so the purge does not stall it).",
    )
    owner_wait_seconds: float = Field(
        30.0,
        gt=0,
        le=3_600,
        description="Embedded store: how long a call waits for the process that owns the identity's store to "
        "answer (one opening the store, or taking over from one that exited) before answering store_in_use; "
        "the holder is then taken to be a process that does not share (an older version, `agent-memory repair`).",
    )

    # A query holds the GIL while it waits on the pool (every Python thread stands still), and Edge's own pool
    # is one thread per CPU it sees (8 in a 2-core container): see docs/recall.md, Latency, for the figures.
    search_threads: int = Field(
        1,
        ge=0,
        le=64,
        description="Embedded store: threads of each shard's search pool, applied at every open (0: Qdrant Edge's "
        "own, one per CPU it sees). One cost the least at 10k memories; a store of many segments on an idle "
        "machine with cores to spare may search faster with more. Results do not depend on it.",
    )

    @field_validator("collection_prefix")
    @classmethod
    def _no_separator(cls, value: str) -> str:
        # '__' separates prefix, identity and collection in server collection names.
        if "__" in value:
            raise ValueError("must not contain '__'")
        return value

    @field_validator("url")
    @classmethod
    def _server_needs_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("backend") == "server":
            if not value:
                raise ValueError("is required when backend is 'server' (e.g. http://localhost:6333)")
            if not value.startswith(("http://", "https://")):
                raise ValueError("must start with http:// or https://")
        return value


class MemoryConfig(_Strict):
    """Everything the module can be told. Every field has a default."""

    agent_identity: str | None = Field(
        None, description="Whose memory this is. See identity.py for the resolution order."
    )
    require_identity: bool = Field(False, description="Refuse to run under the implicit 'default' identity.")
    storage_root: str | None = Field(
        None, description=f"Folder of the embedded stores; default ${ROOT_ENV} or {DEFAULT_STORAGE_ROOT}."
    )
    embeddings: EmbeddingConfig = EmbeddingConfig()
    memory: MemorySearchConfig = MemorySearchConfig()
    cache: CacheConfig = CacheConfig()
    plans: PlanConfig = PlanConfig()
    judge: Literal["agent", "provider"] = Field(
        "agent",
        description="Who settles a near match the comparison cannot certify (memory and plans): 'agent' hands it "
        "to the agent with what differs; 'provider' asks the session's LLM provider first (stream and thinking "
        "off, judge_timeout_s) and falls back to the agent on any failure or timeout.",
    )
    judge_timeout_s: float = Field(20.0, gt=0, le=600, description="How long the provider judge may take per pair.")
    storage: StorageConfig = StorageConfig()
    recall: RecallConfig = RecallConfig()
    warm_up: bool = Field(
        True,
        description="When the session is ready (and when `agent-memory mcp` starts), load the embedding model and "
        "open the identity's store on a background thread, so the first tool call does not pay for them (it waits "
        "only for what is not ready yet). Off: both happen at the first call that needs them, and recall's briefing "
        "is read at the first prompt instead of at session ready.",
    )

    @field_validator("storage_root")
    @classmethod
    def _root_is_a_path(cls, value: str | None) -> str | None:
        if value is not None:
            check_root_text(value)
        return value

    def resolved_root(self) -> Path:
        """The storage root: config, then ``AMPLIFIER_MEMORY_ROOT``, then ``~/.amplifier/agent-memory``.

        An empty ``AMPLIFIER_MEMORY_ROOT`` counts as unset; a blank one, or a root that exists
        but is not a folder, is a :class:`ConfigError`. On the default root, agent-memory stores
        left under the old default are reported once per process (a warning naming them and
        how to move them); they are not moved.
        """
        raw = self.storage_root
        if raw is None and os.environ.get(ROOT_ENV):
            raw = os.environ[ROOT_ENV]
            try:
                check_root_text(raw)
            except ValueError as exc:
                raise ConfigError(f"${ROOT_ENV} {exc}") from exc
        if raw is None:
            root = Path(DEFAULT_STORAGE_ROOT).expanduser().resolve()
            _warn_about_legacy_stores(root)
        else:
            root = Path(raw).expanduser().resolve()
        if root.exists() and not root.is_dir():
            raise ConfigError(f"the storage root {root} is not a folder; point storage_root (or --root) at a folder")
        return root


def check_root_text(value: str) -> None:
    """A storage root must name a folder: not empty, not only spaces, no NUL (raises ValueError)."""
    if not value.strip():
        # "" used to mean the default and "   " made a folder named with spaces: both are mistakes.
        raise ValueError("must be a folder path, not empty or blank (leave it out for the default)")
    if "\0" in value:
        raise ValueError("must not contain a NUL character")


def _is_agent_memory_store(folder: Path) -> bool:
    """An identity folder this module wrote: its ``store.json`` names the embedding model and schema."""
    try:
        meta = json.loads((folder / "store.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and "model_id" in meta and "schema" in meta


def legacy_default_stores(root: Path | None = None) -> list[str]:
    """Identities with an agent-memory store under the old default root (``~/.amplifier/memory``) and none
    under ``root`` (the current default): stores a user upgrading from before 0.2 would otherwise miss."""
    legacy = Path(LEGACY_STORAGE_ROOT).expanduser()
    current = root or Path(DEFAULT_STORAGE_ROOT).expanduser().resolve()
    try:
        folders = sorted(p for p in legacy.iterdir() if p.is_dir())
    except OSError:
        return []
    return [p.name for p in folders if _is_agent_memory_store(p) and not (current / p.name).exists()]


def _warn_about_legacy_stores(root: Path) -> None:
    if root in _warned_legacy:
        return
    _warned_legacy.add(root)
    names = legacy_default_stores(root)
    if names:
        legacy = Path(LEGACY_STORAGE_ROOT).expanduser()
        logger.warning(
            "agent-memory stores of %s are in %s, the old default root, which belongs to amplifier-bundle-memory; "
            "stores now live in %s and these were not moved. With no session running, move them: "
            "mkdir -p %s && mv %s %s/",
            ", ".join(names), legacy, root, root, " ".join(str(legacy / n) for n in names), root,
        )


def parse_config(raw: dict[str, Any] | None) -> MemoryConfig:
    """Validate a raw config dict; raise :class:`ConfigError` naming the bad field."""
    try:
        return MemoryConfig.model_validate(raw or {})
    except ValidationError as exc:
        raise ConfigError(f"invalid tool-agent-memory config: {describe_validation_error(exc)}") from exc
