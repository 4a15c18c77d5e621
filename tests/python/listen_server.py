"""A server on revision 2026-07-28 written with the Python SDK 2.x (`MCPServer`): there is no
`resources/subscribe` on that revision, so a client hears of a resource's updates only through a
`subscriptions/listen` stream that names the resource. Toolgate subscribes its tenants' sessions
that way.

Usage: listen_server.py <port>   (streamable HTTP at /mcp)
"""

import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("listen-upstream")


@server.resource("test://watched-resource", mime_type="text/plain")
def watched() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


@server.resource("test://other-resource", mime_type="text/plain")
def other() -> str:
    """A resource nobody subscribes to."""
    return "Other resource content"


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Publishes an update of the resource `uri` to the streams that listen for it."""
    await ctx.notify_resource_updated(uri)
    return f"touched {uri}"


if __name__ == "__main__":
    server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
