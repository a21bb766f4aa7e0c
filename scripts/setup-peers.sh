#!/usr/bin/env bash
# Installs the real protocol peers the tests run against, outside the repository, in
# virtualenvs under ${GATEHOUSE_PEERS_DIR:-~/.cache/gatehouse/peers}:
#   mail-1.3.6: the MAIL 1.3 reference server (PyPI mail-swarms 1.3.6) with the dependency
#               set of its v1.3.6 lock (tests/peers/mail-1.3/requirements.txt, hashes checked).
#   mail-2.0.1: the MAIL 2.0 reference server and daemon (PyPI mail-swarms-server/-daemon
#               2.0.1) pinned the same way (tests/peers/mail-2.0/requirements.txt).
#   a2a-1.3.0:  the A2A Python SDK (tests/peers/a2a/requirements.txt).
#   a2a-js-1.3.0: the A2A JavaScript SDK, @a2a-js/sdk (tests/peers/a2a-js/package-lock.json).
#   mcp-2.3.0:  the MCP Python SDK, as client and server (tests/peers/mcp/requirements.txt).
#   mcp-js-1.32.2: the MCP TypeScript SDK, @modelcontextprotocol/sdk, as an app's client
#               (tests/peers/mcp-js/package-lock.json).
# Idempotent: a virtualenv whose requirements have not changed is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS="${GATEHOUSE_PEERS_DIR:-$HOME/.cache/gatehouse/peers}"
mkdir -p "$PEERS"

# The reference needs Python 3.12 or newer.
find_python() {
  local c
  for c in python3.13 python3.12 python3 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python /root/.pyenv/versions/3.1[2-9]*/bin/python /usr/local/bin/python3.1[2-9]; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}

install_venv() { # name requirements
  local name="$1" req="$2" venv="$PEERS/$1"
  local stamp
  stamp="$(sha256sum "$req" | cut -d' ' -f1)"
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.requirements" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  local py
  if ! py="$(find_python)"; then
    echo "setup-peers: $name needs Python 3.12 or newer and none was found (tried python3.13, python3.12, python3, pyenv)" >&2
    exit 1
  fi
  echo "setup-peers: installing $name with $py"
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes --only-binary=:all: -r "$req"
  echo "$stamp" > "$venv/.requirements"
}

# A Node peer: its package-lock.json pins every package by its integrity hash; `npm ci`
# installs exactly that, without running any package's scripts.
install_npm() { # name dir
  local name="$1" src="$2" dest="$PEERS/$1"
  local stamp
  stamp="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)"
  if [ -d "$dest/node_modules" ] && [ "$(cat "$dest/.lock" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  echo "setup-peers: installing $name with npm ci"
  rm -rf "$dest"
  mkdir -p "$dest"
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$stamp" > "$dest/.lock"
}

install_venv mail-1.3.6 tests/peers/mail-1.3/requirements.txt
install_venv mail-2.0.1 tests/peers/mail-2.0/requirements.txt
install_venv a2a-1.3.0 tests/peers/a2a/requirements.txt
install_npm a2a-js-1.3.0 tests/peers/a2a-js
install_venv mcp-2.3.0 tests/peers/mcp/requirements.txt
install_npm mcp-js-1.32.2 tests/peers/mcp-js
echo "setup-peers: ok ($PEERS)"
