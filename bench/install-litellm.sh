#!/usr/bin/env bash
# Installs the LiteLLM proxy into bench/.venv (git-ignored) so that
# bench/gateways/litellm.toml finds bench/.venv/bin/litellm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python3 -m venv "$here/.venv"
"$here/.venv/bin/pip" install --quiet --upgrade pip
"$here/.venv/bin/pip" install --quiet "litellm[proxy]${LITELLM_VERSION:+==$LITELLM_VERSION}"
"$here/.venv/bin/litellm" --version || true
