"""`GET /docs`: the OpenAPI reference in Swagger UI, offline.

Swagger UI's script and stylesheet come from the `fastapi-offline` package (served at /docs/assets), the page
that starts it is static/openapi.js: no CDN and no inline script, so the page works without a network and
under the Content-Security-Policy every route carries (api/headers.py).
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import APIRouter
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["DOCS_ASSETS", "assets", "router"]

DOCS_ASSETS = "/docs/assets"
SWAGGER_DIR = Path(fastapi_offline.__file__).parent / "static"
PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>citedocs HTTP API</title>
<link rel="stylesheet" href="{DOCS_ASSETS}/swagger-ui.css">
<link rel="icon" href="data:,">
</head>
<body>
<div id="swagger-ui"><p>Loading the API reference… (it needs JavaScript; the raw schema is at
<a href="/openapi.json">/openapi.json</a>)</p></div>
<script src="{DOCS_ASSETS}/swagger-ui-bundle.js"></script>
<script src="/static/openapi.js"></script>
</body>
</html>
"""

router = APIRouter()


@router.get("/docs", include_in_schema=False)
async def docs() -> HTMLResponse:
    return HTMLResponse(PAGE)


def assets() -> StaticFiles:
    """Swagger UI's files, to mount at DOCS_ASSETS."""
    return StaticFiles(directory=SWAGGER_DIR)
