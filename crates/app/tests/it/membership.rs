//! A member's desktop as an approver of a team's gate (`membership`), against a real gate
//! on a loopback port: it joins from an invitation's link with a key of its own, reads what
//! waits and decides; an invitation whose gate key is not the gate's is refused before
//! anything is sent; a removal at the gate is kept and said.

use crate::common::{behind_the_gates_back, key, pubhex, TestInbox};
use gatehouse_app::consent::{ConsentTarget, Decision, Lasting};
use gatehouse_app::context::{Context, KeystoreKind};
use gatehouse_app::{approvers, membership, Code};

fn desktop() -> (tempfile::TempDir, Context) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = Context::open(dir.path().join("member"), KeystoreKind::File, true).unwrap();
    (dir, ctx)
}

#[test]
fn an_invitation_link_names_the_gate_its_code_and_key() {
    let k = "ab".repeat(32);
    let (url, code, gate) = membership::read_invitation(&format!("https://gate.example.org/approve#code=ABCD2345EFGH&gate={k}")).unwrap();
    assert_eq!((url.as_str(), code.as_str(), gate.as_str()), ("https://gate.example.org", "ABCD2345EFGH", k.as_str()));
    for bad in ["ABCD2345EFGH", "https://gate.example.org/approve#code=X", "https://gate.example.org/other#code=X&gate=ab", "ftp://gate/approve#code=X&gate=ab"]
    {
        assert_eq!(membership::read_invitation(bad).unwrap_err().code, Code::BadUrl, "{bad}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_desktop_joins_sees_a_knock_decides_and_learns_it_was_removed() {
    let inbox = TestInbox::start(&pubhex(&key(0x71)), false).await;
    let (_dir, me) = desktop();
    let inv = approvers::invite(&inbox.ctx(), "Ana's laptop", &inbox.url, chrono::Utc::now()).unwrap();

    // An invitation naming another gate key is refused before the code is sent.
    let forged = inv.url.replace(&inbox.public_key, &"cd".repeat(32));
    let e = membership::join(&me, &forged, "Ana's laptop").await.unwrap_err();
    assert_eq!(e.code, Code::PinMismatch, "{e:?}");
    assert!(approvers::list(&crate::common::ctx(&inbox.store)).unwrap().is_empty());

    let m = membership::join(&me, &inv.url, "Ana's laptop").await.unwrap();
    assert_eq!((m.name.as_str(), m.gate_url.as_str(), m.gate_key.as_str()), ("Ana's laptop", inbox.url.as_str(), inbox.public_key.as_str()));
    assert_eq!(approvers::list(&crate::common::ctx(&inbox.store)).unwrap()[0].id, m.id);
    assert_eq!(membership::join(&me, &inv.url, "again").await.unwrap_err().code, Code::AlreadyTrusted);

    let stranger = key(0x72);
    assert_eq!(inbox.post_json(&inbox.signed(&stranger, "support", "knock from a stranger")).await.0, 401);
    let items = membership::waiting_at(&me, &m.id).await.unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].item.target(), Some(items[0].target.clone()));
    // A decision names the digest it saw: another one is refused.
    let e = membership::decide(&me, &m.id, items[0].target.clone(), "00".repeat(32), Decision::AlwaysAllowScope, Lasting::Always).await.unwrap_err();
    assert_eq!(e.code, Code::Changed, "{e:?}");
    let out = membership::decide(&me, &m.id, items[0].target.clone(), items[0].digest.clone(), Decision::AlwaysAllowScope, Lasting::Always).await.unwrap();
    assert!(out.message.contains("Trusted"), "{}", out.message);
    assert!(inbox.store.trust_get(&pubhex(&stranger)).unwrap().is_some());
    assert!(membership::waiting_at(&me, &m.id).await.unwrap().is_empty());
    let audit = inbox.store.audit_list(20).unwrap();
    let decided = audit.iter().find(|a| a.action == "consent.always_allow_scope").unwrap();
    assert_eq!(decided.detail["by"]["approver"], m.id.as_str());

    // Removed at the gate: the next request is refused, and the desktop keeps that.
    approvers::remove(&crate::common::ctx(&inbox.store), &m.id).unwrap();
    let e = membership::waiting_at(&me, &m.id).await.unwrap_err();
    assert_eq!(e.code, Code::Unauthorized);
    assert!(membership::list(&me).unwrap()[0].removed);
    let all = membership::waiting(&me).await.unwrap();
    assert!(all[0].membership.removed && all[0].items.is_empty());
    let target = ConsentTarget::UnknownSender { public_key: pubhex(&stranger), knock: None };
    assert_eq!(membership::decide(&me, &m.id, target, String::new(), Decision::Deny, Lasting::Always).await.unwrap_err().code, Code::Unauthorized);

    // Leaving forgets it here, and its key.
    membership::leave(&me, &m.id).unwrap();
    assert!(membership::list(&me).unwrap().is_empty());
    inbox.stop().await;
}

