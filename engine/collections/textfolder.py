"""A folder of .txt / .md files as documents, walked within limits.

The id of a document is its path relative to the folder, with ``/`` separators. A ``.md`` file
whose first non-blank line is a level-1 heading (``# Title``) gets that heading as its title and
the rest as its text; any other file has an empty title and its whole (stripped) content as text.
Hidden files and folders are skipped; symlinked folders are not followed.

The walk stops with one line past ``FolderLimits``: a path of ``/`` must not read the whole disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from searchgrade.core.records import Document
from searchgrade.engine.collections.problems import Shown, examples, plural, problem
from searchgrade.engine.collections.readers import decode_whole

TEXT_SUFFIXES = (".txt", ".md")


@dataclass(frozen=True)
class FolderLimits:
    """How much a folder walk may see: files met (any kind) and bytes of .txt/.md read."""

    max_files: int = 100_000
    max_bytes: int = 2 * 1024**3

    @property
    def max_mb(self) -> int:
        return self.max_bytes // 1024**2


def check_inside(shown: Shown, path: Path, root: Path | None) -> None:
    """With a root (an exposed app's collections folder), ``path`` must resolve inside it.

    Raises:
        SearchGradeError: It resolves outside (a symlink out, or ``..``).
    """
    if root is None:
        return
    if not path.resolve().is_relative_to(root.resolve()):
        raise problem(shown.label, "points outside the collections folder (through a symlink or '..')",
                      "use a collection inside the collections folder")


def load_text_folder(shown: Shown, notes: list[str], limits: FolderLimits,
                     root: Path | None = None) -> list[Document]:
    """The folder's non-empty .txt/.md files as documents.

    Args:
        shown: The folder.
        notes: Receives a note for empty and ignored files.
        limits: The walk's limits.
        root: When set, every file read must resolve inside it (symlinks out are refused).

    Raises:
        SearchGradeError: Past a limit, a file outside ``root``, no text files, or all empty.
    """
    documents: list[Document] = []
    empty_ids: list[str] = []
    ignored: list[str] = []
    for file in _walk(shown, limits, root):
        relative = file.relative_to(shown.path).as_posix()
        if file.suffix.lower() not in TEXT_SUFFIXES:
            ignored.append(relative)
            continue
        content = decode_whole(shown.member(file))
        title, text = _split_markdown_title(content) if file.suffix.lower() == ".md" else ("", content.strip())
        if not title and not text:
            empty_ids.append(relative)
            continue
        documents.append(Document(relative, title, text))
    if not documents and not empty_ids:
        raise problem(shown.label, "folder has no corpus.jsonl and no .txt or .md files",
                      "point the path at a BEIR folder (corpus.jsonl, optional queries.jsonl and "
                      "qrels.tsv), a .jsonl, .csv, .tsv or .parquet file, or a folder of .txt/.md files")
    if not documents:
        raise problem(shown.label, f"all {len(empty_ids)} .txt/.md files are empty", "add text to them")
    if empty_ids:
        notes.append(f"{shown.short}: skipped {plural(len(empty_ids), 'empty file')} ({examples(empty_ids)})")
    if ignored:
        notes.append(f"{shown.short}: ignored {plural(len(ignored), 'file')} not ending in .txt or .md "
                     f"({examples(ignored)})")
    return documents


def _walk(shown: Shown, limits: FolderLimits, root: Path | None) -> list[Path]:
    """Every non-hidden file under the folder, sorted; stops past the limits."""
    files: list[Path] = []
    total = 0
    fix = ("point the path at the collection's own folder, or raise the limit with --max-files "
           "and --max-folder-mb",
           "point the path at the collection's own folder; larger folders load from the command line")
    for folder, subfolders, names in os.walk(shown.path, followlinks=False):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            file = Path(folder, name)
            if len(files) >= limits.max_files:
                raise problem(shown.label, f"more than {limits.max_files:,} files under this folder",
                              fix)
            if not file.is_file():
                continue  # a socket, a device, a broken link
            files.append(file)
            if file.suffix.lower() in TEXT_SUFFIXES:
                check_inside(shown.member(file), file, root)
                total += file.stat().st_size
                if total > limits.max_bytes:
                    raise problem(shown.label, f"more than {limits.max_mb:,} MB of .txt/.md files under "
                                  "this folder", fix)
    return sorted(files, key=lambda p: p.relative_to(shown.path).parts)


def _split_markdown_title(content: str) -> tuple[str, str]:
    """``("Title", rest)`` when the first non-blank line is ``# Title``, else ``("", content)``."""
    stripped = content.strip()
    first, _, rest = stripped.partition("\n")
    if first.startswith("# "):
        return first[2:].strip(), rest.strip()
    return "", stripped
