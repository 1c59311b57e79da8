"""`citedocs eval answer` and `eval hand-score` as a user runs them: a real subprocess, a real index, a scripted
OpenAI-compatible server on a real socket answering both the questions and the judge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from citedocs.answer.prompt import REFUSAL_SENTENCE
from fakes.openai_server import FakeOpenAI, RecordedRequest, Reply

COPIED = "The server listens on port 8765 by default [1]."
INVENTED = "It is the fastest port in the world [1]."


def _corpus(root: Path) -> tuple[Path, Path]:
    docs = root / "docs"
    docs.mkdir()
    (docs / "setup.md").write_text(
        "# Setup\n\n## Port\n\nThe server listens on port 8765 by default. Change it with --port.\n\n"
        "## Logs\n\nLogs go to stderr unless --log-file names a file.\n",
        encoding="utf-8",
    )
    cases = root / "cases.jsonl"
    rows = [
        {
            "id": "port",
            "question": "Which port does the server listen on by default?",
            "key_facts": ["8765"],
            "evidence": [{"file": "docs/setup.md", "heading": "Port"}],
        },
        {"id": "db", "kind": "unanswerable", "question": "Which database does the server use for logs?"},
    ]
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return docs, cases


def _respond(request: RecordedRequest) -> Reply:
    prompt = json.dumps(request.body)
    if not request.body.get("stream"):  # the judge: one word
        return Reply(tokens=["yes" if "fastest" not in prompt else "no"])
    if "database" in prompt:
        return Reply(tokens=[REFUSAL_SENTENCE])
    return Reply(tokens=[COPIED, " ", INVENTED])


def _cli(*args: str, base_url: str, cwd: Path) -> dict:  # type: ignore[type-arg]
    env = {
        **os.environ,
        "CITEDOCS_LLM_BASE_URL": base_url,
        "CITEDOCS_EMBEDDER": "none",
        "CITEDOCS_DB": str(cwd / "unused.db"),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "citedocs", "eval", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def _answer_unjudged(docs: Path, cases: Path, run_dir: Path, index: Path, base_url: str, *extra: str) -> dict:  # type: ignore[type-arg]
    """`citedocs eval answer --no-judge`, keeping the corpus index at `index`."""
    return _cli(
        "answer",
        "--corpus",
        str(docs),
        "--cases",
        str(cases),
        "--run-dir",
        str(run_dir),
        "--no-judge",
        "--index-db",
        str(index),
        *extra,
        base_url=base_url,
        cwd=run_dir.parent,
    )


def _answer_model(request: RecordedRequest) -> Reply:
    """The answer model: it writes the answers, and keeps its own sentences when it checks them (yes)."""
    return _respond(request) if request.body.get("stream") else Reply(tokens=["yes"])


def test_eval_answer_scores_judges_and_keeps_every_verdict(tmp_path: Path) -> None:
    docs, cases = _corpus(tmp_path)
    run_dir = tmp_path / "run"
    with FakeOpenAI(responder=_answer_model) as server, FakeOpenAI(responder=_respond) as judge:
        result = _cli(
            "answer",
            "--corpus",
            str(docs),
            "--cases",
            str(cases),
            "--run-dir",
            str(run_dir),
            "--judge-base-url",
            judge.base_url,
            base_url=server.base_url,
            cwd=tmp_path,
        )
        judge_calls = [r for r in judge.chat_requests]
        checks = [r for r in server.chat_requests if not r.body.get("stream")]
    assert result["key_fact_recall"]["mean"] == 1.0
    assert result["correct_refusal"]["mean"] == 1.0
    # The answer model checked its invented sentence (answer/model_check.py) and kept it; the judge, asked the
    # same question elsewhere, said no. The copied sentence is supported without a model call by both.
    assert len(checks) == 1 and "fastest" in json.dumps(checks[0].body)
    assert len(judge_calls) == 1 and "fastest" in json.dumps(judge_calls[0].body)
    assert result["citation_precision"]["mean"] == 0.5 and result["faithfulness"]["mean"] == 0.5
    pairs = [json.loads(line) for line in (run_dir / "judged-pairs.jsonl").read_text().splitlines()]
    assert [(p["case"], p["n"], p["supported"]) for p in pairs] == [("port", 1, True), ("port", 1, False)]
    rows = {r["id"]: r["detail"] for r in map(json.loads, (run_dir / "cases.jsonl").read_text().splitlines())}
    assert rows["port"]["finish_reason"] == "stop" and rows["port"]["prompt"][0]["role"] == "system"

    grades = tmp_path / "grades.jsonl"
    grades.write_text(json.dumps({**pairs[0], "supported": True, "note": ""}) + "\n", encoding="utf-8")
    hand_dir = tmp_path / "hand"
    partial = _cli(
        "hand-score",
        str(run_dir),
        "--grades",
        str(grades),
        "--out",
        str(hand_dir),
        base_url=server.base_url,
        cwd=tmp_path,
    )
    assert partial == {"graded_cases": 0, "ungraded_cases": 1}  # one pair ungraded: no value, never a guess
    with grades.open("a", encoding="utf-8") as out:
        out.write(json.dumps({**pairs[1], "supported": True, "note": ""}) + "\n")
    full = _cli(
        "hand-score",
        str(run_dir),
        "--grades",
        str(grades),
        "--out",
        str(hand_dir),
        base_url=server.base_url,
        cwd=tmp_path,
    )
    assert full == {"graded_cases": 1, "ungraded_cases": 0}
    summary = json.loads((hand_dir / "summary.json").read_text())
    assert summary["metrics"]["citation_precision"]["mean"] == 1.0
    assert summary["metrics"]["key_fact_recall"]["mean"] == 1.0  # the other metrics are the run's own


def test_a_run_made_without_a_judge_can_be_judged_afterwards(tmp_path: Path) -> None:
    docs, cases = _corpus(tmp_path)
    index = tmp_path / "index.db"
    with FakeOpenAI(responder=_answer_model) as server, FakeOpenAI(responder=_respond) as judge:
        plain = _answer_unjudged(docs, cases, tmp_path / "run", index, server.base_url)
        assert "citation_precision" not in plain
        judged = _cli(
            "rejudge",
            str(tmp_path / "run"),
            "--cases",
            str(cases),
            "--index-db",
            str(index),
            "--out",
            str(tmp_path / "judged"),
            "--judge-base-url",
            judge.base_url,
            base_url=server.base_url,
            cwd=tmp_path,
        )
    assert judged["pairs"] == 2 and judged["skipped"] == 0
    summary = json.loads((tmp_path / "judged" / "summary.json").read_text())
    assert summary["metrics"]["citation_precision"]["mean"] == 0.5
    assert summary["metrics"]["key_fact_recall"]["mean"] == 1.0


def test_a_run_that_dropped_a_repeated_passage_is_judged_against_the_passages_it_read(tmp_path: Path) -> None:
    docs, cases = _corpus(tmp_path)
    (docs / "setup-copy.md").write_text((docs / "setup.md").read_text(encoding="utf-8"), encoding="utf-8")
    index = tmp_path / "index.db"
    with FakeOpenAI(responder=_answer_model) as server, FakeOpenAI(responder=_respond) as judge:
        _answer_unjudged(docs, cases, tmp_path / "run", index, server.base_url)
        record = json.loads((tmp_path / "run" / "cases.jsonl").read_text().splitlines()[0])
        judged = _cli(
            "rejudge",
            str(tmp_path / "run"),
            "--cases",
            str(cases),
            "--index-db",
            str(index),
            "--out",
            str(tmp_path / "judged"),
            "--judge-base-url",
            judge.base_url,
            base_url=server.base_url,
            cwd=tmp_path,
        )
    sources = record["detail"]["sources"]
    assert not any("setup-copy" in s for s in sources) and len(sources) >= 1  # the copy repeats the original
    assert judged["skipped"] == 0 and judged["pairs"] == 2


def test_hand_score_of_an_unjudged_run_says_what_to_do(tmp_path: Path) -> None:
    from citedocs.errors import NotFoundError
    from citedocs.eval.cases import load_cases
    from citedocs.eval.rejudge import hand_score
    from citedocs.eval.runs import run_meta, write_run

    _, cases = _corpus(tmp_path)
    write_run(tmp_path / "run", {"port": {"key_fact_recall": 1.0}}, run_meta(load_cases(cases)))
    with pytest.raises(NotFoundError, match="judged-pairs") as caught:
        hand_score(tmp_path / "run", tmp_path / "out", [])
    assert "eval rejudge" in caught.value.hint


def test_key_facts_are_scored_on_what_the_reader_sees_and_on_each_part() -> None:
    from citedocs.eval.answers import score_case
    from citedocs.eval.cases import Case

    case = Case("port", "Which ports does it use?", key_facts=("8765", "9464"))
    quotes = [{"text": "The metrics port is 9464.", "n": 1}]
    answered = score_case(case, {"answer": COPIED, "refused": False, "quotes": quotes}, None)
    assert answered["key_fact_recall"] == 1.0
    assert (answered["key_fact_recall_synthesis"], answered["key_fact_recall_quotes"]) == (0.5, 0.5)
    assert answered["answer_chars"] == len(COPIED + "\n" + "The metrics port is 9464.")
    withheld = score_case(case, {"answer": REFUSAL_SENTENCE, "refused": True, "quotes": quotes}, None)
    assert withheld["key_fact_recall"] == 0.5 and withheld["key_fact_recall_synthesis"] == 0.0
    # the synthesis was refused, but the reader was shown the quotes: a refusal of the synthesis only
    assert withheld["wrong_refusal_rate"] == 1.0 and withheld["wrong_refusal_rate_reader"] == 0.0
    silent = score_case(case, {"answer": REFUSAL_SENTENCE, "refused": True, "quotes": []}, None)
    assert silent["key_fact_recall"] == 0.0 and silent["answer_chars"] is None
    assert silent["wrong_refusal_rate_reader"] == 1.0
    unanswerable = Case("db", "Which database?", kind="unanswerable")
    quoted = score_case(unanswerable, {"answer": REFUSAL_SENTENCE, "refused": True, "quotes": quotes}, None)
    assert quoted["correct_refusal"] == 1.0 and quoted["correct_refusal_reader"] == 0.0
    assert quoted["wrong_refusal_rate_reader"] is None


def test_runs_with_the_same_seed_send_the_same_prompts_and_runs_without_one_do_not(tmp_path: Path) -> None:
    """A new random fence in every prompt flipped 4 of 30 Japanese answers between two runs of the same code:
    `--seed` draws the fence from the seed and the question, and the model samples with the seed."""
    docs, cases = _corpus(tmp_path)
    index = tmp_path / "index.db"

    def asked(*seed: str) -> list[dict]:  # type: ignore[type-arg]
        with FakeOpenAI(responder=_respond) as server:
            run_dir = tmp_path / f"run-{len(list(tmp_path.glob('run-*')))}"
            _answer_unjudged(docs, cases, run_dir, index, server.base_url, *seed)
            meta = json.loads((run_dir / "summary.json").read_text())["meta"]
            assert meta["seed"] == (int(seed[1]) if seed else None)
            return [r.body for r in server.chat_requests if r.body.get("stream")]

    first, again, other, unseeded, unseeded_again = (
        asked("--seed", "7"),
        asked("--seed", "7"),
        asked("--seed", "8"),
        asked(),
        asked(),
    )
    assert first and [b["messages"] for b in first] == [b["messages"] for b in again]
    assert [b["seed"] for b in first] == [7] * len(first)
    assert [b["messages"] for b in other] != [b["messages"] for b in first]
    assert all("seed" not in b for b in unseeded)
    assert [b["messages"] for b in unseeded] != [b["messages"] for b in unseeded_again]
