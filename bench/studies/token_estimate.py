"""How many model tokens a passage is, against the estimate that sizes passages and prompts (text/tokens.py).

    PYTHONPATH=src .venv/bin/python bench/studies/token_estimate.py --server http://127.0.0.1:8911 \\
        ../shared/data/ja-developers-reference/docs ../shared/data/claude-docs-qa/docs

Each folder is chunked as `citedocs add` chunks it (the parsers, `index.ingest.chunk_document`, the default
Settings) and every passage is sent to a running llama-server's `/tokenize` (the default model's tokenizer:
Qwen2.5). Prints per folder: passages, CJK characters (`text.tokens.cjk_chars`) and other characters, the
least-squares tokens a character of each kind, the median of estimate / real for characters / 4 and for the
estimate in force, and the real tokens of a passage (P50, max).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _env import header

from citedocs.index.ingest import chunk_document
from citedocs.parsers import parse_bytes
from citedocs.settings import Settings
from citedocs.text.tokens import cjk_chars, estimate_tokens, tokens_for


def real_tokens(server: str, text: str) -> int:
    request = urllib.request.Request(
        server.rstrip("/") + "/tokenize",
        data=json.dumps({"content": text}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return len(json.load(response)["tokens"])


def passages(folder: Path) -> list[str]:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    out: list[str] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        try:
            parsed = parse_bytes(path.read_bytes(), path.name, 50_000_000)
        except Exception as exc:  # a file the product would report and skip
            print(f"skipped {path.name}: {exc}", file=sys.stderr)
            continue
        out.extend(chunk.text for chunk in chunk_document(parsed.segments, settings))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--server", default="http://127.0.0.1:8911")
    args = parser.parse_args()
    print(json.dumps(header()), flush=True)
    for folder in args.folders:
        texts = passages(folder)
        rows = [(cjk_chars(t), len(t) - cjk_chars(t), real_tokens(args.server, t), t) for t in texts]
        a = np.array([[c, o] for c, o, _, _ in rows], float)
        y = np.array([n for _, _, n, _ in rows], float)
        if any(c for c, *_ in rows):
            per_cjk, per_other = np.linalg.lstsq(a, y, rcond=None)[0]
        else:
            per_cjk, per_other = None, float(np.linalg.lstsq(a[:, 1:], y, rcond=None)[0][0])
        out = {
            "folder": f"{folder.parent.name}/{folder.name}",
            "passages": len(rows),
            "cjk_chars": sum(c for c, *_ in rows),
            "other_chars": sum(o for _, o, _, _ in rows),
            "tokens_per_cjk_char": None if per_cjk is None else round(float(per_cjk), 3),
            "tokens_per_other_char": round(float(per_other), 3),
            "chars4_over_real_p50": round(statistics.median(tokens_for(len(t)) / n for *_, n, t in rows), 3),
            "estimate_over_real_p50": round(
                statistics.median(estimate_tokens(t) / n for *_, n, t in rows), 3
            ),
            "real_tokens_p50": statistics.median(n for *_, n, _ in rows),
            "real_tokens_max": max(n for *_, n, _ in rows),
        }
        print(json.dumps(out, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
