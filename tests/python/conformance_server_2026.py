"""The reference server of the conformance suite's 2026-07-28 requirements (`tests/conformance.rs`),
written with the Python SDK 2.x (`MCPServer`, which serves that revision and the handshake era
from one endpoint) to the scenarios' descriptions: the tools, resources, prompts and completion
the carried-over scenarios use, the stateless diagnostics (`test_missing_capability`,
`test_streaming_elicitation`, `test_logging_tool`, the list-change triggers), the multi round-trip
tools and prompt (`test_input_required_result_*`), and caching hints on every list and read.

Usage: conformance_server_2026.py <port>   (streamable HTTP at /mcp)
"""

import asyncio
import base64
import itertools
import json
import sys

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt, UserMessage
from mcp.shared.exceptions import MCPError
from mcp.types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    AudioContent,
    Completion,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = base64.b64encode(
    b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00D\xac\x00\x00\x88X\x01\x00\x02\x00\x10\x00data\x00\x00\x00\x00"
).decode()

hint = CacheHint(ttl_ms=60_000, scope="public")
server = MCPServer(
    "conformance-reference",
    version="1.0.0",
    cache_hints={m: hint for m in ("tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read")},
)


def embedded(uri: str, text: str = "This is an embedded resource.") -> EmbeddedResource:
    return EmbeddedResource(type="resource", resource=TextResourceContents(uri=uri, mime_type="text/plain", text=text))


def ask(message: str, field: str, kind: str = "string") -> ElicitRequest:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def sample(text: str, max_tokens: int) -> CreateMessageRequest:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=text))
    return CreateMessageRequest(params=CreateMessageRequestParams(messages=[message], max_tokens=max_tokens))


def accepted(ctx: Context, key: str) -> dict | None:
    answer = (ctx.input_responses or {}).get(key)
    return answer.content if isinstance(answer, ElicitResult) and answer.action == "accept" else None


# ---- tools the carried-over scenarios call ----
@server.tool()
def test_simple_text() -> str:
    """Returns simple text."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> list[ImageContent]:
    """Returns an image."""
    return [ImageContent(type="image", data=PNG, mime_type="image/png")]


@server.tool()
def test_audio_content() -> list[AudioContent]:
    """Returns audio."""
    return [AudioContent(type="audio", data=WAV, mime_type="audio/wav")]


@server.tool()
def test_embedded_resource() -> list[EmbeddedResource]:
    """Returns an embedded resource."""
    return [embedded("test://embedded-resource")]


@server.tool()
def test_multiple_content_types() -> list:
    """Returns text, an image and a resource."""
    return [
        TextContent(type="text", text="Multiple content types test:"),
        ImageContent(type="image", data=PNG, mime_type="image/png"),
        embedded("test://mixed-content-resource"),
    ]


@server.tool()
def test_error_handling() -> str:
    """Always fails."""
    raise ValueError("This tool intentionally returns an error for testing")


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100."""
    for progress in (0, 50, 100):
        await ctx.report_progress(progress, 100)
        await asyncio.sleep(0.05)
    return "Tool with progress executed successfully"


# The schema the suite's `json-schema-2020-12` scenario expects listed as it is (SEP-1613,
# SEP-2106); the SDK derives a schema from the signature, so the listed one is set after.
SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(description="Tool with JSON Schema 2020-12 features")
def json_schema_2020_12_tool(name: str = "", phone: str = "", email: str = "") -> str:
    return f"Contact {name}"


server._tool_manager.get_tool("json_schema_2020_12_tool").parameters = SCHEMA_2020_12


# ---- the stateless diagnostics (SEP-2575) ----
@server.tool()
async def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability."""
    caps = ctx.client_capabilities
    if caps is None or caps.sampling is None:
        raise MCPError(
            code=MISSING_REQUIRED_CLIENT_CAPABILITY,
            message="This tool requires the client's sampling capability",
            data={"requiredCapabilities": {"sampling": {}}},
        )
    return "sampling declared"


@server.tool()
def test_streaming_elicitation() -> str:
    """Answers with a result only (no server-to-client request on the stream)."""
    return "no independent requests"


@server.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs, which the request-scoped log level gates."""
    await ctx.info("test_logging_tool ran")
    return "logged"


changes = itertools.count(1)


@server.tool()
async def test_trigger_tool_change(ctx: Context) -> str:
    """Adds a tool, and announces the change to subscriptions/listen streams."""
    name = f"test_added_tool_{next(changes)}"
    server.add_tool(lambda: "added", name=name, description="A tool added by test_trigger_tool_change.")
    await ctx.notify_tools_changed()
    return f"added {name}"


@server.tool()
async def test_trigger_prompt_change(ctx: Context) -> str:
    """Adds a prompt, and announces the change to subscriptions/listen streams."""
    name = f"test_added_prompt_{next(changes)}"
    server.add_prompt(Prompt.from_function(lambda: "added", name=name, description="A prompt added by test_trigger_prompt_change."))
    await ctx.notify_prompts_changed()
    return f"added {name}"


