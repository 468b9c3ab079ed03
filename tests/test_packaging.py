"""The distribution: one import name, with what the app and the demo need inside it, run from any folder.

The wheel check builds a wheel from a copy of this tree as a user would (`pip wheel .`, offline: no
build isolation, no dependencies), installs it non-editable into a fresh venv and, from an empty
folder, runs `searchgrade evaluate demo --qrels` and `searchgrade app` (its Evaluate page in
Chromium). The fresh venv gets this environment's dependencies (torch, streamlit, ...) through a .pth
of path lines, which do not run the .pth files of those folders: the checkout's editable finder is
off there, so `searchgrade` can only come from the wheel (the tests check where it came from).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import NamedTuple

import pytest

from searchgrade.engine.paths import DEMO_DIR
from searchgrade.engine.store import Store
from searchgrade.viewmodels.collection_form import SOURCES
from tests.browser.server import chromium, environment, serve_app

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: The repository's folders that install as searchgrade.<name> (with app.py, as searchgrade.app).
INSTALLED_TOPS = ("core", "cli", "server", "viewmodels", "engine", "indexes", "views", "demo")
#: Folders at the root that hold Python but are not installed (build/: what an in-tree build leaves).
NOT_INSTALLED = {"tests", "bench", "docs", "build"}
#: What a build from the checkout must not see: the VCS, venvs, data directories, build leftovers.
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", ".searchgrade", "build", "dist", "*.egg-info",
                                    "__pycache__", ".pytest_cache")
DEMO_DOCUMENTS = sum(1 for _ in (DEMO_DIR / "corpus.jsonl").open(encoding="utf-8"))


class Installed(NamedTuple):
    venv: Path
    site_packages: Path
    #: A copy of the tree the wheel was built from.
    source: Path
    wheel: Path


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)
    assert proc.returncode == 0, f"{command[:4]} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    """The wheel, built from a copy of the tree (an in-tree build writes build/ and an egg-info),
    installed non-editable into a fresh venv that sees this environment's dependencies."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
          "--quiet", ".", "-w", str(work / "dist")], cwd=source)
    [wheel] = (work / "dist").glob("searchgrade-*.whl")
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = str(venv / "bin" / "python")
    site_packages = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
                         .stdout.strip())
    # Installed before the .pth exists: pip then sees no searchgrade (the checkout's) to replace.
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "--quiet",
          str(wheel)])
    ours = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]
    (site_packages / "zz_test_environment.pth").write_text("".join(f"{p}\n" for p in ours))
    return Installed(venv, site_packages, source, wheel)


def _environment(home: Path, tmp_path: Path) -> dict[str, str]:
    # No PYTHONPATH (it would put the checkout on the path) and a HOME of its own (no user's
    # ~/.streamlit is read).
    env = environment(home, HOME=str(tmp_path))
    env.pop("PYTHONPATH")
    return env


def _empty_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


def _shown(page, locator) -> None:
    """Wait until ``locator`` shows, failing at once (with its text) if the page shows an exception."""
    exception = page.locator('[data-testid="stException"]')
    locator.or_(exception).first.wait_for()
    assert exception.count() == 0, exception.first.inner_text()


def test_pyproject_lists_exactly_the_package_folders():
    listed = PYPROJECT["tool"]["setuptools"]["packages"]
    folders = {"searchgrade"} | {
        ".".join(("searchgrade", *init.parent.relative_to(ROOT).parts))
        for top in INSTALLED_TOPS for init in (ROOT / top).rglob("__init__.py")}
    assert len(listed) == len(set(listed)), "pyproject.toml lists a package twice"
    assert {"missing from pyproject.toml's packages": sorted(folders - set(listed)),
            "listed with no __init__.py": sorted(set(listed) - folders)} == \
           {"missing from pyproject.toml's packages": [], "listed with no __init__.py": []}


def test_every_folder_of_python_under_the_installed_tops_is_a_package():
    # A folder of modules without an __init__.py would be left out of the wheel.
    bare = sorted(str(folder.relative_to(ROOT)) for top in INSTALLED_TOPS
                  for folder in {path.parent for path in (ROOT / top).rglob("*.py")}
                  if not (folder / "__init__.py").is_file())
    assert bare == []


