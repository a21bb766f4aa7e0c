// Keep in step with `generate_handler!` in lib.rs: listing each command lets the
// capability file name exactly what the window may call.
const COMMANDS: &[&str] = &[
    "app_info", "inbox_list", "inbox_detail", "conversation", "trust_list", "trust_add", "trust_update",
    "trust_remove", "trust_block", "trust_unblock", "blocked_list", "consent_list", "consent_decide",
    "audit_list", "settings_set", "retention_get", "retention_set", "inbox_pause", "executors_get", "executors_set", "identity_qr", "export_json",
    "uamp_info", "pick_path", "uamp_token_issue", "uamp_token_revoke", "uamp_discover", "uamp_peer_add", "uamp_peers", "uamp_peer_remove", "uamp_ask",
    "uamp_cancel", "uamp_streams", "uamp_stream_detail",
    "mail_swarms", "mail_swarm_add", "mail_swarm_refresh", "mail_swarm_remove", "mail_send", "mail_interswarm", "mail_tasks", "mail_task", "mail_import",
    "iw_sites", "iw_site_add", "iw_site_remove", "iw_start", "iw_reply", "iw_pin", "iw_conversations", "iw_conversation", "iw_open_link",
    "asop_pending", "asop_answer", "asop_rules", "asop_rule_add", "asop_rule_remove", "asop_sessions", "asop_session",
    "replies_for", "reply_send", "executor_retry",
];

fn main() {
    tauri_build::try_build(tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)))
        .expect("tauri build script");
}
