//! Schema 31 onwards (see `migrations.rs`): append here. PostgreSQL gets each as a step of
//! `pg/schema.rs` too.

pub(super) const LATER: &[&str] = &[
    // 31: UAMP messages count against their sender's rate limits as every other door's
    // arrivals do, per minute in usage_minutes (they were counted by a query of their own
    // over uamp_messages). The last three days are carried over, as in 14.
    "INSERT INTO usage_minutes (sender, minute, n)
        SELECT sender, received_ms / 60000, count(*) FROM uamp_messages
        WHERE direction = 'in' AND intent NOT IN ('progress', 'cancel') AND received_ms >= (unixepoch() - 3 * 86400) * 1000
        GROUP BY 1, 2
        ON CONFLICT (sender, minute) DO UPDATE SET n = n + excluded.n;",
    // 32: the runner claims what it runs, by node: on a team's gate several nodes run
    // executors from one table, and each envelope must run once.
    "ALTER TABLE envelopes ADD COLUMN claimed_by TEXT;",
    // 33: leases: what one node of a team's gate does for all (reading a mail account),
    // held for a while and renewed, taken over when its node stops renewing.
    "CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, until_ms INTEGER NOT NULL);",
    // 34: usage is counted per writer (`Db::writer`): on a team's gate, nodes that counted
    // one sender's minute in one row waited on each other's commits (measured: three
    // nodes were slower than one). One laptop writes as 0; its counts are carried over.
    "CREATE TABLE usage_minutes_by_writer (
        sender TEXT NOT NULL,
        minute INTEGER NOT NULL,
        writer INTEGER NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (sender, minute, writer)
    ) WITHOUT ROWID;
    INSERT INTO usage_minutes_by_writer (sender, minute, writer, n) SELECT sender, minute, 0, n FROM usage_minutes;
    DROP TABLE usage_minutes;
    ALTER TABLE usage_minutes_by_writer RENAME TO usage_minutes;",
    // 35: the audit log as a hash chain with signed checkpoints (`audit`). The entries
    // already there are chained when the store opens (`Store::seal_audit`).
    "ALTER TABLE audit ADD COLUMN prev_hash TEXT;
    ALTER TABLE audit ADD COLUMN hash TEXT;
    CREATE TABLE audit_head (id INTEGER NOT NULL, hash TEXT NOT NULL);
    INSERT INTO audit_head (id, hash) VALUES (0, '0000000000000000000000000000000000000000000000000000000000000000');
    CREATE TABLE audit_checkpoints (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        through_id INTEGER NOT NULL,
        hash TEXT NOT NULL,
        public_key TEXT NOT NULL,
        signature TEXT NOT NULL
    );",
    // 36: approvers, the devices that may decide what waits (`approvers`).
    "CREATE TABLE approvers (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        public_key TEXT NOT NULL UNIQUE,
        added_at TEXT NOT NULL,
        last_seen TEXT,
        page_url TEXT
    );
    CREATE TABLE approver_invites (
        code_sha256 TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_ms INTEGER NOT NULL,
        used_by TEXT,
        page_url TEXT
    );
    CREATE TABLE approver_nonces (
        approver_id TEXT NOT NULL,
        nonce TEXT NOT NULL,
        expires_ms INTEGER NOT NULL,
        PRIMARY KEY (approver_id, nonce)
    );
    CREATE TABLE approver_mail (
        approver_id TEXT PRIMARY KEY,
        email TEXT NOT NULL,
        per_hour INTEGER NOT NULL,
        quiet_from TEXT,
        quiet_to TEXT
    );",
    // 37: quorum rules, and the votes of approvers on what waits (`quorum`).
    "CREATE TABLE quorum_rules (
        id INTEGER PRIMARY KEY,
        scope TEXT,
        sender TEXT,
        need INTEGER NOT NULL,
        approvers TEXT NOT NULL,
        deny_ends INTEGER NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE quorum_items (
        item TEXT NOT NULL,
        digest TEXT NOT NULL,
        decided TEXT,
        decided_at TEXT,
        PRIMARY KEY (item, digest)
    );
    CREATE TABLE quorum_votes (
        item TEXT NOT NULL,
        digest TEXT NOT NULL,
        approver_id TEXT NOT NULL,
        n INTEGER NOT NULL,
        decision TEXT NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (item, digest, approver_id)
    );",
    // 38: the deciding state, sealed (`seal`): each protected row's hash and version,
    // signed by the gate's key, and one signed head over all of them.
    "CREATE TABLE seals (
        tbl TEXT NOT NULL,
        id TEXT NOT NULL,
        version INTEGER NOT NULL,
        hash TEXT NOT NULL,
        signer TEXT NOT NULL,
        signature TEXT NOT NULL,
        PRIMARY KEY (tbl, id)
    );
    CREATE TABLE seal_head (
        version INTEGER NOT NULL,
        rows INTEGER NOT NULL,
        digest TEXT NOT NULL,
        signer TEXT NOT NULL,
        signature TEXT NOT NULL
    );",
    // 39: a vote keeps the device's signed request that cast it (`quorum`).
    "ALTER TABLE quorum_votes ADD COLUMN proof TEXT;",
    // 40: the checkpoints approver devices hold, witnesses of the audit log (`audit`).
    "CREATE TABLE audit_witnesses (
        approver_id TEXT PRIMARY KEY,
        at TEXT NOT NULL,
        through_id INTEGER NOT NULL,
        hash TEXT NOT NULL,
        public_key TEXT NOT NULL,
        signature TEXT NOT NULL,
        seen_at TEXT NOT NULL
    );",
    // 41: the door each envelope came by (what reads its bytes again is that door's):
    // those kept before came by EPP, or by A2A where their transport says so.
    "ALTER TABLE envelopes ADD COLUMN door TEXT NOT NULL DEFAULT 'epp';
    UPDATE envelopes SET door = 'a2a' WHERE transport = 'a2a';",
    // 42: what became of each arrival in no door's words, beside its door's code.
    super::RECEIPT_OUTCOMES,
    // 43: the executor chosen when a UAMP ask was accepted (what runs once it is allowed).
    super::STREAM_EXECUTORS,
    // 44: what only one door knows about a trust entry, in the door's own table, and the
    // door each entry came by (`entry_facts`).
    ENTRY_FACTS,
    // 45: a change to what a door keeps about an entry changes admission, as the entry's own.
    "CREATE TRIGGER epp_entries_ins AFTER INSERT ON epp_entries BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER epp_entries_upd AFTER UPDATE ON epp_entries BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER epp_entries_del AFTER DELETE ON epp_entries BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER uamp_entries_ins AFTER INSERT ON uamp_entries BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER uamp_entries_upd AFTER UPDATE ON uamp_entries BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER uamp_entries_del AFTER DELETE ON uamp_entries BEGIN UPDATE admission_version SET n = n + 1; END;",
    // 46: an MCP server's tools as the user let them in, and what it lists that differs.
    MCP_TOOLS,
    // 47: what answered a step that went on (an MCP call's result, read for risks).
    STEP_ANSWERS,
    // 48: what the user decided on a knock, and the knock a delivery let in.
    KNOCK_OUTCOMES,
];

