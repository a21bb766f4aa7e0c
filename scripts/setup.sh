#!/usr/bin/env bash
# Installs what Gatehouse needs to build, run and test on Debian/Ubuntu.
# Idempotent: packages already present are skipped, so a warm machine pays nothing.
set -euo pipefail

PKGS=(
  build-essential pkg-config libssl-dev libdbus-1-dev
  libwebkit2gtk-4.1-dev libgtk-3-dev libsoup-3.0-dev libjavascriptcoregtk-4.1-dev
  libayatana-appindicator3-dev librsvg2-dev
  xvfb xauth webkit2gtk-driver x11-apps imagemagick
  gnome-keyring dbus-x11 libsecret-tools
  dovecot-imapd exim4-daemon-light
  postgresql
  nginx
  dunst
  chromium chromium-driver
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "setup: npm not found; install Node.js 20 or newer (it builds the window's UI)" >&2
  exit 1
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust from https://rustup.rs first" >&2
  exit 1
fi

export PATH="$HOME/.cargo/bin:$PATH"
# The test command checks formatting and lints.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  echo "setup: adding rustfmt and clippy"
  rustup component add rustfmt clippy
fi
# tauri-driver bridges WebDriver to WebKitWebDriver for the real-window tests.
if ! command -v tauri-driver >/dev/null 2>&1; then
  echo "setup: installing tauri-driver"
  cargo install tauri-driver --locked --quiet
fi
# cargo-deny audits the dependencies (scripts/audit.sh); its version fixes where it keeps
# the advisory database.
if ! cargo deny --version 2>/dev/null | grep -q "^cargo-deny 0.20.2$"; then
  echo "setup: installing cargo-deny"
  cargo install cargo-deny --version 0.20.2 --locked --quiet
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "setup: installing cargo-fuzz"
  cargo install cargo-fuzz --locked --quiet
fi

mkdir -p "$HOME/.local/share/keyrings"
echo "setup: ok"
