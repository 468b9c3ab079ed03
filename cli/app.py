"""`searchgrade app`: start the dashboard (Streamlit).

The command checks what it can before starting (an exposed address needs a login: server/auth.py),
then replaces itself with the Streamlit server (exec), so that the process a supervisor, a
container or `kill` sees is the server itself, and its signals reach it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from searchgrade.cli.options import add_common, add_strategies_file
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.paths import ENV_COLLECTIONS_ROOT, data_dir
from searchgrade.server import auth
from searchgrade.server.deploy import is_exposed


def _script(module: str) -> Path:
    # Found through the package (not imported: Streamlit runs it), so an installed wheel runs its
    # own copy, from any folder.
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise SearchGradeError(f"the app's script ({module}) is not installed; reinstall searchgrade")
    return Path(spec.origin).resolve()


#: The Streamlit entry point (app.py, the module searchgrade.app).
APP = _script("searchgrade.app")
#: What `streamlit run` is given: app.py behind the access gate (views/_serve.py, an st.App).
SERVE = _script("searchgrade.views._serve")
#: Streamlit's own default for server.maxUploadSize.
DEFAULT_MAX_UPLOAD_MB = 200


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("app", help="start the dashboard (Streamlit)")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default: 127.0.0.1, this machine only); any other address "
                   f"needs a login: ${auth.ENV_PASSWORD} or st.login in .streamlit/secrets.toml")
    p.add_argument("--no-auth", action="store_true",
                   help="serve an exposed app (--host other than loopback) with no login: anyone who "
                   "reaches the port can use it, its data and its LLM endpoint")
    p.add_argument("--max-upload-mb", type=int, default=DEFAULT_MAX_UPLOAD_MB,
                   help=f"largest file the browser may upload (default: {DEFAULT_MAX_UPLOAD_MB}); a zip may "
                   "unpack to ten times that")
    p.add_argument("--collections-root", metavar="DIR",
                   help="read collections by path only inside DIR (links out of it refused); without it, "
                   "an app bound beyond loopback reads no path at all")
    p.add_argument("--worker", action="store_true",
                   help="also run `searchgrade worker` beside the app (scheduled suites), stopping with it")
    add_strategies_file(p)
    add_common(p)
    p.set_defaults(handler=cmd_app)


def streamlit_command(args: argparse.Namespace) -> list[str]:
    exposed = is_exposed(args.host)
    # Where st.login's secrets are read: as for app.py (the entry's own folder is views/).
    secrets = [part for path in auth.secrets_files(APP.parent) for part in ("--secrets.files", str(path))]
    return [sys.executable, "-m", "streamlit", "run", str(SERVE), "--server.port", str(args.port),
            "--server.address", args.host, "--server.headless", "true",
            "--server.maxUploadSize", str(args.max_upload_mb), *secrets,
            # The agent API drives the app without a browser (and without the login); it is off by
            # default, and off here whatever a config file says. The gate refuses it too.
            "--server.enableAgentApi", "false",
            # A traceback names server paths: an exposed app shows an error's type, never its text.
            "--client.showErrorDetails", "type" if exposed else "full",
            # Streamlit would otherwise watch every module file under the app's folder,
            # .venv included (torch and all): polling thousands of files slows a run ~4x.
            "--server.fileWatcherType", "none",
            # Streamlit runs a full garbage collection after every script run, and the pages
            # that show a run live rerun every second or two: with torch loaded that holds the GIL
            # long enough to slow the run in the background several times (measured: a tiny
            # collection's index stage past 190 s with the Evaluate page open, 33 s without).
            "--runner.postScriptGC", "false",
            # No Deploy button and developer menu (as .streamlit/config.toml says in a checkout;
            # an installed wheel has no config beside the app).
            "--client.toolbarMode", "minimal",
            "--browser.gatherUsageStats", "false"]


def check_login(host: str, no_auth: bool, environ: dict[str, str]) -> str:
    """How visitors will log in ("password", "oidc", "none"); raises when an exposed app has no way."""
    secret = auth.password(environ)
    if secret is not None:
        auth.check_password_strength(secret)
        auth.session_seconds(environ)
        auth.idle_seconds(environ)
    oidc = auth.oidc_status(auth.secrets_files(APP.parent))
    if oidc.present and not oidc.ready and secret is None:
        raise SearchGradeError(f"st.login is configured but cannot work: {oidc.problem}")
    method = auth.login_method(environ, oidc)
    if method is None and is_exposed(host) and not no_auth:
        raise SearchGradeError(auth.exposed_without_login_message(host))
    return method or "none"


def start_worker(env: dict[str, str]) -> None:
    """`searchgrade worker` as a child of this process: the exec that follows keeps the process id,
    so the worker stops when the app's process ends (``--stop-with``)."""
    import subprocess

    subprocess.Popen([sys.executable, "-m", "searchgrade.cli", "worker", "--stop-with", str(os.getpid()),
                      "--data-dir", env["SEARCHGRADE_HOME"]], env=env)
    print("searchgrade worker started beside the app (scheduled suites; times in UTC)", file=sys.stderr)


def cmd_app(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise SearchGradeError(f"--port {args.port} is not a TCP port (1-65535)")
    from searchgrade.engine.run.strategies import (
        ENV_STRATEGIES_FILE,
        load_strategies_file,
        strategies_file_from_env,
    )

    env = dict(os.environ, SEARCHGRADE_HOME=str(data_dir(args.data_dir).resolve()))
    if args.max_upload_mb < 1:
        raise SearchGradeError(f"--max-upload-mb of {args.max_upload_mb} must be at least 1")
    if args.collections_root is not None:
        root = Path(args.collections_root).expanduser()
        if not root.is_dir():
            raise SearchGradeError(f"--collections-root {args.collections_root}: no such folder; "
                                   "point it at the folder that holds the collections")
        env[ENV_COLLECTIONS_ROOT] = str(root.resolve())
    strategies_file = strategies_file_from_env(args.strategies_file)
    if strategies_file:
        load_strategies_file(strategies_file)  # a bad file stops here, with one line, not in the page
        env[ENV_STRATEGIES_FILE] = str(Path(strategies_file).expanduser().resolve())
    method = check_login(args.host, args.no_auth, env)
    if args.no_auth:
        env[auth.ENV_NO_AUTH] = "1"
    else:
        env.pop(auth.ENV_NO_AUTH, None)
    login = {"password": "password login", "oidc": "OIDC login (st.login)"}.get(method, "no login")
    if method == "none" and is_exposed(args.host):
        login += ", as asked with --no-auth: anyone who reaches the port can use it"
    print(f"searchgrade app on http://{args.host}:{args.port} ({login}; Ctrl-C to stop)", file=sys.stderr)
    sys.stderr.flush()
    sys.stdout.flush()
    command = streamlit_command(args)
    if args.worker:
        start_worker(env)
    os.execve(command[0], command, env)
    return 1  # not reached: exec replaced this process
