"""An independent MCP client against Toolgate: the official Python SDK over streamable HTTP.

Usage: mcp_client.py <auto|legacy> <endpoint url> <tenant api key>
`auto` is the SDK's default (it discovers with `server/discover` and speaks revision 2026-07-28
when the server does), `legacy` the initialize handshake. One row of the compatibility matrix
(`tests/clients.rs`): against a tenant with the built-in tools and server-everything (over
stdio) under the prefix `ev`: list, call (a file written and read back), structured content,
progress, elicitation, sampling, and `tools/list_changed` after an admin change (the `shell`
tag goes); it prints `listening` when it waits for that change, which the test then makes.
Exits non-zero with a message on any difference from what the test expects.
"""

import asyncio
import sys

import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

EXPECTED_VERSION = {"auto": "2026-07-28", "legacy": "2025-11-25"}
ELICITED_NAME = "Ada from Python"
SAMPLED_TEXT = "sampled by the Python client"


async def answer_elicitation(_context, params):
    return types.ElicitResult(action="accept", content={"name": ELICITED_NAME})


async def answer_sampling(_context, params):
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=SAMPLED_TEXT), model="test-model"
    )


def text_of(result) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


async def main(url: str, key: str, mode: str) -> None:
    list_changed = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            list_changed.set()

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    transport = streamable_http_client(url, http_client=http)
    client = Client(
        transport,
        mode=mode,
        elicitation_callback=answer_elicitation,
        sampling_callback=answer_sampling,
        message_handler=on_message,
    )
    async with http, client:
        version = client.protocol_version
        assert version == EXPECTED_VERSION[mode], f"{mode} mode negotiated {version}"
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name in ("write_text_file", "view_text_file", "run_command", "ev_echo"):
            assert name in tools, f"{name} missing from {sorted(tools)}"
        assert tools["view_text_file"].input_schema["type"] == "object"

        written = await client.call_tool(
            "write_text_file", {"path": "python.txt", "content": "written by the Python SDK"}
        )
        assert not written.is_error, written
        read_back = await client.call_tool("view_text_file", {"path": "python.txt"})
        assert "written by the Python SDK" in text_of(read_back), read_back
        missing = await client.call_tool("view_text_file", {})
        assert missing.is_error, "a call that breaks the schema is a tool error"

        weather = await client.call_tool("ev_get-structured-content", {"location": "New York"})
        assert weather.structured_content and "temperature" in weather.structured_content, weather

        reports = []

        async def on_progress(progress, total, message):
            reports.append(progress)

        ran = await client.call_tool(
            "ev_trigger-long-running-operation", {"duration": 1, "steps": 3}, progress_callback=on_progress
        )
        assert not ran.is_error, ran
        assert reports, "no progress reached the client"

        elicited = await client.call_tool("ev_trigger-elicitation-request", {})
        assert ELICITED_NAME in text_of(elicited), f"the elicitation answer did not reach the upstream: {elicited}"
        sampled = await client.call_tool("ev_trigger-sampling-request", {"prompt": "Say something"})
        assert SAMPLED_TEXT in text_of(sampled), f"the sampling answer did not reach the upstream: {sampled}"

        if mode == "auto":
            async with client.listen(tools_list_changed=True) as subscription:
                print("listening", flush=True)
                async for _event in subscription:
                    break
        else:
            print("listening", flush=True)
            await asyncio.wait_for(list_changed.wait(), timeout=20)
        after = {tool.name for tool in (await client.list_tools()).tools}
        assert "run_command" not in after, f"the admin change is not in the list: {sorted(after)}"
    print(f"ok: {mode} mode on {version}, {len(tools)} tools; call, structured, progress, elicitation, "
          "sampling, list_changed")


if __name__ == "__main__":
    mode, url, key = sys.argv[1:4]
    asyncio.run(asyncio.wait_for(main(url, key, mode), timeout=60))
