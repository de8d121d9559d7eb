#!/usr/bin/env bash
# Runs the whole Tollgate test suite:
#   1. Rust unit and end-to-end tests (the e2e tests start the real `tollgate` and
#      `tollgate-mock` binaries, so the binaries are built first);
#   2. client tests with the official `openai` (and later `anthropic`) Python SDKs, in a venv
#      under .venv (created on first run, from PyPI);
#   3. the admin UI's browser test (tests/ui: Debian's chromium driven by playwright-core from
#      npm; screenshots under target/ui-screenshots/).
# Tests that need PostgreSQL run when TOLLGATE_TEST_DATABASE_URL (postgres://user@host:port/db)
# is set (.ci/run sets it); otherwise each reports its skip into $TOLLGATE_TEST_SKIP_LOG, and
# the run ends with a summary naming every skipped test (`target::module::test`) under the
# variable that enables it. TOLLGATE_TEST_REDIS_URL (redis://host:port, also set by .ci/run) is
# reserved for the Redis tests of the multi-replica work: no test reads it yet.
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
    echo "== skipped tests ($(sort -u "$TOLLGATE_TEST_SKIP_LOG" | wc -l | tr -d ' ')):"
    # One line per test, under the variable that would run it.
    sort -u "$TOLLGATE_TEST_SKIP_LOG" | awk -F '\t' '
      $1 != var { var = $1; printf "  not run: %s is unset (e.g. %s=%s):\n", $1, $1, $2 }
      { printf "    %s\n", $3 }'
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

# The admin UI in a real browser: Debian's chromium driven by playwright-core (nothing is
# downloaded: the browser is the system's). Without chromium it reports its skip, unless CI is
# set (.ci/run installs chromium), where it fails.
echo "== admin UI browser test (chromium)"
if [ ! -d tests/ui/node_modules/playwright-core ]; then
  (cd tests/ui && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-fund --no-audit --silent)
fi
TOLLGATE_BIN_DIR="$(cd "$target_dir" && pwd)/debug" node tests/ui/run.mjs
