//! The first run: whether the user has been shown around yet, and a sample envelope the
//! user sends themself so the whole flow (a knock, the consent prompt, the arrival, its
//! receipt) is seen once. The sample is signed by a key made for it alone and posted to
//! the user's own inbox over loopback, exactly as any sender's would be: it gets no
//! shortcut through the gate.

use crate::Context;
use std::time::Duration;

use gatehouse_store::Store;

use crate::{blocking, now, Code, CommandError, Result};

const SETTING: &str = "first_run_done";
/// The scope the sample asks for: a knock for it is answered like any other.
pub const SAMPLE_SCOPE: &str = "welcome";
pub const SAMPLE_TEXT: &str = "Hello from Gatehouse! This is a sample message, signed by a key made just for it. \
     It knocked like any unknown sender would: you decided whether it reaches your AI, and its receipt is in your inbox.";

/// Whether the welcome was dismissed.
pub fn done(ctx: &Context) -> Result<bool> {
    let store: &Store = &ctx.store;
    Ok(store.setting::<bool>(SETTING)?.unwrap_or(false))
}

/// The welcome is not shown again. Audited.
pub fn finish(ctx: &Context) -> Result<()> {
    let store: &Store = &ctx.store;
    store.set_setting(SETTING, &true)?;
    store.audit("first_run.done", None, &serde_json::json!({}), &now())?;
    Ok(())
}

/// Signs a sample envelope to `inbox_key` and posts it to `submit_url` (the user's own
/// inbox on loopback). Returns what happened, in words. Audited.
pub async fn send_sample(ctx: &Context, submit_url: &str, inbox_key: &str) -> Result<String> {
    let store = ctx.store.clone();
    let host = url::Url::parse(submit_url).ok().and_then(|u| u.host_str().map(str::to_string));
    if !host.is_some_and(|h| gatehouse_http::is_loopback(&h)) {
        return Err(CommandError::new(Code::Invalid, "the sample goes to this computer's own inbox only"));
    }
    let key = gatehouse_epp::generate_signing_key();
    let envelope = gatehouse_epp::Draft::new(inbox_key, SAMPLE_SCOPE, SAMPLE_TEXT).sign(&key, chrono::Utc::now());
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| CommandError::new(Code::Internal, e.to_string()))?;
    let resp = client
        .post(submit_url)
        .json(&envelope)
        .send()
        .await
        .map_err(|e| CommandError::new(Code::Unreachable, format!("your inbox did not answer at {submit_url}: {e}")))?;
    // A receipt is a few hundred bytes: read as any answer is, within a bound.
    let bytes = gatehouse_http::read_limited(submit_url, resp, 64 * 1024).await.map_err(|e| CommandError::new(Code::Protocol, e.to_string()))?;
    let receipt: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| CommandError::new(Code::Protocol, format!("your inbox answered without a receipt: {e}")))?;
    let code = receipt.pointer("/error/code").and_then(|c| c.as_str()).unwrap_or("").to_string();
    let detail = serde_json::json!({"envelope_id": envelope["envelope_id"], "receipt": receipt["status"], "code": code});
    blocking(move || Ok(store.audit("first_run.sample", None, &detail, &now())?)).await?;
    Ok(match (receipt["status"].as_str(), code.as_str()) {
        (_, "UNTRUSTED_SENDER") => "Sent. It knocked as a stranger: look in “Waiting for you” and decide.".to_string(),
        (Some("accepted"), _) => "Sent, and accepted: it is in your inbox.".to_string(),
        _ => format!("Sent; your inbox refused it ({code}): see the inbox for why."),
    })
}
