//! Schema migrations, tracked in `PRAGMA user_version`. Append only: never edit a
//! migration that has shipped.

use rusqlite::Connection;

use crate::{Result, StoreError};

/// Schema 1 to 30; the later ones are in `migrations/later.rs`.
const EARLY: &[&str] = &[
    // 1: EPP inbox
    "CREATE TABLE trust (
        public_key TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        added_at TEXT NOT NULL,
        policy TEXT NOT NULL
    );
    CREATE TABLE pending_senders (
        public_key TEXT PRIMARY KEY,
        first_seen TEXT NOT NULL,
        last_seen TEXT NOT NULL,
        count INTEGER NOT NULL,
        scopes TEXT NOT NULL,
        last_envelope_id TEXT
    );
    CREATE TABLE nonces (
        nonce BLOB PRIMARY KEY,
        expires_at_ms INTEGER NOT NULL,
        envelope_id TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX nonces_expiry ON nonces(expires_at_ms);
    CREATE TABLE envelopes (
        id INTEGER PRIMARY KEY,
        envelope_id TEXT NOT NULL,
        sender TEXT NOT NULL,
        recipient TEXT NOT NULL,
        scope TEXT NOT NULL,
        payload_type TEXT,
        conversation_id TEXT,
        in_reply_to TEXT,
        on_behalf_of TEXT,
        prompt TEXT NOT NULL,
        timestamp TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        received_at TEXT NOT NULL,
        received_ms INTEGER NOT NULL,
        transport TEXT NOT NULL,
        signed_form TEXT NOT NULL,
        raw TEXT NOT NULL,
        raw_sha256 TEXT NOT NULL,
        receipt_id TEXT NOT NULL UNIQUE,
        executor TEXT NOT NULL,
        exec_status TEXT NOT NULL,
        exec_result TEXT,
        exec_updated_at TEXT
    );
    CREATE INDEX envelopes_sender_time ON envelopes(sender, received_ms);
    CREATE INDEX envelopes_conversation ON envelopes(conversation_id);
    CREATE INDEX envelopes_raw_sha ON envelopes(raw_sha256);
    CREATE INDEX envelopes_exec_status ON envelopes(exec_status);
    CREATE TABLE receipts (
        seq INTEGER PRIMARY KEY,
        receipt_id TEXT NOT NULL UNIQUE,
        envelope_id TEXT,
        status TEXT NOT NULL,
        code TEXT,
        message TEXT,
        received_at TEXT NOT NULL,
        received_ms INTEGER NOT NULL,
        transport TEXT NOT NULL,
        sender TEXT,
        scope TEXT,
        body TEXT,
        body_truncated INTEGER NOT NULL DEFAULT 0,
        receipt TEXT NOT NULL
    );
    CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    // 2: the desktop inbox: searchable, filterable receipts; blocked senders; audit log
    "ALTER TABLE receipts ADD COLUMN prompt TEXT;
    ALTER TABLE receipts ADD COLUMN envelope_row INTEGER REFERENCES envelopes(id);
    CREATE INDEX receipts_sender ON receipts(sender, seq);
    CREATE INDEX receipts_scope ON receipts(scope, seq);
    CREATE INDEX receipts_status ON receipts(status, seq);
    CREATE INDEX receipts_transport ON receipts(transport, seq);
    CREATE VIRTUAL TABLE receipts_fts USING fts5(prompt, content='receipts', content_rowid='seq');
    CREATE TRIGGER receipts_fts_insert AFTER INSERT ON receipts WHEN new.prompt IS NOT NULL BEGIN
        INSERT INTO receipts_fts(rowid, prompt) VALUES (new.seq, new.prompt);
    END;
    CREATE TABLE blocked (
        public_key TEXT PRIMARY KEY,
        blocked_at TEXT NOT NULL,
        reason TEXT NOT NULL
    );
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        action TEXT NOT NULL,
        subject TEXT,
        detail TEXT NOT NULL
    );",
    // 3: speed. The raw-hash index cost a random page write per acceptance and served
    // only crash recovery, which now finds the envelope through its nonce.
    "DROP INDEX envelopes_raw_sha;
    ALTER TABLE nonces ADD COLUMN envelope_row INTEGER;",
    // 4: prompts are indexed for search in batches by the committer (one FTS segment per
    // batch instead of one per commit); everything before this point is indexed already.
    "DROP TRIGGER receipts_fts_insert;
    CREATE TABLE search_progress (last_seq INTEGER NOT NULL);
    INSERT INTO search_progress (last_seq) SELECT coalesce(max(seq), 0) FROM receipts;",
    // 5: UAMP. Messages both ways (the unique message id is the durable replay check),
    // streams with their state machine and back-pressure counters, every delta kept so a
    // consumer can resume, and bearer tokens (only their SHA-256 is stored).
    "CREATE TABLE uamp_messages (
        id INTEGER PRIMARY KEY,
        message_id TEXT NOT NULL UNIQUE,
        direction TEXT NOT NULL,
        sender TEXT NOT NULL,
        recipients TEXT NOT NULL,
        intent TEXT NOT NULL,
        stream_id TEXT,
        reply_to TEXT,
        thread TEXT NOT NULL,
        scope TEXT,
        body_type TEXT NOT NULL,
        content TEXT NOT NULL,
        ts TEXT NOT NULL,
        received_at TEXT NOT NULL,
        received_ms INTEGER NOT NULL,
        raw TEXT NOT NULL,
        receipt_id TEXT NOT NULL
    );
    CREATE INDEX uamp_messages_thread ON uamp_messages(thread, id);
    CREATE TABLE uamp_streams (
        stream_id TEXT PRIMARY KEY,
        message_row INTEGER NOT NULL REFERENCES uamp_messages(id),
        direction TEXT NOT NULL,
        peer TEXT NOT NULL,
        state TEXT NOT NULL,
        delta_window INTEGER NOT NULL,
        next_seq INTEGER NOT NULL DEFAULT 0,
        acked_seq INTEGER NOT NULL DEFAULT -1,
        updated_at TEXT NOT NULL,
        detail TEXT
    );
    CREATE TABLE uamp_deltas (
        stream_id TEXT NOT NULL,
        delta_seq INTEGER NOT NULL,
        frame TEXT NOT NULL,
        PRIMARY KEY (stream_id, delta_seq)
    ) WITHOUT ROWID;
    CREATE TABLE uamp_tokens (
        token_sha256 TEXT PRIMARY KEY,
        sender TEXT NOT NULL,
        created_at TEXT NOT NULL
    );",
    // 6: UAMP peers Gatehouse sends to (their certificate pinned when the user added
    // them; the bearer token they issued lives in the OS keychain, not here), and the
    // file an outgoing stream's chunks were reassembled into.
    "CREATE TABLE uamp_peers (
        did TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        url TEXT NOT NULL,
        cert_sha256 TEXT NOT NULL,
        manifest TEXT NOT NULL,
        added_at TEXT NOT NULL
    );
    ALTER TABLE uamp_streams ADD COLUMN file TEXT;
    ALTER TABLE uamp_streams ADD COLUMN mime TEXT;
    ALTER TABLE uamp_streams ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;",
    // 7: MAIL swarms the user connected (tokens in the OS keychain, not here) and the
    // tasks followed live or imported from logs, by task_id so multi-turn tasks and
    // history survive restarts.
    "CREATE TABLE mail_swarms (
        name TEXT PRIMARY KEY,
        base_url TEXT NOT NULL,
        added_at TEXT NOT NULL,
        info TEXT
    );
    CREATE TABLE mail_tasks (
        task_id TEXT PRIMARY KEY,
        swarm TEXT,
        source TEXT NOT NULL,
        subject TEXT NOT NULL,
        state TEXT NOT NULL,
        response TEXT,
        task_owner TEXT,
        contributors TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE mail_messages (
        row INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        ts TEXT NOT NULL,
        msg_type TEXT NOT NULL,
        tier INTEGER NOT NULL,
        sender TEXT NOT NULL,
        recipients TEXT NOT NULL,
        subject TEXT NOT NULL,
        body TEXT NOT NULL,
        system_error INTEGER NOT NULL,
        raw TEXT NOT NULL,
        UNIQUE (task_id, id)
    );
    CREATE INDEX mail_messages_task ON mail_messages(task_id, row);
    CREATE TABLE mail_events (
        row INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        event TEXT NOT NULL,
        at TEXT,
        description TEXT NOT NULL,
        data TEXT
    );
    CREATE INDEX mail_events_task ON mail_events(task_id, row);",
    // 8: IntentWeb sites (their manifest as fetched; the key the user pinned lives in the
    // trust registry, its did:key noted here), conversations by interaction_id, every
    // message both ways with what checking it found, and the nonces already accepted.
    "CREATE TABLE iw_sites (
        origin TEXT PRIMARY KEY,
        company TEXT NOT NULL,
        manifest TEXT NOT NULL,
        yaml TEXT NOT NULL,
        last_updated TEXT NOT NULL,
        fetched_at TEXT NOT NULL,
        site_key TEXT
    );
    CREATE TABLE iw_conversations (
        interaction_id TEXT PRIMARY KEY,
        origin TEXT NOT NULL,
        endpoint TEXT NOT NULL,
        capability TEXT,
        initial TEXT NOT NULL,
        query_hash TEXT NOT NULL,
        state TEXT NOT NULL,
        status TEXT,
        external_id TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE iw_messages (
        row INTEGER PRIMARY KEY,
        interaction_id TEXT NOT NULL,
        direction TEXT NOT NULL,
        flow_type TEXT NOT NULL,
        message TEXT NOT NULL,
        html TEXT,
        envelope TEXT NOT NULL,
        verdict TEXT,
        warning TEXT,
        accepted INTEGER NOT NULL,
        at TEXT NOT NULL
    );
    CREATE INDEX iw_messages_conv ON iw_messages(interaction_id, row);
    CREATE TABLE iw_nonces (
        origin TEXT NOT NULL,
        nonce TEXT NOT NULL,
        PRIMARY KEY (origin, nonce)
    ) WITHOUT ROWID;",
    // 9: the ASOP guardian: the user's rules, every step an agent asked about with the
    // decision and who made it, and each agent's ping timeout.
    "CREATE TABLE asop_rules (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        method TEXT NOT NULL,
        tool TEXT NOT NULL,
        condition TEXT,
        action TEXT NOT NULL,
        redact TEXT,
        note TEXT,
        source TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE asop_steps (
        row INTEGER PRIMARY KEY,
        session_id TEXT,
        turn_id TEXT,
        step_id TEXT,
        agent_id TEXT,
        agent_name TEXT,
        method TEXT NOT NULL,
        summary TEXT NOT NULL,
        reasoning TEXT,
        request TEXT NOT NULL,
        decision TEXT NOT NULL,
        message TEXT,
        rule_id INTEGER,
        decided_by TEXT,
        created_at TEXT NOT NULL,
        decided_at TEXT
    );
    CREATE INDEX asop_steps_session ON asop_steps(session_id, row);
    CREATE TABLE asop_agents (
        agent_id TEXT PRIMARY KEY,
        timeout_ms INTEGER,
        last_ping TEXT
    );",
    // 10: answers sent back to senders: drafted when an executor finishes, sent (signed
    // EPP envelopes in the same conversation) automatically or after the user approves.
    "CREATE TABLE replies (
        id INTEGER PRIMARY KEY,
        envelope_row INTEGER NOT NULL,
        in_reply_to TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        recipient TEXT NOT NULL,
        endpoint TEXT NOT NULL,
        scope TEXT NOT NULL,
        text TEXT NOT NULL,
        state TEXT NOT NULL,
        sent_envelope TEXT,
        receipt TEXT,
        error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX replies_conversation ON replies(conversation_id, id);
    CREATE INDEX replies_envelope ON replies(envelope_row);",
    // 11: speed. Nonces get a row id in arrival order: the table and the expiry index
    // (whose entries end in the row id, not the nonce) now grow at their end, so an
    // acceptance dirties one random page (the nonce's unique index) instead of two
    // (the nonce-keyed table and an expiry index ordered by nonce within a timestamp).
    // The envelope id was never read from here; the envelope row says everything.
    "CREATE TABLE nonces_by_arrival (
        id INTEGER PRIMARY KEY,
        nonce BLOB NOT NULL UNIQUE,
        expires_at_ms INTEGER NOT NULL,
        envelope_row INTEGER
    );
    INSERT INTO nonces_by_arrival (nonce, expires_at_ms, envelope_row)
        SELECT nonce, expires_at_ms, envelope_row FROM nonces ORDER BY expires_at_ms;
    DROP TABLE nonces;
    ALTER TABLE nonces_by_arrival RENAME TO nonces;
    CREATE INDEX nonces_expiry ON nonces(expires_at_ms);",
    // 12: a version of everything that decides admission (trust, blocks, settings),
    // bumped by any write from any process, so an inbox may keep what it read about a
    // sender until the version moves instead of reading it again for every envelope.
    "CREATE TABLE admission_version (n INTEGER NOT NULL);
    INSERT INTO admission_version (n) VALUES (0);
    CREATE TRIGGER trust_ins AFTER INSERT ON trust BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER trust_upd AFTER UPDATE ON trust BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER trust_del AFTER DELETE ON trust BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER blocked_ins AFTER INSERT ON blocked BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER blocked_upd AFTER UPDATE ON blocked BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER blocked_del AFTER DELETE ON blocked BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER settings_ins AFTER INSERT ON settings BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER settings_upd AFTER UPDATE ON settings BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER settings_del AFTER DELETE ON settings BEGIN UPDATE admission_version SET n = n + 1; END;",
    // 13: speed. The per-sender index of receipts cost a page per sender in every commit
    // (ten senders, ten leaves rewritten per batch); it is now a table the committer fills
    // in batches with the search index, up to the same watermark. Queries by sender read
    // it and scan the few receipts stored since (see `Store::inbox`).
    "CREATE TABLE receipts_by_sender (
        sender TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (sender, seq)
    ) WITHOUT ROWID;
    INSERT INTO receipts_by_sender (sender, seq)
        SELECT sender, seq FROM receipts
        WHERE sender IS NOT NULL AND seq <= (SELECT last_seq FROM search_progress);
    DROP INDEX receipts_sender;",
    // 14: speed. The index of envelopes by (sender, time) existed for rate limits and
    // "used today", and cost a leaf per sender in every commit; acceptances are now
    // counted per sender per minute (a handful of rows, rewritten in place). Three days
    // are carried over: enough for the day window and a day that started 26 hours ago.
    "CREATE TABLE usage_minutes (
        sender TEXT NOT NULL,
        minute INTEGER NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (sender, minute)
    ) WITHOUT ROWID;
    INSERT INTO usage_minutes (sender, minute, n)
        SELECT sender, received_ms / 60000, count(*) FROM envelopes
        WHERE received_ms >= (unixepoch() - 3 * 86400) * 1000
        GROUP BY 1, 2;
    DROP INDEX envelopes_sender_time;",
    // 15: MAIL messages kept although off the schema (the reference server's agents send
    // `sender_swarm: null`) say where they depart from it.
    "ALTER TABLE mail_messages ADD COLUMN odd TEXT;",
    // 16: EPP v1.1 sender revocation. A revoked key keeps its trust entry (its history is
    // the user's) but is refused with SENDER_REVOKED; admission reads it with the rest.
    "CREATE TABLE revoked (
        public_key TEXT PRIMARY KEY,
        revoked_at TEXT NOT NULL,
        reason TEXT NOT NULL DEFAULT ''
    ) WITHOUT ROWID;
    CREATE TRIGGER revoked_ins AFTER INSERT ON revoked BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER revoked_upd AFTER UPDATE ON revoked BEGIN UPDATE admission_version SET n = n + 1; END;
    CREATE TRIGGER revoked_del AFTER DELETE ON revoked BEGIN UPDATE admission_version SET n = n + 1; END;",
    // 17: MAIL 2.0 conversations are found by a message they contain (an answer's
    // reply_to) or by their subject on a swarm (an answer without one), at every sync.
    "CREATE INDEX mail_messages_id ON mail_messages(id);
    CREATE INDEX mail_tasks_swarm_subject ON mail_tasks(swarm, subject);",
    // 18: mail accounts followed over IMAP for envelopes, with how far each was read.
    "CREATE TABLE email_accounts (
        name TEXT PRIMARY KEY,
        account TEXT NOT NULL,
        added_at TEXT NOT NULL,
        uid_validity INTEGER,
        last_uid INTEGER NOT NULL DEFAULT 0,
        state TEXT NOT NULL DEFAULT 'new',
        last_error TEXT,
        last_sync TEXT
    );",
    // 19: mail going out (receipts mailed back, answers and envelopes sent by mail), kept
    // until the submission server took it; and what each envelope mail said about itself
    // (unverified: the key is the identity) with whether its receipt was mailed back, and
    // which mail it was (a mail seen again after a crash is filed, not submitted again).
    "CREATE TABLE email_outbox (
        id INTEGER PRIMARY KEY,
        account TEXT NOT NULL,
        kind TEXT NOT NULL,
        receipt_id TEXT,
        to_addr TEXT NOT NULL,
        message BLOB NOT NULL,
        state TEXT NOT NULL DEFAULT 'queued',
        attempts INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        created_at TEXT NOT NULL,
        sent_at TEXT
    );
    CREATE INDEX email_outbox_queued ON email_outbox(account, state, id);
    CREATE TABLE email_arrivals (
        receipt_id TEXT PRIMARY KEY,
        account TEXT NOT NULL,
        uid_validity INTEGER NOT NULL,
        uid INTEGER NOT NULL,
        from_addr TEXT,
        message_id TEXT,
        subject TEXT,
        outbox_id INTEGER,
        not_mailed TEXT
    ) WITHOUT ROWID;
    CREATE INDEX email_arrivals_uid ON email_arrivals(account, uid_validity, uid);",
    // 20: how many mails wait in an account's folder beyond those handled (Settings shows it).
    "ALTER TABLE email_accounts ADD COLUMN backlog INTEGER NOT NULL DEFAULT 0;",
    // 21: risk flags the user dismissed, by message (envelope or UAMP stream), kind and
    // where in the text (flags are computed again from the text each time).
    "CREATE TABLE risk_dismissed (
        message_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        start INTEGER NOT NULL,
        dismissed_at TEXT NOT NULL,
        PRIMARY KEY (message_id, kind, start)
    ) WITHOUT ROWID;",
    // 22: prompts the user said "ask me later" to: what waits (a sender, an envelope row, a
    // UAMP stream, named as the audit names them) and until when it stays out of the way.
    "CREATE TABLE consent_later (
        target TEXT PRIMARY KEY,
        until TEXT NOT NULL,
        deferred_at TEXT NOT NULL
    ) WITHOUT ROWID;",
    // 23: contacts: one person or organisation holding keys of any protocol (EPP keys,
    // UAMP DIDs, IntentSite keys, guardian agents). Each trusted key belongs to one; a key
    // joins a contact only by the user's word. A key checked out of band is verified; a
    // key that joined a verified contact (`changed_from`) stays blocked until it is.
    "CREATE TABLE contacts (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE contact_keys (
        key TEXT PRIMARY KEY,
        contact_id INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
        added_at TEXT NOT NULL,
        verified_at TEXT,
        changed_from TEXT
    ) WITHOUT ROWID;
    CREATE INDEX contact_keys_contact ON contact_keys(contact_id);
    INSERT INTO contacts (id, name, created_at) SELECT rowid, name, added_at FROM trust;
    INSERT INTO contact_keys (key, contact_id, added_at) SELECT public_key, rowid, added_at FROM trust;",
    // 24: a guardian rule the user made from an answer "for 1 hour" or "until tonight"
    // ends then (NULL: for good); an ended rule no longer decides, so the step asks again.
    "ALTER TABLE asop_rules ADD COLUMN until TEXT;",
    // 25: a trusted sender signed with a key that is not among those kept for it (a
    // did:web whose DID document may have changed): one row per sender, until the user
    // checks its DID document again or keeps the keys as they are.
    "CREATE TABLE key_changes (
        sender TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        reason TEXT NOT NULL,
        first_seen TEXT NOT NULL,
        last_seen TEXT NOT NULL,
        count INTEGER NOT NULL
    ) WITHOUT ROWID;",
    // 26: envelopes whose receipt went back by mail (sender, envelope id): each is
    // answered once, on its first arrival, and they are what the per-sender and
    // per-account rate of receipt mails counts. Kept a little longer than an envelope
    // can stay valid.
    "CREATE TABLE email_answered (
        sender TEXT NOT NULL,
        envelope_id TEXT NOT NULL,
        account TEXT NOT NULL,
        at_ms INTEGER NOT NULL,
        PRIMARY KEY (sender, envelope_id)
    ) WITHOUT ROWID;
    CREATE INDEX email_answered_account ON email_answered(account, at_ms);
    CREATE INDEX email_answered_sender ON email_answered(sender, at_ms);
    CREATE INDEX email_answered_age ON email_answered(at_ms);",
    // 27: safety codes now have a half per side (a substitution needs a second preimage,
    // not a collision); a key verified by comparing the old 20-digit code, or a did:web
    // verified by pasting its own DID (which names no key), keeps its mark but says why
    // it should be verified again, until it is.
    "ALTER TABLE contact_keys ADD COLUMN reverify TEXT;
    UPDATE contact_keys SET reverify = 'verified with the old 20-digit safety code, which a man in the middle could match by precomputation: compare the new code to keep it verified'
     WHERE verified_at IS NOT NULL AND EXISTS (SELECT 1 FROM audit WHERE action = 'contact.verify' AND subject = contact_keys.key AND json_extract(detail, '$.how') = 'safety codes compared');
    UPDATE contact_keys SET reverify = 'verified by pasting its DID, which names no key: compare the safety code, or paste one of its keys (did:key:…)'
     WHERE verified_at IS NOT NULL AND reverify IS NULL AND key LIKE 'did:web:%';",
    // 28: mails too large to read (over 4 MiB) are left where they are, never filed; those
    // whose structure shows an envelope part are counted for the user.
    "ALTER TABLE email_accounts ADD COLUMN left_large INTEGER NOT NULL DEFAULT 0;",
    // 29: the executor admission chose, whole (JSON), so the runner runs that one or says
    // it changed, never another under the name the receipt gave.
    "ALTER TABLE envelopes ADD COLUMN executor_spec TEXT;",
    // 30: the door an unknown sender knocked at, recorded by that door: what the prompt
    // says it is follows from where it arrived, never from the shape of its key. Rows
    // from before are named by the rule that decided it until now.
    "ALTER TABLE pending_senders ADD COLUMN door TEXT NOT NULL DEFAULT 'epp';
    UPDATE pending_senders SET door = 'guardian' WHERE public_key LIKE 'asop:%';
    UPDATE pending_senders SET door = 'intentweb' WHERE door = 'epp' AND EXISTS (SELECT 1 FROM json_each(pending_senders.scopes) WHERE value = 'intentweb');
    UPDATE pending_senders SET door = 'uamp' WHERE door = 'epp' AND public_key LIKE 'did:%';",
];

