"""Text extraction for OCR jobs: a PDF's text layer (pypdf), plain text as is.

Scanned PDFs without a text layer produce empty text; a real OCR engine would plug in here.
"""

from __future__ import annotations

import io


class ExtractionFailed(Exception):
    """The file cannot be read as the type it claims (a business failure)."""


def extract_text(data: bytes, content_type: str, name: str) -> str:
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/pdf" or name.lower().endswith(".pdf"):
        return _pdf_text(data)
    if kind.startswith("text/") or name.lower().endswith((".txt", ".csv")):
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ExtractionFailed("the text file is not UTF-8") from None
    raise ExtractionFailed(f"cannot extract text from content type {kind!r}")


def _pdf_text(data: bytes) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError) as exc:
        raise ExtractionFailed(f"not a readable PDF ({type(exc).__name__})") from None
    return "\n".join(text.strip() for text in pages).strip()
