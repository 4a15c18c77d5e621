"""The tools, resources, prompts and completions the official MCP conformance suite
(`@modelcontextprotocol/conformance`) asks for in its server scenarios, written to the
scenarios' descriptions with the Python SDK 1.x, for Toolgate to front: the suite then judges
Toolgate's `/mcp/<tenant>` with them behind it.

Usage: conformance_server.py <port>   (streamable HTTP at /mcp; the SDK 1.x knows only the
handshake era, so Toolgate connects with `initialize` after `server/discover` fails)
"""

import asyncio
import base64
import json
import sys

from mcp import types
from mcp.server.fastmcp import Context, FastMCP, Image
from mcp.server.fastmcp.prompts.base import Message, UserMessage

# A 1x1 red PNG and a 44-byte silent WAV.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = base64.b64encode(
    b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00D\xac\x00\x00\x88X\x01\x00\x02\x00\x10\x00data\x00\x00\x00\x00"
).decode()

server = FastMCP("conformance-upstream", host="127.0.0.1", port=int(sys.argv[1]))


def resource(uri: str) -> types.EmbeddedResource:
    contents = types.TextResourceContents(uri=uri, mimeType="text/plain", text="This is an embedded resource.")
    return types.EmbeddedResource(type="resource", resource=contents)


@server.tool()
def test_simple_text() -> str:
    """Returns simple text."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> Image:
    """Returns an image."""
    return Image(data=PNG, format="png")


@server.tool()
def test_audio_content() -> types.AudioContent:
    """Returns audio."""
    return types.AudioContent(type="audio", data=WAV, mimeType="audio/wav")


@server.tool()
def test_embedded_resource() -> types.EmbeddedResource:
    """Returns an embedded resource."""
    return resource("test://embedded-resource")


@server.tool()
def test_multiple_content_types() -> list:
    """Returns text, an image and a resource."""
    return ["Multiple content types test:", Image(data=PNG, format="png"), resource("test://mixed-content-resource")]


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Logs three messages while it runs."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


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


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's LLM."""
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    answer = await ctx.session.create_message(messages=[message], max_tokens=100)
    return f"LLM response: {answer.content.text}"


async def elicited(ctx: Context, message: str, schema: dict) -> str:
    answer = await ctx.session.elicit(message, schema)
    return f"Elicitation completed: action={answer.action}, content={answer.content}"


@server.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user for a username and an email."""
    return await elicited(ctx, message, {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    })


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Asks with a default for every primitive type."""
    return await elicited(ctx, "Please review and update the form fields with defaults", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verified", "default": True},
        },
    })


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Asks with each of the five enum forms."""
    titled = [{"const": f"value{i}", "title": title} for i, title in enumerate(["First", "Second", "Third"], 1)]
    return await elicited(ctx, "Please select options from the enum fields", {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": titled},
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": titled}},
        },
    })



@server.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG image)."""
    return PNG


@server.resource("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> str:
    """Data of the item `id`."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource("test://watched-resource", mime_type="text/plain")
def watched() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


# The URIs subscribed to (by any session: Toolgate holds one connection to this server).
subscribed: set[str] = set()


@server._mcp_server.subscribe_resource()
async def subscribe(uri) -> None:
    subscribed.add(str(uri))


@server._mcp_server.unsubscribe_resource()
async def unsubscribe(uri) -> None:
    subscribed.discard(str(uri))


@server.tool()
async def test_touch_subscribed_resources(ctx: Context) -> str:
    """Sends an update of each resource subscribed to, and says which they are."""
    for uri in sorted(subscribed):
        await ctx.session.send_resource_updated(uri)
    return "subscribed: " + ", ".join(sorted(subscribed))


@server.prompt()
def test_simple_prompt() -> str:
    """A prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:
    """A prompt that embeds a resource."""
    contents = types.TextResourceContents(uri=resourceUri, mimeType="text/plain", text="Embedded resource content for testing.")
    return [
        UserMessage(content=types.EmbeddedResource(type="resource", resource=contents)),
        UserMessage("Please process the embedded resource above."),
    ]


@server.prompt()
def test_prompt_with_image() -> list[Message]:
    """A prompt with an image."""
    image = types.ImageContent(type="image", data=base64.b64encode(PNG).decode(), mimeType="image/png")
    return [UserMessage(content=image), UserMessage("Please analyze the image above.")]


@server.completion()
async def complete(ref, argument, context) -> types.Completion:
    """Suggests the values of `arg1` that start with what is typed."""
    values = [v for v in ["testValue1", "testValue2", "paris", "park"] if v.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), hasMore=False)


if __name__ == "__main__":
    server.run(transport="streamable-http")
