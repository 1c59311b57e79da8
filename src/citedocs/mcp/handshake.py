"""The MCP handshake, answered without the SDK: `initialize` and `tools/list` while the SDK is still importing.

Importing the `mcp` SDK takes about 0.9 s on 2 cores (pydantic models for every protocol version it speaks),
longer than everything else `citedocs mcp` does before a client's first `tools/list`. Both answers are fixed
for a given SDK, pydantic, protocol version and tool set, so they are recorded from the SDK itself
(`handshake.json`, written by `python -m citedocs.mcp.snapshot --write` and compared with the live SDK for every
variant by tests/test_mcp_handshake.py) and replayed from here. A handshake the recording does not cover (another
protocol version, other installed versions, a params shape the SDK might reject) is left to the SDK.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citedocs.errors import CitedocsError

if TYPE_CHECKING:
    from citedocs.service import Citedocs

__all__ = [
    "ANSWER_TOOL",
    "MUTATING_TOOLS",
    "REPLAYED",
    "SNAPSHOT",
    "answers_enabled",
    "initialize_result",
    "instructions_for",
    "load_recording",
    "recorded_tool_schema",
    "recorded_versions",
    "tool_sources_digest",
    "tools_list_result",
]

SNAPSHOT = Path(__file__).with_name("handshake.json")
MUTATING_TOOLS = frozenset(
    {"add_folder", "remove_folder", "reindex", "add_doc_source", "remove_doc_source", "refresh_doc_source"}
)
ANSWER_TOOL = "ask"
# The id a replayed `initialize` carries, so that the SDK's second reply to it can be recognised and dropped.
REPLAYED = "citedocs:replayed-initialize"
# The recording holds only for these installed versions (mcp pins mcp-types)...
RECORDED_PACKAGES = ("mcp", "pydantic")
# ...and for this code: the tools' signatures, docstrings and output shapes are the tools/list.
TOOL_SOURCES = ("tools.py", "folder_tools.py", "shapes.py", "boundary.py", "calls.py")
INSTRUCTIONS_SLOT = "{instructions}"
VERSION_SLOT = "{version}"


def installed_versions() -> dict[str, str]:
    found = {}
    for name in RECORDED_PACKAGES:
        found[name] = _dist_info_version(name) or _metadata_version(name)
    return found


def _dist_info_version(name: str) -> str | None:
    """The version in the one `NAME-VERSION.dist-info` beside the importable package: a directory listing, where
    importlib.metadata searches every path entry (4 ms of an MCP server's start for the two). None when that is
    not certain (no such folder, or several)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))).parent
    try:
        found = [e for e in os.listdir(folder) if e.startswith(f"{name}-") and e.endswith(".dist-info")]
    except OSError:
        return None
    if len(found) != 1:
        return None
    version = found[0][len(name) + 1 : -len(".dist-info")]
    return version if version and "-" not in version else None


def _metadata_version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def tool_sources_digest() -> str:
    digest = hashlib.sha256()
    for name in TOOL_SOURCES:
        digest.update(Path(__file__).with_name(name).read_bytes())
    return digest.hexdigest()[:16]


def load_recording(path: Path) -> dict[str, Any] | None:
    """The answers recorded in `path`, or None when unreadable, recorded with other SDK or pydantic versions
    than the ones installed, or from other tool code (a tool edited since: its new schema is the SDK's to say)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("packages") != installed_versions():
            return None
        if data.get("tool_sources") != tool_sources_digest():
            return None
    except (OSError, ValueError):
        return None
    if not isinstance(data.get("protocols"), dict):
        return None
    return data


@cache
def _recording() -> dict[str, Any] | None:
    return load_recording(SNAPSHOT)


def recorded_versions() -> frozenset[str]:
    """The protocol versions whose handshake can be answered before the SDK loads (none when out of date)."""
    data = _recording()
    return frozenset(data["protocols"]) if data else frozenset()


def initialize_result(protocol: str, instructions: str, version: str) -> dict[str, Any] | None:
    """The SDK's `initialize` result for a client asking for `protocol` (None when not recorded)."""
    data = _recording()
    if data is None or protocol not in data["protocols"]:
        return None
    result = json.loads(json.dumps(data["protocols"][protocol]["initialize"]))
    result["instructions"] = instructions
    info = result.get("serverInfo", {})
    if info.get("version") == VERSION_SLOT:
        info["version"] = version
    return dict(result)


