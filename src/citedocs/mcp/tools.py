"""The MCP server: docsonar's folder tools and llmstxt-doc-search's site tools over one Citedocs.

Each tool is a thin wrapper over one library call. A problem the model can fix (a bad path, an unknown
source, k out of range) comes back as a tool error whose text says what to do next; degraded states come
back in a `note`; every result is bounded by a character budget with a way to page on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from citedocs import __version__
from citedocs.mcp.boundary import CitedocsMCPServer, model_fixable
from citedocs.mcp.budget import fit_chars, fit_items, result_budget
from citedocs.mcp.folder_tools import FolderTools, TopK, join_notes
from citedocs.mcp.handshake import MUTATING_TOOLS, answers_enabled, instructions_for

if TYPE_CHECKING:
    from citedocs.answer.engine import AnswerEngine
    from citedocs.service import Citedocs

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
READ_WEB = ToolAnnotations(read_only_hint=True, open_world_hint=True)
ADD = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
ADD_WEB = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)
REMOVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


def build_server(
    app: Citedocs,
    *,
    read_only: bool = False,
    max_chars: int | None = None,
    instructions: str | None = None,
    engine: AnswerEngine | None = None,
) -> MCPServer:
    """One MCP server for both tool sets over `app`; `read_only` hides the tools that change the registry.
    `instructions` are the ones already sent when the handshake was answered early (`mcp/early.py`).
    `engine` answers `ask` (`citedocs serve` passes the one over its warm model); without one, the server
    makes its own on the first question and `answers_close` stops its model."""
    budget = result_budget(app.settings, max_chars)
    server = CitedocsMCPServer(
        "citedocs",
        title="citedocs — search your folders and documentation sites",
        version=__version__,
        instructions=instructions or instructions_for(app, read_only=read_only, max_chars=budget),
        log_level="WARNING",
    )
    tools = FolderTools(app, budget)
    site_tools = _SiteTools(app, budget, engine)
    server.answers_close = site_tools.close

    def add(fn: Callable[..., Any], annotations: ToolAnnotations, title: str) -> None:
        if read_only and fn.__name__ in MUTATING_TOOLS:
            return
        description = " ".join((fn.__doc__ or "").split())
        server.add_tool(model_fixable(fn), fn.__name__, title, description, annotations)

    add(tools.add_folder, ADD, "Register a folder")
    add(tools.remove_folder, REMOVE, "Unregister a folder")
    add(tools.list_folders, READ, "List folders")
    add(tools.search, READ, "Search folders")
    add(tools.read_file, READ, "Read a file")
    add(tools.find_similar, READ, "Find similar files")
    add(tools.reindex, ADD, "Reindex folders")
    add(tools.index_status, READ, "Index status")
    add(site_tools.docs_home, READ, "Documentation sites overview")
    add(site_tools.list_doc_sources, READ, "List documentation sites")
    add(site_tools.search_docs, READ_WEB, "Search documentation sites")
    add(site_tools.fetch_doc, READ_WEB, "Fetch a documentation page")
    add(site_tools.add_doc_source, ADD_WEB, "Add a documentation site")
    add(site_tools.remove_doc_source, REMOVE, "Remove a documentation site")
    add(site_tools.refresh_doc_source, ADD_WEB, "Refresh a documentation site")
    if answers_enabled(app):
        add(site_tools.ask, READ, "Answer a question with citations")
    return server


_FETCH_PAGES = (
    "Also fetch pages ahead of questions, in the background: the first N not fetched yet, -1 for all, "
    "0 for none; left out: all of a small site (200 pages or fewer), none of a larger one."
)


_HISTORY = (
    'For a follow-up question: the earlier turns, oldest first, as {"role": "user" or "assistant", "content": '
    '"..."} (at most 20 turns, 8,000 characters).'
)


class _SiteTools:
    """llmstxt-doc-search's tools over `app.sites`, and `ask`."""

    def __init__(self, app: Citedocs, budget: int, engine: AnswerEngine | None = None) -> None:
        self.app = app
        self.budget = budget
        self._engine = engine
        self._engine_lock = threading.Lock()

    def engine(self) -> AnswerEngine:
        """The one engine `ask` uses for this server's life (its model starts once, on first need)."""
        with self._engine_lock:
            if self._engine is None:
                from citedocs.answer.engine import AnswerEngine

                self._engine = AnswerEngine(self.app)
            return self._engine

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.stop()

    @property
    def sites(self) -> Any:
        service = getattr(self.app, "sites", None)
        if service is None:
            raise ToolError("Documentation sites are not available in this build of citedocs.")
        return service

    def docs_home(self) -> dict[str, Any]:
        """Start here for documentation sites: the registered sites with their counts and how to search and
        fetch them."""
        home: dict[str, Any] = self.sites.home()
        return home

    def list_doc_sources(self) -> dict[str, Any]:
        """Every registered documentation site: its llms.txt URL, page count, status and last error."""
        return {"sources": [s.to_dict() for s in self.sites.list()]}

    def search_docs(
        self,
        query: Annotated[
            str, Field(description="Words to look for in page titles, descriptions and sections.")
        ],
        source: Annotated[str | None, Field(description="Only this site (a name from docs_home).")] = None,
        k: TopK = None,
    ) -> dict[str, Any]:
        """Rank the pages of the registered documentation sites (all, or one source). Each hit has source,
        title, url, description, section, score (0-1, comparable across sites) and snippet; pass a hit's url
        to fetch_doc."""
        k = self.app.settings.top_k if k is None else k
        hits = [h.to_dict() for h in self.sites.search(query, source=source, k=k)]
        fitted = fit_items(hits, self.budget - 400)
        return {"query": query, "hits": fitted.items, "note": fitted.note}

    def fetch_doc(
        self,
        url: Annotated[
            str, Field(description="A page URL from search_docs (or listed in a registered llms.txt).")
        ],
        offset: Annotated[
            int, Field(ge=0, description="Character offset to continue from (next_offset).")
        ] = 0,
    ) -> dict[str, Any]:
        """Read a documentation page as markdown. Only pages of registered sites can be fetched. Long pages
        come in parts: call again with offset=next_offset."""
        page = self.sites.fetch(url).to_dict()
        markdown = str(page.pop("markdown", "") or "")
        window = fit_chars(markdown, offset, self.budget - 600)
        note = None
        if window.next_offset is not None:
            note = (
                f"page cut to fit the budget; call fetch_doc again with offset={window.next_offset} for more"
            )
        return {
            **page,
            "markdown": window.text,
            "offset": offset,
            "total_chars": len(markdown),
            "next_offset": window.next_offset,
            "note": note,
        }

    def add_doc_source(
        self,
        name: Annotated[str, Field(description="A short name for the site, e.g. 'langgraph'.")],
        llms_txt_url: Annotated[str, Field(description="The site's llms.txt URL (http or https).")],
        fetch_pages: Annotated[int | None, Field(ge=-1, description=_FETCH_PAGES)] = None,
    ) -> dict[str, Any]:
        """Register a documentation site by its llms.txt and index its page list (searchable by title at
        once; a small site's pages are fetched in the background, a large one's when a question needs them).
        It is kept for later runs."""
        info: dict[str, Any] = self.sites.add(name, llms_txt_url).to_dict()
        if fetch_pages is None:
            _, note = self.app.auto_prefetch(name)
            return {**info, "prefetch": note}
        return {**info, **self._prefetch(name, fetch_pages)}

    def _prefetch(self, name: str, pages: int) -> dict[str, Any]:
        if pages == 0:
            return {}
        self.app.prefetch_in_background(name, None if pages < 0 else pages)
        return {"prefetch": "started in the background; index_status shows its progress"}

    def remove_doc_source(
        self, name: Annotated[str, Field(description="A registered site name.")]
    ) -> dict[str, Any]:
        """Unregister a documentation site and purge its pages from the index."""
        info = self.sites.remove(name).to_dict()
        return {"removed": name, "source": info}

    def refresh_doc_source(
        self,
        name: Annotated[str, Field(description="A registered site name.")],
        fetch_pages: Annotated[int, Field(ge=-1, description=_FETCH_PAGES)] = 0,
    ) -> dict[str, Any]:
        """Re-read a site's llms.txt to pick up new or changed pages; retries a site that recently failed."""
        info: dict[str, Any] = self.sites.refresh(name).to_dict()
        return {**info, **self._prefetch(name, fetch_pages)}

    def ask(
        self,
        question: Annotated[str, Field(description="A question about the indexed documents.")],
        history: Annotated[list[dict[str, str]] | None, Field(description=_HISTORY)] = None,
    ) -> dict[str, Any]:
        """Answer a question from the indexed documents with a local language model. Every sentence cites
        numbered sources, and citations are checked. Refuses when the documents do not hold the answer.
        `quotes` are source sentences the answer leaves out, verbatim, each with its source number `n` and
        place (path and line, page or url); with `quotes_label` set they are the whole answer (`confirmed`: the
        model, having refused, said this sentence answers). `left_out`: sentences of the model's answer
        removed because the model, asked, did not find them in the passage they cite. `evidence` lists
        the sentences that matched the question best, shown while the model reads (not the answer). For a
        follow-up, pass the earlier turns as `history`; `query` says what was searched."""
        data = self.engine().ask_from_thread(question, history=history)
        if isinstance(data.get("sources"), list):
            fitted = fit_items(data["sources"], self.budget - 4000)
            data["sources"] = fitted.items
            data["note"] = join_notes(data.get("note"), fitted.note)
        return data
