"""The documentation holds together: every relative link and anchor resolves, every path it names
exists, and the README's test command is the one CI runs.

Checked in README.md, docs/*.md, bench/RESULTS.md and the data folders' READMEs. A link is
``[text](target)`` or ``![alt](target)`` outside code; a web address is not followed. An anchor
must be the GitHub slug of a heading of the target file. A path is an inline code span that starts
with one of the repository's folders (``engine/run/pipeline.py``, ``indexes/declared/``): a file
or folder moved without its docs fails here, with the file and line that name it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), ROOT / "bench" / "RESULTS.md",
               ROOT / "demo" / "README.md", ROOT / "tests" / "data" / "README.md"])
#: Where paths named in the text must exist: the guides a reader follows (bench/RESULTS.md is a
#: dated record, whose paths are as they were when each figure was made).
GUIDES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FOLDERS = ("core", "engine", "indexes", "cli", "server", "views", "tests", "bench", "docs", "demo")

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
PATH = re.compile(rf"^(?:app\.py|(?:{'|'.join(FOLDERS)})/[\w./*-]*)$")


def without_fences(text: str) -> str:
    """The text with fenced code blocks blanked out (line numbers kept)."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: links reduced to their text, lowercased, every character
    but letters, digits, '_', '-' and spaces dropped, spaces turned into hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in ``path``; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for match in HEADING.finditer(without_fences(path.read_text(encoding="utf-8"))):
        base = slug(match.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link outside code in ``path``."""
    text = without_fences(path.read_text(encoding="utf-8"))
    text = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)
    return [(line_of(text, m.start()), m.group(1)) for m in LINK.finditer(text)]


def named_paths(path: Path) -> list[tuple[int, str]]:
    """(line, path) of every inline code span that names a file or folder of the repository."""
    text = without_fences(path.read_text(encoding="utf-8"))
    return [(line_of(text, m.start()), m.group(2).strip()) for m in CODE_SPAN.finditer(text)
            if PATH.match(m.group(2).strip())]


def broken_link(source: Path, target: str) -> str | None:
    """Why ``target`` (a link in ``source``) does not resolve, or None."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, https:, mailto:
        return None
    file_part, _, anchor = target.partition("#")
    resolved = (source.parent / file_part).resolve() if file_part else source
    if not resolved.exists():
        return f"{file_part} does not exist"
    if anchor:
        if resolved.suffix != ".md":
            return f"an anchor into {file_part}, which is not Markdown"
        if anchor not in anchors(resolved):
            return f"no heading of {file_part or 'this file'} has the anchor #{anchor}"
    return None


def missing_paths(doc: Path) -> list[tuple[int, str]]:
    """(line, path) of each repository path ``doc`` names that does not exist (a glob: matches nothing)."""
    return [(line, name) for line, name in named_paths(doc)
            if not (any(ROOT.glob(name)) if "*" in name else (ROOT / name).exists())]


def test_slugs_follow_githubs_rule(tmp_path):
    # A guard that cannot fail is no guard: the slug of a heading with code, punctuation and a
    # repeat, as GitHub makes it.
    assert slug("On Ray: `--ray` (a local Ray) or `--ray ADDRESS` (a cluster)") == \
        "on-ray---ray-a-local-ray-or---ray-address-a-cluster"
    assert slug("The judge's prompt is yours") == "the-judges-prompt-is-yours"
    assert slug("A judged collection of 100,000 documents") == "a-judged-collection-of-100000-documents"
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Speed\n\n```\n## not a heading\n```\n\n## Speed\n", encoding="utf-8")
    assert anchors(page) == {"title", "speed", "speed-1"}
    assert broken_link(page, "#speed-1") is None
    assert broken_link(page, "#not-a-heading") is not None
    assert broken_link(page, "missing.md") is not None
    page.write_text("`engine/run/pipeline.py`, `engine/no_such_module.py`, `tests/*/test_*.py`, `ray://`\n"
                    "```\n`engine/in_a_fence.py`\n```\n", encoding="utf-8")
    assert missing_paths(page) == [(1, "engine/no_such_module.py")]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(doc):
    broken = [f"{doc.relative_to(ROOT)}:{line}: ({target}) {why}" for line, target in links(doc)
              if (why := broken_link(doc, target))]
    assert broken == []


@pytest.mark.parametrize("doc", GUIDES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_the_guides_name_exists(doc):
    assert [f"{doc.relative_to(ROOT)}:{line}: `{name}`" for line, name in missing_paths(doc)] == []


def test_the_guides_link_to_one_another():
    # Every guide is reachable from the README, and the screenshot it shows is in the tree.
    readme = {target.partition("#")[0] for _, target in links(ROOT / "README.md")}
    guides = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert guides and guides <= readme
    assert "docs/images/results.png" in readme


def test_the_readme_test_command_is_the_one_ci_runs():
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd "))]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tests = readme[readme.index("\n## Tests\n"):]
    block = re.search(r"```bash\n(.*?)\n```", tests, re.DOTALL).group(1).strip()
    assert ci == ["./install.sh --test && .venv/bin/ruff check . && .venv/bin/python -m pytest"]
    assert block == ci[0]
