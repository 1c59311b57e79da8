"""numpy's BLAS on one thread, as measured, and before numpy loads where citedocs owns the process.

Query-time scoring is faster on one BLAS thread (search/vectors.py: 0.8 ms against 17-30 ms with OpenBLAS's
default two on 2 cores), and nothing citedocs computes gains from more. Asked for before numpy loads, one thread
also spares the worker thread OpenBLAS starts at load, which spins ~0.1 s of CPU: a one-off `citedocs search`
used 0.26 s of CPU with it and 0.14 s without, in the same wall time (docs/performance.md, seventh session).
"""

from __future__ import annotations

import os

__all__ = ["BLAS_ENV", "child_environment", "one_thread_from_the_start"]

BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_SET = "OPENBLAS_NUM_THREADS"
_set_here = False


def one_thread_from_the_start() -> None:
    """At a command's entry point, before numpy is imported: one OpenBLAS thread, unless the user chose."""
    global _set_here
    if not any(os.environ.get(name) for name in BLAS_ENV):
        os.environ[_SET] = "1"
        _set_here = True


def child_environment() -> dict[str, str] | None:
    """The environment for a program citedocs starts with threads of its own (llama-server): the user's,
    without the setting made for this process; None (inherit it as it is) when none was made."""
    if not _set_here:
        return None
    return {name: value for name, value in os.environ.items() if name != _SET}
