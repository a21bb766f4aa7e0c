//! Property tests of the signature: whatever a sender puts in a payload, Gatehouse's own
//! signature verifies; whatever single signed field anyone changes afterwards, the
//! envelope is refused.

use chrono::{DateTime, Duration, Utc};
use gatehouse_epp::{check, generate_signing_key, public_key_hex, Draft, Form};
use proptest::prelude::*;
use serde_json::{Map, Value};

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("JSON has no NaN or infinities", |f| f.is_finite()).prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn any_object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(any::<String>(), any_json(), 0..6).prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()))
}

fn scope() -> impl Strategy<Value = String> {
    "[A-Za-z0-9-]{1,40}"
}

fn prompt() -> impl Strategy<Value = String> {
    any::<String>().prop_filter("a prompt is not blank", |s| !s.trim().is_empty())
}

#[derive(Debug, Clone)]
struct Spec {
    scope: String,
    prompt: String,
    context: Option<Value>,
    metadata: Option<Value>,
    payload_type: Option<String>,
    conversation: bool,
    in_reply_to: Option<String>,
    delegate: bool,
    authorization: Option<String>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        scope(),
        prompt(),
        prop::option::of(any_object()),
        prop::option::of(any_object()),
        prop::option::of(scope()),
        any::<bool>(),
        prop::option::of("[^\\p{Cc}]{1,60}"),
        any::<bool>(),
        prop::option::of(any::<String>()),
    )
        .prop_map(|(scope, prompt, context, metadata, payload_type, conversation, in_reply_to, delegate, authorization)| Spec {
            scope,
            prompt,
            context,
            metadata,
            payload_type,
            conversation,
            in_reply_to,
            delegate,
            authorization,
        })
}

const INBOX: &str = "5dc1b2e0c1ff21d0b3f0a6d1f3e41a3b6f9c0e7d2a1b4c8d9e0f1a2b3c4d5e6f";

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-22T10:00:00Z").unwrap().with_timezone(&Utc)
}

fn signed(s: &Spec) -> Value {
    let key = generate_signing_key();
    let mut d = Draft::new(INBOX, &s.scope, &s.prompt);
    d.context = s.context.clone();
    d.metadata = s.metadata.clone();
    d.payload_type = s.payload_type.clone();
    d.conversation_id = s.conversation.then(|| uuid::Uuid::new_v4().to_string());
    d.in_reply_to = s.in_reply_to.clone();
    if s.delegate {
        d.on_behalf_of = Some(public_key_hex(&generate_signing_key()));
        d.authorization = s.authorization.clone();
    }
    d.sign(&key, now())
}

