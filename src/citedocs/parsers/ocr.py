"""OCR of scanned PDFs and images with Tesseract (Debian's `tesseract-ocr`, `tesseract-ocr-jpn` for Japanese).

Each page is rendered by PDFium (pypdfium2) to a grayscale image at `dpi`, piped to the `tesseract` command
(no temporary files), and read back as TSV: words with their confidence, grouped into Tesseract's lines and
paragraphs. The document has the layout of a text PDF's (a `[page N]` line, then the page's text, page N on
every segment), so hits and citations carry page numbers as they would for the original. Tesseract runs with
one thread (OMP_THREAD_LIMIT=1): pages are OCRed one after another, and the machine stays usable meanwhile.
"""

from __future__ import annotations

import functools
import io
import os
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from citedocs.errors import ParseError
from citedocs.parsers._build import TextBuilder
from citedocs.parsers.base import ParsedDocument
from citedocs.parsers.budget import checkpoint
from citedocs.parsers.pdf import page_marker

if TYPE_CHECKING:
    import pypdfium2 as pdfium  # loaded on the first scanned PDF

INSTALL_HINT = (
    "Install Tesseract (`apt-get install tesseract-ocr`, and `tesseract-ocr-jpn` for Japanese; "
    "`brew install tesseract` on macOS), or OCR the file first (`ocrmypdf in.pdf out.pdf`)."
)
MAX_PIXELS = 40_000_000  # a page is rendered smaller rather than past this (an A4 page at 300 dpi is 8.7 M)


@dataclass(frozen=True, slots=True)
class OcrOptions:
    languages: str = "eng"  # Tesseract's -l: "eng", "jpn", "eng+jpn"
    dpi: int = 300
    page_seconds: float = 120.0
    max_pages: int = 500


@functools.cache
def tesseract_command() -> str | None:
    return shutil.which("tesseract")


