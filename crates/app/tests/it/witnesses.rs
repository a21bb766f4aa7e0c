//! Approver devices as witnesses of the audit log. A device hands in the checkpoint it
//! holds and is given a newer one only when the log extends it. Someone with the database
//! alone rewinds the log (a revocation undone), moving its head back and deleting the newer
//! checkpoints and the devices' own rows: the gate's nodes, none of which kept a witness,
//! see nothing wrong — until the device comes back with what it holds.

use crate::approvers::{call, joined};
use crate::common::{behind_the_gates_back, key, pubhex, TestInbox};
use gatehouse_app::audit;
use serde_json::{json, Value};

async fn hand_in(inbox: &TestInbox, d: &crate::approvers::Device, held: &Value) -> (u16, Value) {
    call(inbox, d, reqwest::Method::POST, "/approve/witness", &json!({ "held": held }).to_string()).await
}

#[tokio::test]
async fn a_log_rewound_behind_every_nodes_back_is_found_by_the_device_that_held_a_later_checkpoint() {
    let gate = key(0x91);
    let inbox = TestInbox::start(&pubhex(&gate), false).await;
    let phone = joined(&inbox, "Ana's phone").await;
    inbox.store.audit("trust.add", Some("aa"), &json!({}), "2026-11-28T10:00:00Z").unwrap();
    let first = audit::checkpoint(&inbox.store, &gate, None).unwrap().unwrap();
    let (status, answer) = hand_in(&inbox, &phone, &Value::Null).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["newest"]["through_id"], first.through_id, "{answer}");

    // A revocation, signed: the phone holds the newer checkpoint once the log extends its own.
    inbox.store.audit("trust.revoke", Some("aa"), &json!({}), "2026-11-28T10:05:00Z").unwrap();
    let second = audit::checkpoint(&inbox.store, &gate, None).unwrap().unwrap();
    let (_, answer) = hand_in(&inbox, &phone, &serde_json::to_value(&first).unwrap()).await;
    assert_eq!((answer["intact"].as_bool(), answer["newest"]["through_id"].as_i64()), (Some(true), Some(second.through_id)), "{answer}");
    let held = answer["newest"].clone();

    // Rewound to before the revocation, with everything that would tell in the database.
    behind_the_gates_back(
        inbox.dir.path(),
        &format!(
            "DELETE FROM audit WHERE id > {0}; UPDATE audit_head SET id = {0}, hash = '{1}'; DELETE FROM audit_checkpoints WHERE through_id > {0}; DELETE FROM audit_witnesses;",
            first.through_id, first.hash
        ),
    );
    let alone = audit::verify_live(&inbox.store, &pubhex(&gate), None).unwrap();
    assert!(alone.intact, "the database alone agrees with itself: {alone:?}");

    // The phone comes back with what it holds.
    let (status, answer) = hand_in(&inbox, &phone, &held).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["intact"], false, "{answer}");
    assert!(answer["newest"].is_null(), "no newer checkpoint is given over a rewound log: {answer}");
    assert!(answer["problem"].as_str().is_some_and(|p| p.contains("removed")), "{answer}");
    // Every check from now on fails against it (the node keeps what the device handed in).
    let v = audit::verify_live(&inbox.store, &pubhex(&gate), None).unwrap();
    assert!(!v.intact, "{v:?}");
    let ready: Value = reqwest::get(format!("{}/ready", inbox.url)).await.unwrap().json().await.unwrap();
    assert!(ready["problems"]["audit"].as_str().is_some_and(|p| p.contains("Ana's phone")), "{ready}");
    // A checkpoint the gate never signed is refused, not kept.
    let mut forged = held.clone();
    forged["through_id"] = json!(1);
    let (status, _) = hand_in(&inbox, &phone, &forged).await;
    assert_eq!(status, 400);
    // Each check reads the whole log: a device has a few a minute (a minute may turn
    // over meanwhile, so up to twice the bound).
    let mut refused = false;
    for _ in 0..9 {
        if hand_in(&inbox, &phone, &held).await.0 == 429 {
            refused = true;
            break;
        }
    }
    assert!(refused, "a device's checks are bounded");
}
