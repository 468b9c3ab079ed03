"""`searchgrade app`: start the dashboard (Streamlit)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from engine.cli.options import add_common
from engine.paths import data_dir

#: The Streamlit entry point, at the root of the source tree.
APP = Path(__file__).resolve().parents[2] / "app.py"


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("app", help="start the dashboard (Streamlit)")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    add_common(p)
    p.set_defaults(handler=cmd_app)


def cmd_app(args: argparse.Namespace) -> int:
    import subprocess

    env = dict(os.environ, SEARCHGRADE_HOME=str(data_dir(args.data_dir).resolve()))
    command = [sys.executable, "-m", "streamlit", "run", str(APP), "--server.port", str(args.port),
               "--server.address", args.host, "--server.headless", "true",
               # Streamlit would otherwise watch every module file under the app's folder,
               # .venv included (torch and all): polling thousands of files slows a run ~4x.
               "--server.fileWatcherType", "none",
               "--browser.gatherUsageStats", "false"]
    print(f"searchgrade app on http://{args.host}:{args.port} (Ctrl-C to stop)", file=sys.stderr)
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:
        return 0
