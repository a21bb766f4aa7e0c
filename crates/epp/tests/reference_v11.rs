//! EPP v1.1 envelopes made by the reference library itself (tests/data/epp-reference-1.1,
//! see its PROVENANCE.md): Gatehouse's verdict on each part agrees with the reference's
//! own (`reference_says`), and the fields read as the reference wrote them.

use chrono::{DateTime, Utc};
use gatehouse_epp::v11::{self, Extensions};
use gatehouse_epp::{check, ErrorCode};

fn data() -> serde_json::Value {
    let path = format!("{}/../../tests/data/epp-reference-1.1/envelopes.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn verdict(d: &serde_json::Value, name: &str) -> Result<Extensions, ErrorCode> {
    let now: DateTime<Utc> = d["now"].as_str().unwrap().parse().unwrap();
    let inbox = d["keys"]["recipient"]["public_hex"].as_str().unwrap();
    let e = d["envelopes"].as_array().unwrap().iter().find(|e| e["name"] == name).unwrap();
    let (env, _) = check(e["envelope"].to_string().as_bytes(), inbox, now).map_err(|r| r.code)?;
    let ext = Extensions::read(&env).map_err(|r| r.code)?;
    v11::verify(&env, &ext).map_err(|r| r.code)?;
    Ok(ext)
}

#[test]
fn every_reference_envelope_gets_the_references_verdict() {
    let d = data();
    for e in d["envelopes"].as_array().unwrap() {
        let name = e["name"].as_str().unwrap();
        let says = &e["reference_says"];
        assert_eq!(says["signature"], true, "{name}");
        let ours = verdict(&d, name);
        let expected = if says["integrity"] == false {
            Err(ErrorCode::IntegrityMismatch)
        } else if says["provenance"] == false {
            Err(ErrorCode::ProvenanceInvalid)
        } else {
            Ok(())
        };
        assert_eq!(ours.as_ref().map(|_| ()).map_err(|c| *c), expected, "{name}: {ours:?}");
    }
}

#[test]
fn the_fields_read_as_the_reference_wrote_them() {
    let d = data();
    let ext = verdict(&d, "capabilities").unwrap();
    let words = v11::plain_words(ext.capabilities.as_ref().unwrap());
    assert_eq!(
        words,
        [
            "read files in ~/Documents/orders",
            "connect to shop.example (https, port 443)",
            "take these actions: notify, create_calendar_event",
            "see your contacts"
        ]
    );
    let ext = verdict(&d, "provenance").unwrap();
    let p = ext.provenance.unwrap();
    assert_eq!(p.entries.iter().map(|a| a.role.as_str()).collect::<Vec<_>>(), ["author", "auditor"]);
    assert_eq!(p.entries[0].identity, d["keys"]["author"]["public_hex"].as_str().unwrap());
    let ext = verdict(&d, "payment-stake").unwrap();
    assert_eq!(ext.inert.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["payment", "stake"]);
    assert!(verdict(&d, "plain").unwrap().is_empty());
}

#[test]
fn a_limit_names_what_is_asked_beyond_it() {
    let d = data();
    let asked = verdict(&d, "capabilities").unwrap().capabilities.unwrap();
    let allowed = v11::Capabilities { actions: vec!["notify".into()], data_access: vec![], ..Default::default() };
    assert_eq!(
        v11::beyond(&asked, &allowed),
        ["read files in ~/Documents/orders", "connect to shop.example", "take these actions: create_calendar_event", "see your contacts"]
    );
    assert!(v11::beyond(&asked, &asked).is_empty());
}

#[test]
fn a_limit_is_not_escaped_by_climbing_out_of_a_folder_or_borrowing_a_suffix() {
    let read = |paths: &[&str]| v11::Capabilities {
        filesystem: Some(v11::FilesystemCaps { read: paths.iter().map(|p| p.to_string()).collect(), write: vec![] }),
        ..Default::default()
    };
    let net = |domains: &[&str]| v11::Capabilities {
        network: Some(v11::NetworkCaps { domains: domains.iter().map(|d| d.to_string()).collect(), ..Default::default() }),
        ..Default::default()
    };
    let allowed = read(&["~/Documents/orders"]);
    assert!(v11::beyond(&read(&["~/Documents/orders/1042.pdf", "~/Documents/orders/"]), &allowed).is_empty());
    for escape in ["~/Documents/orders/../../.ssh/id_ed25519", "~/Documents/orders-archive", "/etc/passwd.orders", "~/Documents"] {
        assert_eq!(v11::beyond(&read(&[escape]), &allowed), [format!("read files in {escape}")], "{escape}");
    }
    let allowed = net(&["shop.example"]);
    assert!(v11::beyond(&net(&["api.shop.example", "SHOP.example"]), &allowed).is_empty());
    for other in ["evilshop.example", "shop.example.evil.test", "shop.example/orders"] {
        assert_eq!(v11::beyond(&net(&[other]), &allowed), [format!("connect to {other}")], "{other}");
    }
}