/// Where a mutation lands: a top-level member, or a member of `payload`/`delegation`.
#[derive(Debug, Clone, Copy)]
enum Field {
    Top(&'static str),
    Payload(&'static str),
    Delegation(&'static str),
}

const FIELDS: &[Field] = &[
    Field::Top("version"),
    Field::Top("envelope_id"),
    Field::Top("sender"),
    Field::Top("recipient"),
    Field::Top("timestamp"),
    Field::Top("expires_at"),
    Field::Top("nonce"),
    Field::Top("scope"),
    Field::Top("signature"),
    Field::Top("conversation_id"),
    Field::Top("in_reply_to"),
    Field::Top("delegation"),
    Field::Top("payload"),
    Field::Payload("prompt"),
    Field::Payload("context"),
    Field::Payload("metadata"),
    Field::Payload("payload_type"),
    Field::Delegation("on_behalf_of"),
    Field::Delegation("authorization"),
];

/// A value for `field` that means something other than `old` (not a respelling the
/// inbox treats as the same envelope: hex case, or a null standing for "absent").
fn replacement(field: Field, old: Option<&Value>, text: &str, json: &Value) -> Option<Value> {
    let b64 = |bytes: &[u8]| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(bytes)
    };
    let new = match field {
        Field::Top("sender" | "recipient") | Field::Delegation("on_behalf_of") => Value::from(public_key_hex(&generate_signing_key())),
        Field::Top("timestamp" | "expires_at") => {
            let t = DateTime::parse_from_rfc3339(old?.as_str()?).ok()?;
            Value::from(gatehouse_epp::utc_string((t + Duration::seconds(1 + text.len() as i64)).with_timezone(&Utc)))
        }
        Field::Top("nonce") => Value::from(b64(&rand::random::<[u8; 16]>())),
        Field::Top("signature") => {
            use base64::Engine as _;
            let mut sig = base64::engine::general_purpose::STANDARD.decode(old?.as_str()?).ok()?;
            let bit = text.len() % (sig.len() * 8);
            sig[bit / 8] ^= 1 << (bit % 8);
            Value::from(b64(&sig))
        }
        Field::Top("conversation_id") => Value::from(uuid::Uuid::new_v4().to_string()),
        Field::Top("delegation") => serde_json::json!({"on_behalf_of": public_key_hex(&generate_signing_key()), "authorization": null}),
        Field::Top("payload") => serde_json::json!({"prompt": format!("{text} (changed)")}),
        Field::Payload("context" | "metadata") => {
            if !json.is_object() {
                return None;
            }
            json.clone()
        }
        Field::Delegation("authorization") => Value::from(text),
        _ => Value::from(text),
    };
    if json_null_or_absent(old) && new.is_null() {
        return None;
    }
    (Some(&new) != old).then_some(new)
}

fn json_null_or_absent(v: Option<&Value>) -> bool {
    v.is_none_or(Value::is_null)
}

fn slot(wire: &mut Value, field: Field) -> Option<(&mut Map<String, Value>, &'static str)> {
    let obj = wire.as_object_mut()?;
    match field {
        Field::Top(k) => Some((obj, k)),
        Field::Payload(k) => Some((obj.get_mut("payload")?.as_object_mut()?, k)),
        Field::Delegation(k) => Some((obj.get_mut("delegation")?.as_object_mut()?, k)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any payload a sender can express in JSON signs and verifies, in the reference form,
    /// and reads back unchanged.
    #[test]
    fn signed_envelopes_verify_whatever_the_payload(s in spec()) {
        let wire = signed(&s);
        let bytes = wire.to_string();
        let (env, form) = check(bytes.as_bytes(), INBOX, now()).map_err(|r| TestCaseError::fail(format!("{r:?}\n{bytes}")))?;
        prop_assert_eq!(form, Form::Reference);
        prop_assert_eq!(&env.payload.prompt, &s.prompt);
        prop_assert_eq!(&env.scope, &s.scope);
        prop_assert_eq!(env.payload.payload_type.as_deref(), s.payload_type.as_deref());
    }

    /// Changing, adding or removing any one signed field is refused.
    #[test]
    fn any_single_field_mutation_is_rejected(
        s in spec(),
        which in 0..FIELDS.len(),
        remove in prop::bool::weighted(0.25),
        text in any::<String>(),
        json in any_object(),
    ) {
        let original = signed(&s);
        let field = FIELDS[which];
        let mut wire = original.clone();
        let Some((obj, key)) = slot(&mut wire, field) else {
            // The mutation is of a member of an object this envelope does not have.
            return Ok(());
        };
        let old = obj.get(key).cloned();
        if remove {
            prop_assume!(!json_null_or_absent(old.as_ref()));
            obj.remove(key);
        } else {
            let new = replacement(field, old.as_ref(), &text, &json);
            prop_assume!(new.is_some());
            obj.insert(key.to_string(), new.unwrap());
        }
        let bytes = wire.to_string();
        prop_assert!(
            check(bytes.as_bytes(), INBOX, now()).is_err(),
            "accepted after changing {:?}:\nbefore {}\nafter  {}", field, original, bytes
        );
    }
}
