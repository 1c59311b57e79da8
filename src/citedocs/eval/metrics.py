"""Per-case evaluation metrics as pure functions of plain data.

Retrieval results are `(path, heading)` pairs: `path` is whatever the hit names (absolute path, relative path
or URL) and is matched on its last segment, the file name; `heading` is the hit's heading path joined with
" > ". Evidence is `(file name, heading)` pairs. Functions return a float in [0, 1], or None where the metric
is undefined for the case (nothing to measure); aggregation skips None.

Matching rules:
- file level: the hit's file name equals an evidence file name (exact, case-sensitive: names are identifiers).
- section level: same file name, and the evidence heading equals ANY element of the hit's heading path after
  `normalize_heading`. Any element, not only the last, because a chunk from a `###` subsection still lies
  inside the `##` section the evidence names; the file must match too, because headings such as "FAQ" repeat
  across pages.
- recall counts distinct evidence items found, so a case with two evidence files scores 0.5 at k=1.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from citedocs.text.analyzer import fact_groups
from citedocs.text.cjk import CJK_RUN

__all__ = [
    "citation_precision",
    "context_recall",
    "correct_refusal",
    "fact_found",
    "faithfulness",
    "file_mrr",
    "file_name",
    "file_ndcg_at_k",
    "file_recall_at_k",
    "invalid_citation_rate",
    "key_fact_recall",
    "mrr_at_k",
    "ndcg_at_k",
    "normalize_answer",
    "normalize_heading",
    "recall_at_k",
    "section_recall_at_k",
    "wrong_refusal",
]

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})


def file_name(path: str) -> str:
    """The last segment of a path or URL, without a `#fragment` or `?query`."""
    bare = path.split("#", 1)[0].split("?", 1)[0].replace("\\", "/").rstrip("/")
    return bare.rsplit("/", 1)[-1]


def normalize_heading(heading: str) -> str:
    """Case-folded word characters separated by single spaces: `How to prefill Claude’s response` matches
    `how to prefill claude's response`, `June 20th, 2024` matches `June 20th 2024`."""
    text = unicodedata.normalize("NFKC", heading).translate(_QUOTES).casefold()
    return " ".join(re.findall(r"\w+", text))


def _heading_path(heading: str) -> list[str]:
    return [normalize_heading(part) for part in heading.split(" > ")]


def _files(ranked: Sequence[tuple[str, str]] | Sequence[str], k: int | None) -> list[str]:
    items = ranked if k is None else ranked[:k]
    return [file_name(item if isinstance(item, str) else item[0]) for item in items]


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def file_recall_at_k(
    ranked: Sequence[tuple[str, str]] | Sequence[str], evidence_files: Iterable[str], k: int
) -> float:
    """Share of distinct evidence files among the top-k hits' files."""
    _check_k(k)
    wanted = {file_name(f) for f in evidence_files}
    if not wanted:
        raise ValueError("file recall needs at least one evidence file")
    return len(wanted & set(_files(ranked, k))) / len(wanted)


def section_recall_at_k(
    ranked: Sequence[tuple[str, str]], evidence: Iterable[tuple[str, str]], k: int | None
) -> float:
    """Share of distinct evidence sections matched (see the module rule) by a top-k hit; k=None: all hits."""
    if k is not None:
        _check_k(k)
    wanted = {(file_name(f), normalize_heading(h)) for f, h in evidence}
    if not wanted:
        raise ValueError("section recall needs at least one evidence section")
    hits = [
        (file_name(path), _heading_path(heading)) for path, heading in (ranked if k is None else ranked[:k])
    ]
    found = {(f, h) for f, h in wanted if any(f == name and h in path for name, path in hits)}
    return len(found) / len(wanted)


