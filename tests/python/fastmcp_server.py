"""A FastMCP 4 server, as people write them, for Toolgate to front as an upstream.

Usage: fastmcp_server.py <http|sse> <port>
`http` is streamable HTTP at /mcp (FastMCP 4 speaks revision 2026-07-28 there and the
handshake era for older clients); `sse` is the legacy HTTP+SSE transport at /sse.
"""

import sys

from fastmcp import Context, FastMCP
from fastmcp.apps.config import UI_EXTENSION_ID, AppConfig
from fastmcp.exceptions import ToolError

server = FastMCP("fastmcp-upstream")


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool
def weather(city: str) -> dict:
    """The weather in a city, as structured content."""
    return {"city": city, "temperature": 21, "conditions": "sunny"}


@server.tool
async def count(to: int, ctx: Context) -> str:
    """Count up, reporting progress."""
    for step in range(1, to + 1):
        await ctx.report_progress(step, to)
    return f"counted to {to}"


@server.tool
def refuse(reason: str) -> str:
    """Always fails with a tool error."""
    raise ToolError(f"refused: {reason}")


@server.resource("config://app", mime_type="application/json")
def app_config() -> dict:
    """The application's settings."""
    return {"theme": "dark", "version": 4}


@server.resource("users://{user_id}/profile")
def profile(user_id: str) -> str:
    """A user's profile."""
    return f"Profile of user {user_id}"


# An MCP App: the tool names the `ui://` resource hosts show as its interface.
FORECAST_VIEW = "ui://weather/forecast.html"


@server.resource(FORECAST_VIEW)
def forecast_view() -> str:
    """Draws a forecast."""
    return "<!doctype html><title>Forecast</title><main id=forecast></main>"


@server.tool(app=AppConfig(resource_uri=FORECAST_VIEW))
def forecast(city: str, ctx: Context) -> str:
    """The forecast for a city, drawn by its app where the host shows apps."""
    shown = "can show" if ctx.client_supports_extension(UI_EXTENSION_ID) else "cannot show"
    return f"Sunny in {city}; the client {shown} apps"


@server.prompt
def review(code: str, language: str = "Python") -> str:
    """Ask for a code review."""
    return f"Please review this {language} code:\n{code}"


if __name__ == "__main__":
    transport, port = sys.argv[1], int(sys.argv[2])
    server.run(transport=transport, host="127.0.0.1", port=port, show_banner=False)
