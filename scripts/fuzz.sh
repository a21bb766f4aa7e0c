#!/usr/bin/env bash
# Fuzzes every reader of others' bytes with cargo-fuzz (libFuzzer): the EPP envelope reader
# and canonical serialisations, UAMP envelopes/JWS/frames, ASOP JSON-RPC, MAIL events and
# task logs, IntentWeb manifests and envelopes, the SSE reader, and mails (where an envelope
# is in one), A2A JSON-RPC requests, and MCP messages and their framing (stdio, and the MCP wrap's line).
#   scripts/fuzz.sh [seconds-per-target]     default 30 (CI runs 20); try 3600 overnight
# Targets run side by side, one per core; every target runs to its end, and each finding is
# reported.
# Seeds come from the shared EPP vectors; findings land in fuzz/artifacts/<target>/ and
# make this script fail. Runs on stable Rust (no sanitizer: -s none).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-30}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
# A short run (the test command's 20 s per target) gains less from fully optimized code than
# its compile costs: building every reader and its dependencies at opt-level 3 with
# instrumentation took most of the test command's fuzz stage. Long runs keep opt-level 3.
if [ "$secs" -le 60 ]; then export CARGO_PROFILE_RELEASE_OPT_LEVEL=1; fi
vectors="tests/data/vectors/epp/envelopes.json"
targets="envelope canonical uamp asop mail intentweb sse email qr a2a mcp"
# Built once, all together, before any runs; then each target runs on one core, as many at
# a time as this machine has cores (libFuzzer's run is single-threaded).
cargo fuzz build -s none
fuzz_one() {
  local target="$1"
  local corpus="fuzz/corpus/$target"
  mkdir -p "$corpus"
  if [ -f "$vectors" ] && { [ "$target" = envelope ] || [ "$target" = canonical ]; }; then
    python3 - "$vectors" "$corpus" <<'PY'
import json, sys, hashlib, os
data = json.load(open(sys.argv[1]))
for v in data.get("vectors", []):
    for key in ("envelope", "raw"):
        if key in v:
            body = v[key] if isinstance(v[key], str) else json.dumps(v[key], ensure_ascii=False)
            b = body.encode()
            open(os.path.join(sys.argv[2], hashlib.sha1(b).hexdigest()), "wb").write(b)
PY
  fi
  # 512 MB RSS and 64 MB per allocation: an input that makes the reader allocate without
  # bound is a finding, not a slow run.
  local log="fuzz/$target.log" rss=512 malloc=64
  # A picture may take up to 6000 x 6000 pixels by design (gatehouse-qr, at most 256 MB
  # while decoding); past that bound is a finding.
  if [ "$target" = qr ]; then rss=1024 malloc=300; fi
  cargo fuzz run -s none "$target" "$corpus" -- \
    -max_total_time="$secs" -rss_limit_mb="$rss" -malloc_limit_mb="$malloc" -max_len=65536 -print_final_stats=1 >"$log" 2>&1
}
jobs_at_once="$(nproc)"
declare -A running=()
failed=""
finish_one() {
  local pid status=0
  wait -n -p pid || status=$?
  local target="${running[$pid]}"
  unset "running[$pid]"
  if [ "$status" -eq 0 ]; then
    echo "fuzzed $target for ${secs}s:"
    grep -E "^Done|stat::number_of_executed_units|stat::peak_rss_mb" "fuzz/$target.log"
  else
    tail -40 "fuzz/$target.log"
    echo "fuzz target $target found a failure: the input is in fuzz/artifacts/$target/"
    failed="$failed $target"
  fi
}
for target in $targets; do
  while [ "${#running[@]}" -ge "$jobs_at_once" ]; do finish_one; done
  echo "fuzzing $target for ${secs}s…"
  fuzz_one "$target" &
  running[$!]="$target"
done
while [ "${#running[@]}" -gt 0 ]; do finish_one; done
if [ -n "$failed" ]; then
  echo "fuzzing found failures in:$failed"
  exit 1
fi