def context_recall(
    context: Sequence[tuple[str, str]], evidence: Iterable[tuple[str, str]], level: str = "file"
) -> float:
    """Did the passages handed to the model hold the answer? Recall over all of them, by file or section.

    Scored apart from retrieval recall@k because the model sees top_k passages (after any gate), not the
    retriever's ranking: a smaller top_k moves this and not recall@10.
    """
    evidence = list(evidence)
    if level == "file":
        if not context:
            return 0.0
        return file_recall_at_k(context, [f for f, _ in evidence], len(context))
    if level == "section":
        return section_recall_at_k(context, evidence, None)
    raise ValueError(f"level must be 'file' or 'section', got {level!r}")


def file_mrr(
    ranked: Sequence[tuple[str, str]] | Sequence[str], evidence_files: Iterable[str], k: int | None = None
) -> float:
    """Reciprocal rank of the first hit from any evidence file (0 when none in the top k)."""
    wanted = {file_name(f) for f in evidence_files}
    for rank, name in enumerate(_files(ranked, k), start=1):
        if name in wanted:
            return 1.0 / rank
    return 0.0


def file_ndcg_at_k(
    ranked: Sequence[tuple[str, str]] | Sequence[str], evidence_files: Iterable[str], k: int = 10
) -> float:
    """Binary file-level nDCG@k. Only a file's first hit gains: later chunks of the same file are not new
    information, and counting them would let the score pass 1."""
    _check_k(k)
    wanted = {file_name(f) for f in evidence_files}
    seen: set[str] = set()
    gains: list[int] = []
    for name in _files(ranked, k):
        gains.append(1 if name in wanted and name not in seen else 0)
        seen.add(name)
    ideal = [1] * min(k, len(wanted))
    return _dcg(gains) / _dcg(ideal) if ideal else 0.0


