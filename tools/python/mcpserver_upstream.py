"""The benchmark's Python upstream: the official Python SDK's high-level server (FastMCP,
renamed MCPServer in mcp 2) with one tool, `echo`.

Usage: mcpserver_upstream.py streamable-http <port>   (http://127.0.0.1:<port>/mcp)
       mcpserver_upstream.py sse <port>               (legacy SSE, http://127.0.0.1:<port>/sse)
       mcpserver_upstream.py stdio
Runs on mcp 2.x (2026-07-28 and the handshake era) and on mcp 1.x (the handshake era only)."""

import sys

transport = sys.argv[1]
port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
try:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench-python", log_level="WARNING")
    options = {"host": "127.0.0.1", "port": port} if transport != "stdio" else {}
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP

    server = FastMCP("bench-python", log_level="WARNING", host="127.0.0.1", port=port)
    options = {}


@server.tool()
def echo(message: str) -> str:
    """Says it back."""
    return message


server.run(transport, **options)
