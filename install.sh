#!/usr/bin/env bash
# Installs searchgrade into ./.venv. With --test, also what the test suite needs: the test extras
# (ir-measures, playwright, a small GGUF model and llama-cpp-python's server, which compiles from
# source the first time: ~10 minutes on 2 cores) and Debian's chromium for the browser tests.
set -euo pipefail
cd "$(dirname "$0")"

want_tests=0
for arg in "$@"; do
  case "$arg" in
    --test) want_tests=1 ;;
    *) echo "install.sh: unknown option '$arg' (use --test to add the test dependencies)" >&2; exit 2 ;;
  esac
done

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "install.sh: searchgrade needs Python >= 3.11 ($python is $("$python" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip setuptools wheel
# torch is pinned in pyproject.toml: 2.13.0 has a CPU wheel; an unpinned torch pulls a CUDA build.
if [ "$want_tests" = 1 ]; then
  .venv/bin/python -m pip install --quiet -e '.[test]'
  if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
      echo "install.sh: the browser tests need Debian's chromium: run 'sudo apt-get install -y chromium'" >&2
      exit 1
    fi
  fi
else
  .venv/bin/python -m pip install --quiet -e .
fi
echo "searchgrade installed in $(pwd)/.venv"
