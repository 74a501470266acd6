#!/usr/bin/env bash
# Set up (if needed) and build the book with the seed assumptions (or pass kvtier build options).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/kvtier build "$@"
