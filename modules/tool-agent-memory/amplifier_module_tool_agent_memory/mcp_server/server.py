"""The MCP server of one identity: ``tools/*`` from the tool table, ``resources/*``, ``prompts/*``.

Every handler translates and nothing else: a tool call is ``tools.call_tool`` (the same validation,
errors, redaction and event as in Amplifier) and its answer becomes a ``CallToolResult`` whose
``structuredContent`` is the tool's output (a failure: ``isError`` with the error object); a resource
read is the tool call its URI names (``resources.py``).
"""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from ..errors import AgentMemoryError, InvalidInput, NotFound
from ..runtime import AgentMemory
from ..tools import TOOLS, TOOLS_BY_NAME, ToolAnswer, ToolSpec, call_tool
from . import resources
from .about import SERVER_NAME, SERVER_TITLE, instructions, tool_listing
from .prompts import PROMPTS, PROMPTS_BY_NAME

# Memories per resources/list page (the cursor is the page's next_before).
RESOURCE_PAGE = 50
_TITLE_CHARS = 80
# An error kind the client caused (its request was wrong) is INVALID_PARAMS; anything else INTERNAL_ERROR.
_CLIENT_KINDS = frozenset({InvalidInput.kind, NotFound.kind, "identity_error"})

Context = ServerRequestContext[Any]


def _dump(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)


def _tool(spec: ToolSpec) -> types.Tool:
    # The same listing the fast start sends before the SDK is imported (fast_start.py): one source for both.
    return types.Tool.model_validate(tool_listing(spec), by_name=False)


def tool_result(answer: ToolAnswer) -> types.CallToolResult:
    """A tool's answer as MCP says it: the output as structured content and as JSON text, or ``isError``
    with ``{"error": {message, type, tool, identity}}`` as JSON text."""
    if answer.ok:
        assert answer.output is not None
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=_dump(answer.output))], structured_content=answer.output
        )
    # No structuredContent on an error: clients check it against the tool's outputSchema, which describes
    # a success (the MCP Inspector does so even for isError results). The text is the error object as JSON.
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=_dump({"error": answer.error}))], is_error=True
    )


def _protocol_error(answer: ToolAnswer) -> MCPError:
    assert answer.error is not None
    code = types.INVALID_PARAMS if answer.error.get("type") in _CLIENT_KINDS else types.INTERNAL_ERROR
    return MCPError(code=code, message=str(answer.error.get("message")), data=answer.error)


def _one_line(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= _TITLE_CHARS else flat[: _TITLE_CHARS - 1] + "…"


def build_server(runtime: AgentMemory, version: str = "") -> Server[Any]:
    """An MCP server whose tools, resources and prompts serve ``runtime``'s identity."""
    identity = runtime.identity_name or ""

    async def list_tools(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_tool(spec) for spec in TOOLS])

    async def call(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = TOOLS_BY_NAME.get(params.name)
        if spec is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {params.name!r}")
        return tool_result(await call_tool(spec, runtime, params.arguments))

    async def read_through(uri: str) -> dict[str, Any]:
        """The output of the tool call ``uri`` stands for; an MCP error when there is none or it failed."""
        try:
            target = resources.resolve(uri, identity)
        except AgentMemoryError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc), data={"type": exc.kind, "uri": uri}) from None
        answer = await call_tool(TOOLS_BY_NAME[target.tool], runtime, target.args)
        if not answer.ok:
            raise _protocol_error(answer)
        assert answer.output is not None
        return answer.output

    async def list_resources(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        cursor = params.cursor if params is not None else None
        args: dict[str, Any] = {"limit": RESOURCE_PAGE, **({"before": cursor} if cursor else {})}
        answer = await call_tool(TOOLS_BY_NAME["memory_list"], runtime, args)
        if not answer.ok:
            raise _protocol_error(answer)
        assert answer.output is not None
        found: list[types.Resource] = []
        if cursor is None:
            found.append(types.Resource(
                uri=resources.list_uri(identity, "memories"), name="memories", title="Memories, newest first",
                description=f"A page of {identity}'s memories (?before=<next_before>&limit=N for the next).",
                mime_type="application/json",
            ))
            if resources.served("plan_list"):
                found.append(types.Resource(
                    uri=resources.list_uri(identity, "plans"), name="plans", title="Cached plans",
                    description=f"{identity}'s cached plans (?offset=N&limit=N to page).", mime_type="application/json",
                ))
        for memory in answer.output["memories"]:
            found.append(types.Resource(
                uri=resources.memory_uri(identity, memory["id"]), name=memory["id"], title=_one_line(memory["content"]),
                description=f"{memory.get('kind', 'note')} memory of {memory.get('created_at', '')}",
                mime_type="application/json",
            ))
        return types.ListResourcesResult(resources=found, next_cursor=answer.output.get("next_before"))

    async def list_templates(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates = [types.ResourceTemplate(
            uri_template=resources.MEMORY_TEMPLATE, name="memory", title="One memory in full",
            description=f"One memory with its chain of updates; identity must be this server's: {identity}.",
            mime_type="application/json",
        )]
        if resources.served("plan_get"):
            templates.append(types.ResourceTemplate(
                uri_template=resources.PLAN_TEMPLATE, name="plan", title="One cached plan in full",
                description=f"One cached plan with all its actions; identity must be this server's: {identity}.",
                mime_type="application/json",
            ))
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(ctx: Context, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        output = await read_through(params.uri)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, mime_type="application/json", text=_dump(output))]
        )

    async def list_prompts(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[
            types.Prompt(
                name=p.name, title=p.title, description=p.description,
                arguments=[types.PromptArgument(name=a.name, description=a.description, required=a.required)
                           for a in p.arguments],
            )
            for p in PROMPTS
        ])

    async def get_prompt(ctx: Context, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        prompt = PROMPTS_BY_NAME.get(params.name)
        if prompt is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown prompt {params.name!r}")
        try:
            text = prompt.render(dict(params.arguments or {}), identity)
        except ValueError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        return types.GetPromptResult(
            description=prompt.description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )

    return Server(
        SERVER_NAME,
        version=version,
        title=SERVER_TITLE,
        instructions=instructions(identity),
        on_list_tools=list_tools,
        on_call_tool=call,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
