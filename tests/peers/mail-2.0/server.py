"""Starts the MAIL 2.0 reference (mail-swarms-server 2.0.1, unmodified) offline on
loopback for Gatehouse's tests, the way its own e2e tests do: a memory-backend deployment
provisioned by its `backend-init` in a scratch HOME, its `mail-server` on a free port, its
daemon's delivery loop (mail_daemon.maild, polling every 0.3 s instead of 30 s so a test
does not wait), and one scripted agent, `sage@chorus@localhost`, which reads its inbox
through the server's HTTP API like any agent and answers by the body it receives:

  "silence ..."     no answer
  "two steps ..."   two answers to the message: "Working on it." then "Done: <body>"
  anything else     one answer, "sage heard: <body>"

Every answer is a reply (reply_to = the message answered, subject "Re: ...").
Prints one line, `READY {"port":..,"address":..,"password":..,"agent":..,"home":..,
"other_address":..,"other_password":..}` (another user of the same server), then
serves until killed (the test harness kills the whole process group).

Run with the mail-2.0.1 virtualenv that scripts/setup-peers.sh makes.
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

BIN = Path(sys.executable).parent
HOST = "localhost"
SWARM = "chorus"
USER = f"user:alice@{HOST}"
AGENT = f"sage@{SWARM}@{HOST}"
DAEMON = f"daemon:dummy@{HOST}"


# The published 2.0.1 wheel asks package metadata for a distribution named `mail-server`,
# which is not what it is installed as (`mail-swarms-server`), and exits at start-up;
# upstream fixed the name after the release (charonlabs/mail 3ffa101). This answers that
# one lookup with the installed server's version and runs the reference's own entry point.
SERVER = """
import sys
from importlib import metadata
_version = metadata.version
metadata.version = lambda name: _version("mail-swarms-server" if name == "mail-server" else name)
sys.argv[0] = "mail-server"
from mail_server.cli import main
main()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def login(http: httpx.Client, base: str, address: str, password: str) -> str:
    r = http.post(f"{base}/auth/token", data={"grant_type": "password", "username": address, "password": password})
    r.raise_for_status()
    return r.json()["access_token"]


def answers(body: str) -> list[str]:
    if body.startswith("silence"):
        return []
    if body.startswith("two steps"):
        return ["Working on it.", f"Done: {body}"]
    return [f"sage heard: {body}"]


def agent_loop(base: str, password: str) -> None:
    # One client for the loop: a new one per call loads the CA bundle each time, which at
    # this pace keeps a core busy.
    http = httpx.Client()
    token = login(http, base, AGENT, password)
    seen: set[str] = set()
    while True:
        try:
            h = {"Authorization": f"Bearer {token}"}
            r = http.get(f"{base}/inbox", params={"limit": 100}, headers=h)
            if r.status_code == 401:
                token = login(http, base, AGENT, password)
                continue
            for entry in r.json()["entries"]:
                mid = entry["message_id"]
                if mid in seen:
                    continue
                seen.add(mid)
                m = http.get(f"{base}/inbox/{mid}", headers=h).json()["entry"]["message"]
                subject = m["subject"] if m["subject"].startswith("Re: ") else f"Re: {m['subject']}"
                for text in answers(m["body"]):
                    d = http.post(f"{base}/drafts", json={"subject": subject, "body": text, "reply_to": mid}, headers=h)
                    d.raise_for_status()
                    draft_id = d.json()["entry"]["draft"]["draft_id"]
                    s = http.post(f"{base}/drafts/{draft_id}/send", json={"recipients": [m["sender"]]}, headers=h)
                    s.raise_for_status()
                    time.sleep(0.2)
        except Exception as e:  # the server going away ends the test; say why, keep going
            print(f"agent: {e}", file=sys.stderr, flush=True)
        time.sleep(0.2)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="gatehouse-mail20-"))
    home = work / "home"
    home.mkdir()
    port = int(sys.argv[1]) if len(sys.argv) > 1 else free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "HOME": str(home),
        "MAIL_HOST": HOST,
        "MAIL_JWT_SECRET_KEY": "gatehouse-test-secret",
        "MAIL_JWT_ALGORITHM": "HS256",
        "MAIL_JWT_EXPIRE_MINUTES": "15",
        "MAIL_REFRESH_TOKEN_EXPIRE_DAYS": "30",
    }
    subprocess.run(
        [str(BIN / "backend-init"), "--type", "memory", "--swarm", SWARM, "--host", HOST, "--agents", "sage",
         "--users", "alice", "bob", "--admins", "root", "--daemons", "dummy"],
        env=env, check=True, capture_output=True,
    )
    secrets = home / ".mail-swarms" / "deployments" / "default" / ".secrets"
    creds = {p.name: p.read_text().strip() for p in secrets.iterdir()}
    log = open(work / "server.log", "wb")
    subprocess.Popen(
        [sys.executable, "-c", SERVER, "--backend", "memory", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            sys.exit(f"mail-server did not become healthy; see {work / 'server.log'}")
        time.sleep(0.1)

    os.environ.update({"MAIL_SERVER": base, "MAIL_ADDRESS": DAEMON, "MAIL_PASSWORD": creds[DAEMON]})
    from mail_daemon.maild import api as daemon

    # The daemon calls httpx.post per request, each a new client that loads the CA bundle
    # (a core kept busy at 0.3 s); a shared client makes the same requests.
    daemon.httpx = httpx.Client()
    daemon._check_env_vars()
    daemon._check_server()
    daemon._obtain_daemon_token()
    threading.Thread(target=daemon.daemon_loop, args=(0.3,), daemon=True).start()
    threading.Thread(target=agent_loop, args=(base, creds[AGENT]), daemon=True).start()

    other = f"user:bob@{HOST}"
    ready = {"port": port, "address": USER, "password": creds[USER], "agent": AGENT, "home": str(home),
             "other_address": other, "other_password": creds[other]}
    print("READY " + json.dumps(ready), flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
