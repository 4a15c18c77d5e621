"""An independent MCP client against Toolgate: the official Python SDK over streamable HTTP.

Usage: mcp_client.py <endpoint url> <tenant api key>
Lists the tenant's tools, writes a file with one tool and reads it back with another; exits
non-zero with a message on any difference from what the Rust tests expect.
"""

import asyncio
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, key: str) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    async with http, streamable_http_client(url, http_client=http) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            for name in ("write_text_file", "view_text_file"):
                assert name in tools, f"{name} missing from {sorted(tools)}"
            assert tools["view_text_file"].input_schema["type"] == "object"

            written = await session.call_tool(
                "write_text_file", {"path": "python.txt", "content": "written by the Python SDK"}
            )
            assert not written.is_error, written
            read_back = await session.call_tool("view_text_file", {"path": "python.txt"})
            text = "".join(block.text for block in read_back.content if block.type == "text")
            assert "written by the Python SDK" in text, text

            missing = await session.call_tool("view_text_file", {})
            assert missing.is_error, "a call that breaks the schema is a tool error"
    print(f"ok: {len(tools)} tools listed, write and read back through {url}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
