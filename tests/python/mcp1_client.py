"""The official Python SDK 1.x (`mcp` 1.30, the handshake era only) against Toolgate.

Usage: mcp1_client.py <endpoint url> <tenant api key>
One row of the compatibility matrix (`tests/clients.rs`), with the cells of `matrix.py`
that `mcp_client.py` (2.x) runs too: list, call (a file written and read back), structured
content, progress, elicitation, sampling, and `tools/list_changed` after an admin change, for
which it prints `listening`. Exits non-zero with a message on any difference from what the
test expects.
"""

import asyncio
import sys

from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client

from matrix import answers, call_cells, check_changed, check_listed, item_cells


async def main(url: str, key: str) -> None:
    list_changed = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ToolListChangedNotification):
            list_changed.set()

    headers = {"Authorization": f"Bearer {key}"}
    answer_elicitation, answer_sampling = answers(types)
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
            check_listed(tools)
            await call_cells(session.call_tool, lambda r: r.isError, lambda r: r.structuredContent)
            await item_cells(session, types)

            print("listening", flush=True)
            await asyncio.wait_for(list_changed.wait(), timeout=20)
            check_changed({tool.name for tool in (await session.list_tools()).tools})
    print(f"ok: SDK 1.x on {version}, {len(tools)} tools; call, structured, progress, elicitation, sampling, prompts, resources, completion, list_changed")


if __name__ == "__main__":
    url, key = sys.argv[1:3]
    asyncio.run(asyncio.wait_for(main(url, key), timeout=60))
