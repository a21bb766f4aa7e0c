//! A conversation shows its envelopes oldest first, and one named after a standalone
//! envelope this inbox answered starts with that envelope.

use crate::common::envelope_at;
use gatehouse_store::{RateLimit, Store};

const AT: i64 = 1_794_996_000_000;

fn accept(store: &Store, n: usize, envelope_id: &str, conversation_id: Option<&str>, sender: &str) -> i64 {
    let mut e = envelope_at(format!("nonce {n:08}").as_bytes(), n, AT + n as i64);
    e.envelope_id = envelope_id.into();
    e.conversation_id = conversation_id.map(Into::into);
    e.in_reply_to = conversation_id.map(Into::into);
    e.sender = sender.into();
    store.accept(e, &RateLimit::default()).unwrap().unwrap()
}

crate::on_both_engines! {
    fn an_answered_standalone_envelope_opens_the_conversation_named_after_it(place) {
        let store = place.open();
        let (bea, eve) = ("be".repeat(32), "ee".repeat(32));
        let first = accept(&store, 1, "lunch", None, &bea);
        let unrelated = accept(&store, 2, "elsewhere-1", Some("elsewhere"), &eve);
        // Answering it names a conversation after it; Bea's follow-up carries that name.
        store.reply_draft(first, "lunch", "lunch", &bea, "http://127.0.0.1:1/epp/v1/submit", "ask-ai", "Thursday?", "t").unwrap();
        let follow_up = accept(&store, 3, "lunch-2", Some("lunch"), &bea);
        // Someone else's standalone envelope that happens to carry the same id is not part of it.
        let namesake = accept(&store, 4, "lunch", None, &eve);
        let never_answered = accept(&store, 5, "alone", None, &bea);

        let ids = |c: &str| store.conversation(c).unwrap().into_iter().map(|e| e.id).collect::<Vec<_>>();
        assert_eq!(ids("lunch"), vec![first, follow_up]);
        assert_eq!(ids("elsewhere"), vec![unrelated]);
        assert!(ids("alone").is_empty(), "no answer, no conversation");
        assert!(![namesake, never_answered].iter().any(|r| ids("lunch").contains(r)));
    }
}
