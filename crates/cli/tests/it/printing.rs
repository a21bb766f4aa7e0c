//! Others' words stay words in the terminal: what a site, a swarm or a sender wrote reaches
//! the screen with the characters a terminal obeys (ESC sequences, BEL, a bare CR, bidi
//! overrides) shown as `\u{…}` and inert, through the one function every printed line goes
//! through (src/terminal.rs, included here so its rules are tested as they are).

use std::path::Path;

use crate::common::{gh, ok, Cleanup};
use gatehouse_intentweb_testsite::{spawn, Site};

use crate::terminal;

/// The characters a hostile text uses to move the cursor, clear and overwrite lines, ring
/// and reorder: none may reach the terminal as it came.
fn obeyed(s: &str) -> Option<char> {
    s.chars().find(|&c| (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
}

fn assert_inert(what: &str, o: &std::process::Output) {
    for (name, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        let s = String::from_utf8_lossy(bytes);
        assert_eq!(obeyed(&s), None, "{what}: {name} carries a character the terminal obeys: {s:?}");
    }
}

#[test]
fn characters_a_terminal_obeys_are_shown_not_obeyed() {
    let hostile = "Booked\u{1b}[1A\u{1b}[2K ok\u{7}\rRES-1 \u{202e}gnp.exe\u{9b}31m";
    let shown = terminal::inert(hostile);
    assert_eq!(obeyed(&shown), None, "{shown}");
    assert_eq!(shown, "Booked\\u{1b}[1A\\u{1b}[2K ok\\u{7}\\u{d}RES-1 \\u{202e}gnp.exe\\u{9b}31m");
    // Ordinary text, accents, emoji and tabs are left alone and not copied.
    assert!(matches!(terminal::inert("Réservé 🍝\tà 19h"), std::borrow::Cow::Borrowed("Réservé 🍝\tà 19h")));
    assert_eq!(terminal::inert("two\nlines"), "two\\u{a}lines", "one call, one line");
    // A text's own line breaks (LF, CRLF) make lines; a bare CR does not.
    let lines: Vec<_> = terminal::inert_lines("one\r\ntwo\rthree\n\u{1b}]0;title\u{7}").collect();
    assert_eq!(lines, ["one", "two\\u{d}three", "\\u{1b}]0;title\\u{7}"]);
}

/// The rule holds because nothing else prints: every line of the CLI goes through the
/// terminal module (JSON and the QR code, made here, through its verbatim writers).
#[test]
fn no_command_prints_around_the_one_function() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.clone()];
    let mut offenders = Vec::new();
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if p.extension().is_none_or(|e| e != "rs") || p.ends_with("terminal.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (n, line) in text.lines().enumerate() {
            if ["println!", "eprintln!", "print!", "eprint!", "stdout()", "stderr()"].iter().any(|m| line.contains(m)) && !line.contains("is_terminal") {
                offenders.push(format!("{}:{}: {}", p.display(), n + 1, line.trim()));
            }
        }
    }
    // `uamp ask --out -` writes the file the peer sent, byte for byte, as asked.
    offenders.retain(|o| !o.contains("std::io::stdout().write_all(&bytes)"));
    assert!(offenders.is_empty(), "lines printed around src/terminal.rs:\n{}", offenders.join("\n"));
}

