"""The citation check does not accept the opposite claim: a sentence that negates its passage, takes the other
side of a yes/no pair, or the other direction on a scale (before/after, more/less, all/some) is not supported
by it, however many words they share, in English and Japanese; paraphrases that keep the meaning still are."""

from __future__ import annotations

import pytest

from citedocs.answer.citations import UNVERIFIED_MARK, check_citations, repair_answer
from citedocs.answer.polarity import states_the_opposite
from citedocs.hits import Hit

OPPOSITES = [
    ("Zebras need 20 liters of water per day.", "Zebras do not need 20 liters of water per day."),
    ("Zebras need 20 liters of water per day.", "Zebras don't need 20 liters of water per day."),
    ("Zebras need 20 liters of water per day.", "Zebras never need 20 liters of water per day."),
    ("Zebras need 20 liters of water per day.", "Zebras don\u2019t need 20 liters of water per day."),
    (
        "You must restart the server after changing the port.",
        "You must not restart the server after changing the port.",
    ),
    ("Run the migration before the upgrade.", "Run the migration after the upgrade."),
    ("The cache is enabled by default.", "The cache is disabled by default."),
    ("All files in the folder are indexed.", "No files in the folder are indexed."),
    ("All files in the folder are indexed.", "Some files in the folder are indexed."),
    ("The token must be at least 32 characters long.", "The token must be at most 32 characters long."),
    ("Setting the API key is required.", "Setting the API key is optional."),
    ("シマウマは1日に20リットルの水が必要です。", "シマウマは1日に20リットルの水を必要としません。"),
    ("シマウマは1日に20リットルの水が必要です。", "シマウマに1日20リットルの水は不要です。"),
    ("キャッシュはデフォルトで有効です。", "キャッシュはデフォルトで無効です。"),
    ("設定を変更した後にサーバーを再起動してください。", "設定を変更する前にサーバーを再起動してください。"),
    ("すべてのファイルが索引に登録されます。", "一部のファイルが索引に登録されます。"),
    ("パスワードは8文字以上にしてください。", "パスワードは8文字以下にしてください。"),
]
SAME = [
    ("Zebras need 20 liters of water per day.", "Zebras need 20 liters of water every day."),
    ("The cache is disabled by default.", "The cache is not enabled by default."),
    ("Setting the API key is optional.", "Setting the API key is not required."),
    ("Do not commit the .env file.", "Never commit the .env file."),
    ("キャッシュはデフォルトで無効です。", "キャッシュはデフォルトで有効ではありません。"),
    ("ログは少ない。", "ログは少ないです。"),
    ("ファイルを保存する必要があります。", "ファイルを保存しなければならない。"),
    # seen in saved answers (eval/baseline): a negation elsewhere in the passage's sentence is not the claim's
    (
        "Get your Claude API key. If you don\u2019t yet have an API key, you can make API keys in the Claude Console.",
        "Get your Claude API key from the Claude Console.",
    ),
    (
        "Without a role, Claude\u2019s analysis lacks depth:",
        "Without a role, Claude's analysis lacks depth, as it lacks the context.",
    ),
    (
        "Each subtask gets full attention, reducing inconsistency errors.",
        "Chaining reduces errors and inconsistency by breaking tasks into subtasks without losing attention.",
    ),
]


@pytest.mark.parametrize(("passage", "claim"), OPPOSITES)
def test_the_opposite_claim_is_found(passage: str, claim: str) -> None:
    assert states_the_opposite(claim, f"Intro sentence here. {passage} Another sentence follows.")


@pytest.mark.parametrize(("passage", "claim"), SAME)
def test_a_claim_with_the_same_meaning_is_not_the_opposite(passage: str, claim: str) -> None:
    assert not states_the_opposite(claim, passage)


def passage(text: str, heading: str = "Water") -> Hit:
    return Hit("c0", "/docs/zebra.md", "/docs", heading, None, 1, 9, 0.1, text)


@pytest.mark.parametrize(("source", "claim"), OPPOSITES)
def test_check_citations_does_not_support_the_opposite(source: str, claim: str) -> None:
    answer = claim.rstrip(".。") + " [1]."
    report = check_citations(answer, [passage(source)])
    (sentence,) = [s for s in report.sentences if s.checked]
    assert not sentence.supported and sentence.support == 0.0, sentence
    assert UNVERIFIED_MARK in repair_answer(answer, report, mark_unverified=True)


def test_the_attack_from_the_issue() -> None:
    report = check_citations(
        "Zebras do not need 20 liters of water per day [1].",
        [passage("Zebras need 20 liters of water per day.")],
    )
    assert report.supported_fraction == 0.0
    same = check_citations(
        "Zebras need 20 liters of water per day [1].", [passage("Zebras need 20 liters of water per day.")]
    )
    assert same.supported_fraction == 1.0


def test_a_passage_holding_both_sides_supports_the_matching_sentence() -> None:
    text = "Zebras need 20 liters of water per day. Camels do not need water for a week."
    report = check_citations("Camels do not need water for a week [1].", [passage(text)])
    assert report.supported_fraction == 1.0
