"""A log or events file as the importers see it: its format, its columns, and which column plays
which role (the query text, the time, the user, ...), guessed from the usual names or named.

Pure: ``resolve_columns`` takes the column paths a file has (read by the store: engine/store/traffic.py)
and returns the roles, or raises one line naming the file, what is missing and the flag to fix it.
A column path is a tuple: ``("user_query",)`` for a flat column, ``("event_attributes", "object",
"object_id")`` for a field nested in a JSON object or a Parquet struct.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from searchgrade.core.records import SearchGradeError

#: File formats by extension (compressed CSV and JSON are read as they are).
EXTENSIONS = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".jsonl": "json", ".ndjson": "json",
              ".json": "json", ".parquet": "parquet", ".pq": "parquet"}
FORMATS = ("auto", "csv", "json", "parquet")

Path_ = tuple[str, ...]


@dataclass(frozen=True)
class FileSpec:
    """A file to read with DuckDB: where, its format, and its top-level column names in order."""

    path: Path
    fmt: str
    names: tuple[str, ...]
    #: Nested field paths found in the first rows (JSON objects, Parquet structs), beside the names.
    nested: tuple[Path_, ...] = ()

    @property
    def paths(self) -> list[Path_]:
        return [(n,) for n in self.names] + list(self.nested)


@dataclass(frozen=True)
class Roles:
    """Role -> the column path that plays it (absent: the file has none)."""

    columns: dict[str, Path_] = field(default_factory=dict)

    def get(self, role: str) -> Path_ | None:
        return self.columns.get(role)

    def shown(self) -> dict[str, str]:
        """Role -> column as a user names it (``event_attributes.object.object_id``)."""
        return {role: ".".join(path) for role, path in self.columns.items()}


def file_format(path: Path, fmt: str = "auto") -> str:
    """The format of ``path``: given, or from its extension (``log.csv.gz`` is CSV)."""
    if fmt not in FORMATS:
        raise SearchGradeError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    if fmt != "auto":
        return fmt
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in (".gz", ".zst"):
        suffixes.pop()
    found = EXTENSIONS.get(suffixes[-1]) if suffixes else None
    if found is None:
        raise SearchGradeError(f"{path}: cannot tell the format from the name; give a .csv, .tsv, .jsonl "
                               "or .parquet file, or say it with --format csv|json|parquet")
    return found


def check_readable(path: Path) -> None:
    if not path.is_file():
        raise SearchGradeError(f"{path}: no such file; check the path")
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as exc:
        raise SearchGradeError(f"cannot read {path}: {exc.strerror}; check the path and its permissions") from None


def _key(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def find(paths: Sequence[Path_], candidates: Sequence[str | Path_]) -> Path_ | None:
    """The first candidate the file has: a name matched case- and punctuation-insensitively
    against the last part of a flat column, or a nested path matched exactly."""
    flat = {_key(p[0]): p for p in paths if len(p) == 1}
    nested = {tuple(_key(part) for part in p): p for p in paths if len(p) > 1}
    for candidate in candidates:
        if isinstance(candidate, tuple):
            hit = nested.get(tuple(_key(part) for part in candidate))
        else:
            hit = flat.get(_key(candidate))
        if hit is not None:
            return hit
    return None


def named(paths: Sequence[Path_], name: str, flag: str, where: Path) -> Path_:
    """The column a user named (``a.b.c`` for a nested field), or one line saying which exist."""
    wanted = tuple(part.strip() for part in name.split("."))
    for p in paths:
        if tuple(x.lower() for x in p) == tuple(x.lower() for x in wanted):
            return p
    raise SearchGradeError(f"{where}: {flag} {name!r} is not a column of the file (columns: "
                           f"{', '.join('.'.join(p) for p in paths[:20]) or 'none'}); check the spelling")


def resolve_columns(spec: FileSpec, guesses: Mapping[str, Sequence[str | Path_]],
                    given: Mapping[str, str | None], flags: Mapping[str, str],
                    required: Sequence[str]) -> Roles:
    """Each role's column: the one given (``''`` means none), else the first guess the file has.

    Raises:
        SearchGradeError: a required role has no column, or a given column is not in the file.
    """
    paths = spec.paths
    columns: dict[str, Path_] = {}
    for role, candidates in guesses.items():
        choice = given.get(role)
        if choice == "":
            continue
        hit = named(paths, choice, flags[role], spec.path) if choice else find(paths, candidates)
        if hit is not None:
            columns[role] = hit
    for role in required:
        if role not in columns:
            looked = ", ".join(c if isinstance(c, str) else ".".join(c) for c in guesses[role])
            raise SearchGradeError(
                f"{spec.path}: no {role.replace('_', ' ')} column (columns: "
                f"{', '.join('.'.join(p) for p in paths[:20]) or 'none'}; looked for {looked}); "
                f"name it with {flags[role]}")
    return Roles(columns)
