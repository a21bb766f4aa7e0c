//! `gatehouse mail …` against the MAIL 1.3 reference server itself: PyPI mail-swarms
//! 1.3.6, unmodified, run offline on loopback (gatehouse_mail_testswarm::reference). Each
//! case is one the reference broke before Gatehouse read it as the reference speaks.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{gh, gh_in, json};
use gatehouse_mail_testswarm::reference::start;

fn out(o: &std::process::Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// `gatehouse mail send` that must finish on its own well within its deadline.
fn send(d: &Path, args: &[&str]) -> (String, String) {
    let t = Instant::now();
    let mut all = vec!["mail", "send", "ref"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--deadline", "90"]);
    let o = gh(d, &all);
    let (stdout, stderr) = out(&o);
    assert!(o.status.success(), "gatehouse {all:?}: {stderr}\n{stdout}");
    assert!(t.elapsed() < Duration::from_secs(60), "the task took {:?}", t.elapsed());
    (stdout, stderr)
}

#[test]
fn tasks_run_on_the_reference_server_are_kept_whole_and_finish() {
    let Some(r) = start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // info: the reference's own `GET /` shape (protocol_version, swarm an object).
    let o = gh_in(d, &["mail", "add", &r.url, "--name", "ref", "--token-stdin"], "user-key\n");
    let (stdout, stderr) = out(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.contains("mail 1.3, swarm \"example\" (1.3.6), entrypoint supervisor, running"), "{stdout}");
    assert!(stdout.contains("alice (role user)"), "{stdout}");

    // Six messages, agents' ones with `recipient_swarm: null`: all kept, the odd field
    // shown; `::task_complete::` is the normal finish.
    let (stdout, _) = send(d, &["hello"]);
    let last = stdout.lines().last().unwrap();
    assert!(last.contains("completed: done: both analyses in"), "{stdout}");
    assert!(!stdout.contains('⚠'), "nothing failed: {stdout}");
    assert!(stdout.contains("kept as sent, off MAIL's schema: /message/recipient_swarm"), "{stdout}");
    let task = last.split_whitespace().nth(1).unwrap().to_string();
    let shown = json(d, &["mail", "show", &task, "--json"]);
    assert_eq!(shown["messages"].as_array().unwrap().len(), 6, "{shown}");
    assert_eq!(shown["task"]["state"], "completed");
    let subjects: Vec<&str> = shown["messages"].as_array().unwrap().iter().map(|m| m["subject"].as_str().unwrap()).collect();
    assert_eq!(subjects, ["New Message", "step 1", "analysis 1", "step 2", "analysis 2", "::task_complete::"]);

    // Continuing the task: it completes (the reference needs resume_from: user_response).
    let (stdout, _) = send(d, &["again please", "--task", &task]);
    assert!(stdout.lines().last().unwrap().contains("completed: continued: done again"), "{stdout}");
    let shown = json(d, &["mail", "show", &task, "--json"]);
    assert_eq!(shown["messages"].as_array().unwrap().len(), 8, "the second turn's two messages join the task");

    // An agent error mid-stream is a step; the task goes on to its finish.
    let (stdout, _) = send(d, &["misroute"]);
    assert!(stdout.contains("agent_error"), "{stdout}");
    assert!(stdout.lines().last().unwrap().contains("completed"), "{stdout}");
}

#[test]
fn the_references_own_exports_import_fully() {
    let Some(r) = start() else { return };
    let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();

    // SSE data lines, as a user might save a stream.
    let sse = http
        .post(format!("{}/message", r.url))
        .bearer_auth("user-key")
        .json(&serde_json::json!({"body": "hello", "stream": true, "task_id": "sse-task"}))
        .send()
        .unwrap()
        .text()
        .unwrap();
    // `GET /task` (with a JSON body, as the reference reads it).
    let task = http.get(format!("{}/task", r.url)).bearer_auth("user-key").json(&serde_json::json!({"task_id": "sse-task"})).send().unwrap().text().unwrap();
    // The event dump the debug UI writes (for the UI's own dev user).
    let ui = http.post(format!("{}/ui/message", r.url)).json(&serde_json::json!({"body": "hello", "task_id": "dump-task"})).send().unwrap().text().unwrap();
    assert!(ui.contains("task_complete"), "{ui}");
    http.get(format!("{}/ui/dump-events", r.url)).send().unwrap().error_for_status().unwrap();
    let dump = std::fs::read_to_string(r.workdir.join("events_dump.jsonl")).unwrap();

    for (name, text, task_id) in [("stream.sse", &sse, "sse-task"), ("task.json", &task, "sse-task"), ("events_dump.jsonl", &dump, "dump-task")] {
        // Each into a store of its own: what one import kept cannot hide what another missed.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let file = d.join(name);
        std::fs::write(&file, text).unwrap();
        let report = json(d, &["mail", "import", file.to_str().unwrap(), "--json"]);
        assert_eq!(report[0]["errors"], serde_json::json!([]), "{name}: {report}");
        let shown = json(d, &["mail", "show", task_id, "--json"]);
        assert_eq!(shown["messages"].as_array().unwrap().len(), 6, "{name}: every message of the task: {shown}");
        assert_eq!(shown["task"]["state"], "completed", "{name}: a completed task is not marked failed");
    }
}
