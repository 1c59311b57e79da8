"""The deployment files, checked without a Docker engine (this project's build machines have none).

Dockerfile, .dockerignore and deploy/compose.yaml are parsed here; the image's entry command and its
HEALTHCHECK run as real subprocesses against a real socket, with the venv standing in for the image.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from citedocs.api.app import router
from citedocs.llm.llama import CTX_PER_SLOT, free_port
from citedocs.settings import Settings
from fakes.live_server import live_process

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
COMPOSE = REPO / "deploy" / "compose.yaml"
PREFIX = "CITEDOCS_"
DEPLOY_ENV = {"POSTGRES_PASSWORD": "only-for-tests", "LLM_GGUF": "model.gguf"}
PG_DRIVERS = {"psycopg", "psycopg2", "psycopg2-binary", "asyncpg", "pg8000"}


# -- Dockerfile --------------------------------------------------------------------------------------------


def dockerfile_stages() -> list[list[tuple[str, str]]]:
    """(INSTRUCTION, arguments) per build stage, continuation lines joined and comments dropped."""
    lines: list[str] = []
    pending = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        if not pending and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        pending += raw.strip()
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip() + " "
            continue
        lines.append(pending)
        pending = ""
    stages: list[list[tuple[str, str]]] = []
    for line in lines:
        word, _, args = line.partition(" ")
        if word.upper() == "FROM":
            stages.append([])
        stages[-1].append((word.upper(), args.strip()))
    return stages


def instructions(stage: list[tuple[str, str]], name: str) -> list[str]:
    return [args for word, args in stage if word == name]


def image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for args in instructions(dockerfile_stages()[-1], "ENV"):
        for pair in shlex.split(args):
            key, sep, value = pair.partition("=")
            assert sep, f"ENV {args!r}: write ENV KEY=VALUE"
            env[key] = value
    return env


def exec_form(args: str, what: str) -> list[str]:
    """CMD/ENTRYPOINT/HEALTHCHECK must be JSON (exec form): no shell, so PID 1 receives docker stop's SIGTERM."""
    try:
        argv = json.loads(args)
    except json.JSONDecodeError:
        pytest.fail(f"{what} {args!r} is in shell form; write it as a JSON list")
    assert isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv), what
    return argv


def entry_command() -> list[str]:
    final = dockerfile_stages()[-1]
    entrypoint = instructions(final, "ENTRYPOINT")
    cmd = instructions(final, "CMD")
    argv = exec_form(entrypoint[-1], "ENTRYPOINT") if entrypoint else []
    return argv + (exec_form(cmd[-1], "CMD") if cmd else [])


def healthcheck_command() -> list[str]:
    [args] = instructions(dockerfile_stages()[-1], "HEALTHCHECK")
    options, sep, command = args.partition("CMD ")
    assert sep and "NONE" not in options, f"HEALTHCHECK {args!r} has no CMD"
    return exec_form(command, "HEALTHCHECK CMD")


def dockerignore_patterns() -> list[str]:
    lines = DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    patterns = [line.strip().lstrip("/") for line in lines if line.strip() and not line.startswith("#")]
    assert not [p for p in patterns if p.startswith("!")], "exceptions (!) are not modelled by this test"
    return patterns


def dockerignored(rel_path: str, patterns: list[str]) -> bool:
    """Docker's rule: a path is left out when it or a folder above it matches a pattern (`**` spans folders)."""
    parts = rel_path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        regex = "".join(
            "(?:.*/)?"
            if tok == "**/"
            else ".*"
            if tok == "**"
            else "[^/]*"
            if tok == "*"
            else "[^/]"
            if tok == "?"
            else re.escape(tok)
            for tok in re.findall(r"\*\*/|\*\*|\*|\?|[^*?]+", pattern)
        )
        if any(re.fullmatch(regex, prefix) for prefix in prefixes):
            return True
    return False


def test_image_is_slim_non_root_and_installs_the_package_without_dev_extras() -> None:
    stages = dockerfile_stages()
    assert all(stage[0][1].split()[0].startswith("python:3.11-slim") for stage in stages)
    user = instructions(stages[-1], "USER")
    assert user and user[-1].split(":")[0] not in ("root", "0")
    installs = [a for stage in stages for a in instructions(stage, "RUN") if "pip install" in a]
    targets = [t for a in installs for t in shlex.split(a.split("pip install", 1)[1]) if t.startswith(".")]
    assert targets and all(not re.search(r"\[.*dev.*\]", t) for t in targets), installs
    assert entry_command()[:2] == ["citedocs", "serve"]