#[test]
fn a_sites_name_answers_and_checklist_reach_the_terminal_inert() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _c = Cleanup(vec![d.into()]);
    ok(d, &["init"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let site = Site::new();
    site.set(|s| s.hostile_text = true);
    let origin = rt.block_on(spawn(site.clone()));

    let o = gh(d, &["sites", "add", &format!("{origin}/intentmanifest.yaml")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_inert("sites add", &o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Bella Cucina\\u{1b}[2K\\u{d}Your Bank\\u{202e}"), "the name is shown, escapes and all");
    assert_inert("sites list", &gh(d, &["sites", "list"]));

    let o = gh(d, &["sites", "talk", &origin, "Book a table under Jane Smith"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_inert("sites talk", &o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("\\u{1b}[1A\\u{1b}[2K\\u{7}\\u{d}All good\\u{202e}kcab yenom"), "the answer and its checklist, visible: {out}");
    let id = out.split_whitespace().nth(1).unwrap().to_string();

    // A refused answer: its [REFUSED] and warning cannot be overwritten by the text above
    // them, and the command says it was refused.
    site.set(|s| s.tamper = true);
    let o = gh(d, &["sites", "answer", &id, "4 people"]);
    assert_inert("sites answer (refused)", &o);
    assert_eq!(o.status.code(), Some(2), "a refused answer is not a success");
    assert!(String::from_utf8_lossy(&o.stdout).contains("[REFUSED]"));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the site's answer was refused"), "{}", String::from_utf8_lossy(&o.stderr));

    assert_inert("sites show", &gh(d, &["sites", "show", &id]));
    assert_inert("sites conversations", &gh(d, &["sites", "conversations"]));
}

#[test]
fn a_task_logs_subjects_bodies_and_senders_reach_the_terminal_inert() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = d.join("log.json");
    let hostile = "\u{1b}[1A\u{1b}[2Kdone\u{7}\r\u{202e}";
    let message = serde_json::json!({
        "id": "11111111-1111-4111-8111-111111111111",
        "timestamp": "2025-01-01T12:00:00Z",
        "message": {
            "task_id": "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
            "request_id": "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb",
            "sender": {"address_type": "user", "address": format!("user{hostile}")},
            "recipient": {"address_type": "agent", "address": "supervisor"},
            "subject": format!("Weekly report{hostile}"),
            "body": format!("Nothing to see{hostile}")
        },
        "msg_type": "request"
    });
    std::fs::write(&log, message.to_string()).unwrap();
    let o = gh(d, &["mail", "import", log.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = gh(d, &["mail", "tasks"]);
    assert_inert("mail tasks", &o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Weekly report\\u{1b}[1A"), "{}", String::from_utf8_lossy(&o.stdout));
    assert_inert("mail show", &gh(d, &["mail", "show", "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"]));
    // Errors carry others' words too (here a file's name, chosen by whoever made it).
    let odd = d.join("log\u{1b}[2K\r.json");
    std::fs::write(&odd, "{\"id\": 1}\n").unwrap();
    assert_inert("mail import (an error)", &gh(d, &["mail", "import", odd.to_str().unwrap()]));
}

#[test]
fn names_in_the_trust_registry_reach_the_terminal_inert() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _c = Cleanup(vec![d.into()]);
    ok(d, &["init"]);
    let key = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    let name = "Alice\u{1b}[2K\rBank\u{202e}";
    let o = gh(d, &["trust", "add", key, "--name", name, "--scopes", "support"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_inert("trust add", &o);
    assert_inert("trust list", &gh(d, &["trust", "list"]));
    assert_inert("contacts list", &gh(d, &["contacts", "list"]));
}

#[test]
fn what_an_agent_says_of_itself_and_its_steps_reaches_the_terminal_inert() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _c = Cleanup(vec![d.into()]);
    ok(d, &["init"]);
    let server = crate::common::Server::start(d);
    let hostile = "\u{1b}[1A\u{1b}[2Kdone\u{7}\r\u{202e}";
    let step = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "steps/agentTrigger", "params": {
        "context": {"agent": {"id": "mailer-1", "name": format!("Mail helper{hostile}"), "instructions": "Send mail", "version": "1", "provider": {"name": format!("Acme{hostile}"), "url": "https://acme.example"}},
            "session": {"id": "session-1"}, "turnId": "turn-1", "stepId": "step-1", "timestamp": "2025-01-24T15:30:45.123Z"},
        "trigger": {"type": "autonomous", "content": [{"kind": "text", "text": format!("new mail{hostile}")}], "event": {"id": "e-1", "type": "email"}}}});
    let answer: serde_json::Value = reqwest::blocking::Client::new().post(format!("{}/asop/v1", server.1)).json(&step).send().unwrap().json().unwrap();
    assert!(answer.get("error").is_some(), "an unknown agent waits: {answer}");
    let mut shown = String::new();
    for args in [&["guardian", "agents"][..], &["guardian", "sessions"], &["guardian", "session", "session-1"], &["pending"]] {
        let o = gh(d, args);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert_inert(&args.join(" "), &o);
        shown += &String::from_utf8_lossy(&o.stdout);
    }
    assert!(shown.contains("\\u{1b}[1A\\u{1b}[2Kdone"), "the agent's words are there, shown: {shown}");
}
