"""Agents of a tenant in `search` mode (`tests/tool_search.rs`): they are listed the search tool
and the pinned `list_directory`, find `write_text_file` by saying what they need, and call it.

Usage: search_client.py <auto|legacy|agents> <endpoint url> <tenant api key>
`auto` and `legacy`: the official Python SDK (`mcp` 2.x) on revision 2026-07-28 (no session: the
tool found is listed and callable at once) and in a 2025-11-25 session (which hears
`tools/list_changed` after the search); the definitions found are checked with the SDK's own
`Tool` type. `agents`: an `openai-agents` agent run by the SDK's `Runner` (its default `auto`
mode); no LLM is reachable here, so its model is a scripted one that searches, calls the tool
the search answered (which the SDK must list to it by then), and answers with the result.
Exits non-zero with a message on any difference from what the test expects.
"""

import asyncio
import json
import sys

QUERY = {"query": "overwrite a text file with new content", "count": 3}
BEFORE = ["list_directory", "search_tools"]
CONTENT = "written by a tool found by searching"


def found_names(answer: dict) -> list[str]:
    return [tool["name"] for tool in answer["tools"]]


async def mcp_run(url: str, key: str, mode: str) -> None:
    import httpx2
    from mcp import Client, types
    from mcp.client.streamable_http import streamable_http_client

    list_changed = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            list_changed.set()

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    client = Client(streamable_http_client(url, http_client=http), mode=mode, message_handler=on_message)
    async with http, client:
        listed = sorted(tool.name for tool in (await client.list_tools()).tools)
        assert listed == BEFORE, f"listed before searching: {listed}"
        found = await client.call_tool("search_tools", QUERY)
        assert not found.is_error, found
        answer = found.structured_content
        assert found_names(answer)[0] == "write_text_file", answer
        for tool in answer["tools"]:
            types.Tool.model_validate(tool)
        if mode == "legacy":
            await asyncio.wait_for(list_changed.wait(), timeout=10)
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert set(found_names(answer)) <= listed, f"found {found_names(answer)}, listed {sorted(listed)}"
        written = await client.call_tool("write_text_file", {"path": f"{mode}.txt", "content": CONTENT})
        assert not written.is_error, written
        print(f"ok: {mode} mode on {client.protocol_version}: listed {BEFORE}, found {found_names(answer)}, called")


async def agents_run(url: str, key: str) -> None:
    from agents import Agent, Runner, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.mcp import MCPServerStreamableHttp
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    class SearchingModel(Model):
        """Searches, calls the first tool found, then answers with what it returned."""

        def __init__(self) -> None:
            self.offered: list[list[str]] = []

        async def get_response(self, system_instructions, input, model_settings, tools, *args, **kwargs):
            self.offered.append(sorted(tool.name for tool in tools))
            outputs = [item["output"] for item in input if isinstance(item, dict) and item.get("type") == "function_call_output"]
            if len(outputs) == 0:
                call = ResponseFunctionToolCall(
                    type="function_call", id="fc-1", call_id="call-1", name="search_tools", arguments=json.dumps(QUERY)
                )
                return ModelResponse(output=[call], usage=Usage(), response_id=None)
            if len(outputs) == 1:
                found = json.loads(outputs[0])
                name = found_names(found)[0]
                arguments = json.dumps({"path": "agent.txt", "content": CONTENT})
                call = ResponseFunctionToolCall(
                    type="function_call", id="fc-2", call_id="call-2", name=name, arguments=arguments
                )
                return ModelResponse(output=[call], usage=Usage(), response_id=None)
            answer = ResponseOutputText(type="output_text", text=str(outputs[-1]), annotations=[])
            message = ResponseOutputMessage(id="msg-1", type="message", role="assistant", status="completed", content=[answer])
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError("the agent is run with Runner.run, which does not stream")

    set_tracing_disabled(True)
    server = MCPServerStreamableHttp(
        params={"url": url, "headers": {"Authorization": f"Bearer {key}"}, "timeout": 30},
        use_structured_content=True,
        client_session_timeout_seconds=30,
    )
    async with server:
        model = SearchingModel()
        agent = Agent(name="toolgate user", instructions="Find the tools you need.", model=model, mcp_servers=[server])
        run = await Runner.run(agent, "Write the file.")
        assert model.offered[0] == BEFORE, model.offered
        assert "write_text_file" in model.offered[1], model.offered
        assert "agent.txt" in str(run.final_output), run.final_output
    print(f"ok: openai-agents: offered {model.offered[0]}, then {model.offered[1]}; searched, called")


async def main(mode: str, url: str, key: str) -> None:
    if mode == "agents":
        await agents_run(url, key)
    else:
        await mcp_run(url, key, mode)


if __name__ == "__main__":
    mode, url, key = sys.argv[1:4]
    asyncio.run(asyncio.wait_for(main(mode, url, key), timeout=60))
