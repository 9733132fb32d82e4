#!/usr/bin/env bash
# Create .venv and install embodied_ros with everything its demo and tests need.
# Idempotent: re-runs only when this script or setup.py changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "embodied_ros needs Python >= 3.10")'

[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.embodied_ros_installed
want=$(cat setup.py scripts/bootstrap.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing into .venv (first run takes a few minutes)" >&2
  .venv/bin/python -m pip install -q --upgrade pip
  # The CPU build of torch (a plain 'torch' requirement would pull several GB of CUDA wheels).
  .venv/bin/python -c 'import torch' 2>/dev/null || .venv/bin/python -m pip install -q torch==2.13.0
  .venv/bin/python -m pip install -q -e ".[dev]"
  echo "$want" > "$stamp"
fi
