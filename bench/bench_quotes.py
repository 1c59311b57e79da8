"""Answers with quotes (issue 44), measured offline: the saved syntheses of committed runs plus the quotes
`answer/quotes.py` adds to each, chosen from the passages the model read, whole, as a live answer chooses them.

The stored prompt holds what the model read of each passage (`prompt.model_text`: no HTML comments, no lines
said twice), not the passage: quotes chosen from that text may join lines the file keeps apart (18 of 177
were not in their file). So each passage is recovered whole from a keyword index of the corpus (same file,
heading and lines, and checked to read exactly as the prompt), the text the live answer quotes from; the
prompt's text only where none matches (`whole_passages`).

    # claude-docs (81 cases): the committed runs given (default: the latest, answer-gate-2)
    PYTHONPATH=src .venv/bin/python bench/bench_quotes.py runs [eval/baseline/answer-gate-2 ...]
    # the same passages without the syntheses: what a reader sees when no model is available
    PYTHONPATH=src .venv/bin/python bench/bench_quotes.py runs --alone
    # the Japanese dev set (38 cases): the live run's saved syntheses (answer-ja-1), and what a reader sees
    # without a model (retrieval in keyword mode, the relevance gate, the quotes alone)
    PYTHONPATH=src .venv/bin/python bench/bench_quotes.py runs --ja eval/baseline/answer-ja-1
    PYTHONPATH=src .venv/bin/python bench/bench_quotes.py ja
    # either, with --explain: for each key fact the passages hold and the quotes miss, the best-ranked
    # sentence holding it (its rank and score) beside the quotes chosen (to stderr)
    PYTHONPATH=src .venv/bin/python bench/bench_quotes.py ja --explain

No model runs: the synthesis is the run's saved `answer` (after its citation check), so "synthesis" is the
run as committed and "whole" is what a reader of the same answer now sees (synthesis, then quotes; when the
synthesis was refused or withheld, the quotes alone under "What the sources say"). Key-fact recall is shown
with both matchers: `literal` (normalised text, the matcher of every run before issue 44) and `analyzed`
(literal, or the fact's analysed words in a row: stems, CJK words; eval/metrics.py). Refusals: `synth` counts
a refused synthesis (as the committed metrics do); `reader` only when the reader sees nothing (refused and no
quotes). `quoted_facts_synthesis_states`: of the key facts the quotes hold, the share the synthesis
already states (what coverage-aware selection should keep low). `recall_passages_analyzed` is the share of key facts in the passages the quotes are chosen from:
what quotes could reach. Every quote is checked to be an exact slice of its cited passage, and found in the file on disk.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _env import SHARED_DATA, header

from citedocs.answer.evidence import score_sentences
from citedocs.answer.gate import question_terms, relevance_decision
from citedocs.answer.passages import passages
from citedocs.answer.prompt import REFUSAL_SENTENCES, model_text, neutralize
from citedocs.answer.quotes import Quote, choose_quotes
from citedocs.answer.verdict import verdict
from citedocs.eval.cases import Case, load_cases
from citedocs.eval.metrics import correct_refusal, fact_found, key_fact_recall, wrong_refusal
from citedocs.eval.prompts import prompt_passages
from citedocs.hits import Hit
from citedocs.search.distinct import PASSAGE_OVERLAP
from citedocs.search.engine import MAX_K
from citedocs.service import Citedocs
from citedocs.settings import Settings

REPO = Path(__file__).resolve().parents[1]
EN = SHARED_DATA / "claude-docs-qa"
JA = SHARED_DATA / "ja-developers-reference"
EN_CASES = (
    EN / "cases.jsonl",
    REPO / "eval/cases/claude-docs-key-facts.jsonl",
    REPO / "eval/cases/claude-docs-extra.jsonl",
)
DEFAULT_RUNS = (REPO / "eval/baseline/answer-gate-2",)


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return round(statistics.fmean(kept), 3) if kept else None


def _pct(values: Sequence[int], q: float) -> int | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _on_disk(corpus: Path, hit: Hit, quote: Quote) -> bool:
    """The quote's words in the file the passage came from (whitespace aside: the chunker joins paragraphs)."""
    path = Path(hit.path) if Path(hit.path).is_absolute() else corpus / hit.path
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    return " ".join(quote.text.split()) in " ".join(text.split())