def test_every_root_folder_of_python_is_installed_or_known_not_to_be():
    holding_python = {d.name for d in ROOT.iterdir()
                      if d.is_dir() and not d.name.startswith(".") and next(d.rglob("*.py"), None)}
    assert holding_python - NOT_INSTALLED == set(INSTALLED_TOPS)


@pytest.mark.slow
def test_the_wheel_holds_one_package_with_the_app_the_screens_the_prompts_and_the_demo(installed):
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = [n for n in wheel.namelist() if not n.endswith("/")]
    version = PYPROJECT["project"]["version"]
    assert {n.split("/")[0] for n in names} == {"searchgrade", f"searchgrade-{version}.dist-info"}
    shipped = {n.removeprefix("searchgrade/") for n in names if n.startswith("searchgrade/")}
    # Every file of the installed folders, .py or data (the demo with its vectors, the prompt
    # .txt files), and app.py; nothing else (no tests/, bench/, README, pyproject.toml).
    source = {str(p.relative_to(installed.source)) for top in INSTALLED_TOPS
              for p in (installed.source / top).rglob("*") if p.is_file()} | {"app.py"}
    assert {"views/evaluate.py", "engine/llm/prompts/judge_v1.txt",
            "demo/scifact/embeddings/sentence-transformers_all-MiniLM-L6-v2.npz"} <= source
    assert {"not shipped": sorted(source - shipped), "shipped, not in the tree": sorted(shipped - source)} == \
           {"not shipped": [], "shipped, not in the tree": []}


@pytest.mark.slow
def test_the_installed_package_evaluates_the_demo_from_an_empty_folder(installed, tmp_path):
    elsewhere, data = _empty_folder(tmp_path), tmp_path / "data"
    env = _environment(data, tmp_path)
    where = json.loads(_run([str(installed.venv / "bin" / "python"), "-c", (
        "import json; import searchgrade.engine as e; from searchgrade.cli.app import APP; "
        "from searchgrade.engine.paths import DEMO_DIR; from searchgrade.engine.llm.prompts import PROMPTS_DIR; "
        "print(json.dumps([e.__file__, str(APP), str(DEMO_DIR), str(PROMPTS_DIR)]))")],
        cwd=elsewhere, env=env).stdout)
    assert [Path(p).is_relative_to(installed.site_packages / "searchgrade") for p in where] == [True] * 4, where

    proc = _run([str(installed.venv / "bin" / "searchgrade"), "evaluate", "demo", "--qrels", "--max-queries", "20",
                 "--strategies", "fulltext,ann", "--data-dir", str(data)], cwd=elsewhere, env=env)
    # The demo's shipped vectors were found: nothing embedded, in a data directory that was empty.
    assert f"0 documents embedded, {DEMO_DOCUMENTS:,} from the cache" in proc.stdout + proc.stderr
    [run] = Store(data).list_runs()
    assert (run.status, run.error) == ("complete", None)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.slow
@pytest.mark.browser
def test_the_installed_app_offers_the_demo_on_its_evaluate_page(installed, tmp_path):
    elsewhere = _empty_folder(tmp_path)
    program = [str(installed.venv / "bin" / "searchgrade")]
    with serve_app(elsewhere, env=_environment(tmp_path / "data", tmp_path), program=program) as url, \
            chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(60_000)
        page.goto(url)
        _shown(page, page.get_by_role("button", name="Evaluate search quality"))
        # The demo, read from the installed copy, is the default collection.
        _shown(page, page.get_by_text(f"{DEMO_DOCUMENTS:,} documents"))
        assert page.get_by_role("radio", name=SOURCES[0]).is_checked()
        # Another screen, and a page link back (st.page_link resolves views/*.py beside app.py).
        page.get_by_role("link", name="Results").click()
        _shown(page, page.get_by_text("No runs yet"))
        _shown(page, page.get_by_role("link", name="Evaluate search quality"))
    log = (elsewhere / "app.log").read_text()
    assert "Traceback" not in log, log[-3000:]