mod later;
pub(crate) use later::{ENTRY_FACTS, KNOCK_OUTCOMES, MCP_TOOLS, STEP_ANSWERS};

/// Step 42 (PostgreSQL's 12): what became of each arrival in no door's words, beside its
/// door's code, so a knock is found as one, never by EPP's UNTRUSTED_SENDER (which a
/// block also says). Receipts kept before are named by their code and words where those
/// tell; the rest stay unnamed.
pub(crate) const RECEIPT_OUTCOMES: &str = "ALTER TABLE receipts ADD COLUMN outcome TEXT;
    UPDATE receipts SET outcome = CASE
        WHEN status = 'accepted' THEN 'accepted'
        WHEN code = 'UNTRUSTED_SENDER' AND message LIKE '%has been asked%' THEN 'knock'
        WHEN code = 'UNTRUSTED_SENDER' AND message LIKE '%blocked%' THEN 'blocked'
        WHEN code = 'SENDER_REVOKED' THEN 'revoked'
        WHEN code = 'POLICY_DENIED' THEN 'not_allowed'
        WHEN code = 'SIZE_EXCEEDED' THEN 'too_large'
        WHEN code = 'RATE_LIMITED' THEN 'rate_limited'
        WHEN code = 'REPLAY_DETECTED' THEN 'replay'
        WHEN code IN ('INVALID_FORMAT', 'UNSUPPORTED_VERSION', 'INTEGRITY_MISMATCH') THEN 'malformed'
        WHEN code IN ('INVALID_SIGNATURE', 'PROVENANCE_INVALID') THEN 'unproven'
        WHEN code = 'EXPIRED' THEN 'stale'
        WHEN code = 'WRONG_RECIPIENT' THEN 'wrong_recipient'
        WHEN code = 'INTERNAL_ERROR' THEN 'internal'
        WHEN code LIKE 'UAMP_%' AND message LIKE '%has been asked' THEN 'knock'
        ELSE NULL END;";

/// Step 43 (PostgreSQL's 13): the executor chosen when a UAMP ask was accepted, kept with
/// its stream so that the one chosen then is the one that runs once the user allows it.
/// Streams kept before have none: the executor set when they are released decides.
pub(crate) const STREAM_EXECUTORS: &str = "ALTER TABLE uamp_streams ADD COLUMN executor_spec TEXT;";

/// Every migration, in order.
fn migrations() -> impl Iterator<Item = &'static str> {
    EARLY.iter().chain(later::LATER).copied()
}

pub fn run(conn: &mut Connection) -> Result<()> {
    run_to(conn, migrations().count())
}

/// Migrates up to schema `target` only (upgrade tests start from an older schema).
pub fn run_to(conn: &mut Connection, target: usize) -> Result<()> {
    let current: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let known = migrations().count() as i64;
    if current > known {
        return Err(StoreError::TooNew { found: current, known });
    }
    for (i, sql) in migrations().enumerate().take(target).skip(current as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}
