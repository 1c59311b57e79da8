from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def shared(*parts: str) -> Path:
    """A path under ../shared/data, or a skip saying what is missing."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs {path} (the shared data set is not on this machine)")
    return path


@pytest.fixture
def shared_data() -> Path:
    return shared()
