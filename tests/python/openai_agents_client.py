"""openai-agents (the OpenAI Agents SDK) against Toolgate, as an agent application uses it: an
`Agent` with Toolgate as its `MCPServerStreamableHttp`, run by the SDK's `Runner`.

Usage: openai_agents_client.py <endpoint url> <tenant api key>
One row of the compatibility matrix (`tests/clients.rs`), against a tenant with the built-in
tools and server-everything (prefix `ev`). The SDK uses the `mcp` 2.x client in its default
`auto` mode (revision 2026-07-28). No LLM is reachable from the test machine, so the agent's
model is a scripted one that calls `write_text_file` and then answers with the tool's output:
the tool list, the call and its result go through the SDK's own agent loop and MCP client.

The SDK takes no elicitation or sampling callbacks and no progress callback, and opens no
`subscriptions/listen` stream (it lists again on every run), so those cells check what such a
client gets: the call refused with -32021 naming the capability it needs, and the admin
change in the next listing.
Prints `listening` when it waits for the admin change; exits non-zero on any difference.
"""

import asyncio
import json
import sys

from agents import Agent, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.mcp import MCPServerStreamableHttp
from agents.models.interface import Model
from agents.usage import Usage
from mcp.shared.exceptions import MCPError
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from matrix import check_changed, check_listed, item_cells, text_of

CONTENT = "written by an openai-agents agent"


class ScriptedModel(Model):
    """Asks for one `write_text_file` call, then answers with what the tool returned."""

    def __init__(self) -> None:
        self.offered: list[str] = []

    async def get_response(self, system_instructions, input, model_settings, tools, *args, **kwargs):
        self.offered = [tool.name for tool in tools]
        outputs = [item for item in input if isinstance(item, dict) and item.get("type") == "function_call_output"]
        if outputs:
            answer = ResponseOutputText(type="output_text", text=str(outputs[-1]["output"]), annotations=[])
            message = ResponseOutputMessage(
                id="msg-1", type="message", role="assistant", status="completed", content=[answer]
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)
        call = ResponseFunctionToolCall(
            type="function_call",
            id="fc-1",
            call_id="call-1",
            name="write_text_file",
            arguments=json.dumps({"path": "agent.txt", "content": CONTENT}),
        )
        return ModelResponse(output=[call], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the agent is run with Runner.run, which does not stream")


async def main(url: str, key: str) -> None:
    set_tracing_disabled(True)
    server = MCPServerStreamableHttp(
        params={"url": url, "headers": {"Authorization": f"Bearer {key}"}, "timeout": 30},
        use_structured_content=True,
        client_session_timeout_seconds=30,
    )
    async with server:
        tools = {tool.name for tool in await server.list_tools()}
        check_listed(tools)

        model = ScriptedModel()
        agent = Agent(name="toolgate user", instructions="Use the tools.", model=model, mcp_servers=[server])
        run = await Runner.run(agent, "Write the file.")
        assert "write_text_file" in model.offered, model.offered
        assert "agent.txt" in str(run.final_output), run.final_output
        read_back = await server.call_tool("view_text_file", {"path": "agent.txt"})
        assert CONTENT in text_of(read_back), read_back

        weather = await server.call_tool("ev_get-structured-content", {"location": "New York"})
        assert weather.structured_content and "temperature" in weather.structured_content, weather

        # The client declared neither: the server's question does not reach it, and the call is
        # refused as needing that capability (-32021).
        for tool, arguments, needed in [
            ("ev_trigger-elicitation-request", {}, "elicitation"),
            ("ev_trigger-sampling-request", {"prompt": "Hi"}, "sampling"),
        ]:
            try:
                answer = await server.call_tool(tool, arguments)
            except MCPError as refused:
                assert refused.code == -32021 and needed in refused.data["requiredCapabilities"], refused
            else:
                raise AssertionError(f"{tool} was not refused: {answer}")
        await item_cells(server)

        print("listening", flush=True)
        for _ in range(100):
            names = {tool.name for tool in await server.list_tools()}
            if "run_command" not in names:
                break
            await asyncio.sleep(0.2)
        check_changed(names)
    print(f"ok: openai-agents, {len(tools)} tools; agent run, call, structured, input refused -32021, "
          "prompts, resources, change in the next listing")


if __name__ == "__main__":
    url, key = sys.argv[1:3]
    asyncio.run(asyncio.wait_for(main(url, key), timeout=60))