def test_image_settings_are_real_and_the_exposed_port_is_the_served_one() -> None:
    env = image_env()
    citedocs_vars = {key for key in env if key.startswith(PREFIX)}
    assert {key.removeprefix(PREFIX).lower() for key in citedocs_vars} <= set(Settings.model_fields)
    assert env["CITEDOCS_HOST"] == "0.0.0.0"
    port = env.get("CITEDOCS_PORT", str(Settings.model_fields["port"].default))
    assert instructions(dockerfile_stages()[-1], "EXPOSE") == [port]


def test_healthcheck_asks_the_health_route() -> None:
    command = " ".join(healthcheck_command())
    paths = set(re.findall(r"(?<![\w/:.])(/[a-z][\w/-]*)", command))
    assert paths == {"/healthz"} and "/healthz" in {getattr(r, "path", None) for r in router.routes}
    assert "CITEDOCS_PORT" in command, "the healthcheck must follow the port the server binds"


def test_the_build_context_holds_what_pip_install_reads() -> None:
    patterns = dockerignore_patterns()
    copied = [
        src
        for stage in dockerfile_stages()
        for a in instructions(stage, "COPY")
        if "--from" not in a
        for src in shlex.split(a)[:-1]
    ]
    readme = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["readme"]
    assert {"pyproject.toml", readme, "src"} <= set(copied)
    for src in copied:
        assert (REPO / src).exists() and not dockerignored(src, patterns), src
    package = REPO / "src" / "citedocs"
    needed = [p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert any(p.suffix == ".sql" for p in needed) and any("static" in p.parts for p in needed)
    assert not [p for p in needed if dockerignored(p.relative_to(REPO).as_posix(), patterns)]


def test_dockerignore_keeps_local_state_out_of_the_image() -> None:
    patterns = dockerignore_patterns()
    for path in [
        ".venv",
        ".venv/bin/python",
        "runs/2026/run.json",
        "bench/out/beir.csv",
        ".git/HEAD",
        "src/citedocs/__pycache__/cli.cpython-311.pyc",
        "index.sqlite3",
        ".env",
        "deploy/.env",
        "deploy/models/model.gguf",
    ]:
        assert dockerignored(path, patterns), path
    assert not dockerignored("src/citedocs/runs.py", patterns) and not dockerignored("bench/x.py", patterns)


# -- compose -------------------------------------------------------------------------------------------------


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Compose's `${VAR}`, `${VAR:-default}` and `${VAR:?error}` (an error stops compose, so it raises here)."""
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match[str]) -> str:
        name, op, arg = match.group(1), match.group(2), match.group(3)
        if env.get(name):
            return env[name]
        if op == ":?":
            raise LookupError(arg or f"{name} is required")
        return arg if op == ":-" else ""

    return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", one, value)


def load_compose(env: dict[str, str] = DEPLOY_ENV) -> dict[str, Any]:
    yaml = pytest.importorskip("yaml", reason="PyYAML is missing (it normally comes with tokenizers)")
    data = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return dict(interpolate(data, env))


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.partition("=")[::2] for item in env)
    return {str(k): str(v) for k, v in env.items()}


def api_services(services: dict[str, Any]) -> dict[str, Any]:
    return {name: s for name, s in services.items() if name.startswith("api")}


def llm_flag(service: dict[str, Any], flag: str) -> str:
    command: list[str] = service["command"]
    return command[command.index(flag) + 1]


