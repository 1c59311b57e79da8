"""One Settings object, built at the entry point and passed down.

Sources, highest first: explicit arguments, environment (`CITEDOCS_*`), `.env`, then `config.toml` in the
platform config dir (or `CITEDOCS_CONFIG`). `CITEDOCS_ENV_FILE` names another `.env` ("" for none).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

APP_NAME = "citedocs"


def default_db_path() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME)) / "index.sqlite3"


def default_models_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME)) / "models"


def default_config_path() -> Path:
    return Path(
        os.environ.get("CITEDOCS_CONFIG") or Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"
    )


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CITEDOCS_", env_file=".env", extra="ignore", env_nested_delimiter="__"
    )

    db: str = Field(default_factory=lambda: str(default_db_path()))

    # indexing
    chunk_tokens: int = 400
    chunk_overlap: int = 60
    chunk_min_tokens: int = 60
    chunk_max_tokens: int = 560
    max_file_mb: float = 50.0
    extra_ignore_dirs: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # OCR of scanned PDFs (opt-in; needs Tesseract: apt-get install tesseract-ocr): after keyword indexing, in
    # the background; languages as Tesseract names them ("eng", "jpn", "eng+jpn"; see docs/formats.md)
    ocr: bool = False
    ocr_languages: str = "eng"
    ocr_dpi: int = 300
    ocr_page_seconds: float = 120.0
    ocr_max_pages: int = 500

    # search
    top_k: int = 5
    search_mode: str = "hybrid"
    # how Japanese is cut into words: "auto" (SudachiPy when installed), "sudachi" or "bigram"
    cjk_segmenter: Literal["auto", "sudachi", "bigram"] = "auto"
    # keyword BM25 from memory (built on the first search, kept current; same scores as the store's);
    # false: every keyword search asks the store (no memory held, slower on large indexes)
    keyword_memory: bool = True

    # embeddings: "auto" (packaged MiniLM, or multilingual e5 for a mostly-CJK index), "local" (MiniLM),
    # "local:e5", "none", "http" (OpenAI-compatible), "st:<model>"
    embedder: str = "auto"
    embed_base_url: str = ""
    embed_model: str = ""
    embed_api_key: SecretStr = SecretStr("")
    embed_batch: int = 32

    # sites
    allowed_private_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    default_sites: bool = False
    fetch_timeout_s: float = 20.0
    fetch_max_bytes: int = 10 * 1024 * 1024
    page_cache_size: int = 256
    # Fetch only under a site's llms.txt origin and directory, listed links and redirects included (docs/sites.md).
    sites_same_origin: bool = False
    # An answer whose best candidates are pages not fetched yet fetches at most this many first (0: never),
    # waiting at most ask_fetch_timeout_s for them (docs/sites.md, "Asking a site").
    ask_fetch_pages: int = Field(default=5, ge=0, le=10)
    ask_fetch_timeout_s: float = Field(default=15.0, gt=0)
    # Background prefetch (`add-site --fetch`): pages of one site fetched at a time, and the least delay
    # between two requests to one site (a robots.txt Crawl-delay that is longer wins).
    site_fetch_concurrency: int = Field(default=2, ge=1, le=16)
    site_fetch_delay_s: float = Field(default=0.0, ge=0)

    # answers
    # one OpenAI-compatible endpoint, or several separated by commas: a pool (answer/pool.py) that sends each
    # request to the endpoint with the most free slots and sets a failing one aside for llm_cooldown_s
    llm_base_url: str = ""
    llm_model: str = "local"
    llm_api_key: SecretStr = SecretStr("")
    llm_gguf: str = ""
    llama_server: str = "llama-server"
    # llama.cpp's weight repacking: "auto" turns it off on CPUs where it reads prompts slower (AVX-512 VNNI:
    # 68-71 vs 102-109 prompt tokens/s, llm/llama.py), "on"/"off" force it
    llama_repack: Literal["auto", "on", "off"] = "auto"
    llm_max_tokens: int = 512
    llm_temperature: float = 0.1
    # silence allowed between streamed bytes; on 2 CPU cores with 4 slots a prompt is read for 60-170 s before
    # the first token (Locust run, docs/benchmarks.md), so 60 s failed 1 answer in 4
    llm_read_timeout_s: float = 180.0
    # a pool's slots per endpoint (llama.cpp's --parallel) and its first cooldown after a failure (doubling per
    # consecutive failure, at most 60 s)
    llm_slots: int = 4
    llm_cooldown_s: float = 5.0
    llm_price_prompt_per_mtok: float = 0.0
    llm_price_completion_per_mtok: float = 0.0
    max_concurrent: int = 4
    # calibrated on claude-docs (60 real questions, 16 off-topic): see docs/http-api.md; <= 0 turns it off
    relevance_threshold: float = 0.5
    # whole-passage prompts ask for the part of an answer the sources hold (wrong refusals 0.07-0.10 vs 0.12-0.17,
    # hand-graded faithfulness 0.71-0.75 vs 0.79-0.84 on claude-docs); False keeps the first rule
    answer_partial: bool = True
    # an answer with fewer than this share of its checked sentences held by its sources is withheld: the refusal
    # is sent, the model's words stay in raw_answer (answer/citations.py `withheld_reason`); 0 sends every answer
    min_supported: float = Field(default=0.5, ge=0.0, le=1.0)
    # generation stops once the answer ends in this many copies of one line or clause (answer/repetition.py:
    # 5 of 866 committed claude-docs answers looped to the token cap, none of the others is cut); 0 never stops
    answer_stop_repeats: int = Field(default=4, ge=0)
    # a passage whose content terms are this much covered by a better one is not given to the model again
    # (answer/passages.py), nor listed again by search over MCP, HTTP and the CLI (the next one takes its
    # place, search/distinct.py): 26 of 65 claude-docs prompts held one; 0 keeps every passage
    passage_overlap: float = Field(default=0.8, ge=0.0, le=1.0)
    # tokens of passage text the model reads (answer/evidence.py; measured in docs/benchmarks.md): the best
    # `evidence_whole` passages whole, then windows of the others' best sentences. 0 (the default) gives it every
    # passage whole: 450 with 1 whole reads 694 tokens (not 1,434) and answers first in 14 s (not 35), but with
    # the 1.5B model faithfulness fell 0.73 -> 0.51 and recall 0.61 -> 0.56 (81 cases); on the gold evidence
    # sections alone (~730 tokens) it refuses 0.22 of answerable questions (bench/bench_oracle.py)
    evidence_tokens: int = Field(default=0, ge=0)
    evidence_whole: int = Field(default=1, ge=0)
    otel_endpoint: str = ""
    # `citedocs model install`: the package index its pinned files come from (PEP 691 JSON or PEP 503 HTML),
    # an extra catalogue of models (JSON, docs/models.md), where installed models and llama-server live
    # (default: the platform data dir), and which installed model answers when no LLM is configured
    # (default: the catalogue's default if installed, else the one installed first)
    model_index_url: str = "https://pypi.org/simple"
    model_catalog: str = ""
    models_dir: str = ""
    local_model: str = ""

    # MCP: characters per tool result before it is cut and paged
    mcp_max_chars: int = 24000
    # extra Host names MCP over HTTP accepts (DNS-rebinding guard), e.g. "api-1,docs.internal:443"; a name
    # without a port is allowed on the bound port
    mcp_allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # servers
    host: str = "127.0.0.1"
    port: int = 8765
    # `citedocs serve` indexes registered folders when it starts; replicas behind one database turn it off
    # and leave indexing to one job
    index_on_start: bool = True
    # slow clients (serve and mcp --http): a request's head must arrive within the first, its body within the
    # second (from the head); open connections beyond the third get 503
    http_header_timeout_s: float = 10.0
    http_body_timeout_s: float = 20.0
    http_max_connections: int = 256
    # whether the web page and its routes may add, remove and reindex sources: unset (the default) allows it
    # only when the server is bound to a loopback address; `serve --read-only` sets it true
    read_only: bool | None = None

    # folder watching while `serve` or `mcp` runs (index/watch.py, docs/watching.md): a changed file is
    # indexed once its size and mtime have held still for watch_debounce_ms; a batch of more than
    # watch_max_events changed paths rescans the folder instead (stat walk, changed files re-read);
    # watch_polling "auto" polls (every watch_poll_ms) network and FUSE mounts and where native events
    # cannot start, "on" always polls, "off" never does
    watch: bool = True
    watch_debounce_ms: int = Field(default=300, ge=10, le=60_000)
    watch_max_events: int = Field(default=2000, ge=1)
    watch_polling: Literal["auto", "on", "off"] = "auto"
    watch_poll_ms: int = Field(default=1000, ge=50)

    @field_validator("allowed_private_hosts", "extra_ignore_dirs", "mcp_allowed_hosts", mode="before")
    @classmethod
    def _split_csv(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=default_config_path())
        env_file = os.environ.get("CITEDOCS_ENV_FILE")
        if env_file is not None:  # another .env than the one in the working directory ("" for none)
            dotenv_settings = DotEnvSettingsSource(settings_cls, env_file=env_file or None)
        return (init_settings, env_settings, dotenv_settings, toml)

    @property
    def db_path(self) -> Path:
        return Path(self.db).expanduser()
