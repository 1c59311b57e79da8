"""Build the binary samples (release-notes.pdf, operations-guide.docx) of examples/sample-docs.

Dev-time only, rerun by hand: `python examples/make_samples.py`. Needs python-docx and fpdf2
(`pip install fpdf2`), which citedocs itself does not use. The generated files are committed.
"""

from __future__ import annotations

from pathlib import Path

import docx
from fpdf import FPDF

OUT = Path(__file__).resolve().parent / "sample-docs"

# (outline level, heading, paragraphs); each level-0 entry starts a new page.
RELEASE_NOTES: list[tuple[int, str, list[str]]] = [
    (
        0,
        "Lumen release notes",
        [
            "This document lists the changes in each Lumen release, newest first. Lumen is a fictional "
            "log collector used as sample data for citedocs. Dates are release dates (UTC).",
        ],
    ),
    (0, "Lumen 2.4", []),
    (
        1,
        "2.4.1 (18 March 2024)",
        [
            "Fixed: lumend could crash with LUM-317 (index corrupted) when retention cleanup ran at 03:00 "
            "while a batch of more than 2048 lines was being written. Upgrade if you ingest large batches.",
            "Fixed: lumen query --format jsonl no longer buffers the whole answer before printing.",
            "Changed: the default --timeout of the CLI went from 10 to 30 seconds.",
        ],
    ),
    (
        1,
        "2.4.0 (27 February 2024)",
        [
            "New: an optional web viewer, served by lumend at http://127.0.0.1:7420/ui when "
            "web_viewer = true is set in the [server] section. The viewer is MIT licensed.",
            "New: lumen compact reclaims disk space from deleted lines without stopping the daemon.",
            "New: the metrics endpoint on port 9464 reports lumen_ingest_lines_total and "
            "lumen_query_seconds.",
        ],
    ),
    (0, "Lumen 2.3", []),
    (
        1,
        "2.3.2 (9 November 2023)",
        [
            "Fixed: tokens created with --ttl longer than 365d were rejected with LUM-402 right away.",
            "Security: the HTTP API now refuses requests whose Host header is not the bind address or "
            "localhost, which blocks DNS rebinding attacks against a local daemon.",
        ],
    ),
    (
        1,
        "2.3.0 (4 September 2023)",
        [
            "Breaking: remote requests need a bearer token. Create one with lumen token create --ttl 30d "
            "and pass it to the agents. Local requests from 127.0.0.1 stay trusted by default.",
            "New: token scopes read, ingest and admin.",
        ],
    ),
    (0, "Lumen 2.0 to 2.2", []),
    (
        1,
        "2.2.0 (12 July 2023)",
        [
            "Breaking: unknown keys in lumen.toml now stop the daemon with LUM-130 instead of being ignored.",
            "New: zstd compression of index segments, on by default; indexes shrink by about 60 percent.",
        ],
    ),
    (
        1,
        "2.0.0 (2 May 2023)",
        [
            "First release of the 2.x line: a new on-disk index format (run lumen repair --reindex once "
            "after upgrading from 1.x), gRPC ingest on port 7421, and the lumen doctor command.",
            "Removed: the 1.x UDP ingest on port 5140.",
        ],
    ),
]


def build_pdf(path: Path) -> None:
    pdf = FPDF(format="A4")
    pdf.set_title("Lumen release notes")
    pdf.set_author("Lumen example project")
    pdf.set_auto_page_break(auto=True, margin=20)
    for level, heading, paragraphs in RELEASE_NOTES:
        if level == 0:
            pdf.add_page()
        pdf.set_font("Helvetica", "B", 18 if level == 0 else 14)
        pdf.start_section(heading, level=level)
        pdf.multi_cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 11)
        for paragraph in paragraphs:
            pdf.multi_cell(0, 6, paragraph, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
    pdf.output(str(path))


PORTS = [
    ("Port", "Protocol", "Used by", "Open to other hosts?"),
    ("7420", "HTTP", "API, web viewer, lumen CLI", "only with a token"),
    ("7421", "gRPC", "agents sending logs", "yes, when bind = 0.0.0.0"),
    ("9464", "HTTP", "Prometheus metrics", "no, scrape locally"),
]


def build_docx(path: Path) -> None:
    document = docx.Document()
    document.core_properties.title = "Lumen operations guide"
    document.add_heading("Lumen operations guide", level=0)
    document.add_paragraph(
        "This guide is for the people who run lumend in production: ports, backups, upgrades and "
        "capacity. It applies to Lumen 2.4.1. Lumen is a fictional product used as citedocs sample data."
    )
    document.add_heading("Network", level=1)
    document.add_paragraph("lumend listens on three ports. Open only what your agents need.")
    table = document.add_table(rows=0, cols=4)
    for row in PORTS:
        cells = table.add_row().cells
        for cell, value in zip(cells, row, strict=True):
            cell.text = value
    document.add_heading("Backups", level=1)
    document.add_heading("Snapshot backups", level=2)
    document.add_paragraph(
        "Run lumen backup --to /mnt/backup/lumen-$(date +%F) every night. The command pauses writes for "
        "under two seconds while it freezes the current segment, so agents do not notice. Keep at least "
        "7 daily snapshots."
    )
    document.add_heading("Restoring", level=2)
    document.add_paragraph(
        "Stop the daemon, run lumen restore --from /mnt/backup/lumen-2024-03-18, then start it again. "
        "A restore of 50 GB takes about 6 minutes on an SSD."
    )
    document.add_heading("Upgrades", level=1)
    document.add_paragraph(
        "Upgrades inside the 2.x line need no migration. When upgrading from 1.x, run "
        "lumen repair --reindex once; the daemon refuses to start on a 1.x index and logs LUM-317."
    )
    document.add_heading("Capacity planning", level=1)
    document.add_paragraph(
        "Budget 1 GB of disk per 10 million lines with zstd compression, and 1 CPU core per 12 000 lines "
        "per second of ingest. Memory stays under 512 MB for indexes up to 200 GB."
    )
    document.save(str(path))


if __name__ == "__main__":
    build_pdf(OUT / "release-notes.pdf")
    build_docx(OUT / "operations-guide.docx")
    print(f"wrote {OUT / 'release-notes.pdf'} and {OUT / 'operations-guide.docx'}")