def test_every_citedocs_variable_is_a_settings_field_with_a_valid_value(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CITEDOCS_CONFIG", str(tmp_path / "none.toml"))
    services = load_compose()["services"]
    seen = 0
    for name, service in services.items():
        values = {
            k.removeprefix(PREFIX).lower(): v for k, v in environment(service).items() if k.startswith(PREFIX)
        }
        unknown = set(values) - set(Settings.model_fields)
        assert not unknown, f"{name}: {unknown} are not Settings fields (src/citedocs/settings.py)"
        Settings(_env_file=None, **values)
        seen += len(values)
    assert seen >= 10


def test_api_replicas_share_postgres_with_the_same_settings() -> None:
    services = load_compose()["services"]
    apis = api_services(services)
    assert len(apis) >= 2
    postgres = services["postgres"]
    assert postgres["image"] == "pgvector/pgvector:pg16" and postgres["healthcheck"]["test"]
    pg_env = environment(postgres)
    for name, api in apis.items():
        assert api["depends_on"]["postgres"]["condition"] == "service_healthy", name
        assert api["depends_on"]["index"]["condition"] == "service_completed_successfully", name
        url = urlsplit(environment(api)["CITEDOCS_DB"])
        assert url.scheme == "postgresql" and url.hostname == "postgres" and url.port == 5432, name
        assert (url.username, url.password) == (pg_env["POSTGRES_USER"], DEPLOY_ENV["POSTGRES_PASSWORD"])
        assert url.path == "/" + pg_env["POSTGRES_DB"]
    shared = [{k: v for k, v in environment(api).items() if k != "CITEDOCS_PORT"} for api in apis.values()]
    assert all(env == shared[0] for env in shared), "replicas must differ only in their port"


def test_no_password_is_committed() -> None:
    with pytest.raises(LookupError, match="set POSTGRES_PASSWORD"):
        load_compose({"LLM_GGUF": "model.gguf"})
    raw = load_compose({"POSTGRES_PASSWORD": "${POSTGRES_PASSWORD}", "LLM_GGUF": "m"})["services"]
    assert environment(raw["postgres"])["POSTGRES_PASSWORD"] == "${POSTGRES_PASSWORD}"


def test_llm_urls_name_the_llama_cpp_services_and_their_ports() -> None:
    services = load_compose()["services"]
    llms = {name: s for name, s in services.items() if s.get("image") == "ghcr.io/ggml-org/llama.cpp:server"}
    parallel = {name: int(llm_flag(s, "--parallel")) for name, s in llms.items()}
    assert len(llms) >= 2
    for name, service in llms.items():
        assert int(llm_flag(service, "-c")) == CTX_PER_SLOT * parallel[name]
        assert llm_flag(service, "-m") == "/models/model.gguf"
    in_flight = 0
    for name, api in api_services(services).items():
        env = environment(api)
        urls = [urlsplit(u.strip()) for u in env["CITEDOCS_LLM_BASE_URL"].split(",")]
        assert {u.hostname for u in urls} == set(llms), name
        assert all(u.port == int(llm_flag(llms[str(u.hostname)], "--port")) and u.path == "/v1" for u in urls)
        in_flight += int(env.get("CITEDOCS_MAX_CONCURRENT", Settings.model_fields["max_concurrent"].default))
        # the pool's count of each server's slots must be its --parallel
        slots_each = env.get("CITEDOCS_LLM_SLOTS", Settings.model_fields["llm_slots"].default)
        assert {int(slots_each)} == set(parallel.values()), name
    assert in_flight <= sum(parallel.values()), "more answers in flight than llama.cpp slots"


def test_index_job_and_replicas_read_the_same_read_only_folder_on_the_served_port() -> None:
    services = load_compose()["services"]
    index = services["index"]
    assert index["command"][:2] == ["citedocs", "add"]
    folder = index["command"][2]
    for name in ["index", *api_services(services)]:
        mounts = [v.rsplit(":", 2) for v in services[name]["volumes"]]
        assert [m for m in mounts if m[1:] == [folder, "ro"]], f"{name} must mount {folder} read-only"
    for name, api in api_services(services).items():
        port = environment(api).get("CITEDOCS_PORT", image_env()["CITEDOCS_PORT"])
        # published as the same number: MCP's DNS-rebinding guard wants the Host header's port to be the bound one
        assert api["ports"] and all(str(p).rsplit(":", 2)[-2:] == [port, port] for p in api["ports"]), name


def test_docker_compose_accepts_the_file() -> None:
    try:
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"docker is not installed here ({exc}); the YAML checks above still ran")
    if probe.returncode != 0:
        pytest.skip(
            "`docker compose` is not available here (no compose plugin); the YAML checks above still ran"
        )
    env = {**os.environ, **DEPLOY_ENV}
    done = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), "config", "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_image_declares_the_postgresql_driver_compose_needs() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def drivers(deps: list[str]) -> set[str]:
        return {re.split(r"[\s\[<>=!~;]", d, maxsplit=1)[0].lower() for d in deps} & PG_DRIVERS

    extras = {name: drivers(deps) for name, deps in project.get("optional-dependencies", {}).items()}
    installs = [a for stage in dockerfile_stages() for a in instructions(stage, "RUN") if "pip install" in a]
    named = {e for a in installs for group in re.findall(r"\.\[([\w,-]+)\]", a) for e in group.split(",")}
    assert drivers(project["dependencies"]) or any(extras.get(n) for n in named), (
        f"the PostgreSQL driver is only in extras {extras}: install it in the Dockerfile (`pip install .[name]`)"
    )