Chunk = tuple[str, str, int, int]


def corpus_chunks(docs: Path, db: Path) -> dict[Chunk, list[Hit]]:
    """Every chunk of a keyword index of `docs` (built in `db`), by file name, heading and lines."""
    app = Citedocs(Settings(db=str(db), embedder="none"))
    try:
        app.add_folder(docs)
        app.index()
    finally:
        app.close()
    out: dict[Chunk, list[Hit]] = {}
    with sqlite3.connect(str(db)) as conn:
        rows = conn.execute(
            "SELECT c.chunk_id, d.path, c.heading, c.page_start, c.line_start, c.line_end, c.text "
            "FROM chunks c JOIN documents d ON d.id = c.document_id"
        ).fetchall()
    for chunk_id, path, heading, page, start, end, text in rows:
        hit = Hit(chunk_id, path, str(docs), heading, page, start, end, 0.0, text)
        out.setdefault((Path(path).name, heading, start, end), []).append(hit)
    return out


def whole_passages(read: Sequence[Hit], chunks: dict[Chunk, list[Hit]]) -> tuple[list[Hit], int]:
    """The passages whose model-read text is `read` (from the prompt), whole; a passage none matches stays
    as read. Also how many were recovered."""
    out, found = [], 0
    for hit in read:
        same = chunks.get((hit.path, hit.heading, hit.line_start, hit.line_end), [])
        whole = next(
            (c for c in same if neutralize(model_text(c.text), "").strip() == hit.text.strip()), None
        )
        found += whole is not None and bool(hit.text)
        out.append(whole if whole is not None and hit.text else hit)
    return out, found


def score_case(
    case: Case,
    synthesis: str,
    refused: bool,
    quotes: list[Quote],
    language: str,
    model: bool = True,
    hits: Sequence[Hit] = (),
) -> dict[str, Any]:
    """One case as the reader sees it; without a `model` there is no synthesis and no refusal sentence.
    `passages`: the share of key facts in the passages the quotes were chosen from (their ceiling)."""
    shown_quotes = "\n".join(q.text for q in quotes)
    said = REFUSAL_SENTENCES[language] if refused and model else synthesis
    shown = (said + "\n" + shown_quotes).strip()
    row: dict[str, Any] = {
        "kind": case.kind,
        "quotes": len(quotes),
        "quote_chars": len(shown_quotes),
        "chars": len(shown),
        "synth_chars": len(synthesis) if not refused else 0,
    }
    for matcher in ("literal", "analyzed"):
        row[f"synth_{matcher}"] = key_fact_recall(synthesis, case.key_facts, refused, matcher=matcher)
        whole = (("" if refused else synthesis) + "\n" + shown_quotes).strip()
        row[f"whole_{matcher}"] = key_fact_recall(whole, case.key_facts, not whole, matcher=matcher)
        row[f"quotes_{matcher}"] = key_fact_recall(shown_quotes, case.key_facts, not quotes, matcher=matcher)
    quoted = [f for f in case.key_facts if shown_quotes and fact_found(shown_quotes, f)]
    row["facts_quoted"] = len(quoted)
    row["facts_quoted_and_said"] = 0 if refused else sum(fact_found(synthesis, f) for f in quoted)
    row["passages_analyzed"] = key_fact_recall("\n".join(h.text for h in hits), case.key_facts, not hits)
    silent = refused and not quotes
    row["wrong_synth"], row["wrong_reader"] = (
        wrong_refusal(case.kind, refused),
        wrong_refusal(case.kind, silent),
    )
    row["correct_synth"] = correct_refusal(case.kind, refused)
    row["correct_reader"] = correct_refusal(case.kind, silent)
    return row


