//! IntentWeb headless: against the repo's IntentSite on loopback, a user working only from
//! the command line adds the site, books a table by talking and answering its checklist,
//! pins its key at first contact, reads and exports the conversation, and removes the site;
//! each change audited like the window's.

use crate::common::{fails, json, ok, Cleanup};
use gatehouse_intentweb_testsite::{spawn, Site};
use serde_json::Value;

#[test]
fn a_booking_from_the_cli_with_the_sites_checklist_answered() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _c = Cleanup(vec![d.into()]);
    ok(d, &["init"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let site = Site::new();
    let origin = rt.block_on(spawn(site.clone()));

    let out = ok(d, &["sites", "add", &format!("{origin}/intentmanifest.yaml")]);
    assert!(out.contains("Bella Cucina Restaurant") && out.contains("can: "), "{out}");
    assert_eq!(json(d, &["sites", "list", "--json"])[0]["origin"], origin.as_str());
    assert!(fails(d, &["sites", "add", "ftp://nowhere.example"]).contains("[BAD_URL]"));

    // Talking: the site asks for what it still needs, and its key is new.
    let t = json(d, &["sites", "talk", &origin, "Book a table under Jane Smith", "--capability", "Book a table for dining", "--json"]);
    assert_eq!(t["received"]["flow_type"], "information_request", "{t}");
    assert_eq!(t["received"]["verdict"]["kind"], "new_key");
    let id = t["conversation"]["interaction_id"].as_str().unwrap().to_string();
    let needs: Vec<String> = t["received"]["envelope"]["required_information"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    assert_eq!(needs.len(), 3, "party, date and time: {needs:?}");
    // The conversation list in words.
    let text = ok(d, &["sites", "conversations"]);
    assert!(text.contains(&id) && text.contains("Bella Cucina"), "{text}");

    ok(d, &["sites", "pin", &origin, &site.did()]);
    assert_eq!(json(d, &["sites", "list", "--json"])[0]["site_key"], site.did().as_str());

    // The checklist answered in one go: the booking is confirmed.
    let fill = |n: &str| match n {
        n if n.contains("people") => format!("{n}=4"),
        n if n.contains("date") => format!("{n}=2026-12-24"),
        n => format!("{n}=7pm"),
    };
    let mut args: Vec<String> = ["sites", "answer", id.as_str()].map(String::from).to_vec();
    for n in &needs {
        args.extend(["--need".to_string(), fill(n)]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ok(d, &args);
    assert!(out.contains("execution_result") && out.contains("Party: 4") && out.contains("Jane Smith"), "{out}");
    let v = json(d, &["sites", "show", &id, "--json"]);
    assert_eq!((v["conversation"]["state"].as_str(), v["conversation"]["status"].as_str()), (Some("completed"), Some("confirmed")), "{v}");
    assert!(v["conversation"]["external_id"].as_str().unwrap().starts_with("RES-"));
    assert_eq!(v["messages"][3]["verdict"]["kind"], "verified", "answers are checked against the pinned key");
    assert!(fails(d, &["sites", "answer", &id, "one more thing"]).contains("NOT_ALLOWED"), "a finished conversation takes nothing more");
    assert!(fails(d, &["sites", "answer", &id, "--need", "no equals sign"]).contains("NAME=VALUE"));

    let file = d.join("conversations.json");
    ok(d, &["sites", "export", file.to_str().unwrap()]);
    let exported: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(exported[0]["messages"].as_array().unwrap().len(), 4);

    ok(d, &["sites", "remove", &origin]);
    assert!(fails(d, &["sites", "remove", &origin]).contains("NOT_FOUND"));
    assert_eq!(json(d, &["sites", "conversations", "--json"]).as_array().unwrap().len(), 1, "conversations are kept");
    let audit = d.join("audit.json");
    ok(d, &["export", "audit", audit.to_str().unwrap()]);
    let audit: Value = serde_json::from_str(&std::fs::read_to_string(&audit).unwrap()).unwrap();
    let actions: Vec<&str> = audit["entries"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    for a in ["intentweb.site_add", "intentweb.pin", "intentweb.site_remove"] {
        assert!(actions.contains(&a), "{a} not in {actions:?}");
    }
}
