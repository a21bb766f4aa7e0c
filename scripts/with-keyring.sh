#!/usr/bin/env bash
# Runs a command with a real, unlocked Secret Service (gnome-keyring) on the current
# D-Bus session bus, then stops that keyring and removes what it kept. Meant to be run inside dbus-run-session.
#
# Why not just `echo pw | gnome-keyring-daemon --unlock`: that forks and returns before
# the daemon owns org.freedesktop.secrets; a keychain call made in that gap makes D-Bus
# activate a second daemon whose login keyring is locked, and that one waits forever
# for an unlock prompt nobody can answer under Xvfb. So the daemon is started in the
# foreground (its pid is ours to stop), and the command starts only once the bus name
# is owned and the default collection answers unlocked.
set -euo pipefail
[ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ] || { echo "with-keyring: no D-Bus session (run under dbus-run-session)" >&2; exit 2; }

# The keyring lives in a directory of its own, made here and removed at the end: tests
# never write into (or depend on) the login keyring of whoever runs them, and each run
# starts from an empty keyring rather than one grown by every run before it.
keyrings=$(mktemp -d)
XDG_DATA_HOME="$keyrings" gnome-keyring-daemon --foreground --unlock --components=secrets <<<"pw" >/dev/null &
daemon=$!
trap 'kill "$daemon" 2>/dev/null || true; rm -rf "$keyrings"' EXIT

unlocked() {
  gdbus call --session --dest org.freedesktop.secrets \
    --object-path /org/freedesktop/secrets/aliases/default \
    --method org.freedesktop.DBus.Properties.Get org.freedesktop.Secret.Collection Locked \
    2>/dev/null | grep -q false
}
owned() {
  gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
    --method org.freedesktop.DBus.NameHasOwner org.freedesktop.secrets 2>/dev/null | grep -q true
}
for _ in $(seq 1 100); do
  kill -0 "$daemon" 2>/dev/null || { echo "with-keyring: gnome-keyring-daemon exited at start" >&2; exit 1; }
  # Ask only once the name is owned: asking earlier is what activates a second daemon.
  if owned && unlocked; then
    "$@"
    exit $?
  fi
  sleep 0.1
done
echo "with-keyring: the Secret Service was not ready and unlocked within 10 s" >&2
exit 1
