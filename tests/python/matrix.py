"""The cells of the compatibility matrix both Python SDK lines run (`mcp_client.py` for 2.x,
`mcp1_client.py` for 1.x): what differs between them is how a client is made and how a
result's fields are spelled, which each script passes in.
"""

ELICITED_NAME = "Ada from Python"
SAMPLED_TEXT = "sampled by the Python client"


def answers(types):
    """The elicitation and sampling callbacks, built on the SDK's own `types`."""

    async def answer_elicitation(_context, params):
        return types.ElicitResult(action="accept", content={"name": ELICITED_NAME})

    async def answer_sampling(_context, params):
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=SAMPLED_TEXT), model="test-model"
        )

    return answer_elicitation, answer_sampling


def text_of(result) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


async def call_cells(call_tool, is_error, structured) -> None:
    """A file written and read back, a schema-breaking call, structured content, progress, an
    elicitation and a sampling request relayed from the upstream, through `call_tool`."""
    written = await call_tool("write_text_file", {"path": "python.txt", "content": "written by the Python SDK"})
    assert not is_error(written), written
    read_back = await call_tool("view_text_file", {"path": "python.txt"})
    assert "written by the Python SDK" in text_of(read_back), read_back
    missing = await call_tool("view_text_file", {})
    assert is_error(missing), "a call that breaks the schema is a tool error"

    weather = await call_tool("ev_get-structured-content", {"location": "New York"})
    assert structured(weather) and "temperature" in structured(weather), weather

    reports = []

    async def on_progress(progress, total, message):
        reports.append(progress)

    ran = await call_tool("ev_trigger-long-running-operation", {"duration": 1, "steps": 3}, progress_callback=on_progress)
    assert not is_error(ran), ran
    assert reports, "no progress reached the client"

    elicited = await call_tool("ev_trigger-elicitation-request", {})
    assert ELICITED_NAME in text_of(elicited), f"the elicitation answer did not reach the upstream: {elicited}"
    sampled = await call_tool("ev_trigger-sampling-request", {"prompt": "Say something"})
    assert SAMPLED_TEXT in text_of(sampled), f"the sampling answer did not reach the upstream: {sampled}"


def field(value, snake: str, camel: str):
    """A result's field, spelled `snake` by the 2.x line and `camel` by the 1.x line."""
    return getattr(value, snake) if hasattr(value, snake) else getattr(value, camel)


async def item_cells(client, types=None) -> None:
    """server-everything's prompts, resources, templates and completions through Toolgate:
    listed under the server's prefix (prompts) or their URIs, a prompt filled, an argument
    completed (with `types`, the SDK's types module; a client without `complete` has none), a
    resource listed by the server and one of a template read."""
    prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
    for name in ("ev_simple-prompt", "ev_args-prompt", "ev_completable-prompt"):
        assert name in prompts, f"{name} missing from {sorted(prompts)}"
    got = await client.get_prompt("ev_args-prompt", {"city": "Paris"})
    assert "What's weather in Paris?" in str(got.messages), got
    if types:
        reference = types.PromptReference(type="ref/prompt", name="ev_completable-prompt")
        completed = await client.complete(reference, {"name": "department", "value": "Eng"})
        assert completed.completion.values == ["Engineering"], completed

    listed = (await client.list_resources()).resources
    documents = [str(r.uri) for r in listed if str(r.uri).startswith("demo://resource/static/document/")]
    assert documents, f"no static document among {[str(r.uri) for r in listed]}"
    document = await client.read_resource(documents[0])
    assert document.contents and document.contents[0].text, document
    templates = field(await client.list_resource_templates(), "resource_templates", "resourceTemplates")
    uris = [field(t, "uri_template", "uriTemplate") for t in templates]
    assert "demo://resource/dynamic/text/{resourceId}" in uris, uris
    dynamic = await client.read_resource("demo://resource/dynamic/text/7")
    assert "7" in dynamic.contents[0].text, dynamic


# A document server-everything lists; its updates start with its `toggle-subscriber-updates` tool.
WATCHED = "demo://resource/static/document/architecture.md"
TOGGLE = "ev_toggle-subscriber-updates"


def check_listed(tools) -> None:
    for name in ("write_text_file", "view_text_file", "run_command", "ev_echo"):
        assert name in tools, f"{name} missing from {sorted(tools)}"


def check_changed(names) -> None:
    assert "run_command" not in names, f"the admin change is not in the list: {sorted(names)}"
