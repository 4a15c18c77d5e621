"""The official Python SDK 1.x (`mcp` 1.30, the handshake era only) against Toolgate.

Usage: mcp1_client.py <endpoint url> <tenant api key>
One row of the compatibility matrix (`tests/clients.rs`), the same cells as
`mcp_client.py`: list, call (a file written and read back), structured content, progress,
elicitation, sampling, and `tools/list_changed` after an admin change, for which it prints
`listening`. Exits non-zero with a message on any difference from what the test expects.
"""

import asyncio
import sys

from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client

ELICITED_NAME = "Ada from Python 1.x"
SAMPLED_TEXT = "sampled by the Python 1.x client"


async def answer_elicitation(_context, params):
    return types.ElicitResult(action="accept", content={"name": ELICITED_NAME})


async def answer_sampling(_context, params):
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=SAMPLED_TEXT), model="test-model"
    )


def text_of(result) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


async def main(url: str, key: str) -> None:
    list_changed = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ToolListChangedNotification):
            list_changed.set()

    headers = {"Authorization": f"Bearer {key}"}
    async with streamablehttp_client(url, headers=headers) as (read, write, _session_id):
        async with ClientSession(
            read,
            write,
            elicitation_callback=answer_elicitation,
            sampling_callback=answer_sampling,
            message_handler=on_message,
        ) as session:
            initialized = await session.initialize()
            version = initialized.protocolVersion
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            for name in ("write_text_file", "view_text_file", "run_command", "ev_echo"):
                assert name in tools, f"{name} missing from {sorted(tools)}"

            written = await session.call_tool("write_text_file", {"path": "python1.txt", "content": "written by SDK 1.x"})
            assert not written.isError, written
            read_back = await session.call_tool("view_text_file", {"path": "python1.txt"})
            assert "written by SDK 1.x" in text_of(read_back), read_back
            missing = await session.call_tool("view_text_file", {})
            assert missing.isError, "a call that breaks the schema is a tool error"

            weather = await session.call_tool("ev_get-structured-content", {"location": "New York"})
            assert weather.structuredContent and "temperature" in weather.structuredContent, weather

            reports = []

            async def on_progress(progress, total, message):
                reports.append(progress)

            ran = await session.call_tool(
                "ev_trigger-long-running-operation", {"duration": 1, "steps": 3}, progress_callback=on_progress
            )
            assert not ran.isError, ran
            assert reports, "no progress reached the client"

            elicited = await session.call_tool("ev_trigger-elicitation-request", {})
            assert ELICITED_NAME in text_of(elicited), f"the elicitation answer did not reach the upstream: {elicited}"
            sampled = await session.call_tool("ev_trigger-sampling-request", {"prompt": "Say something"})
            assert SAMPLED_TEXT in text_of(sampled), f"the sampling answer did not reach the upstream: {sampled}"

            print("listening", flush=True)
            await asyncio.wait_for(list_changed.wait(), timeout=20)
            after = {tool.name for tool in (await session.list_tools()).tools}
            assert "run_command" not in after, f"the admin change is not in the list: {sorted(after)}"
    print(f"ok: SDK 1.x on {version}, {len(tools)} tools; call, structured, progress, elicitation, sampling, list_changed")


if __name__ == "__main__":
    url, key = sys.argv[1:3]
    asyncio.run(asyncio.wait_for(main(url, key), timeout=60))
