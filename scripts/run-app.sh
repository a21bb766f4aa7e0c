#!/usr/bin/env bash
# Sets up this machine and runs the Gatehouse desktop app.
# Headless instead: cargo run -p gatehouse-cli -- serve   (see README)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
(cd ui && npm install --no-audit --no-fund && npm run build)
exec cargo run --locked -p gatehouse-desktop "$@"
