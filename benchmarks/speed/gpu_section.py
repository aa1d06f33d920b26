"""The GPU section of docs/BENCHMARKS.md: written by gpu_report.py (here), kept by speed.py's rewrite.

docs/BENCHMARKS.md is regenerated whole by `python benchmarks/speed/speed.py` (a CPU run); the GPU section
comes from another machine's run, so it lives between two markers and each writer replaces only its part.
"""

from __future__ import annotations

from pathlib import Path

START = "<!-- GPU section: written by benchmarks/speed/gpu_report.py; speed.py keeps it -->"
END = "<!-- end of GPU section -->"


def current(md_path: Path) -> str | None:
    """The GPU section in `md_path` (markers included), or None."""
    if not md_path.is_file():
        return None
    text = md_path.read_text(encoding="utf-8")
    if START not in text or END not in text:
        return None
    return text[text.index(START) : text.index(END) + len(END)]


def replace(md_path: Path, section_lines: list[str]) -> None:
    """Put `section_lines` between the markers in `md_path` (appended at the end if it has none)."""
    block = "\n".join([START, *section_lines, END])
    text = md_path.read_text(encoding="utf-8") if md_path.is_file() else ""
    if START in text and END in text:
        text = text[: text.index(START)] + block + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    md_path.write_text(text, encoding="utf-8")
