//! The shell's own pure helpers (everything else it does is a call into the core crates,
//! tested there and in the real window).

use gatehouse_app::replies::order_by_replies;
use gatehouse_app::trust::fingerprint;
use gatehouse_store::{EnvelopeRow, ExecStatus};

fn env(id: i64, envelope_id: &str, reply_to: Option<&str>) -> EnvelopeRow {
    EnvelopeRow {
        id,
        envelope_id: envelope_id.into(),
        sender: "ab".repeat(32),
        recipient: "cd".repeat(32),
        scope: "support".into(),
        payload_type: None,
        conversation_id: Some("c".into()),
        in_reply_to: reply_to.map(String::from),
        on_behalf_of: None,
        prompt: envelope_id.into(),
        timestamp: String::new(),
        expires_at: String::new(),
        received_at: String::new(),
        transport: "http".into(),
        signed_form: "reference".into(),
        raw: String::new(),
        receipt_id: format!("r{id}"),
        executor: "noop".into(),
        exec_status: ExecStatus::Succeeded,
        exec_result: None,
        exec_updated_at: None,
        executor_spec: None,
        door: "epp".into(),
    }
}

#[test]
fn conversations_follow_reply_chains_not_arrival_order() {
    // Arrival order: q1, q2, a1 (answers q1), a1b (answers a1), orphan (answers something absent).
    let rows = vec![env(1, "q1", None), env(2, "q2", None), env(3, "a1", Some("q1")), env(4, "a1b", Some("a1")), env(5, "orphan", Some("gone"))];
    let order: Vec<(String, usize)> = order_by_replies(rows).into_iter().map(|(e, d)| (e.envelope_id, d)).collect();
    let expect = [("q1", 0), ("a1", 1), ("a1b", 2), ("q2", 0), ("orphan", 0)];
    assert_eq!(order, expect.iter().map(|(s, d)| (s.to_string(), *d)).collect::<Vec<_>>());
}

#[test]
fn reply_cycles_still_show_every_message_once() {
    let rows = vec![env(1, "x", Some("y")), env(2, "y", Some("x"))];
    let order = order_by_replies(rows);
    assert_eq!(order.len(), 2);
}

#[test]
fn fingerprints_group_the_first_sixteen_hex_digits() {
    assert_eq!(fingerprint("d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737"), "d04a b232 742b b4ab");
}

#[test]
fn a_new_program_or_queue_folder_is_put_to_the_user_and_nothing_else_is() {
    use gatehouse_app::doors::{ExecutorConfig, ExecutorSpec};
    let mut before = ExecutorConfig::default();
    before.scopes.insert("support".into(), ExecutorSpec::Command { program: "/usr/bin/agent".into(), args: vec!["--fast".into()], timeout_secs: 30 });
    let same = before.clone();
    assert!(gatehouse_app::executors::new_programs_and_folders(&before, &same).is_empty(), "an unchanged program is not asked about again");
    let mut after = before.clone();
    after.scopes.insert("support".into(), ExecutorSpec::Command { program: "/usr/bin/agent".into(), args: vec!["--rm-rf".into()], timeout_secs: 30 });
    after.scopes.insert("archive".into(), ExecutorSpec::FileQueue { dir: "/home/u/queue".into() });
    after.scopes.insert("ai".into(), ExecutorSpec::Noop);
    let asks = gatehouse_app::executors::new_programs_and_folders(&before, &after);
    assert_eq!(asks.len(), 2, "{asks:?}");
    assert!(asks.iter().any(|a| a.contains("/usr/bin/agent --rm-rf") && a.contains("\"support\"")), "{asks:?}");
    assert!(asks.iter().any(|a| a.contains("/home/u/queue") && a.contains("\"archive\"")), "{asks:?}");
}
