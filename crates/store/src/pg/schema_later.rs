//! PostgreSQL's schema steps from 9 on (each beside the SQLite step it mirrors); steps 1
//! to 8 are in `schema.rs`.

pub(super) const LATER: &[&str] = &[
    // 9: SQLite's 39, a vote keeps its proof.
    "ALTER TABLE quorum_votes ADD COLUMN proof TEXT;",
    // 10: SQLite's 40, approver devices' checkpoints.
    r#"
CREATE TABLE audit_witnesses (
    approver_id TEXT PRIMARY KEY,
    at TEXT NOT NULL,
    through_id BIGINT NOT NULL,
    hash TEXT NOT NULL,
    public_key TEXT NOT NULL,
    signature TEXT NOT NULL,
    seen_at TEXT NOT NULL
    );
"#,
    // 11: SQLite's 41, the door each envelope came by.
    "ALTER TABLE envelopes ADD COLUMN door TEXT NOT NULL DEFAULT 'epp';
    UPDATE envelopes SET door = 'a2a' WHERE transport = 'a2a';",
    // 12: SQLite's 42, each receipt's outcome.
    crate::migrations::RECEIPT_OUTCOMES,
    // 13: SQLite's 43, the executor chosen when a UAMP ask was accepted.
    crate::migrations::STREAM_EXECUTORS,
    // 14: SQLite's 44, what only one door knows about a trust entry, and each entry's door.
    crate::migrations::ENTRY_FACTS,
    // 15: SQLite's 45, a change to them changes admission.
    "CREATE TRIGGER epp_entries_changed AFTER INSERT OR UPDATE OR DELETE ON epp_entries FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_admission_changed();
    CREATE TRIGGER uamp_entries_changed AFTER INSERT OR UPDATE OR DELETE ON uamp_entries FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_admission_changed();",
    // 16: SQLite's 46, MCP servers' pinned and offered tools.
    crate::migrations::MCP_TOOLS,
    // 17: SQLite's 47, what answered a step that went on.
    crate::migrations::STEP_ANSWERS,
    // 18: SQLite's 48, what the user decided on a knock, and the knock a delivery let in.
    crate::migrations::KNOCK_OUTCOMES,
];
