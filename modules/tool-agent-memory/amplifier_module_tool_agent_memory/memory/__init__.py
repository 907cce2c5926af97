"""Long-term memory: the service behind memory_* tools, its input models and hybrid ranking."""
