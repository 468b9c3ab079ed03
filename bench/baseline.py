"""A commit of this repository as a bench's "before" side, run from git, never copied into the tree.

A bench that compares this tree with an earlier one checks the earlier commit out of git into a
temporary folder (``git archive``, so the repository's worktrees and index are left alone) and runs
its code in a child process with that checkout first on ``sys.path``. Older trees import ``engine``,
``core`` and ``indexes`` at the top level (before the package layout); newer ones are the package
``searchgrade`` (pyproject maps ``searchgrade`` to the repository's root). ``Tree`` says how to
import and start either, so a bench runs both sides the same way:

    with checkout("090b02f") as old:
        subprocess.run([*old.cli(), "evaluate", "demo", ...], env=old.env())

``this_tree()`` is the working tree (uncommitted changes included), run the same way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "searchgrade"
#: The first statement of every child: only the side's code is importable. An editable install of
#: searchgrade (this venv's) would otherwise add its own tree to the namespace package, and the
#: current folder ('' on sys.path for ``python -c``) could shadow a top-level ``engine``.
ISOLATE = ("import sys; "
           "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in getattr(f, '__module__', '') "
           "or 'searchgrade' not in getattr(f, '__module__', '')]; "
           "sys.path[:] = [p for p in sys.path if p and not (p.startswith('__editable__') and 'searchgrade' in p)]")


@dataclass(frozen=True)
class Tree:
    """One side of a comparison: a tree's files and how to import its code.

    Attributes:
        root: the tree's files (its pyproject.toml, engine/, demo/, ...).
        import_root: what goes first on ``sys.path`` (``PYTHONPATH``) to import that tree's code.
        prefix: the import prefix of its modules: ``"searchgrade."`` or ``""`` (the top-level layout).
        cli_module: the module whose ``main()`` is the ``searchgrade`` command, e.g. ``searchgrade.cli``.
        label: the commit (short hash) or ``"this tree"``.
    """

    root: Path
    import_root: Path
    prefix: str
    cli_module: str
    label: str

    def module(self, name: str) -> str:
        """The import name of ``name`` (``viewmodels.results``) in this tree."""
        return self.prefix + name

    def cli(self) -> list[str]:
        """The argv prefix that runs this tree's ``searchgrade`` command (arguments follow)."""
        return [sys.executable, "-c", f"{ISOLATE}; from {self.cli_module} import main; sys.exit(main())"]

    def script(self, path: Path) -> list[str]:
        """The argv prefix that runs the bench script ``path`` (this tree's bench/) over this side's code;
        the script's own folder is last on the path, for its helpers (machine.py)."""
        return [sys.executable, "-c", f"{ISOLATE}; import runpy; sys.path.append({str(path.parent)!r}); "
                f"sys.argv[0] = {str(path)!r}; runpy.run_path({str(path)!r}, run_name='__main__')"]

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a child process running this tree's code (this tree first on the path)."""
        return {**(os.environ if base is None else base), "PYTHONPATH": str(self.import_root)}


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, check=False)


def resolve(commit: str) -> str:
    """The full hash of ``commit`` (any name git knows), or SystemExit with one line and the fix."""
    done = git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    if done.returncode != 0:
        raise SystemExit(f"bench: {commit!r} is not a commit of {ROOT}: "
                         "pass a hash or a branch name that `git log` shows")
    return done.stdout.decode().strip()


def _layout(files: Path, label: str, package_root: Path) -> Tree:
    """How to import the tree at ``files``; ``package_root`` holds ``files`` under the name searchgrade."""
    try:
        project = tomllib.loads((files / "pyproject.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SystemExit(f"bench: cannot read {label}'s pyproject.toml ({exc}): "
                         "pick a commit that has one") from None
    script = project.get("project", {}).get("scripts", {}).get(PACKAGE, "")
    cli = script.partition(":")[0]
    if not cli:
        raise SystemExit(f"bench: {label}'s pyproject.toml declares no `{PACKAGE}` command: "
                         "pick a commit that has one")
    package_dir = project.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    if package_dir.get(PACKAGE) == ".":  # the repository root is the package
        return Tree(files, package_root, f"{PACKAGE}.", cli, label)
    return Tree(files, files, "", cli, label)


@contextmanager
def checkout(commit: str, paths: tuple[str, ...] = ()) -> Iterator[Tree]:
    """The files of ``commit`` (only ``paths`` and pyproject.toml, if given) in a temporary folder,
    removed afterwards.

    The files are unpacked as ``<tmp>/searchgrade/``, so a tree of the package layout is imported
    as ``searchgrade`` from ``<tmp>`` and an older one from the folder itself.
    """
    full = resolve(commit)
    work = Path(tempfile.mkdtemp(prefix=f"bench-baseline-{full[:7]}-"))
    try:
        files = work / PACKAGE
        archive = work / "tree.tar"
        members = ("pyproject.toml", *paths) if paths else ()
        with open(archive, "wb") as out:
            done = subprocess.run(["git", "-C", str(ROOT), "archive", full, *members], stdout=out,
                                  stderr=subprocess.PIPE, check=False)
        if done.returncode != 0:
            raise SystemExit(f"bench: git archive of {full[:7]} failed: {done.stderr.decode().strip()}")
        with tarfile.open(archive) as tar:
            tar.extractall(files, filter="data")
        archive.unlink()
        yield _layout(files, full[:7], work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextmanager
def this_tree() -> Iterator[Tree]:
    """The working tree, imported as ``searchgrade`` through a temporary link (whatever venv runs it)."""
    work = Path(tempfile.mkdtemp(prefix="bench-this-"))
    try:
        (work / PACKAGE).symlink_to(ROOT, target_is_directory=True)
        tree = _layout(ROOT, "this tree", work)
        if not tree.prefix:
            raise SystemExit(f"bench: {ROOT} is not the package layout (pyproject maps no "
                             f"`{PACKAGE}` = \".\"); run the bench of the tree you mean to measure")
        yield tree
    finally:
        shutil.rmtree(work, ignore_errors=True)


def commit_of_this_tree() -> str:
    """HEAD's short hash, with ``+changes`` when the working tree differs from it."""
    head = git("rev-parse", "--short", "HEAD").stdout.decode().strip() or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    return head + ("+changes" if dirty else "")
