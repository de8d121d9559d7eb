#!/usr/bin/env bash
# Runs the whole Tollgate test suite:
#   1. Rust unit and end-to-end tests (the e2e tests start the real `tollgate` and
#      `tollgate-mock` binaries, so the binaries are built first);
#   2. client tests with the official `openai` (and later `anthropic`) Python SDKs, in a venv
#      under .venv (created on first run, from PyPI).
# Tests that need PostgreSQL or Redis run when TOLLGATE_TEST_DATABASE_URL /
# TOLLGATE_TEST_REDIS_URL are set (.ci/run sets both) and print that they were skipped otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${TOLLGATE_SHARED_DIR:-}" ] && [ -d ../shared ]; then
  TOLLGATE_SHARED_DIR="$(cd ../shared && pwd)"
  export TOLLGATE_SHARED_DIR
fi

echo "== cargo build (binaries used by the end-to-end tests)"
cargo build --workspace --bins
echo "== cargo test"
cargo test --workspace

echo "== client tests (official SDKs)"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/clients/requirements.txt
TOLLGATE_BIN_DIR="$(pwd)/target/debug" .venv/bin/python -m pytest -q tests/clients
