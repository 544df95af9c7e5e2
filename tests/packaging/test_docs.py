"""The repository stands alone: no file points outside it, and the documentation's links and anchors resolve."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = re.compile(r"\.\./shared|" + "/wo" + "rk/")
"""A sibling checkout's specs or a machine path; spelled in pieces so that this file does not match it."""
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def tracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    return [name for name in listed.stdout.split("\0") if name]


def test_no_tracked_file_points_outside_the_repository() -> None:
    offending: set[str] = set()
    for name in tracked_files():
        try:
            text = (ROOT / name).read_text()
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        if OUTSIDE.search(text):
            offending.add(name)
    assert offending == set(), "these files refer to paths outside the repository"


def anchors(markdown: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#{1,6} +(.+?) *$", FENCE.sub("", markdown.read_text()), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_of_the_documentation_resolves(doc: Path) -> None:
    for target in LINK.findall(FENCE.sub("", doc.read_text())):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (doc.parent / path).resolve() if path else doc
        assert linked.is_file(), f"{target}: no such file"
        if anchor:
            assert anchor in anchors(linked), f"{target}: no heading with that id in {linked.relative_to(ROOT)}"
