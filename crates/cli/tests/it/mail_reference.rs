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

/// `gatehouse mail …` against the MAIL 2.0 reference (mail-swarms-server 2.0.1, its daemon
/// and a scripted agent): the same commands as for 1.3; the server says which it speaks.
#[test]
fn the_same_commands_follow_a_mail_2_server() {
    let Some(r) = gatehouse_mail_testswarm::reference::start_v2() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let url = r.server.url.as_str();

    // A token alone is not enough for a 2.0 server: the user is told what it needs.
    let o = gh_in(d, &["mail", "add", url, "--name", "chorus", "--token-stdin"], "x\n");
    let (_, stderr) = out(&o);
    assert!(!o.status.success() && stderr.contains("speaks MAIL 2.0") && stderr.contains("address"), "{stderr}");
    let o = gh_in(d, &["mail", "add", url, "--name", "chorus", "--address", &r.address, "--password-stdin"], &format!("{}\n", r.password));
    let (stdout, stderr) = out(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.contains("mail 2.0"), "{stdout}");
    assert!(stdout.contains("  health:  {\"status\":\"ok\"}"), "a 2.0 server's health is shown as 1.3's: {stdout}");
    assert!(stdout.contains(&format!("{} (role user)", r.address)), "{stdout}");
    assert!(stdout.contains("swarm:   chorus (1 agent(s))"), "{stdout}");

    // A send waits for the agent's answers and shows them; the conversation is a task.
    let o = gh(d, &["mail", "send", "chorus", "two steps to go", "--subject", "Plan", "--deadline", "60"]);
    let (stdout, stderr) = out(&o);
    assert!(o.status.success(), "{stderr}\n{stdout}");
    assert!(stdout.contains("Working on it.") && stdout.contains("Done: two steps to go"), "{stdout}");
    let last = stdout.lines().last().unwrap();
    assert!(last.contains("completed: Done: two steps to go"), "{stdout}");
    let task = last.split_whitespace().nth(1).unwrap().to_string();
    let shown = json(d, &["mail", "show", &task, "--json"]);
    let senders: Vec<&str> = shown["messages"].as_array().unwrap().iter().map(|m| m["sender"].as_str().unwrap()).collect();
    assert_eq!(senders, [r.address.as_str(), r.agent.as_str(), r.agent.as_str()], "{shown}");

    // An agent that never answers: the send gives up at its deadline and says so.
    let o = gh(d, &["mail", "send", "chorus", "silence please", "--deadline", "3"]);
    let (_, stderr) = out(&o);
    assert!(!o.status.success() && stderr.contains("no answer within 3 s"), "{stderr}");

    // Nothing new: a sync says so; the tasks list has both conversations.
    let o = gh(d, &["mail", "sync", "chorus"]);
    assert!(o.status.success() && out(&o).1.contains("0 new message(s)"), "{:?}", out(&o));
    let tasks = json(d, &["mail", "tasks", "--json"]);
    let states: Vec<(&str, &str)> = tasks.as_array().unwrap().iter().map(|t| (t["subject"].as_str().unwrap(), t["state"].as_str().unwrap())).collect();
    assert!(states.contains(&("Plan", "completed")) && states.contains(&("New Message", "running")), "{states:?}");
}