async fn next(rx: &mut tokio::sync::mpsc::UnboundedReceiver<membership::Heard>) -> membership::Heard {
    tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv()).await.expect("the gate said nothing").unwrap()
}

/// The live stream says "changed" for a knock and "removed" for a removal.
#[tokio::test(flavor = "multi_thread")]
async fn the_desktop_follows_the_gates_stream_until_it_is_removed() {
    let inbox = TestInbox::start(&pubhex(&key(0x73)), false).await;
    let (_dir, me) = desktop();
    let me = std::sync::Arc::new(me);
    let inv = approvers::invite(&inbox.ctx(), "Ben's laptop", &inbox.url, chrono::Utc::now()).unwrap();
    let m = membership::join(&me, &inv.url, "Ben's laptop").await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let follower = {
        let (me, id) = (me.clone(), m.id.clone());
        tokio::spawn(async move { membership::follow(&me, &id, |h| tx.send(h).unwrap()).await })
    };
    assert_eq!(next(&mut rx).await, membership::Heard::Changed, "what waits is read at once");
    while tokio::time::timeout(std::time::Duration::from_millis(300), rx.recv()).await.is_ok() {}
    assert_eq!(inbox.post_json(&inbox.signed(&key(0x74), "support", "a knock")).await.0, 401);
    assert_eq!(next(&mut rx).await, membership::Heard::Changed);
    approvers::remove(&crate::common::ctx(&inbox.store), &m.id).unwrap();
    loop {
        if next(&mut rx).await == membership::Heard::Removed {
            break;
        }
    }
    follower.await.unwrap().unwrap();
    assert!(membership::list(&me).unwrap()[0].removed);
    inbox.stop().await;
}

/// A member's desktop is a witness of the team's gate's log too: it keeps the newest
/// checkpoint in its own data dir and says, beside what waits there, when the gate's log no
/// longer extends it (rewound with the gate's database alone).
#[tokio::test(flavor = "multi_thread")]
async fn a_members_desktop_says_when_the_gates_log_was_rewound_behind_its_back() {
    let gate = key(0x73);
    let inbox = TestInbox::start(&pubhex(&gate), false).await;
    let (_dir, me) = desktop();
    let inv = approvers::invite(&inbox.ctx(), "Ana's laptop", &inbox.url, chrono::Utc::now()).unwrap();
    let m = membership::join(&me, &inv.url, "Ana's laptop").await.unwrap();
    let first = gatehouse_app::audit::checkpoint(&inbox.store, &gate, None).unwrap().unwrap();
    inbox.store.audit("trust.revoke", Some("aa"), &serde_json::json!({}), "2026-11-28T10:05:00Z").unwrap();
    gatehouse_app::audit::checkpoint(&inbox.store, &gate, None).unwrap().unwrap();
    let all = membership::waiting(&me).await.unwrap();
    assert_eq!(all[0].log_problem, None);
    assert!(me.data_dir.join(format!("team-witness-{}.json", m.id)).exists(), "the newest checkpoint is kept");

    behind_the_gates_back(
        inbox.dir.path(),
        &format!(
            "DELETE FROM audit WHERE id > {0}; UPDATE audit_head SET id = {0}, hash = '{1}'; DELETE FROM audit_checkpoints WHERE through_id > {0}; DELETE FROM audit_witnesses;",
            first.through_id, first.hash
        ),
    );
    let all = membership::waiting(&me).await.unwrap();
    assert!(all[0].log_problem.as_deref().is_some_and(|p| p.contains("removed")), "{:?}", all[0].log_problem);
    inbox.stop().await;
}
