"""answer/quotes.py: the source sentences under a synthesis, chosen without the model, verbatim and cited."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from citedocs.answer.prompt import build_messages
from citedocs.answer.quotes import ALONE_CHARS, QUOTE_CHARS, choose_quotes
from citedocs.eval.prompts import prompt_passages
from citedocs.hits import Hit

REPO = Path(__file__).resolve().parents[1]
RUNS = sorted(p.parent for p in (REPO / "eval" / "baseline").glob("answer-*/cases.jsonl"))


def hit(text: str, path: str = "/docs/limits.md", heading: str = "Limits", line_start: int = 10) -> Hit:
    lines = text.count("\n")
    return Hit("c1", path, "docs", heading, None, line_start, line_start + lines, 1.0, text)


LIMITS = hit(
    "Requests are limited per minute.\n"
    "The default rate limit is 50 requests per minute for the Build tier.\n"
    "The Scale tier raises the rate limit to 4000 requests per minute.\n"
    "Bananas are yellow and grow in bunches."
)
QUESTION = "What is the rate limit in requests per minute for the Build and Scale tiers?"


def test_quotes_are_verbatim_cited_and_located() -> None:
    quotes = choose_quotes(QUESTION, [LIMITS])
    assert [q.text for q in quotes][:2] == [
        "The default rate limit is 50 requests per minute for the Build tier.",
        "The Scale tier raises the rate limit to 4000 requests per minute.",
    ]
    for q in quotes:
        assert LIMITS.text[q.start : q.end] == q.text and q.n == 1
    first = quotes[0].to_dict()
    assert (first["n"], first["path"], first["line"], first["page"], first["url"]) == (
        1,
        "/docs/limits.md",
        11,
        None,
        None,
    )
    assert all("Bananas" not in q.text for q in quotes)


def test_what_the_synthesis_already_states_is_not_quoted_again() -> None:
    synthesis = "The Build tier allows 50 requests per minute by default [1]."
    quotes = choose_quotes(QUESTION, [LIMITS], synthesis)
    assert [q.text for q in quotes] == ["The Scale tier raises the rate limit to 4000 requests per minute."]
    said_both = synthesis + " The Scale tier raises it to 4000 requests per minute [1]."
    assert choose_quotes(QUESTION, [LIMITS], said_both) == []


def test_quotes_are_bounded_and_fewer_under_a_synthesis() -> None:
    rows = "\n".join(f"| tier {i} | rate limit {i * 10} requests per minute |" for i in range(1, 60))
    table = hit("| tier | rate limit |\n|---|---|\n" + rows)
    under = choose_quotes("rate limit requests per minute tier", [table], "Limits depend on the tier [1].")
    alone = choose_quotes("rate limit requests per minute tier", [table])
    assert 0 < len(under) <= len(alone)
    assert sum(len(q.text) for q in under) <= QUOTE_CHARS and sum(len(q.text) for q in alone) <= ALONE_CHARS
    assert all(q.text.startswith("| tier") and "\n" not in q.text for q in alone)  # a long table, row by row


def test_after_a_refused_model_answer_only_a_close_match_is_quoted() -> None:
    weak = hit("The dashboard shows usage per day.\nInvoices are sent at the end of each month.")
    question = "How do I export usage invoices as CSV from the dashboard?"
    assert choose_quotes(question, [weak]) != []
    assert choose_quotes(question, [weak], model_refused=True) == []


def test_japanese_sentences_end_without_spaces_and_the_synthesis_is_read_by_its_words() -> None:
    text = (
        "遅延アップロードは DELAYED キューを使います。"
        "アップロード先は DELAYED/X-day ディレクトリで、X は 0 から 15 の間です。"
        "dput では --delayed オプションで日数を指定します。"
        "バナナは黄色です。"
    )
    passage = hit(text, path="/docs/pkgs.html", heading="遅延アップロード")
    question = "遅延アップロードで何日まで指定できる？ dput のオプションは？"
    quotes = choose_quotes(question, [passage])
    assert "dput では --delayed オプションで日数を指定します。" in [q.text for q in quotes]
    assert all(text[q.start : q.end] == q.text and "バナナ" not in q.text for q in quotes)
    synthesis = "dput の --delayed オプションで日数を指定します [1]。"
    under = choose_quotes(question, [passage], synthesis)
    assert "dput では --delayed オプションで日数を指定します。" not in [q.text for q in under]
    assert any("15" in q.text for q in under)


def test_a_sentence_that_introduces_code_or_a_list_is_quoted_with_it() -> None:
    ja = hit(
        "試験版は特殊なディストリビューションです。\n以下が、試験版 (experimental) 用の sources.list です:\n\n"
        "```default\ndeb http://deb.debian.org/debian/ experimental main\n```\n",
        path="/docs/resources.html",
        heading="試験版",
    )
    quotes = choose_quotes("experimental のパッケージを使いたい。sources.list に書く行は？", [ja])
    assert quotes[0].text.startswith("以下が") and "deb http://deb.debian.org/debian/" in quotes[0].text
    assert ja.text[quotes[0].start : quotes[0].end] == quotes[0].text
    en = hit(
        "For rest of the 91 samples in the test set:\n\n- Accuracy: 89.01%\n- Time taken: 1.61 seconds\n\n"
        "## Costs\nBananas are yellow."
    )
    quotes = choose_quotes("What are the results on the 91 samples of the test set?", [en])
    assert (
        quotes[0].text
        == "For rest of the 91 samples in the test set:\n\n- Accuracy: 89.01%\n- Time taken: 1.61 seconds"
    )


def test_an_introduction_that_says_nothing_itself_matches_as_well_as_the_sentence_before_it() -> None:
    ja = hit(
        "dpkg-depcheck は新しいパッケージの Build-Depends を洗い出すのに役立ちます。例えば以下の様にします:\n\n"
        "```sh\ndpkg-depcheck -b debian/rules build\n```\n"
    )
    quotes = choose_quotes("新しいパッケージの Build-Depends を洗い出したい。便利なツールは？", [ja])
    assert any("dpkg-depcheck -b debian/rules build" in q.text for q in quotes)
    en = hit("Install the Python SDK with pip. For example:\n\n```sh\npip install anthropic\n```\n")
    quotes = choose_quotes("How do I install the Python SDK?", [en])
    assert any("pip install anthropic" in q.text for q in quotes)


def test_between_two_equal_matches_the_one_that_names_something_comes_first() -> None:
    # the first restates the question; the second names where to write
    ja = hit(
        "休暇で不在になる時は他の開発者に知らせるのが大事です。\n"
        "休暇で不在になるなら debian-private@lists.debian.org に [VAC] と付けて送り開発者に知らせます。"
    )
    quotes = choose_quotes("休暇で不在になる。開発者にどう知らせる？", [ja])
    assert "debian-private@lists.debian.org" in quotes[0].text
    en = hit(
        "Before a vacation, tell the other developers.\n"
        "Before a vacation, tell the developers at debian-private@lists.debian.org."
    )
    quotes = choose_quotes("How do I tell the developers before a vacation?", [en])
    assert "debian-private@lists.debian.org" in quotes[0].text


def test_prompt_passages_recovers_what_the_model_read() -> None:
    hits = [LIMITS, hit("Retries back off exponentially.", path="/docs/retry.md", heading="Retries")]
    messages, _ = build_messages("How are requests limited?", hits)
    recovered = prompt_passages(messages)
    assert [h.text for h in recovered] == [h.text for h in hits]
    assert [(h.path, h.heading, h.line_start, h.line_end) for h in recovered] == [
        ("limits.md", "Limits", 10, 13),
        ("retry.md", "Retries", 10, 10),
    ]


@pytest.mark.parametrize("run_dir", RUNS, ids=[r.name for r in RUNS])
def test_every_quote_of_every_committed_run_is_verbatim_in_its_cited_passage(run_dir: Path) -> None:
    """Quotes added to each saved answer (as bench/bench_quotes.py does) are exact slices of the passage they
    cite, as the model read it; a run that stored no prompts has nothing to check."""
    checked = 0
    for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        detail = json.loads(line).get("detail", {})
        hits = prompt_passages(detail.get("prompt") or [])
        if not hits:
            continue
        refused = bool(detail.get("refused"))
        synthesis = "" if refused else str(detail.get("answer", ""))
        for q in choose_quotes(str(detail["question"]), hits, synthesis, model_refused=refused):
            assert 1 <= q.n <= len(hits)
            assert q.text and hits[q.n - 1].text[q.start : q.end] == q.text
            assert q.text in hits[q.n - 1].text
            checked += 1
    if any('"prompt"' in line for line in (run_dir / "cases.jsonl").open(encoding="utf-8")):
        assert checked > 0


def test_a_menu_is_never_quoted_in_place_of_a_refused_answer() -> None:
    menu = hit(
        "Get started with Claude for Sheets Install Claude for Sheets Enter your first prompt Advanced use\n\n"
        "Install Claude Code with `npm install -g claude-code`, then start it with `claude` in a terminal."
    )
    question = "How do I install Claude Code and start it from a terminal?"
    refused = [q.text for q in choose_quotes(question, [menu], model_refused=True)]
    assert refused == [
        "Install Claude Code with `npm install -g claude-code`, then start it with `claude` in a terminal."
    ]
    assert (
        len(choose_quotes(question, [menu])) == 2
    )  # under a synthesis, or without a model, it may point the way


def test_a_quote_says_where_it_is_by_line_page_or_url() -> None:
    text = "The default rate limit is 50 requests per minute for the Build tier."
    pdf = Hit("p", "/docs/limits.pdf", "docs", "", 3, 0, 0, 1.0, text)
    page = Hit("u", "https://docs.example.com/limits", "site", "Limits", None, 0, 0, 1.0, text)
    (on_page,) = choose_quotes(QUESTION, [pdf])
    (on_site,) = choose_quotes(QUESTION, [page])
    assert (on_page.to_dict()["page"], on_page.to_dict()["line"], on_page.to_dict()["url"]) == (3, None, None)
    assert (on_site.to_dict()["url"], on_site.to_dict()["line"]) == ("https://docs.example.com/limits", None)


LIVE_RUNS = [r for r in RUNS if '"quotes": [{' in (r / "cases.jsonl").read_text(encoding="utf-8")]
# Runs over the claude-docs Markdown pages, whose line numbers are the file's (HTML passages are extracted text).
MARKDOWN_RUNS = [
    r
    for r in LIVE_RUNS
    if json.loads((r / "summary.json").read_text(encoding="utf-8"))["meta"]
    .get("corpus", "")
    .endswith("claude-docs-qa/docs")
]


@pytest.mark.parametrize("run_dir", MARKDOWN_RUNS, ids=[r.name for r in MARKDOWN_RUNS])
def test_every_quote_a_live_run_showed_is_verbatim_in_the_lines_of_the_file_it_names(run_dir: Path) -> None:
    """A run made with quotes stores the ones the reader saw (`detail.quotes`): each is the file's own text at
    the lines it gives, and cites a source the answer listed. The chunker puts one blank line between two
    paragraphs however many the file has, so a quote that spans paragraphs is compared with runs of blank lines
    as one."""
    from conftest import shared

    def paragraphs(text: str) -> str:
        return re.sub(r"\n(?:[ \t]*\n)+", "\n\n", text)

    docs = shared("claude-docs-qa", "docs")
    checked = 0
    for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        detail = json.loads(line).get("detail", {})
        for quote in detail.get("quotes") or []:
            assert 1 <= quote["n"] <= len(detail["sources"])
            assert Path(quote["path"]).name in detail["sources"][quote["n"] - 1]
            lines = (docs / Path(quote["path"]).name).read_text(encoding="utf-8").splitlines()
            named = "\n".join(lines[quote["line"] - 1 : quote["line_end"]])
            assert quote["text"] and paragraphs(quote["text"]) in paragraphs(named)
            checked += 1
    assert checked > 0


def test_an_html_comment_is_never_quoted() -> None:
    """A scraped page keeps `<!-- source: URL -->` lines; one was the only quote after a refused synthesis in
    the first live run (case unans-10)."""
    text = "<!-- source: https://docs.example/retention -->\nRetention of chat logs is 30 days by default."
    hit = Hit("c1", "/docs/retention.md", "docs", "Retention", None, 1, 2, 1.0, text)
    for refused in (False, True):
        quotes = choose_quotes("source docs example retention", [hit], "", model_refused=refused)
        assert all("<!--" not in q.text and "-->" not in q.text for q in quotes)
    kept = choose_quotes("How long are chat logs retained?", [hit], "")
    assert [q.text for q in kept] == ["Retention of chat logs is 30 days by default."]
