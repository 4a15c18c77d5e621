"""An independent MCP client against Toolgate: the official Python SDK over streamable HTTP.

Usage: mcp_client.py <auto|legacy> <endpoint url> <tenant api key>
`auto` is the SDK's default (it discovers with `server/discover` and speaks revision 2026-07-28
when the server does), `legacy` the initialize handshake. One row of the compatibility matrix
(`tests/clients.rs`): against a tenant with the built-in tools and server-everything (over
stdio) under the prefix `ev`: list, call (a file written and read back), structured content,
progress, elicitation, sampling, prompts, resources and completions, a resource subscribed to
and its update heard (`resources/subscribe` in the handshake era, `subscriptions/listen` on
2026-07-28), and `tools/list_changed` after an admin change (the `shell` tag goes); it prints `listening` when it waits for that change, which the test then makes.
Exits non-zero with a message on any difference from what the test expects.
"""

import asyncio
import sys

import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from matrix import TOGGLE, WATCHED, answers, call_cells, check_changed, check_listed, item_cells

EXPECTED_VERSION = {"auto": "2026-07-28", "legacy": "2025-11-25"}


async def subscription_cell(client, mode: str, updated: asyncio.Event) -> None:
    """Subscribes to a document, has server-everything send its updates, and waits for one."""
    if mode == "auto":
        async with client.listen(resource_subscriptions=[WATCHED]) as subscription:
            assert WATCHED in (subscription.honored.resource_subscriptions or []), subscription.honored
            await client.call_tool(TOGGLE, {})
            event = await asyncio.wait_for(anext(aiter(subscription)), timeout=15)
            assert event.uri == WATCHED, event
    else:
        await client.subscribe_resource(WATCHED)
        await client.call_tool(TOGGLE, {})
        await asyncio.wait_for(updated.wait(), timeout=15)
        await client.unsubscribe_resource(WATCHED)
    await client.call_tool(TOGGLE, {})


async def main(url: str, key: str, mode: str) -> None:
    list_changed = asyncio.Event()
    updated = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            list_changed.set()
        if isinstance(message, types.ResourceUpdatedNotification) and str(message.params.uri) == WATCHED:
            updated.set()

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    transport = streamable_http_client(url, http_client=http)
    answer_elicitation, answer_sampling = answers(types)
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
        check_listed(tools)
        assert tools["view_text_file"].input_schema["type"] == "object"
        await call_cells(client.call_tool, lambda r: r.is_error, lambda r: r.structured_content)
        await item_cells(client, types)
        await subscription_cell(client, mode, updated)

        if mode == "auto":
            async with client.listen(tools_list_changed=True) as subscription:
                print("listening", flush=True)
                async for _event in subscription:
                    break
        else:
            print("listening", flush=True)
            await asyncio.wait_for(list_changed.wait(), timeout=20)
        check_changed({tool.name for tool in (await client.list_tools()).tools})
    print(f"ok: {mode} mode on {version}, {len(tools)} tools; call, structured, progress, elicitation, "
          "sampling, prompts, resources, completion, subscription, list_changed")


if __name__ == "__main__":
    mode, url, key = sys.argv[1:4]
    asyncio.run(asyncio.wait_for(main(url, key, mode), timeout=60))
