#!/usr/bin/env bash
# Audits the dependencies with cargo-deny: RustSec advisories, licences, bans (wildcard
# versions) and sources (crates.io only). The advisory database is the snapshot in
# ../shared/advisory-db when it is there (read without fetching: these machines cannot
# reach GitHub); elsewhere cargo-deny fetches the current one, and where that cannot be
# reached the advisories are skipped with a line saying so. deny.toml lists every
# advisory that is let through, and docs/threat-model.md says why.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
snapshot=../shared/advisory-db
# Where cargo-deny 0.20 keeps the default database (its URL's hash) under db-path.
db=target/advisory-dbs/advisory-db-3157b0e258782691
# --offline below also stops cargo from downloading crates: have them all first.
cargo fetch --locked --quiet
if [ -d "$snapshot" ]; then
  rm -rf target/advisory-dbs && mkdir -p "$db"
  cp -r "$snapshot"/. "$db"/
  # CI lays ../shared without write bits; the copy is ours to write in.
  chmod -R u+w "$db"
  # cargo-deny reads the database as a git repository.
  (cd "$db" && git init -q && git add -A && git -c user.name=audit -c user.email=audit@localhost commit -q -m "RustSec snapshot from ../shared/advisory-db")
  echo "audit: advisories from the RustSec snapshot in $snapshot ($(grep -o 'commit [0-9a-f]*' ../shared/advisory-db.md 2>/dev/null | head -1 || echo 'no provenance file'))"
  cargo deny --offline check advisories licenses bans sources
elif timeout 120 cargo deny fetch db >/dev/null 2>&1; then
  echo "audit: advisories from the current RustSec database (fetched)"
  cargo deny check advisories licenses bans sources
else
  echo "audit: SKIPPED advisories: no ../shared/advisory-db beside this repository and the RustSec database cannot be fetched from here"
  cargo deny --offline check licenses bans sources
fi
