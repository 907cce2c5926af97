"""The MCP face: the tool table, this identity's resources and the workflow prompts over stdio.

Built on the official MCP Python SDK (the optional extra ``mcp``); ``agent-memory mcp`` starts it.
Like the Amplifier face it only translates: every tool call goes through ``tools.call_tool``.
"""
