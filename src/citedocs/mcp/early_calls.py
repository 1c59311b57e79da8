"""Read-only tool calls answered before the SDK is imported, with the SDK server's reply byte for byte.

An agent's first call is a `search`; importing the `mcp` SDK for it cost ~0.8 s of CPU after the handshake
(bench/bench_startup.py). The early loop (`early.py`) answers `search`, `read_file`, `list_folders` and
`index_status` itself: the same `FolderTools` method behind the same checks (`calls.py`) as the SDK
server's, and the SDK's own conversion of the result (`pydantic_core.to_json`, as `func_metadata` does).
Only calls the SDK is sure to accept unchanged are answered here: arguments of exactly the JSON types in the
recorded input schema (`handshake.json`), nothing it would re-read as JSON, no unusual params; anything
else (and a crash) is the SDK's to answer, so its validation and error texts stay the only ones.
tests/test_mcp_early_calls.py compares both paths' bytes for the same calls.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from citedocs import access
from citedocs.mcp.handshake import recorded_tool_schema
from citedocs.text.invalid import invalid_text

if TYPE_CHECKING:
    from citedocs.mcp.folder_tools import FolderTools
    from citedocs.service import Citedocs

__all__ = ["EARLY_TOOLS", "EarlyCalls", "plain_arguments"]

log = logging.getLogger(__name__)

EARLY_TOOLS = frozenset({"search", "read_file", "list_folders", "index_status"})
_CALL_KEYS = frozenset({"name", "arguments", "_meta"})
_SCHEMA_WORDS = frozenset({"type", "minimum", "maximum", "enum", "title", "description", "default"})
_MAX_ID = 2**53  # ids any client and parser agree on


class EarlyCalls:
    """Answers the read-only folder tools' calls for a stdio session (the machine's owner: no token)."""

    def __init__(self, app: Citedocs, budget: int) -> None:
        self.app, self.budget = app, budget
        self._tools: FolderTools | None = None

    def reply(self, message: dict[str, Any], protocol: str) -> bytes | None:
        """The wire line answering the `tools/call` request `message`, or None when the SDK must answer it."""
        params, request_id = message.get("params"), message.get("id")
        if set(message) - {"jsonrpc", "id", "method", "params"} or not isinstance(params, dict):
            return None
        if isinstance(request_id, int) and abs(request_id) >= _MAX_ID:
            return None
        name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta", {})
        if set(params) - _CALL_KEYS or name not in EARLY_TOOLS or not isinstance(arguments, dict):
            return None
        if not isinstance(meta, dict) or set(meta) - {"progressToken"} or invalid_text(message) is not None:
            return None
        schema = recorded_tool_schema(protocol, str(name))
        if schema is None or not plain_arguments(arguments, schema):
            return None
        try:
            result = self._run(str(name), arguments)
        except Exception:  # a crash: the SDK runs the (read-only) call again and reports it its way
            log.warning("the early answer to %s failed; the MCP SDK answers it", name, exc_info=True)
            return None
        import pydantic_core

        return pydantic_core.to_json({"jsonrpc": "2.0", "id": request_id, "result": result}) + b"\n"

    def _run(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The SDK's CallToolResult for the call, as plain data (key order and all)."""
        from citedocs.mcp.calls import ToolRefusal, authorize, checked  # pydantic models: after the handshake
        from citedocs.mcp.folder_tools import FolderTools

        if self._tools is None:
            self._tools = FolderTools(self.app, self.budget)
        try:
            authorize(name, access.OWNER, None)  # stdio: the machine's owner (boundary._caller_of)
            with access.acting_as(access.OWNER):
                out = checked(getattr(self._tools, name))(**arguments)
        except ToolRefusal as exc:  # the SDK's Tool.run prefix, then its is_error result
            text = f"Error executing tool {name}: {exc}"
            return {"content": [{"text": text, "type": "text"}], "isError": True}
        import pydantic_core

        text = pydantic_core.to_json(
            out, fallback=str, indent=2
        ).decode()  # func_metadata._convert_to_content
        return {
            "content": [{"text": text, "type": "text"}],
            "isError": False,
            "structuredContent": out.model_dump(mode="json", by_alias=True),
        }


def plain_arguments(arguments: dict[str, Any], schema: dict[str, Any]) -> bool:
    """Whether the SDK's argument model takes `arguments` exactly as they are: every required one given, no
    unknown one, each value of a JSON type its schema names (within its bounds)."""
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict):
        return False
    if not set(schema.get("required", ())) <= set(arguments) or not set(arguments) <= set(properties):
        return False
    return all(_plain(value, properties[key]) for key, value in arguments.items())


def _plain(value: Any, schema: dict[str, Any]) -> bool:
    options = schema.get("anyOf", [schema])
    if not isinstance(options, list) or not all(isinstance(o, dict) for o in options):
        return False
    only_text = len(options) == 1 and options[0].get("type") == "string" and "enum" not in options[0]
    if isinstance(value, str) and not only_text and _read_as_json(value):
        return False  # FuncMetadata.pre_parse_json would replace it (e.g. "null" -> None)
    return any(_fits(value, option) for option in options)


def _read_as_json(text: str) -> bool:
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return not isinstance(parsed, str | int | float)


def _fits(value: Any, option: dict[str, Any]) -> bool:
    if set(option) - _SCHEMA_WORDS:
        return False  # a keyword this check does not know: the SDK's to judge
    kind = option.get("type")
    if kind == "null":
        return value is None
    if kind == "string":
        return isinstance(value, str) and value in option.get("enum", [value])
    if kind == "integer" and type(value) is int:
        low, high = option.get("minimum", value), option.get("maximum", value)
        return isinstance(low, int) and isinstance(high, int) and low <= value <= high
    return False
