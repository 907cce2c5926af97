"""agent-memory: long-term memory, a working-memory cache and a plan cache for Amplifier agents.

``mount`` is cheap and idempotent (Amplifier mounts every module twice): it parses the config
and registers the tools and hooks. ``on_session_ready`` resolves the identity once every module
is mounted and starts loading the embedding model and opening the identity's store on a
background thread (``warm_up``), so the first tool call does not pay for them.
"""

from .amplifier.mount import mount, on_session_ready

__amplifier_module_type__ = "tool"
__all__ = ["mount", "on_session_ready"]
