#!/usr/bin/env bash
# Set up kvtier from scratch: system packages (Chromium for the browser test) and a
# virtual environment in .venv with the package and its test tools. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "setup: chromium is not installed and we are not root; the browser test will be skipped" >&2
  fi
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test]"
.venv/bin/python -m ipykernel install --sys-prefix --name python3 >/dev/null
