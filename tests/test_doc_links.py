"""Every relative link in README.md and docs/*.md leads somewhere: the file exists, and a `#anchor`
names a heading of the target as GitHub renders it (the slug of the heading's text)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # https:, mailto:, ...

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its rendered text, lower case, punctuation dropped, spaces → '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link or image shows its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())  # \w keeps letters of any script, digits, _
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """The anchors a Markdown file offers: its headings' slugs (repeats get -1, -2, ...) and <a name>s."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, text in HEADING.findall(FENCE.sub("", markdown)):
        base = slug(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found | set(HTML_ANCHOR.findall(markdown))


def relative_links(markdown: str) -> list[str]:
    """Link targets outside code blocks and code spans, other than web addresses."""
    prose = CODE_SPAN.sub("", FENCE.sub("", markdown))
    targets = INLINE_LINK.findall(prose) + REFERENCE_LINK.findall(prose)
    return [t for t in targets if not EXTERNAL.match(t)]


def broken_links(doc: Path) -> list[str]:
    """'target: why' for each relative link of `doc` that leads nowhere."""
    broken = []
    for target in relative_links(doc.read_text(encoding="utf-8")):
        path_part, _, anchor = target.partition("#")
        path = (doc.parent / path_part).resolve() if path_part else doc
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading with that anchor in {path.name}")
    return broken


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_lead_somewhere(doc: Path) -> None:
    assert not broken_links(doc), f"{doc.relative_to(REPO)}: " + "; ".join(broken_links(doc))


def test_slugs_follow_github() -> None:
    """Slugs by github-slugger's rules (what github.com uses), on headings of the kinds these docs have."""
    assert (
        slug("LWAP on an already-trained sentence encoder") == "lwap-on-an-already-trained-sentence-encoder"
    )
    assert slug("minilm-l6-mlm: Unsupervised SimCSE (Wikipedia sentences)") == (
        "minilm-l6-mlm-unsupervised-simcse-wikipedia-sentences"
    )
    assert slug("Evaluation: `lwap eval`") == "evaluation-lwap-eval"
    assert slug("Faults — nothing lost") == "faults--nothing-lost"
    assert slug("The speed levers of `lwap train` (the `+ levers` rows)") == (
        "the-speed-levers-of-lwap-train-the--levers-rows"
    )
    assert slug("Baselines (packaged all-MiniLM-L6-v2, no training)") == (
        "baselines-packaged-all-minilm-l6-v2-no-training"
    )
    assert anchors("# A\n## A\n```\n# not a heading\n```\n## A") == {"a", "a-1", "a-2"}


def test_a_broken_link_is_reported(tmp_path: Path) -> None:
    """The check can fail: a missing file, a missing anchor, and links it must leave alone."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "B.md").write_text("# Real heading\n", encoding="utf-8")
    doc = tmp_path / "README.md"
    doc.write_text(
        "# Top\n[ok](docs/B.md#real-heading) [self](#top) [web](https://example.com/x.md)\n"
        "[gone](docs/C.md) [bad anchor](docs/B.md#no-such) `[code](nowhere.md)`\n"
        "```\n[fenced](nowhere.md)\n```\n[ref]: docs/missing.png\n",
        encoding="utf-8",
    )
    assert broken_links(doc) == [
        "docs/C.md: no such file",
        "docs/B.md#no-such: no heading with that anchor in B.md",
        "docs/missing.png: no such file",
    ]


def test_readme_stays_a_five_minute_read() -> None:
    """README is what lwap is, install, the quick start and a few lines per command (issue 22): 200
    lines at most; reference material belongs in docs/."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move reference material to docs/"