/// Step 48 (PostgreSQL's 18): a knock's receipt keeps what the user decided on it and when;
/// the receipt of a message a decision let in names the knock it came as, so the inbox
/// shows one row per arrival. Shown only: nothing is decided on them.
pub(crate) const KNOCK_OUTCOMES: &str = "ALTER TABLE receipts ADD COLUMN decided TEXT;
    ALTER TABLE receipts ADD COLUMN decided_at TEXT;
    ALTER TABLE receipts ADD COLUMN after_knock TEXT;
    CREATE INDEX receipts_after_knock ON receipts (after_knock);";

/// Step 47 (PostgreSQL's 17): what answered a step that went on, and the indexes an
/// agent's timeline and an answer's step are found by.
pub(crate) const STEP_ANSWERS: &str = "ALTER TABLE asop_steps ADD COLUMN answer TEXT;
    CREATE INDEX asop_steps_agent ON asop_steps (agent_id, row);
    CREATE INDEX asop_steps_step ON asop_steps (step_id);";

/// Step 46 (PostgreSQL's 16): MCP servers' pinned tools (sealed) and offered ones (`mcp`).
pub(crate) const MCP_TOOLS: &str = "CREATE TABLE mcp_pins (
        id TEXT PRIMARY KEY,
        server TEXT NOT NULL,
        tool TEXT NOT NULL,
        pin TEXT NOT NULL,
        digest TEXT NOT NULL,
        at TEXT NOT NULL
    );
    CREATE INDEX mcp_pins_server ON mcp_pins (server);
    CREATE TABLE mcp_offers (
        server TEXT NOT NULL,
        tool TEXT NOT NULL,
        pin TEXT NOT NULL,
        digest TEXT NOT NULL,
        seen_at TEXT NOT NULL,
        refused INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (server, tool)
    );";

/// Step 44's tables and column, as both engines write them (PostgreSQL's 14; each engine
/// adds its own triggers next). Entries kept before are moved by `Store::move_entry_facts`, which signs
/// what it moves (SQL cannot).
pub(crate) const ENTRY_FACTS: &str = "ALTER TABLE trust ADD COLUMN door TEXT;
    CREATE TABLE epp_entries (public_key TEXT PRIMARY KEY, reply_endpoint TEXT, mail_address TEXT, capabilities TEXT);
    CREATE TABLE uamp_entries (public_key TEXT PRIMARY KEY, keys TEXT NOT NULL);";