def explain_case(case: Case, hits: Sequence[Hit], quotes: list[Quote], synthesis: str = "") -> None:
    """Why what the reader sees misses a key fact its passages hold (to stderr): the question, its content
    terms, the quotes with their scores, and for each fact neither the quotes nor the `synthesis` state the
    best-ranked sentence that holds it."""
    if case.kind != "answerable" or not hits:
        return
    shown = synthesis + "\n" + "\n".join(q.text for q in quotes)
    missed = [
        f
        for f in case.key_facts
        if not fact_found(shown, f) and fact_found("\n".join(h.text for h in hits), f)
    ]
    if not missed:
        return
    asked = question_terms(case.question)
    ranked = sorted(
        (s for sentences in score_sentences(case.question, hits) for s in sentences),
        key=lambda s: (-s.score, s.n, s.index),
    )
    lines = [f"{case.id} {case.question}", f"  terms: {sorted(asked.all)}  facts: {list(case.key_facts)}"]
    lines.append(f"  synthesis: {' '.join(synthesis.split())[:110]}" if synthesis else "  synthesis: none")
    lines += [f"  quote {q.score:.2f} [{q.n}] {' '.join(q.text.split())[:110]}" for q in quotes]
    for fact in missed:
        where = next(
            (
                (rank, s)
                for rank, s in enumerate(ranked)
                if fact_found(hits[s.n - 1].text[s.span.start : s.span.end], fact)
            ),
            None,
        )
        if where is None:
            lines.append(f"  MISSED {fact!r}: across sentences (a table, or split)")
            continue
        rank, s = where
        text = " ".join(hits[s.n - 1].text[s.span.start : s.span.end].split())[:110]
        lines.append(f"  MISSED {fact!r}: sentence {rank + 1} of {len(ranked)}, {s.score:.2f} [{s.n}] {text}")
    print("\n".join(lines), file=sys.stderr)


def withheld_by_check(detail: dict[str, Any], hits: Sequence[Hit]) -> bool:
    """A synthesis withheld because the model's own check left out all of its sentences (answer/model_check.py):
    its quotes are chosen as for an answer. Runs since `answer-quotes-9` record `left_out`; for the two before
    (`answer-quotes-8`, `answer-ja-11`) it is the refused reply the citation check alone would have kept."""
    if not detail.get("refused") or detail.get("refused_before_model"):
        return False
    if "left_out" in detail:
        return bool(detail["left_out"])
    raw = str(detail.get("raw_answer") or "")
    return bool(raw) and not verdict(raw, hits, str(detail.get("question", "")), follow_up=False).refused


def table(name: str, rows: list[dict[str, Any]], verbatim: tuple[int, int, int]) -> dict[str, Any]:
    shown = [r for r in rows if r["kind"] == "answerable"]
    out: dict[str, Any] = {"run": name, "cases": len(rows), "answerable": len(shown)}
    for part in ("whole", "synth", "quotes"):
        for matcher in ("literal", "analyzed"):
            out[f"recall_{part}_{matcher}"] = _mean([r[f"{part}_{matcher}"] for r in rows])
    out["recall_passages_analyzed"] = _mean([r["passages_analyzed"] for r in rows])
    for key, label in (("chars", "chars"), ("synth_chars", "synth_chars"), ("quote_chars", "quote_chars")):
        values = [r[key] for r in shown if r[key]]
        out[f"{label}_p50"], out[f"{label}_p95"] = _pct(values, 0.5), _pct(values, 0.95)
    out["quotes_per_answer"] = _mean([r["quotes"] for r in shown])
    quoted = sum(r["facts_quoted"] for r in rows)
    out["quoted_facts_synthesis_states"] = (
        round(sum(r["facts_quoted_and_said"] for r in rows) / quoted, 3) if quoted else None
    )
    for key in ("wrong_synth", "wrong_reader", "correct_synth", "correct_reader"):
        out[key] = _mean([r[key] for r in rows])
    total, exact, disk = verbatim
    out["quotes_total"], out["quotes_verbatim_in_passage"], out["quotes_found_in_file"] = total, exact, disk
    return out


