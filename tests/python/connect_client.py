"""A person's MCP client meeting a per-person server they have not connected yet: the official
Python SDK (2.x) signed in to Toolgate with OAuth, declaring URL-mode elicitation.

Usage: connect_client.py <auto|legacy> <endpoint url> <username> <password> <tool>
Signs in as `oauth_client.py` does (its `Person` plays the browser), then calls `<tool>` with no
arguments. Toolgate answers with a URL-mode elicitation (on 2025-11-25 an `elicitation/create`
request in the session, on 2026-07-28 an input request of the call): the callback prints
`connect <url>` and waits for `connected` on stdin while the test plays the person's browser,
then accepts. Prints `result <text>` (`result error <text>` for an error result), calls the tool
again, which must not ask again, and prints `again <text>`. Exits non-zero with a message on any
difference.
"""

import asyncio
import os
import sys
import traceback

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from oauth_client import EXPECTED_VERSION, Memory, signing_in

TIMEOUT = 120


def text_of(result: types.CallToolResult) -> str:
    text = "".join(block.text for block in result.content if block.type == "text")
    return f"error {text}" if result.is_error else text


class Elicitations:
    """The person's side of the client: the elicitation callback, and what it saw."""

    def __init__(self, mode: str):
        self.mode = mode
        self.asked: list[types.ElicitRequestURLParams] = []
        self.completed: list[str] = []
        self.failures: list[str] = []

    async def answer(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        try:
            assert not self.asked, f"asked to elicit again: {params!r}"
            assert isinstance(params, types.ElicitRequestURLParams) and params.mode == "url", (
                f"not a URL-mode elicitation: {params!r}"
            )
            assert params.url, f"no url: {params!r}"
            if self.mode == "legacy":  # required on the wire at 2025-11-25, removed at 2026-07-28
                assert params.elicitation_id, f"no elicitationId: {params!r}"
        except AssertionError as failed:
            self.failures.append(str(failed))
            return types.ErrorData(code=types.INVALID_REQUEST, message=str(failed))
        self.asked.append(params)
        print(f"connect {params.url}", flush=True)
        said = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        if said.strip() != "connected":
            self.failures.append(f"expected `connected` on stdin, read {said!r}")
            return types.ElicitResult(action="cancel")
        return types.ElicitResult(action="accept")

    async def on_message(self, message) -> None:
        # Toolgate may say the elicitation completed; the SDK parses it at 2025-11-25 only.
        if isinstance(message, types.ElicitCompleteNotification):
            self.completed.append(message.params.elicitation_id)
            print(f"(elicitation {message.params.elicitation_id} complete)", file=sys.stderr, flush=True)
        elif isinstance(message, Exception):
            print(f"(transport: {message!r})", file=sys.stderr, flush=True)

    def check(self) -> None:
        if self.failures:
            raise AssertionError("; ".join(self.failures))


async def main(mode: str, url: str, username: str, password: str, tool: str) -> None:
    _, provider = signing_in(url, username, password, f"Python SDK connect ({mode})", Memory())
    elicitations = Elicitations(mode)
    http = httpx2.AsyncClient(auth=provider, timeout=30)
    client = Client(
        streamable_http_client(url, http_client=http),
        mode=mode,
        # Any callback declares `elicitation: {form: {}, url: {}}` (ClientSession._build_capabilities).
        elicitation_callback=elicitations.answer,
        message_handler=elicitations.on_message,
    )
    async with http, client:
        version = client.protocol_version
        assert version == EXPECTED_VERSION[mode], f"{mode} mode negotiated {version}"

        first = await client.call_tool(tool, {})
        elicitations.check()
        assert len(elicitations.asked) == 1, "the first call did not ask the person to connect"
        print(f"result {text_of(first)}", flush=True)

        second = await client.call_tool(tool, {})
        elicitations.check()
        assert len(elicitations.asked) == 1, "the second call asked again"
        print(f"again {text_of(second)}", flush=True)
    print(f"ok: {mode} mode ({version}); connected on first use via {elicitations.asked[0].url}", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(f"usage: {sys.argv[0]} <auto|legacy> <endpoint url> <username> <password> <tool>")
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(asyncio.wait_for(main(*sys.argv[1:6]), timeout=TIMEOUT))
        code = 0
    except BaseException:  # noqa: BLE001 - every failure is reported and exits non-zero
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    # Not asyncio.run: on a failure the stdin reader thread may still be blocked in readline,
    # and joining the default executor (asyncio.run, then interpreter exit) would hang for ever.
    os._exit(code)
