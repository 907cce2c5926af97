"""The module's tools, independent of any host: one table (:data:`TOOLS`), one call (:func:`call_tool`).

The Amplifier face (``amplifier/tools.py``) and the MCP face (``mcp/``) are thin adapters over
these: they translate a :class:`ToolAnswer` into their own result type and nothing else.
"""

from .call import ToolAnswer, call_tool
from .spec import Outcome, ToolSpec
from .table import TOOLS, TOOLS_BY_NAME

__all__ = ["TOOLS", "TOOLS_BY_NAME", "Outcome", "ToolAnswer", "ToolSpec", "call_tool"]
