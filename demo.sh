#!/usr/bin/env bash
# Set everything up (first run) and run the demo; outputs go to out/demo.
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh
exec .venv/bin/embodied-ros demo "$@"
