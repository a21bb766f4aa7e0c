//! The reads an MCP call and every agent's step make on the write connection (its pages
//! kept across its own commits) still see at once what another process changed: a pin
//! accepted, a tool listed otherwise, a server renamed or removed, a rule added or taken
//! out by the CLI while the app serves.

use gatehouse_store::asop::AsopRuleRow;
use gatehouse_store::{Policy, TrustEntry};

const SERVER: &str = "mcp:files:abababababababababababababababababababababababababababababababab";

fn rule(tool: &str) -> AsopRuleRow {
    AsopRuleRow {
        id: 0,
        agent: "mcp:files".into(),
        method: "steps/toolCallRequest".into(),
        tool: tool.into(),
        condition: None,
        action: "allow".into(),
        redact: None,
        note: None,
        source: "user".into(),
        created_at: "2026-11-30T07:00:00Z".into(),
        until: None,
    }
}

crate::on_both_engines! {
    fn a_calls_reads_follow_changes_made_through_another_connection(place) {
        let gate = place.open();
        let cli = place.open();
        // Read once before anything, so the gate's connection has the pages cached.
        let none = gate.mcp_call(SERVER, "read").unwrap();
        assert_eq!((none.pin.is_none(), none.offered, none.name.is_none()), (true, false, true));
        assert!(gate.asop_rules().unwrap().is_empty());
        // Writes on the gate's own connection between the reads, as every call makes.
        gate.take_rate(SERVER, 1, &Default::default(), None).unwrap().unwrap();

        let policy = Policy { allowed_scopes: vec!["mcp".into()], ..Policy::default() };
        let entry = TrustEntry { door: "mcp".into(), facts: Default::default(), public_key: SERVER.into(), name: "Files".into(), added_at: "x".into(), policy };
        cli.trust_add(&entry).unwrap();
        let tool = ("read".to_string(), r#"{"name":"read","description":"Reads"}"#.to_string(), "d1".to_string());
        cli.mcp_offer(SERVER, &[tool], "2026-11-30T07:00:00Z").unwrap();
        assert!(gate.mcp_call(SERVER, "read").unwrap().offered, "an offer made elsewhere is seen at once");
        cli.mcp_accept(SERVER, &[("read".into(), "d1".into())], "2026-11-30T07:01:00Z").unwrap();
        let seen = gate.mcp_call(SERVER, "read").unwrap();
        assert_eq!((seen.pin.map(|p| p.digest), seen.offered, seen.name.as_deref()), (Some("d1".to_string()), false, Some("Files")));

        let id = cli.asop_rule_add(&rule("read")).unwrap();
        assert_eq!(gate.asop_rules().unwrap().iter().map(|r| r.id).collect::<Vec<_>>(), [id], "a rule added elsewhere is seen at once");
        gate.take_rate(SERVER, 2, &Default::default(), None).unwrap().unwrap();
        cli.asop_rule_remove(id).unwrap();
        assert!(gate.asop_rules().unwrap().is_empty(), "a rule taken out elsewhere is gone at once");
        cli.trust_remove(SERVER).unwrap();
        assert_eq!(gate.mcp_call(SERVER, "read").unwrap().name, None, "a server taken out elsewhere has no name");
    }
}
