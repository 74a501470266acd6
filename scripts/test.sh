#!/usr/bin/env bash
# Set up (if needed) and run every test: arithmetic, CLI, notebooks, book build, browser.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check kvtier tests scripts benchmarks book/_ext
# the tests in parallel, one worker per CPU (KVTIER_TEST_WORKERS=0: in this process); each book built once
.venv/bin/python -m pytest -n "${KVTIER_TEST_WORKERS:-auto}" --dist loadgroup "$@"
