"""An independent MCP client against Toolgate: the official Python SDK over streamable HTTP.

Usage: mcp_client.py <endpoint url> <tenant api key> <auto|legacy>
`auto` is the SDK's default (it discovers with `server/discover` and speaks revision 2026-07-28
when the server does), `legacy` the initialize handshake. Lists the tenant's tools, writes a file
with one tool and reads it back with another; exits non-zero with a message on any difference
from what the Rust tests expect.
"""

import asyncio
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

EXPECTED_VERSION = {"auto": "2026-07-28", "legacy": "2025-11-25"}


async def main(url: str, key: str, mode: str) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    transport = streamable_http_client(url, http_client=http)
    async with http, Client(transport, mode=mode) as client:
        version = client.protocol_version
        assert version == EXPECTED_VERSION[mode], f"{mode} mode negotiated {version}"
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name in ("write_text_file", "view_text_file"):
            assert name in tools, f"{name} missing from {sorted(tools)}"
        assert tools["view_text_file"].input_schema["type"] == "object"

        written = await client.call_tool(
            "write_text_file", {"path": "python.txt", "content": "written by the Python SDK"}
        )
        assert not written.is_error, written
        read_back = await client.call_tool("view_text_file", {"path": "python.txt"})
        text = "".join(block.text for block in read_back.content if block.type == "text")
        assert "written by the Python SDK" in text, text

        listing = await client.call_tool("list_directory", {"path": ""})
        assert listing.structured_content is not None, "structured content is kept"

        missing = await client.call_tool("view_text_file", {})
        assert missing.is_error, "a call that breaks the schema is a tool error"
    print(f"ok: {mode} mode on {version}, {len(tools)} tools listed, write and read back through {url}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
