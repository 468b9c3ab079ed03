"""How the loader names files and phrases its errors: for the command line and for the app.

A loader error is one line: where (file and line, or row), what is wrong, and the fix. The fix
differs by where it is read: the command line names the flag to change (``--id-field``), the app
names the picker (``Document id column``). Files are named as the user gave them (``Shown``): the
path as typed, or the name of the uploaded file; never a server path the user did not type.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError

#: How many ids or examples a note lists before "...".
NOTE_EXAMPLES = 10


@dataclass(frozen=True)
class Knob:
    """A setting a user changes to fix a load: its flag on the command line, its picker in the app."""

    flag: str
    picker: str
    #: What the column holds, e.g. "the document id".
    holds: str


#: The settings the loader's errors point to, by role.
KNOBS = {
    "id": Knob("--id-field", "Document id column", "the document id"),
    "title": Knob("--title-field", "Title column", "the title"),
    "text": Knob("--text-field", "Text columns", "the document text"),
    "query_id": Knob("--query-id-field", "Query id column", "the query id"),
    "query_text": Knob("--query-text-field", "Query text column", "the query text"),
}
#: The extra files beside a corpus: their flag and their uploader.
QUERIES_FILE = Knob("--queries", "Queries file", "the queries")
QRELS_FILE = Knob("--qrels-file", "Judgments file (qrels)", "the judgments")


def column_fix(role: str) -> tuple[str, str]:
    """(command-line fix, app fix) for a column that is missing or wrong."""
    knob = KNOBS[role]
    return (f"pass {knob.flag} with the column that holds {knob.holds}",
            f"pick the column that holds {knob.holds} as '{knob.picker}'")


def problem(where: str, what: str, fix: str | tuple[str, str]) -> SearchGradeError:
    """``where: what; fix``, with a second phrasing for the app when ``fix`` is a (cli, app) pair."""
    if isinstance(fix, tuple):
        cli, page = fix
        return SearchGradeError(f"{where}: {what}; {cli}", page=f"{where}: {what}; {page}")
    return SearchGradeError(f"{where}: {what}; {fix}")


@dataclass(frozen=True)
class Shown:
    """A file or folder the user gave, with the names messages use for it.

    Attributes:
        path: Where it is on disk.
        label: Its name in errors: the path as the user typed it, or the uploaded file's name.
        short: Its name in notes, which are stored with a run and shown later: the base name, or
            the uploaded file's name.
    """

    path: Path
    label: str
    short: str

    @classmethod
    def given(cls, path: str | Path, label: str | None = None) -> Shown:
        """A path as typed (``label`` None) or a saved upload named ``label``."""
        path = Path(path).expanduser()
        if label is None:
            return cls(path, str(path), path.name or str(path))
        return cls(path, label, label)

    def member(self, path: Path) -> Shown:
        """A file inside this folder, named relative to it: ``label/relative`` and ``relative``."""
        relative = path.relative_to(self.path).as_posix()
        return Shown(path, f"{self.label}/{relative}", relative)

    def line(self, number: int) -> str:
        return f"{self.label}:{number}"

    def row(self, number: int) -> str:
        return f"{self.label} row {number}"


def where_short(location: str) -> str:
    """``file:12`` -> ``line 12``; ``file row 3`` -> ``row 3`` (for "first at ..." parts)."""
    if " row " in location:
        return "row " + location.rpartition(" ")[2]
    return "line " + location.rpartition(":")[2]


def show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def show_names(names: Any) -> str:
    listed = [repr(str(n)) for n in names]
    if not listed:
        return "none"
    return ", ".join(listed[:NOTE_EXAMPLES]) + (", ..." if len(listed) > NOTE_EXAMPLES else "")


def examples(values: list[str]) -> str:
    shown = ", ".join(values[:NOTE_EXAMPLES])
    more = len(values) - NOTE_EXAMPLES
    return shown + (f", ... {more} more" if more > 0 else "")


def plural(count: int, singular: str, many: str | None = None) -> str:
    return f"{count:,} {singular if count == 1 else many or singular + 's'}"