def tools_list_result(protocol: str, *, read_only: bool, answers: bool) -> dict[str, Any] | None:
    """The SDK's `tools/list` result for this variant of the tool set (None when not recorded)."""
    data = _recording()
    if data is None or protocol not in data["protocols"]:
        return None
    entry = data["protocols"][protocol]
    result = json.loads(json.dumps(entry["tools/list"] if "tools/list" in entry else data["tools/list"]))
    hidden = (MUTATING_TOOLS if read_only else frozenset()) | (frozenset() if answers else {ANSWER_TOOL})
    result["tools"] = [tool for tool in result["tools"] if tool.get("name") not in hidden]
    return dict(result)


def recorded_tool_schema(protocol: str, name: str) -> dict[str, Any] | None:
    """The input schema the SDK published for tool `name` (None when not recorded): what its arguments are
    validated against."""
    tools = tools_list_result(protocol, read_only=False, answers=True)
    for tool in tools["tools"] if tools else ():
        if tool.get("name") == name and isinstance(tool.get("inputSchema"), dict):
            return dict(tool["inputSchema"])
    return None


def answers_enabled(app: Citedocs) -> bool:
    """Whether `ask` can run: a base URL, or a GGUF or installed model with a server to run it
    (`llm.model.readiness`, the same verdict `status` and `model list` print)."""
    from citedocs.llm.readiness import readiness

    return readiness(app.settings).can_answer


def instructions_for(app: Citedocs, *, read_only: bool, max_chars: int, answers: bool | None = None) -> str:
    """What the model is told at connect time: what is indexed and the order to call the tools in.
    `answers`: whether `ask` is offered, when the caller already knows (else `answers_enabled`)."""
    folders = [f"{i.uri} ({i.docs} docs)" for i in app.list_sources("folder")]
    sites: list[str] = []
    with contextlib.suppress(AttributeError, CitedocsError):
        if app.list_sources("site"):  # the site registry (fetching, HTML, ranking) loads only for a site
            sites = [f"{s.name} ({s.to_dict().get('docs', '?')} docs)" for s in app.sites.list()]
    add_folder = "" if read_only else " — register one with add_folder(path)"
    add_site = "" if read_only else " — add one with add_doc_source(name, llms_txt_url)"
    lines = [
        "citedocs searches the user's own documents: local folders and llms.txt documentation sites.",
        f"Indexed folders: {'; '.join(folders) or 'none yet' + add_folder}.",
        f"Documentation sites: {'; '.join(sites) or 'none yet' + add_site}.",
        "How to use the tools:",
        "- search(query) ranks passages from the folders; each hit has path, heading, line_start-line_end, "
        "score, snippet and chunk_id. Then read_file(path, start_line, end_line) on a hit's lines for context.",
        "- Cite a passage by its location ('setup.md:10-24' or 'report.pdf, p. 12').",
        "- search_docs(query, source?) ranks documentation site pages; fetch_doc(url) reads one. "
        "docs_home() summarises the sites.",
        "- index_status() shows background indexing; search answers from keywords while it runs.",
        f"- Results are capped at about {max_chars} characters: read_file returns next_start_line and "
        "fetch_doc next_offset when there is more.",
    ]
    if read_only:
        lines.append("- This server is read-only: folders and sites cannot be added or removed here.")
    if answers_enabled(app) if answers is None else answers:
        lines.append("- ask(question) answers from the index with checked citations.")
    else:
        from citedocs.llm.readiness import readiness

        why = readiness(app.settings)
        lines.append(f"- There is no ask tool: {why.problem} For the user: {why.next_step}")
    return "\n".join(lines)
