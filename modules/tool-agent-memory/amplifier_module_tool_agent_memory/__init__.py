"""agent-memory: long-term memory, a working-memory cache and a plan cache for Amplifier agents.

``mount`` is cheap and idempotent (Amplifier mounts every module twice): it parses the
config, resolves the identity and registers the tools. The embedding model and the
identity's store are opened on the first tool call.
"""

from .amplifier.mount import mount

__amplifier_module_type__ = "tool"
__all__ = ["mount"]