@functools.cache
def _installed_languages(command: str) -> frozenset[str]:
    try:
        done = subprocess.run([command, "--list-langs"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    lines = done.stdout.decode("utf-8", "replace").splitlines()
    return frozenset(line.strip() for line in lines[1:] if line.strip())


def ocr_problem(options: OcrOptions) -> str | None:
    """Why OCR cannot run here (no tesseract, a language missing), or None."""
    command = tesseract_command()
    if command is None:
        return "Tesseract is not installed"
    missing = [lang for lang in options.languages.split("+") if lang not in _installed_languages(command)]
    if missing:
        packages = " ".join(f"tesseract-ocr-{lang}" for lang in missing)
        return f"Tesseract has no {'+'.join(missing)} language data (install {packages})"
    return None


def _require(options: OcrOptions, name: str, what: str) -> str:
    problem = ocr_problem(options)
    command = tesseract_command()
    if problem is not None or command is None:
        raise ParseError(f"{name}: {what}, and OCR cannot run: {problem}", INSTALL_HINT)
    return command


@dataclass(slots=True)
class PageText:
    lines: list[str]  # paragraphs apart by an empty line
    confidences: list[float]  # one per word


def read_tsv(tsv: str) -> PageText:
    """Tesseract's TSV (one row per word, level 5) as lines and paragraphs, with each word's confidence."""
    lines: list[str] = []
    confidences: list[float] = []
    words: list[str] = []
    current: tuple[str, str, str] | None = None
    paragraph: tuple[str, str] | None = None
    for row in tsv.splitlines()[1:]:
        fields = row.split("\t")
        if len(fields) < 12 or fields[0] != "5" or not fields[11].strip():
            continue
        key = (fields[2], fields[3], fields[4])  # block, paragraph, line
        if key != current:
            if words:
                lines.append(" ".join(words))
                words = []
            if paragraph is not None and key[:2] != paragraph and lines and lines[-1]:
                lines.append("")
            current, paragraph = key, key[:2]
        words.append(fields[11].strip())
        try:
            confidence = float(fields[10])
        except ValueError:
            continue
        if confidence >= 0:
            confidences.append(confidence)
    if words:
        lines.append(" ".join(words))
    return PageText(lines, confidences)


def _render(doc: pdfium.PdfDocument, index: int, dpi: int) -> bytes:
    """Page `index` as a binary PGM image (what Tesseract's image library reads from a pipe)."""
    page = doc[index]
    try:
        width, height = page.get_size()
        scale = dpi / 72
        if width * height * scale * scale > MAX_PIXELS:
            scale = (MAX_PIXELS / max(1.0, width * height)) ** 0.5
        bitmap = page.render(scale=scale, grayscale=True)
        try:
            pixels = bitmap.to_numpy()
            if pixels.ndim == 3:
                pixels = pixels[:, :, 0]
            rows, cols = pixels.shape
            return b"P5\n%d %d\n255\n" % (cols, rows) + bytes(pixels.tobytes())
        finally:
            bitmap.close()
    finally:
        page.close()


def ocr_image(command: str, image: bytes, options: OcrOptions, name: str) -> PageText:
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run(
            [command, "stdin", "stdout", "-l", options.languages, "--dpi", str(options.dpi), "tsv"],
            input=image,
            capture_output=True,
            timeout=options.page_seconds,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ParseError(
            f"{name}: OCR of one page took longer than {options.page_seconds:g} s; not indexed",
            "OCR the file yourself (`ocrmypdf in.pdf out.pdf`).",
        ) from exc
    except OSError as exc:
        raise ParseError(f"{name}: could not run tesseract ({exc.strerror or exc})", INSTALL_HINT) from exc
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise ParseError(f"{name}: tesseract failed ({detail[0][:200]})", INSTALL_HINT)
    return read_tsv(done.stdout.decode("utf-8", "replace"))


IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".bmp", ".gif"})
"""Indexed (by OCR) only when OCR is on: a folder of screenshots is not a list of failures otherwise."""


def _frames(data: bytes, name: str) -> list[bytes]:
    """Each frame (a TIFF's pages) as a grayscale PGM, refused before decoding when it is too many pixels."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():  # over MAX_PIXELS is refused below, with the reason
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        raise ParseError(
            f"{name}: {exc}", "Scale it down, or split it, and put that copy in the folder."
        ) from exc
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ParseError(
            f"{name}: not a readable image ({exc})", "Check that it opens in an image viewer."
        ) from exc
    frames: list[bytes] = []
    try:
        for index in range(getattr(image, "n_frames", 1)):
            checkpoint()
            image.seek(index)
            width, height = image.size
            if width * height > MAX_PIXELS:
                raise ParseError(
                    f"{name}: an image of {width}x{height} pixels, more than the {MAX_PIXELS // 1_000_000} M OCR reads",
                    "Scale it down, or split it, and put that copy in the folder.",
                )
            gray = image.convert("L")
            frames.append(b"P5\n%d %d\n255\n" % (width, height) + gray.tobytes())
    except (OSError, ValueError, EOFError) as exc:
        raise ParseError(
            f"{name}: not a readable image ({exc})", "Check that it opens in an image viewer."
        ) from exc
    finally:
        image.close()
    return frames


def ocr_image_file(data: bytes, name: str, options: OcrOptions) -> ParsedDocument:
    """The text of an image (each frame of a TIFF a page) by OCR. An image OCR would refuse is refused first,
    so installing Tesseract is not asked for in vain."""
    frames = _frames(data, name)
    command = _require(options, name, "an image")
    if len(frames) > options.max_pages:
        raise ParseError(
            f"{name}: {len(frames)} frames, more than {options.max_pages}",
            "OCR it yourself (`ocrmypdf in.pdf out.pdf`) and index the result.",
        )
    pages = [ocr_image(command, frame, options, name) for frame in frames]
    return _document("image", pages)


def _document(fmt: str, pages: list[PageText]) -> ParsedDocument:
    builder = TextBuilder()
    confidences: list[float] = []
    for number, page in enumerate(pages, start=1):
        confidences.extend(page.confidences)
        builder.add_unsegmented(page_marker(number))
        builder.add("\n".join(page.lines), (), page=number)
    text, segments = builder.finish()
    mean = sum(confidences) / len(confidences) if confidences else None
    return ParsedDocument(format=fmt, text=text, segments=segments, pages=len(pages), ocr_confidence=mean)


def ocr_pdf(data: bytes, name: str, options: OcrOptions) -> ParsedDocument:
    """The text of a scanned PDF by OCR, page by page; `ocr_confidence` is the mean word confidence."""
    import pypdfium2 as pdfium

    command = _require(options, name, "scanned PDF")
    try:
        doc = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise ParseError(
            f"{name}: not a readable PDF ({exc})", "Check that it opens in a PDF viewer."
        ) from exc
    pages: list[PageText] = []
    try:
        count = len(doc)
        if count > options.max_pages:
            raise ParseError(
                f"{name}: a scanned PDF of {count} pages, more than {options.max_pages}",
                "OCR it yourself (`ocrmypdf in.pdf out.pdf`).",
            )
        for index in range(count):
            checkpoint()
            pages.append(ocr_image(command, _render(doc, index, options.dpi), options, name))
    finally:
        doc.close()
    return _document("pdf", pages)
