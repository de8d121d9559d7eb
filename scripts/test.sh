#!/usr/bin/env bash
# Runs the whole Tollgate test suite:
#   1. Rust unit and end-to-end tests (the e2e tests start the real `tollgate` and
#      `tollgate-mock` binaries, so the binaries are built first);
#   2. client tests with the official `openai` (and later `anthropic`) Python SDKs, in a venv
#      under .venv (created on first run, from PyPI).
# Tests that need PostgreSQL or Redis run when TOLLGATE_TEST_DATABASE_URL
# (postgres://user@host:port/db) / TOLLGATE_TEST_REDIS_URL (redis://host:port) are set (.ci/run
# sets both); otherwise each reports its skip into $TOLLGATE_TEST_SKIP_LOG, and the run ends
# with a summary of what was skipped and the variable that enables it.
set -euo pipefail
cd "$(dirname "$0")/.."

# Skipping tests append `VAR<TAB>example<TAB>test` lines here (tests/common/skip.rs,
# tollgate-governance test_support.rs); summed up and cleared when the script exits.
target_dir="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target_dir"
TOLLGATE_TEST_SKIP_LOG="$(cd "$target_dir" && pwd)/test-skips.txt"
export TOLLGATE_TEST_SKIP_LOG
: >"$TOLLGATE_TEST_SKIP_LOG"
skip_summary() {
  local rc=$?
  if [ -s "$TOLLGATE_TEST_SKIP_LOG" ]; then
    echo "== skipped tests:"
    sort -u "$TOLLGATE_TEST_SKIP_LOG" | awk -F '\t' '
      { n[$1]++; ex[$1] = $2; names[$1] = (names[$1] == "" ? "" : names[$1] ", ") $3 }
      END { for (v in n) printf "  %d need %s (unset; e.g. %s=%s): %s\n", n[v], v, v, ex[v], names[v] }'
  elif [ "$rc" -eq 0 ]; then
    echo "== skipped tests: none"
  fi
  rm -f "$TOLLGATE_TEST_SKIP_LOG"
}
trap skip_summary EXIT

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
