#!/usr/bin/env bash
# Set everything up (first run) and run the test suite.
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh
.venv/bin/python -m ruff check --quiet . && echo "ruff: clean"
exec .venv/bin/python -m pytest -q "$@"
