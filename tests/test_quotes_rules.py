"""answer/quotes.py's selection rules, each on passages of the claude-docs and Debian corpora (issue 44):
a sentence that points back, a line too long to quote, what a quote adds beyond the question, and a
question naming what no passage writes."""

from __future__ import annotations

import itertools

from citedocs.answer.gate import unheld_names
from citedocs.answer.quotes import WINDOW_CHARS, Quote, choose_quotes
from citedocs.hits import Hit


def hit(text: str, path: str = "/docs/tool-use.md", heading: str = "Tool use") -> Hit:
    return Hit("c1", path, "docs", heading, None, 1, 1 + text.count("\n"), 1.0, text)


def verbatim(quotes: list[Quote], hits: list[Hit]) -> bool:
    return all(hits[q.n - 1].text[q.start : q.end] == q.text for q in quotes)


JSON_MODE = (
    "JSON mode You can use tools to get Claude produce JSON output that follows a schema, even if you don’t "
    "have any intention of running that output through a tool or function. When using tools in this way: You "
    "usually want to provide a single tool You should set tool_choice (see Forcing tool use ) to instruct the "
    "model to explicitly use that tool Remember that the model will pass the input to the tool, so the name of "
    "the tool and description should be from the model’s perspective."
)
JSON_QUESTION = (
    "When using tools just to get Claude to produce JSON output following a particular schema, what key "
    "things should you do in terms of tool setup and prompting?"
)


def test_a_sentence_that_points_back_matches_as_well_as_the_one_before_it() -> None:
    # "in this way" is the JSON mode of the sentence before: the list of what to do shares few question words
    passages = [hit(JSON_MODE)]
    quotes = choose_quotes(JSON_QUESTION, passages)
    assert any("single tool" in q.text and "tool_choice" in q.text for q in quotes) and verbatim(
        quotes, passages
    )
    # in another paragraph it points back to nothing quoted, and matches on its own words only
    apart = hit(JSON_MODE.replace(" When using tools", "\n\nWhen using tools"))
    assert not any("single tool" in q.text for q in choose_quotes(JSON_QUESTION, [apart]))


def test_a_sentence_that_points_back_and_matches_better_is_quoted_with_the_one_before_it() -> None:
    # alone, "これは、..." does not say what must be idempotent
    text = (
        "メンテナスクリプトは冪等でなければなりません。"
        "これは、通常は 1 回呼ばれるスクリプトが 2 回呼ばれた場合、何も悪いことが起きないのを保証する必要があるという意味です。"
    )
    passages = [hit(text, "/docs/best-pkging-practices.html", "メンテナスクリプト")]
    quotes = choose_quotes(
        "postinst みたいなメンテナスクリプトって、2回実行されても大丈夫なように書かないとダメ？", passages
    )
    assert quotes[0].text == text and verbatim(quotes, passages)


MODELS_TABLE = (
    "OpusSonnetHaikuDescriptionStrong performance on highly complex tasks, such as math and coding.Balances "
    "intelligence and speed for high-throughput tasks.Near-instant responsiveness that can mimic human "
    "interactions.Example usesTask automation across APIs and databases, and powerful coding tasksR&D, "
    "brainstorming and hypothesis generation, and drug discoveryStrategy, advanced analysis of charts and "
    "graphs, financials and market trends, and forecastingData processing over vast amounts of knowledgeSales "
    "forecasting and targeted marketingCode generation and quality controlLive support chatTranslationsContent "
    "moderationExtracting knowledge from unstructured dataLatest 1P APImodel nameclaude-3-opus-20240229"
    "claude-3-sonnet-20240229claude-3-haiku-20240307"
)


def test_a_line_too_long_to_quote_is_quoted_in_windows_of_its_glued_cells() -> None:
    # a table saved from HTML: one 700-character line, its cells run together
    passages = [hit(MODELS_TABLE, "/docs/models.md", "Models")]
    question = (
        "Which Claude 3 model provides the best balance of intelligence and speed for high-throughput tasks "
        "like sales forecasting and targeted marketing?"
    )
    quotes = choose_quotes(question, passages)
    assert len(MODELS_TABLE) > 600 and quotes and verbatim(quotes, passages)
    assert any("Balances intelligence and speed for high-throughput tasks." in q.text for q in quotes)
    assert all(len(q.text) <= WINDOW_CHARS and q.text[0].isupper() for q in quotes)  # starts at a cell
    spans = sorted((q.start, q.end) for q in quotes)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))


def test_a_name_glued_to_a_number_is_not_cut() -> None:
    line = (
        "Capable200K token context window for expanded use cases, with future support for 1MTool use, also "
        "known as function calling, which allows seamless integration of Claude into specialized applications "
        "and custom workflowsMultimodal input capabilities with text output, allowing you to upload images (such "
        "as tables, graphs, and photos) along with text prompts for richer context and complex use cases"
    )
    quotes = choose_quotes("What capabilities make Claude suitable for enterprise tool use?", [hit(line)])
    assert quotes and not any(q.text.startswith("MTool") for q in quotes)


def test_a_close_match_that_adds_one_new_thing_is_quoted_under_a_synthesis_that_restates_the_question() -> (
    None
):
    # all but "Canada" are the question's words; the synthesis says them too
    passages = [hit("Claude.ai, our API, and iOS app are now available in Canada.", "/docs/release-notes.md")]
    question = "As of June 2024, in which regions are Anthropic's Claude.ai API and iOS app available?"
    synthesis = "The Claude.ai API and iOS app are available in several regions [1]."
    quotes = choose_quotes(question, passages, synthesis)
    assert [q.text for q in quotes] == ["Claude.ai, our API, and iOS app are now available in Canada."]
    # a sentence that only restates the question adds nothing
    echo = [hit("The Claude.ai API and iOS app are available in regions.")]
    assert choose_quotes(question, echo, synthesis) == []


def test_without_a_synthesis_a_question_naming_what_no_passage_writes_gets_no_quotes() -> None:
    passages = [
        hit(
            "Text Completions: max_tokens_to_sample parameter. Messages: max_tokens parameter.",
            "/docs/migrating.md",
            "Parameters",
        )
    ]
    question = "What is the default value of the top_k sampling parameter in the Messages API?"
    assert unheld_names(question, passages) == ["top_k"]
    assert choose_quotes(question, passages) == []
    assert (
        choose_quotes(question, passages, "The Messages API takes max_tokens [1].") != []
    )  # a model answered
    # a hyphenated word is not a name; a name the passages write is held
    assert unheld_names("How can you guide Claude's response by pre-filling part of it?", passages) == []
    assert unheld_names("What replaced max_tokens_to_sample in the Messages API?", passages) == []
    ja = [
        hit(
            "debian/control ファイルの セクション (Section) フィールドは単なるヒントです。", "/docs/pkgs.html"
        )
    ]
    assert unheld_names("debian/control の Rules-Requires-Root フィールドには何を書けばいい？", ja) == [
        "Rules-Requires-Root"
    ]
