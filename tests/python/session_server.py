"""A server of the handshake era written with the Python SDK 1.x (sessions; it knows no
`server/discover`), telling a caller how its requests reach it: `whoami` answers the id of its
request and the session it came in; `ask_in_call` and `ask_in_session` ask the client for a
name, with a request of their own sent on the call's stream and on the session's stream, and
answer with the name they got.

Usage: session_server.py <port>   (streamable HTTP at /mcp)
"""

import json
import sys

from pydantic import BaseModel

from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("session-upstream", host="127.0.0.1", port=int(sys.argv[1]))


class Name(BaseModel):
    name: str


@server.tool()
def whoami(ctx: Context) -> str:
    """The id of this request and the session it came in."""
    session = ctx.request_context.request.headers.get("mcp-session-id")
    return json.dumps({"request": ctx.request_id, "session": session})


@server.tool()
async def ask_in_call(ctx: Context) -> str:
    """A name, asked on the call's stream."""
    answer = await ctx.elicit("Your name?", Name)
    return answer.data.name if answer.action == "accept" else answer.action


@server.tool()
async def ask_in_session(ctx: Context) -> str:
    """A name, asked on the session's stream."""
    answer = await ctx.session.elicit("Your name?", Name.model_json_schema())
    return answer.content["name"] if answer.action == "accept" else answer.action


if __name__ == "__main__":
    server.run(transport="streamable-http")
