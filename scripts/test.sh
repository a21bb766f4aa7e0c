#!/usr/bin/env bash
# Sets up this machine (system packages, tauri-driver) and runs every test: the core
# crates, the inbox over loopback HTTP and a real folder, the CLI (with a kill -9), and
# the desktop app in a real window under Xvfb. The keychain is the real Secret Service,
# provided by gnome-keyring inside a private D-Bus session (scripts/with-keyring.sh). Last, a short fuzz run of
# every reader of others' bytes (scripts/fuzz.sh; longer runs there).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage says how long the one before it took, so a run that nears CI's budget shows
# where the time went.
STAGE_START=$SECONDS
stage() {
  echo "== $*   [the step before took $((SECONDS - STAGE_START)) s; $SECONDS s in all]"
  STAGE_START=$SECONDS
}
stage "setup: system packages, tools, the real peers"
bash scripts/setup.sh
# The real peers (the MAIL references, the A2A SDKs), outside the repository; their tests must run.
bash scripts/setup-peers.sh
export GATEHOUSE_REQUIRE_PEERS=1
export PATH="$HOME/.cargo/bin:$PATH"
# A fresh clone gains nothing from incremental state, and it was a third of the build's
# disk (2 GB); a CI disk that filled mid-link failed a whole run.
export CARGO_INCREMENTAL=0
stage "disk: $(df -h --output=avail . | tail -1 | tr -d ' ') free here before building"
mkdir -p "$HOME/.local/share/keyrings"

stage "test data: unchanged since copied or recorded (tests/data/*/PROVENANCE.md)"
(cd tests/data/vectors && sha256sum --check --quiet --strict SHA256SUMS)
(cd tests/data/mail-reference-1.3.6 && sha256sum --check --quiet --strict SHA256SUMS)
(cd tests/data/epp-reference-1.1 && sha256sum --check --quiet --strict SHA256SUMS)
(cd tests/data/qr && sha256sum --check --quiet --strict SHA256SUMS)

stage "ui: install, lint, unit tests, build"
(cd ui && npm install --no-audit --no-fund && npm run lint && npm test && npm run build)

stage "format; no test hidden from the build"
cargo fmt --all --check
# Targets without unit tests are not compiled a second time as tests (Cargo.toml
# `test = false`); this fails if a unit test or doc example is added where it would never run.
python3 scripts/untested-targets.py

stage "dependency audit (advisories, licences, bans, sources)"
bash scripts/audit.sh

stage "build, with clippy's lints as errors"
# Clippy runs as the compiler of the workspace's own crates while they are built, so one
# compile gives the lints, the binaries and the tests (a separate `cargo clippy` checked
# every crate a second time: 14 of a run's 45 minutes). Warnings, clippy's and rustc's,
# fail the build; dependencies' are capped by cargo as ever.
export RUSTC_WORKSPACE_WRAPPER="$(command -v clippy-driver)"
export RUSTFLAGS="-D warnings"
# What `cargo test --workspace` runs (a target marked `test = false` is not compiled as a
# test, which `cargo build --all-targets` would do anyway), then the benchmarks, for their
# lints. --timings: target/cargo-timings/ shows which crates the build's time went to.
cargo test --workspace --no-run --locked --timings
cargo test --workspace --no-run --locked --benches

stage "test"
# A hung test (a keychain call waiting on a prompt, a stuck window) fails the run after
# 45 minutes instead of using up CI's 90.
xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \
  scripts/with-keyring.sh sh -c 'timeout --foreground 45m cargo test --workspace --locked --no-fail-fast 2>&1' \
  2> >(grep -v -e "Failed to set fd limit" -e "org.a11y" -e "Activating service" -e "Successfully activated" >&2)

stage "the gate's suite again, on PostgreSQL (a team's gate): the same tests, the other store"
# The binary the run above built, run again: `cargo test -p gatehouse-app` would resolve
# the dependencies' features for that one package and compile 200 crates a second time
# (10 of a run's minutes). The same selection as above names it without building.
app_it="$(cargo test --workspace --locked --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "it" and m.get("executable") and m["package_id"].split("#")[-1].startswith("gatehouse-app@"):
        print(m["executable"])
')"
[ -x "$app_it" ] || { echo "the app suite's test binary was not found"; exit 1; }
xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \
  scripts/with-keyring.sh sh -c "cd crates/app && GATEHOUSE_TEST_STORE=postgres timeout --foreground 15m '$app_it' 2>&1" \
  2> >(grep -v -e "Failed to set fd limit" -e "org.a11y" -e "Activating service" -e "Successfully activated" >&2)

stage "disk: target/ holds $(du -sh target | cut -f1), $(df -h --output=avail . | tail -1 | tr -d ' ') free"

stage "fuzz (20 s per target)"
# The fuzz targets build with their own flags (instrumentation), without the lints.
unset RUSTC_WORKSPACE_WRAPPER RUSTFLAGS
bash scripts/fuzz.sh 20
stage "done"
