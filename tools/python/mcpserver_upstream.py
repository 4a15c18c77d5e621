"""The benchmark's Python upstream: the official Python SDK's high-level server (FastMCP,
renamed MCPServer in mcp 2) with one tool, `echo`, over streamable HTTP at
http://127.0.0.1:<port>/mcp. Usage: mcpserver_upstream.py <port>"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-python", log_level="WARNING")


@server.tool()
def echo(message: str) -> str:
    """Says it back."""
    return message


server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