# ---- multi round-trip requests (SEP-2322) ----
@server.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
    """Asks the user's name in band."""
    answer = accepted(ctx, "user_name")
    if answer is None or not isinstance(answer.get("name"), str):
        return InputRequiredResult(input_requests={"user_name": ask("What is your name?", "name")})
    return f"Hello, {answer['name']}!"


@server.tool()
async def test_input_required_result_sampling(ctx: Context) -> str | InputRequiredResult:
    """Asks the client's model in band."""
    answer = (ctx.input_responses or {}).get("capital_question")
    if not isinstance(answer, CreateMessageResult):
        return InputRequiredResult(input_requests={"capital_question": sample("What is the capital of France?", 100)})
    return f"The model said: {getattr(answer.content, 'text', '?')}"


@server.tool()
async def test_input_required_result_list_roots(ctx: Context) -> str | InputRequiredResult:
    """Asks the client's roots in band."""
    answer = (ctx.input_responses or {}).get("client_roots")
    if not isinstance(answer, ListRootsResult):
        return InputRequiredResult(input_requests={"client_roots": ListRootsRequest()})
    return "Roots: " + ", ".join(str(root.uri) for root in answer.roots)


def confirmed(ctx: Context, state: str, done: str) -> str | InputRequiredResult:
    """`done` once the client confirmed with the request state `state`; else the question, with it."""
    if ctx.request_state == state and accepted(ctx, "confirm") is not None:
        return done
    return InputRequiredResult(input_requests={"confirm": ask("Please confirm", "ok", "boolean")}, request_state=state)


@server.tool()
async def test_input_required_result_request_state(ctx: Context) -> str | InputRequiredResult:
    """Round-trips a request state (sealed by the SDK)."""
    return confirmed(ctx, "confirm-pending", "state-ok: confirmation received")


@server.tool()
async def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequiredResult:
    """Asks three kinds of input at once."""
    if {"user_name", "greeting", "client_roots"} <= (ctx.input_responses or {}).keys():
        return "All inputs received."
    return InputRequiredResult(
        input_requests={
            "user_name": ask("What is your name?", "name"),
            "greeting": sample("Generate a greeting", 50),
            "client_roots": ListRootsRequest(),
        },
        request_state="multiple-inputs",
    )


@server.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str | InputRequiredResult:
    """Two rounds of questions, the state evolving."""
    state = json.loads(ctx.request_state) if ctx.request_state else {}
    if state.get("round") == 1 and (step1 := accepted(ctx, "step1")):
        return InputRequiredResult(
            input_requests={"step2": ask("Step 2: What is your favorite color?", "color")},
            request_state=json.dumps({"round": 2, "name": step1.get("name")}),
        )
    if state.get("round") == 2 and (step2 := accepted(ctx, "step2")):
        return f"{state['name']} likes {step2.get('color')}."
    return InputRequiredResult(
        input_requests={"step1": ask("Step 1: What is your name?", "name")}, request_state=json.dumps({"round": 1})
    )


@server.tool()
async def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequiredResult:
    """Its state is sealed by the SDK: a tampered one is refused before this runs."""
    return confirmed(ctx, "sealed", "state-ok")


@server.tool()
async def test_input_required_result_capabilities(ctx: Context) -> str | InputRequiredResult:
    """Asks only for what the client declared it can answer."""
    if ctx.input_responses:
        return "answered"
    caps = ctx.client_capabilities
    requests = {}
    if caps is not None and caps.elicitation is not None:
        requests["user_name"] = ask("What is your name?", "name")
    if caps is not None and caps.sampling is not None:
        requests["greeting"] = sample("Generate a greeting", 50)
    if caps is not None and caps.roots is not None:
        requests["client_roots"] = ListRootsRequest()
    return InputRequiredResult(input_requests=requests) if requests else "nothing to ask"


@server.prompt()
async def test_input_required_result_prompt(ctx: Context) -> list[UserMessage] | InputRequiredResult:
    """A prompt that asks for context in band."""
    answer = accepted(ctx, "user_context")
    if answer is None:
        return InputRequiredResult(input_requests={"user_context": ask("What context should the prompt use?", "context")})
    return [UserMessage(f"Use this context: {answer.get('context')}")]


# ---- resources, prompts, completion ----
@server.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG image)."""
    return base64.b64decode(PNG)


@server.resource("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> str:
    """Data of the item `id`."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.prompt()
def test_simple_prompt() -> str:
    """A prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
    """A prompt that embeds a resource."""
    return [
        UserMessage(content=embedded(resourceUri, "Embedded resource content for testing.")),
        UserMessage("Please process the embedded resource above."),
    ]


@server.prompt()
def test_prompt_with_image() -> list[UserMessage]:
    """A prompt with an image."""
    return [UserMessage(content=ImageContent(type="image", data=PNG, mime_type="image/png")), UserMessage("Please analyze the image above.")]


@server.completion()
async def complete(ref, argument, context) -> Completion:
    """Suggests the values of `arg1` that start with what is typed."""
    values = [v for v in ["testValue1", "testValue2", "paris", "park"] if v.startswith(argument.value)]
    return Completion(values=values, total=len(values), has_more=False)


if __name__ == "__main__":
    server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
