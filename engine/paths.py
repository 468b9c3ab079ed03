"""Where things live: the data directory and the bundled demo collection."""

from __future__ import annotations

import os
from pathlib import Path

ENV_HOME = "SEARCHGRADE_HOME"
#: The folder an app reads collections by path from (`searchgrade app --collections-root`).
ENV_COLLECTIONS_ROOT = "SEARCHGRADE_COLLECTIONS_ROOT"
DEFAULT_DIRNAME = ".searchgrade"

def _demo_dir() -> Path:
    # Found through the package (searchgrade.demo), so an installed wheel finds its own copy.
    import searchgrade.demo

    return Path(searchgrade.demo.__file__).resolve().parent / "scifact"


#: The demo collection shipped with the package (a copy of BEIR SciFact, see demo/README.md).
DEMO_DIR = _demo_dir()
DEMO_NAME = "demo"


def data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """--data-dir if given, else $SEARCHGRADE_HOME, else .searchgrade/ in the working directory."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(ENV_HOME)
    if env:
        return Path(env).expanduser()
    return Path.cwd() / DEFAULT_DIRNAME


def resolve_collection(path_or_name: str | os.PathLike[str]) -> Path:
    """A collection path, with the name 'demo' standing for the bundled demo."""
    if str(path_or_name) == DEMO_NAME:
        return DEMO_DIR
    return Path(path_or_name).expanduser()


def collections_root(environ: dict[str, str] | None = None) -> Path | None:
    """The folder the app may read collections by path from ($SEARCHGRADE_COLLECTIONS_ROOT), or None."""
    value = (os.environ if environ is None else environ).get(ENV_COLLECTIONS_ROOT, "").strip()
    return Path(value).expanduser() if value else None
