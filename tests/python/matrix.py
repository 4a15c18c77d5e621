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


def check_listed(tools) -> None:
    for name in ("write_text_file", "view_text_file", "run_command", "ev_echo"):
        assert name in tools, f"{name} missing from {sorted(tools)}"


def check_changed(names) -> None:
    assert "run_command" not in names, f"the admin change is not in the list: {sorted(names)}"