# -- the image's commands, run here ------------------------------------------------------------------------

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "deploy", "version": "1"},
    },
}


def container_env(service: str, db: str, tmp_path: Path) -> dict[str, str]:
    """What a compose service's container sees (image ENV, then the service's), with the venv for /opt/venv,
    `db` for the compose database, a free port and keyword-only search (the model is tested elsewhere)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(PREFIX)}
    env.update({k: v for k, v in image_env().items() if k.startswith(PREFIX)})
    env.update(environment(load_compose()["services"][service]))
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        CITEDOCS_DB=db,
        CITEDOCS_PORT=str(free_port()),
        CITEDOCS_EMBEDDER="none",
        CITEDOCS_CONFIG=str(tmp_path / "none.toml"),
    )
    return env


def run_index_job(docs: Path, env: dict[str, str], cwd: Path) -> None:
    command = [
        str(docs) if arg == "/data/docs" else arg for arg in load_compose()["services"]["index"]["command"]
    ]
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr


def healthcheck(env: dict[str, str]) -> int:
    return subprocess.run(
        healthcheck_command(), env=env, capture_output=True, timeout=30, check=False
    ).returncode


@contextlib.contextmanager
def replica(env: dict[str, str], log: Path) -> Iterator[str]:
    """The image's entry command as a subprocess; yields its base URL once /healthz answers 200."""
    url = f"http://127.0.0.1:{env['CITEDOCS_PORT']}"
    with live_process(entry_command(), env, log, url) as proc:
        yield url
    code = proc.returncode
    # uvicorn shuts down, then re-raises the signal it caught (0.29+); as a container's PID 1 that exits 0
    assert code in (0, -signal.SIGTERM), (
        f"docker stop's SIGTERM gave {code}: {log.read_text(encoding='utf-8')}"
    )


def top_path(url: str, query: str, token: str) -> str:
    found = httpx.post(
        f"{url}/search", json={"query": query}, timeout=30, headers={"Authorization": f"Bearer {token}"}
    )
    assert found.status_code == 200, found.text
    hits = found.json()["hits"]
    return str(hits[0]["path"]) if hits else ""


@pytest.mark.slow
def test_index_job_then_two_replicas_on_one_database(backend_db: str, tmp_path: Path) -> None:
    assert (Path(sys.executable).parent / "citedocs").exists(), "run the tests with the venv's python"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "runbook.md").write_text(
        "# Backups\n\nNightly backups rotate after fourteen days.\n", encoding="utf-8"
    )
    index_env = container_env("index", backend_db, tmp_path)
    run_index_job(docs, index_env, tmp_path)
    run_index_job(docs, index_env, tmp_path)  # every `docker compose up` reruns it: a no-op, not an error
    listed = subprocess.run(
        ["citedocs", "list", "--json"],
        env=index_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    [folder] = json.loads(listed.stdout)
    assert (folder["path"], folder["docs"], folder["status"]) == (str(docs.resolve()), 1, "ready")

    # the image asks every request for a token; one made against the shared database works on every replica
    made = subprocess.run(
        ["citedocs", "token", "create", "deploy", "--scope", "ask", "--json"],
        env=index_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    token = json.loads(made.stdout)["token"]
    env_1, env_2 = (container_env(name, backend_db, tmp_path) for name in ("api-1", "api-2"))
    assert healthcheck(env_1) != 0, "the healthcheck passed with nothing listening"
    with replica(env_1, tmp_path / "api-1.log") as url_1, replica(env_2, tmp_path / "api-2.log") as url_2:
        for env, url in ((env_1, url_1), (env_2, url_2)):
            assert healthcheck(env) == 0
            accept = {"Accept": "application/json, text/event-stream"}
            assert httpx.post(f"{url}/mcp/", json=INITIALIZE, timeout=30, headers=accept).status_code == 401
            mcp = httpx.post(
                f"{url}/mcp/",
                json=INITIALIZE,
                timeout=30,
                headers={**accept, "Authorization": f"Bearer {token}"},
            )
            assert mcp.status_code == 200, mcp.text
            assert top_path(url, "backups rotate", token).endswith("runbook.md")
        # the documents change and the index job runs again: both running replicas see it, no restart
        (docs / "tls.md").write_text(
            "# Certificates\n\nCertificates renew thirty days early.\n", encoding="utf-8"
        )
        run_index_job(docs, index_env, tmp_path)
        assert top_path(url_1, "certificates renew", token).endswith("tls.md")
        assert top_path(url_2, "certificates renew", token).endswith("tls.md")
