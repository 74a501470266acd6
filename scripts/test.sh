#!/usr/bin/env bash
# Set up (if needed) and run every test: arithmetic, CLI, notebooks, book build, browser.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check kvtier tests scripts benchmarks book/_ext
.venv/bin/python -m pytest "$@"
