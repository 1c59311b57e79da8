"""How many checked sentences of saved answers does the opposite-claim rule (answer/polarity.py) turn from
supported to unsupported? Each case's passages are read back from its recorded prompt; every answer of
eval/baseline/answer-*/cases.jsonl is checked with the rule and with it switched off (this script swaps the
module's function; nothing else does).

    python bench/studies/polarity_effect.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from citedocs.answer import citations
from citedocs.hits import Hit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _env import print_header

ROOT = Path(__file__).resolve().parents[2]
SOURCE = re.compile(r"<<<SOURCE \[(\d+)\] (\w+)>>> ([^\n]*)\n(.*?)\n<<<END SOURCE \[\1\] \2>>>", re.DOTALL)


def passages(prompt: list[dict[str, Any]]) -> list[Hit]:
    user = next(m["content"] for m in prompt if m["role"] == "user")
    hits = []
    for n, _fence, head, text in SOURCE.findall(user):
        parts = head.split(" · ")
        hits.append(Hit(f"c{n}", parts[0], "/", parts[1] if len(parts) > 1 else "", None, 1, 2, 0.1, text))
    return hits


def main() -> None:
    print_header("opposite-claim rule on saved answers")
    rule = citations.states_the_opposite
    runs = sorted(
        p for p in ROOT.glob("eval/baseline/answer-*/cases.jsonl") if not p.parent.name.endswith("-hand")
    )
    answers = checked = flipped = 0
    for run in runs:
        for line in run.read_text(encoding="utf-8").splitlines():
            detail = json.loads(line)["detail"]
            hits = passages(detail["prompt"]) if detail.get("prompt") and detail.get("raw_answer") else []
            if not hits:
                continue
            answers += 1
            with_rule = citations.check_citations(detail["raw_answer"], hits)
            citations.states_the_opposite = lambda sentence, passage: False
            without = citations.check_citations(detail["raw_answer"], hits)
            citations.states_the_opposite = rule
            for on, off in zip(with_rule.sentences, without.sentences, strict=True):
                checked += off.checked
                if off.checked and on.supported != off.supported:
                    flipped += 1
                    print(f"{run.parent.name}: {on.sentence[:150]!r}")
    print(
        f"\n{len(runs)} runs, {answers} answers, {checked} checked sentences: {flipped} turned unsupported "
        f"({flipped / max(checked, 1) * 100:.2f} %)"
    )


if __name__ == "__main__":
    main()
