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
  # llama-cpp-python compiles llama.cpp here. Built for the host's every CPU feature (its default),
  # it crashed (SIGSEGV in libggml-cpu on the first request) on a Xeon that reports AVX-512 and AMX;
  # the AVX2 set below runs there and on the EPYCs. CMAKE_ARGS set by the caller wins. pip keeps the
  # wheel it built in its cache, keyed by the source release, not by CMAKE_ARGS: a cached wheel
  # built elsewhere with other flags is taken as is (a CI run installed in 2 minutes, then its
  # llama.cpp server died on the first request). So the server is tried once after the install
  # (tests/llama_server.py: one chat completion) and, where it dies, llama.cpp is rebuilt without
  # the cache: with the AVX2 set, then, if that dies too, with the SSE4.2 baseline and no OpenMP,
  # llamafile kernels or weight repacking (about 7 times slower, and every x86-64 CPU of the last
  # decade runs it). Each rebuild takes about 10 minutes on 2 cores.
  avx2="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  baseline="-DGGML_NATIVE=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF -DGGML_CPU_REPACK=OFF"
  export CMAKE_ARGS="${CMAKE_ARGS:-$avx2}"
  .venv/bin/python -m pip install --quiet -e '.[test]'
  if ! .venv/bin/python tests/llama_server.py; then
    llama_version=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))')
    for flags in "$CMAKE_ARGS" "$baseline"; do
      echo "install.sh: the llama.cpp server died on this CPU; rebuilding llama-cpp-python $llama_version with: $flags" >&2
      CMAKE_ARGS="$flags" .venv/bin/python -m pip install --quiet --force-reinstall --no-deps --no-cache-dir \
        "llama-cpp-python==$llama_version"
      if .venv/bin/python tests/llama_server.py; then
        break
      fi
      if [ "$flags" = "$baseline" ]; then
        echo "install.sh: the llama.cpp server dies on this CPU even when built with the baseline features (its log is above); the LLM tests cannot run here" >&2
        exit 1
      fi
    done
  fi
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
