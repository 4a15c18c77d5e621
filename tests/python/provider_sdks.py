"""The LLM providers' own SDK types judge what Toolgate serves in their formats.

Usage: provider_sdks.py <renderings.json>
The file maps a format (`openai`, `openai_strict`, `anthropic`, `gemini`, `mcp`) to the list of
tools Toolgate renders in it. Each tool must validate with the provider's SDK type, and nothing
may be lost on the way through it (what the SDK model keeps must equal what was sent). Prints
one line per format; exits non-zero listing every rejected tool.
"""

import json
import sys

import anthropic.types
import mcp_types
import openai.types.chat
from google.genai import types as genai
from pydantic import TypeAdapter

OPENAI_TOOL = TypeAdapter(openai.types.chat.ChatCompletionToolParam)
ANTHROPIC_TOOL = TypeAdapter(anthropic.types.ToolParam)


def upper_types(schema):
    """A `parameters` schema as google-genai dumps it: `type` names in capitals."""
    if isinstance(schema, dict):
        return {
            key: value.upper() if key == "type" and isinstance(value, str) else upper_types(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [upper_types(item) for item in schema]
    return schema


def openai_tool(tool, strict):
    kept = OPENAI_TOOL.validate_python(tool)
    openai.types.chat.ChatCompletionFunctionTool.model_validate(tool)
    assert tool["function"].get("strict") is strict, f"strict is {tool['function'].get('strict')}"
    return kept


def anthropic_tool(tool):
    return ANTHROPIC_TOOL.validate_python(tool)


def gemini_tool(declaration):
    parsed = genai.FunctionDeclaration(**declaration)
    # The declaration must also fit a request's tool list and generation config.
    genai.GenerateContentConfig(tools=[genai.Tool(function_declarations=[parsed])])
    kept = parsed.model_dump(mode="json", exclude_none=True, by_alias=True)
    # `parameters` is google-genai's own Schema model; `parametersJsonSchema` is kept as sent.
    sent = dict(declaration)
    if "parameters" in sent:
        sent["parameters"] = upper_types(sent["parameters"])
    return kept, sent


def mcp_tool(tool):
    return mcp_types.Tool.model_validate(tool).model_dump(mode="json", exclude_none=True, by_alias=True), tool


CHECKS = {
    "openai": lambda tool: (openai_tool(tool, False), tool),
    "openai_strict": lambda tool: (openai_tool(tool, True), tool),
    "anthropic": lambda tool: (anthropic_tool(tool), tool),
    "gemini": gemini_tool,
    "mcp": mcp_tool,
}


def name_of(tool):
    return tool.get("name") or tool.get("function", {}).get("name")


def main(path):
    renderings = json.load(open(path))
    rejected = []
    for fmt, tools in renderings.items():
        for tool in tools:
            try:
                kept, sent = CHECKS[fmt](tool)
                assert kept == sent, f"lost in the SDK model: sent {json.dumps(sent)}, kept {json.dumps(kept)}"
            except Exception as err:  # every rejection is reported, not only the first
                rejected.append(f"{fmt} {name_of(tool)}: {str(err)[:600]}")
        print(f"{fmt}: {len(tools)} tools")
    if rejected:
        print(f"{len(rejected)} rejected:", *rejected, sep="\n")
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1])
