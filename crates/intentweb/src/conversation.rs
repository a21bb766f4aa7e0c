//! The rules of one interaction (§3.4), enforced on both sides: the first message is an
//! `intent_request`, nothing follows a terminal message (`execution_result`, `error`),
//! every answer echoes the `interaction_id`, and no nonce is accepted twice.

use crate::envelope::{Envelope, FlowType};

/// Whether this side may send `next` after the flow types exchanged so far.
pub fn check_send(history: &[FlowType], next: FlowType) -> Result<(), String> {
    match (history.first(), next) {
        (None, FlowType::IntentRequest) => Ok(()),
        (None, other) => Err(format!("an interaction starts with intent_request, not {}", other.as_str())),
        (Some(_), FlowType::IntentRequest) => Err("this interaction has started; a new intent needs a new interaction".into()),
        (Some(_), FlowType::ExecutionResult) => Err("only the IntentSite sends execution_result".into()),
        (Some(_), _) if history.iter().any(|f| f.is_terminal()) => Err("this interaction has ended; start a new one".into()),
        _ => Ok(()),
    }
}

/// Whether an answer may join the interaction `interaction_id` (whose flow types so far are
/// `history`). `nonce_seen`: the answer's nonce was accepted before.
pub fn check_receive(interaction_id: &str, history: &[FlowType], env: &Envelope, nonce_seen: bool) -> Result<(), String> {
    if env.interaction_id != interaction_id {
        return Err(format!("the answer is for interaction {:?}, not {interaction_id:?}", env.interaction_id));
    }
    if nonce_seen {
        return Err(format!("nonce {:?} was used before: a replayed message", env.attribution.nonce));
    }
    if history.is_empty() {
        return Err("an answer arrived before any intent was sent".into());
    }
    if history.iter().any(|f| f.is_terminal()) {
        return Err("the interaction had already ended".into());
    }
    if env.flow_type == FlowType::IntentRequest {
        return Err("an IntentSite does not answer with intent_request".into());
    }
    Ok(())
}
