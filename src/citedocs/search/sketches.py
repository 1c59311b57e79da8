"""A passage's index terms as a 1,024-bit sketch, kept with the keyword index: the duplicate filter's screen.

The filter (search/distinct.py) must not analyse the content terms of every passage it returns (0.1-0.2 ms
each), so it first screens out passages whose words could not make them a repeat of a kept one. Taking a
passage's plain words from its text cost 0.05 ms a passage, half of a cold SciFact search's filter; the
keyword index has already analysed every passage, so it keeps each one's terms as set bits (a term's CRC-32,
the same bit in every segment and process) and the screen compares two passages in two integer operations.
Bits of different terms may coincide, which mostly adds to what two sketches share (the screen lets more pairs
through to the exact rule); the screen's bound is measured, not proven (bench/studies/distinct_screen.py).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import numpy as np

__all__ = [
    "SKETCH_BITS",
    "SKETCH_WORDS",
    "as_ints",
    "empty_sketches",
    "row_sketches",
    "sketch_of_terms",
    "term_bits",
]

SKETCH_BITS = 1024  # 128 bytes a passage; a SciFact passage holds ~120 distinct terms, 11% of the bits
SKETCH_WORDS = SKETCH_BITS // 64


def term_bits(terms: Iterable[str]) -> np.ndarray:
    """Each term's bit (int64), from its UTF-8 bytes' CRC-32: stable across segments, processes and saves."""
    return np.fromiter(
        (zlib.crc32(t.encode("utf-8", "surrogatepass")) % SKETCH_BITS for t in terms), dtype=np.int64
    )


def empty_sketches(rows: int = 0) -> np.ndarray:
    return np.zeros((rows, SKETCH_WORDS), dtype="<u8")


def row_sketches(rows: int, posting_rows: np.ndarray, posting_bits: np.ndarray) -> np.ndarray:
    """(rows, SKETCH_WORDS) uint64: row r has the bit of each term it holds (postings as parallel arrays, rows
    ascending). Set as booleans a block of rows at a time and packed: `np.bitwise_or.at` took 1.3 s at 10x;
    this takes 0.05 s there and 0.4 s at 100x (110 terms a row)."""
    sketches = empty_sketches(rows)
    bytes_view = sketches.view(np.uint8)  # little-endian words: bit b of the row is bit b % 8 of byte b // 8
    block = 4096
    # the blocks' bounds at once, in the postings' own dtype (int64 bounds made numpy convert all 60M int32
    # postings of SciFact 100x for each search: 12 s of a 60 s build)
    starts = np.arange(0, rows + block, block).astype(posting_rows.dtype)
    bounds = np.searchsorted(posting_rows, starts).tolist()
    for i, start in enumerate(range(0, rows, block)):
        stop = min(rows, start + block)
        lo, hi = bounds[i], bounds[i + 1]
        flags = np.zeros((stop - start, SKETCH_BITS), dtype=np.bool_)
        flags[posting_rows[lo:hi] - start, posting_bits[lo:hi]] = True
        bytes_view[start:stop] = np.packbits(flags, axis=1, bitorder="little")
    return sketches


def sketch_of_terms(terms: Iterable[str]) -> int:
    """The sketch of these terms as one integer (what `as_ints` gives for a row built from them)."""
    out = 0
    for bit in term_bits(terms).tolist():
        out |= 1 << bit
    return out


def as_ints(rows: np.ndarray) -> list[int]:
    """Each row's sketch as one Python integer (bit i of word w is bit 64·w + i): `&` and `bit_count` compare
    two in well under a microsecond."""
    raw = rows.astype("<u8", copy=False).tobytes()
    size = SKETCH_WORDS * 8
    return [int.from_bytes(raw[at : at + size], "little") for at in range(0, len(raw), size)]
