"""Working-memory cache: items in episodic blocks, per-scope in-memory state, packs within a token budget."""
