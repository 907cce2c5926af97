"""The ``agent-memory`` command line: look after an identity's memory from the shell, and the demo."""

from .main import main

__all__ = ["main"]