def run_runs(
    run_dirs: Sequence[Path],
    alone: bool = False,
    explain: bool = False,
    as_read: bool = False,
    language: str = "en",
) -> list[dict[str, Any]]:
    """Quotes added to each run's saved synthesis; `alone`: the synthesis dropped, as without a model;
    `as_read`: chosen from the passages as the prompt holds them, not whole; `language` "ja": runs of the
    Japanese dev set (answer-ja-1)."""
    corpus = JA if language == "ja" else EN
    cases = {c.id: c for c in load_cases(*((JA / "cases.jsonl",) if language == "ja" else EN_CASES))}
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        chunks = {} if as_read else corpus_chunks(corpus / "docs", Path(tmp) / "corpus.sqlite3")
    for run_dir in run_dirs:
        rows, verbatim, recovered, read_count = [], [0, 0, 0], 0, 0
        for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            case, detail = cases.get(record["id"]), record.get("detail", {})
            if case is None:
                continue
            refused = alone or bool(detail.get("refused"))
            read = prompt_passages(detail.get("prompt") or [])
            hits, found = whole_passages(read, chunks)
            recovered, read_count = recovered + found, read_count + sum(bool(h.text) for h in read)
            synthesis = "" if refused else str(detail.get("answer", ""))
            # after a refusal, what the model confirmed live (answer/confirm.py): flagged `confirmed` since
            # answer-ja-10 and answer-quotes-7, among the quotes shown in the two runs before
            saved = detail.get("quotes") or [] if refused and not alone else []
            flagged = [q for q in saved if "confirmed" in q]
            confirmed = {str(q["text"]) for q in (flagged or saved) if q.get("confirmed", True)}
            model_refused = refused and not alone and not withheld_by_check(detail, hits)
            quotes = (
                choose_quotes(
                    case.question, hits, synthesis, model_refused=model_refused, confirmed=confirmed
                )
                if hits
                else []
            )
            for q in quotes:
                verbatim[0] += 1
                verbatim[1] += hits[q.n - 1].text[q.start : q.end] == q.text
                verbatim[2] += _on_disk(corpus / "docs", hits[q.n - 1], q)
            rows.append(score_case(case, synthesis, refused, quotes, language, model=not alone, hits=hits))
            if explain:
                explain_case(case, hits, quotes, synthesis)
        name = run_dir.name + (" (synthesis dropped: no model)" if alone else "")
        name += " (passages as the prompt holds them)" if as_read else ""
        tables.append(table(name, rows, (verbatim[0], verbatim[1], verbatim[2])))
        tables[-1]["passages_whole"] = f"{recovered}/{read_count}"
    return tables


def run_japanese(top_k: int = 5, explain: bool = False) -> dict[str, Any]:
    cases = load_cases(JA / "cases.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(db=str(Path(tmp) / "ja.sqlite3"), embedder="none")
        app = Citedocs(settings)
        try:
            app.add_folder(JA / "docs")
            app.index()
            rows, verbatim = [], [0, 0, 0]
            for case in cases:
                found = app.search(case.question, k=min(MAX_K, 2 * top_k), mode="keyword").hits
                hits = passages(found, top_k, overlap=PASSAGE_OVERLAP)
                gate = relevance_decision(case.question, hits, settings.relevance_threshold)
                quotes = choose_quotes(case.question, hits, "") if gate.allowed else []
                for q in quotes:
                    verbatim[0] += 1
                    verbatim[1] += hits[q.n - 1].text[q.start : q.end] == q.text
                    verbatim[2] += _on_disk(JA / "docs", hits[q.n - 1], q)
                rows.append(score_case(case, "", True, quotes, "ja", model=False, hits=hits))
                if explain:
                    explain_case(case, hits, quotes)
        finally:
            app.close()
    return table(
        "ja-developers-reference (keyword, no model: quotes alone)",
        rows,
        (verbatim[0], verbatim[1], verbatim[2]),
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    runs = sub.add_parser("runs", help="committed claude-docs runs, quotes added to their saved answers")
    runs.add_argument("run_dirs", nargs="*", type=Path, default=list(DEFAULT_RUNS))
    runs.add_argument("--alone", action="store_true", help="drop the saved syntheses: the quotes alone")
    runs.add_argument("--ja", action="store_true", help="runs of the Japanese dev set (answer-ja-1)")
    runs.add_argument(
        "--as-read", action="store_true", help="quote from the prompt's text of each passage, not the whole"
    )
    ja = sub.add_parser("ja", help="the Japanese dev set: retrieval, gate and quotes, no model")
    for command in (runs, ja):
        command.add_argument(
            "--explain", action="store_true", help="print why each missed key fact was missed (stderr)"
        )
    args = parser.parse_args()
    print(json.dumps(header()))
    results = (
        run_runs(args.run_dirs, args.alone, args.explain, args.as_read, "ja" if args.ja else "en")
        if args.what == "runs"
        else [run_japanese(explain=args.explain)]
    )
    for result in results:
        print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