def _dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Graded nDCG@k as BEIR reports it (trec_eval's linear gain rel / log2(rank+1)); a repeated id counts
    once; judgements of 0 or below are not relevant. A query with no relevant document scores 0."""
    _check_k(k)
    seen: set[str] = set()
    gains: list[float] = []
    for doc_id in ranked_ids[:k]:
        gains.append(max(qrels.get(doc_id, 0), 0) if doc_id not in seen else 0)
        seen.add(doc_id)
    ideal = sorted((r for r in qrels.values() if r > 0), reverse=True)[:k]
    return _dcg(gains) / _dcg(ideal) if ideal else 0.0


def recall_at_k(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Share of the relevant (judged above 0) documents in the top k."""
    _check_k(k)
    relevant = {doc_id for doc_id, rel in qrels.items() if rel > 0}
    return len(relevant & set(ranked_ids[:k])) / len(relevant) if relevant else 0.0


def mrr_at_k(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant document in the top k."""
    _check_k(k)
    for rank, doc_id in enumerate(ranked_ids[:k], start=1):
        if qrels.get(doc_id, 0) > 0:
            return 1.0 / rank
    return 0.0


def normalize_answer(text: str) -> str:
    """Text reduced so formatting does not decide a match: NFKC, case-folded, curly quotes straightened,
    thousands separators dropped (`1,000` → `1000`), `$`/`%` and other punctuation turned into spaces
    except a decimal point between digits, written escapes (`\\n\\nHuman:`) read as spaces, a space
    between digits and letters (`5MB` → `5 mb`), and whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    text = re.sub(r"\\[ntr]", " ", text)
    text = re.sub(r"(?<=\d)[,_\u202f\u2009](?=\d{3}(?!\d))", "", text)
    text = re.sub(r"(?<=\d)\.(?=\d)", "\x00", text)
    text = re.sub(r"[^\w\x00]+", " ", text)
    text = re.sub(r"(?<=\d)(?=[^\W\d_])|(?<=[^\W\d_])(?=\d)", " ", text)
    return " ".join(text.replace("\x00", ".").split())


def _contains(haystack: str, fact: str) -> bool:
    """`fact` starts on a word boundary; it must end on one only when it ends in a digit, so `20` does not
    match `2024` or `20.5` while `edge case` still matches `edge cases`. Japanese and Chinese write no
    boundaries between words, so a fact that starts with a CJK character may start anywhere (`冪等` in
    `スクリプトは冪等で`, where SudachiPy cuts `冪` from `等` and the analysed words do not meet either)."""
    if not fact:
        return False
    tail = r"(?!\d|\.\d)" if fact[-1].isdigit() else ""
    head = "" if CJK_RUN.match(fact) else r"(?<!\w)(?<!\d\.)"
    return re.search(head + re.escape(fact) + tail, haystack) is not None


# How a key fact is looked for in an answer: "literal" (normalised text, the matcher of runs before issue 44)
# or "analyzed" (literal, or else the fact's analysed words in a row: stems, CJK words; the default).
Matcher = Literal["literal", "analyzed"]


def _in_a_row(haystack: Sequence[tuple[str, ...]], needle: Sequence[tuple[str, ...]]) -> bool:
    if not needle:
        return False
    size = len(needle)
    return any(list(haystack[i : i + size]) == list(needle) for i in range(len(haystack) - size + 1))


def fact_found(answer: str, fact: str, matcher: Matcher = "analyzed") -> bool:
    """`fact` is in `answer`: as text after `normalize_answer` (starting on a word boundary, ending on one
    when it ends in a digit), or, with the "analyzed" matcher, as consecutive analysed words (the analyzer
    of the keyword index: "retries requests" is in "retried the request"; Japanese by its words)."""
    if _contains(normalize_answer(answer), normalize_answer(fact)):
        return True
    return matcher == "analyzed" and _in_a_row(fact_groups(answer), fact_groups(fact))


def key_fact_recall(
    answer: str, key_facts: Sequence[str], refused: bool = False, *, matcher: Matcher = "analyzed"
) -> float | None:
    """Share of key facts found in the answer (`fact_found`); a refusal scores 0.
    None when the case has no key facts."""
    if not key_facts:
        return None
    if refused:
        return 0.0
    if matcher == "literal":
        text = normalize_answer(answer)
        return sum(_contains(text, normalize_answer(fact)) for fact in key_facts) / len(key_facts)
    groups = fact_groups(answer)
    text = normalize_answer(answer)
    found = sum(
        _contains(text, normalize_answer(fact)) or _in_a_row(groups, fact_groups(fact)) for fact in key_facts
    )
    return found / len(key_facts)


def correct_refusal(kind: str, refused: bool) -> float | None:
    """1 when an unanswerable or off-topic case was refused, 0 when answered; None for answerable cases."""
    if kind == "answerable":
        return None
    return 1.0 if refused else 0.0


def wrong_refusal(kind: str, refused: bool) -> float | None:
    """1 when an answerable case was refused (higher is worse); None for the other kinds."""
    if kind != "answerable":
        return None
    return 1.0 if refused else 0.0


def invalid_citation_rate(cited: Sequence[int | str], valid: Iterable[int | str]) -> float:
    """Share of the citation markers in an answer that point at no source given (0 when nothing cited)."""
    if not cited:
        return 0.0
    known = set(valid)
    return sum(1 for c in cited if c not in known) / len(cited)


def citation_precision(judgements: Sequence[Sequence[bool]]) -> float | None:
    """Share of cited (sentence, passage) pairs a judge found supporting. `judgements[i]` holds one verdict
    per passage sentence i cites. None when the answer cites nothing."""
    pairs = [verdict for sentence in judgements for verdict in sentence]
    return sum(pairs) / len(pairs) if pairs else None


def faithfulness(judgements: Sequence[Sequence[bool]]) -> float | None:
    """Share of sentences supported by at least one passage they cite; an uncited sentence (empty verdict
    list) is unsupported. Same input as `citation_precision`. None when there are no sentences."""
    if not judgements:
        return None
    return sum(1 for sentence in judgements if any(sentence)) / len(judgements)
