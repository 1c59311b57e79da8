"""Do unfetched site pages (links) crowd out folder passages? Folder retrieval with and without 513 links.

    .venv/bin/python bench/studies/bench_sites_mixed.py [--mode keyword|hybrid]

The claude-docs folder of ../shared/data/claude-docs-qa is indexed, its 60 questions searched (file recall@5,
MRR@5, link hits in the top 5); then the 8 real llms.txt files of ../shared/data/llms-txt are registered as
sites (served on 127.0.0.1; none of their 513 links is relevant to the questions) and the same questions are
searched again in the same index.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for _env
from _env import SHARED_DATA, print_header

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.docs_site import serve_docs


def metrics(app: Citedocs, cases: list[dict[str, object]], mode: str) -> tuple[float, float, int]:
    recall = mrr = 0.0
    links = 0
    for case in cases:
        want = {str(e["file"]).rsplit("/", 1)[-1] for e in case["evidence"]}  # type: ignore[attr-defined]
        hits = app.search(str(case["question"]), k=5, mode=mode, wait_for_model=True).hits
        names = [h.path.rsplit("/", 1)[-1] for h in hits]
        links += sum(h.kind == "link" for h in hits)
        recall += len(want & set(names)) / len(want)
        mrr += next((1 / i for i, n in enumerate(names, 1) if n in want), 0.0)
    return round(recall / len(cases), 3), round(mrr / len(cases), 3), links


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="keyword", choices=["keyword", "hybrid"])
    args = parser.parse_args()
    print_header(f"bench_sites_mixed: folder retrieval with and without unfetched site links ({args.mode})")
    data = SHARED_DATA / "claude-docs-qa"
    cases = [json.loads(line) for line in (data / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    with tempfile.TemporaryDirectory() as tmp, serve_docs(Path(tmp) / "www") as site:
        settings = Settings(
            db=f"{tmp}/index.db",
            allowed_private_hosts=["127.0.0.1"],
            embedder="none" if args.mode == "keyword" else "auto",
        )
        app = Citedocs(settings)
        try:
            app.add_folder(data / "docs")
            app.index()
            app.embed()
            before = metrics(app, cases, args.mode)
            for n, path in enumerate(sorted((SHARED_DATA / "llms-txt").glob("*.txt"))):
                app.sites.add(f"site{n}", site.write(path.name, path.read_text(encoding="utf-8")))
            app.embed()
            after = metrics(app, cases, args.mode)
            links = app.store.counts()["links"]
        finally:
            app.close()
    print(f"{len(cases)} questions, top 5; {links} links added\n")
    print("| index | file recall@5 | MRR@5 | link hits in the top 5 (of 300) |")
    print("|---|---|---|---|")
    print(f"| folder only | {before[0]} | {before[1]} | {before[2]} |")
    print(f"| folder + {links} links | {after[0]} | {after[1]} | {after[2]} |")


if __name__ == "__main__":
    main()
