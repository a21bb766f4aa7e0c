//! Executors (spec 9): what happens to an accepted prompt. Chosen per scope, stored in
//! the settings table so the CLI and the app edit the same configuration.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use gatehouse_store::{EnvelopeRow, Store};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub(crate) const SETTINGS_KEY: &str = "executors";
/// Output kept from a command, per stream.
const KEEP_OUTPUT_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ExecutorSpec {
    /// Accepts and logs; no action.
    Noop,
    /// Writes each accepted envelope as a JSON file into `dir` for later processing.
    FileQueue { dir: PathBuf },
    /// Runs `program` with `args` (no shell), the prompt on stdin, envelope facts in
    /// EPP_* environment variables; killed after `timeout_secs`.
    Command {
        program: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default = "default_timeout")]
        timeout_secs: u64,
    },
    /// Asks the user's own model (an OpenAI-compatible chat completions API; Ollama on
    /// this machine by default) and keeps its answer, with a system prompt that says the
    /// text is an external, untrusted prompt and from whom.
    Model {
        #[serde(default = "default_endpoint")]
        endpoint: String,
        model: String,
        /// Said to the model before the sender's text (per scope).
        #[serde(default)]
        system_prompt: Option<String>,
        #[serde(default = "default_model_timeout")]
        timeout_secs: u64,
        /// The keychain name of the API key, for a cloud endpoint (never the key itself).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        api_key_secret: Option<String>,
    },
    /// Hands the prompt to a MAIL swarm the user connected (by its connection name) and
    /// follows the task, which also shows in the MAIL task viewer.
    Swarm {
        swarm: String,
        #[serde(default)]
        entrypoint: Option<String>,
    },
    /// Asks a UAMP peer the user added (by DID or name) and follows its stream; the answer
    /// (text, or the file it returned) is kept, and the stream shows under Agents (UAMP).
    Peer {
        peer: String,
        #[serde(default = "default_model_timeout")]
        timeout_secs: u64,
    },
}

fn default_endpoint() -> String {
    crate::model::DEFAULT_ENDPOINT.to_string()
}

fn default_model_timeout() -> u64 {
    300
}

fn default_timeout() -> u64 {
    60
}

impl ExecutorSpec {
    pub fn name(&self) -> &'static str {
        match self {
            ExecutorSpec::Noop => "noop",
            ExecutorSpec::FileQueue { .. } => "file-queue",
            ExecutorSpec::Command { .. } => "command",
            ExecutorSpec::Model { .. } => "model",
            ExecutorSpec::Swarm { .. } => "swarm",
            ExecutorSpec::Peer { .. } => "peer",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ExecutorConfig {
    pub default: ExecutorSpec,
    #[serde(default)]
    pub scopes: BTreeMap<String, ExecutorSpec>,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig { default: ExecutorSpec::Noop, scopes: BTreeMap::new() }
    }
}

impl ExecutorConfig {
    pub fn load(store: &Store) -> gatehouse_store::Result<Self> {
        Ok(store.setting(SETTINGS_KEY)?.unwrap_or_default())
    }

    /// From the setting's raw JSON (absent: everything goes to the no-op executor).
    pub fn from_setting(raw: Option<&str>) -> Result<Self, serde_json::Error> {
        raw.map_or(Ok(ExecutorConfig::default()), serde_json::from_str)
    }

    pub fn save(&self, store: &Store) -> gatehouse_store::Result<()> {
        store.set_setting(SETTINGS_KEY, self)
    }

    pub fn for_scope(&self, scope: &str) -> &ExecutorSpec {
        self.scopes.get(scope).unwrap_or(&self.default)
    }
}

/// What the no-op executor records.
pub fn noop_result() -> serde_json::Value {
    serde_json::json!({"executor": "noop"})
}

/// Runs one executor. `Ok` and `Err` both carry a JSON record for the user to read.
/// `sender_name`: the name the user gave the sender (the model is told who speaks).
/// What an executor reports while it works.
pub enum Update<'a> {
    /// The answer so far.
    Text(&'a str),
    Note(String),
}

pub async fn execute(
    spec: &ExecutorSpec,
    env: &EnvelopeRow,
    sender_name: Option<&str>,
    store: &std::sync::Arc<Store>,
    on_update: &mut (dyn FnMut(Update<'_>) + Send),
) -> Result<serde_json::Value, serde_json::Value> {
    match spec {
        ExecutorSpec::Noop => {
            tracing::debug!(envelope_id = %env.envelope_id, scope = %env.scope, "noop executor: accepted and logged");
            Ok(noop_result())
        }
        ExecutorSpec::FileQueue { dir } => file_queue(dir, env)
            .await
            .map(|path| serde_json::json!({"executor": "file-queue", "path": path}))
            .map_err(|e| serde_json::json!({"executor": "file-queue", "error": format!("{}: {e}", dir.display())})),
        ExecutorSpec::Command { program, args, timeout_secs } => run_command(program, args, Duration::from_secs(*timeout_secs), env).await,
        ExecutorSpec::Model { endpoint, model, system_prompt, timeout_secs, api_key_secret } => {
            let who = sender_name.map(str::to_string).unwrap_or_else(|| format!("the sender {}", &env.sender[..16.min(env.sender.len())]));
            let system = crate::model::system_prompt(system_prompt.as_deref(), &who, &env.scope);
            let base = serde_json::json!({"executor": "model", "endpoint": endpoint, "model": model});
            let key = match api_key_secret {
                Some(name) => match secret(store, name) {
                    Ok(k) => k,
                    Err(e) => return Err(serde_json::json!({"executor": "model", "endpoint": endpoint, "model": model, "error": e})),
                },
                None => None,
            };
            // The sender's context goes with its prompt, marked as such.
            let context =
                serde_json::from_str::<serde_json::Value>(&env.raw).ok().and_then(|v| v.pointer("/payload/context").cloned()).filter(|c| !c.is_null());
            let user = match &context {
                Some(c) => format!("{}\n\nContext from the sender (JSON): {c}", env.prompt),
                None => env.prompt.clone(),
            };
            match crate::model::ask(endpoint, key.as_deref(), model, &system, &user, Duration::from_secs(*timeout_secs), |t| on_update(Update::Text(t))).await {
                Ok(a) => {
                    let mut v = serde_json::to_value(&a).unwrap_or_default();
                    if let Some(o) = v.as_object_mut() {
                        o.insert("executor".into(), "model".into());
                        o.insert("endpoint".into(), endpoint.clone().into());
                    }
                    Ok(v)
                }
                Err(e) => {
                    let mut v = base;
                    v["error"] = e.to_string().into();
                    Err(v)
                }
            }
        }
        ExecutorSpec::Swarm { swarm, entrypoint } => swarm_task(store, swarm, entrypoint.as_deref(), env, sender_name).await,
        ExecutorSpec::Peer { peer, timeout_secs } => peer_task(store, peer, Duration::from_secs(*timeout_secs), env, on_update).await,
    }
}

async fn peer_task(
    store: &std::sync::Arc<Store>,
    peer: &str,
    timeout: Duration,
    env: &EnvelopeRow,
    on_update: &mut (dyn FnMut(Update<'_>) + Send),
) -> Result<serde_json::Value, serde_json::Value> {
    use crate::uamp::client;
    let fail = |e: String| serde_json::json!({"executor": "peer", "peer": peer, "error": e});
    let row = store.uamp_peer(peer).map_err(|e| fail(e.to_string()))?.ok_or_else(|| fail(format!("no UAMP peer {peer:?} was added")))?;
    let token = secret(store, &client::token_name(&row.did)).map_err(fail)?;
    let key = crate::reply::key_of(store).map_err(|e| fail(e.to_string()))?;
    let data_dir = store.data_dir().ok_or_else(|| fail("this inbox has no data dir".into()))?;
    let c = client::Client { key, store: store.clone(), files_dir: client::files_dir(data_dir) };
    let ask = client::Ask { body_type: "text/plain".into(), content: env.prompt.clone(), delta_window: client::DEFAULT_WINDOW };
    let p = match tokio::time::timeout(
        timeout,
        c.ask(&row, token.as_deref(), &ask, |p| on_update(Update::Note(format!("{peer}: {} ({} bytes so far)", p.state, p.bytes)))),
    )
    .await
    {
        Err(_) => return Err(fail(format!("{} did not finish within {} s", row.name, timeout.as_secs()))),
        Ok(Err(e)) => return Err(fail(format!("{e} [{}]", e.code()))),
        Ok(Ok(p)) => p,
    };
    let file = p.file.as_ref().map(|f| f.display().to_string());
    // A text answer is kept as text (up to the output limit); anything else by its file.
    let text = match (&p.file, p.mime.as_deref()) {
        (Some(f), Some(m)) if m.starts_with("text/") || m == "application/json" => {
            tokio::fs::read(f).await.ok().map(|b| String::from_utf8_lossy(&b[..b.len().min(KEEP_OUTPUT_BYTES)]).into_owned())
        }
        (Some(f), None) => tokio::fs::read(f)
            .await
            .ok()
            .filter(|b| std::str::from_utf8(b).is_ok())
            .map(|b| String::from_utf8_lossy(&b[..b.len().min(KEEP_OUTPUT_BYTES)]).into_owned()),
        _ => None,
    };
    let record = serde_json::json!({"executor": "peer", "peer": row.did, "name": row.name, "stream_id": p.stream_id, "state": p.state, "mime": p.mime, "file": file, "answer": text});
    if p.state == "COMPLETED" {
        Ok(record)
    } else {
        let mut r = record;
        r["error"] = format!("{}'s stream ended {}: {}", row.name, p.state, p.detail.map(|d| d.to_string()).unwrap_or_default()).into();
        Err(r)
    }
}

/// A secret from the data dir's keystore (the OS keychain, or the opted-in file store).
fn secret(store: &Store, name: &str) -> Result<Option<String>, String> {
    let dir = store.data_dir().ok_or("this inbox has no data dir to find its keychain by")?;
    gatehouse_keys::Secrets::open(dir).and_then(|s| s.get(name)).map_err(|e| format!("the keychain: {e}"))
}

async fn swarm_task(
    store: &std::sync::Arc<Store>,
    swarm: &str,
    entrypoint: Option<&str>,
    env: &EnvelopeRow,
    sender_name: Option<&str>,
) -> Result<serde_json::Value, serde_json::Value> {
    let fail = |e: String| serde_json::json!({"executor": "swarm", "swarm": swarm, "error": e});
    let row = store.mail_swarm(swarm).map_err(|e| fail(e.to_string()))?.ok_or_else(|| fail(format!("no MAIL swarm named {swarm:?} is connected")))?;
    let token = secret(store, &crate::mail::token_name(swarm, &row.base_url)).map_err(fail)?;
    let client = gatehouse_mail::SwarmClient::new(&row.base_url, token).map_err(|e| fail(e.to_string()))?;
    let who = sender_name.unwrap_or("an external sender");
    let m = gatehouse_mail::SendMessage {
        body: env.prompt.clone(),
        subject: Some(format!("{} from {who} (via Gatehouse)", env.scope)),
        task_id: None,
        entrypoint: entrypoint.map(str::to_string),
    };
    match crate::mail::send(store.clone(), &client, swarm, &m, |_| {}).await {
        Ok(o) if o.completed => Ok(serde_json::json!({"executor": "swarm", "swarm": swarm, "task_id": o.task_id, "answer": o.response})),
        Ok(o) => {
            Err(serde_json::json!({"executor": "swarm", "swarm": swarm, "task_id": o.task_id, "error": format!("the swarm's task failed: {}", o.response)}))
        }
        Err(e) => Err(fail(format!("{e} [{}]", e.code()))),
    }
}

async fn file_queue(dir: &PathBuf, env: &EnvelopeRow) -> std::io::Result<String> {
    tokio::fs::create_dir_all(dir).await?;
    let safe_id: String = env.envelope_id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let name = format!("{:010}-{safe_id}.json", env.id);
    let record = serde_json::json!({
        "envelope": serde_json::from_str::<serde_json::Value>(&env.raw).unwrap_or(serde_json::Value::String(env.raw.clone())),
        "received_at": env.received_at,
        "receipt_id": env.receipt_id,
    });
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(&name);
    tokio::fs::write(&tmp, serde_json::to_vec_pretty(&record).expect("serialises")).await?;
    tokio::fs::rename(&tmp, &path).await?;
    Ok(path.display().to_string())
}

async fn read_capped<R: tokio::io::AsyncRead + Unpin>(mut r: R) -> (String, bool) {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    let mut truncated = false;
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = KEEP_OUTPUT_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                truncated |= n > room;
            }
        }
    }
    (String::from_utf8_lossy(&kept).into_owned(), truncated)
}

async fn run_command(program: &str, args: &[String], timeout: Duration, env: &EnvelopeRow) -> Result<serde_json::Value, serde_json::Value> {
    let started = Instant::now();
    let base = || serde_json::json!({"executor": "command", "program": program, "args": args});
    let with = |mut v: serde_json::Value, extra: serde_json::Value| {
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        v
    };
    // The prompt goes on stdin and metadata in the environment: nothing from the message
    // ever becomes part of a command line or passes through a shell.
    let mut child = crate::process::command(program)
        .args(args)
        .env("EPP_ENVELOPE_ID", &env.envelope_id)
        .env("EPP_SENDER", &env.sender)
        .env("EPP_SCOPE", &env.scope)
        .env("EPP_RECEIPT_ID", &env.receipt_id)
        .env("EPP_CONVERSATION_ID", env.conversation_id.as_deref().unwrap_or(""))
        .env("EPP_PAYLOAD_TYPE", env.payload_type.as_deref().unwrap_or(""))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| with(base(), serde_json::json!({"error": format!("could not start {program}: {e}")})))?;
    let mut group = crate::process::Group::of(&child);
    let mut stdin = child.stdin.take().expect("piped");
    let prompt = env.prompt.clone();
    let feed = tokio::spawn(async move {
        // A command that ignores stdin closes it early; that is not an error.
        let _ = stdin.write_all(prompt.as_bytes()).await;
    });
    let out = tokio::spawn(read_capped(child.stdout.take().expect("piped")));
    let err = tokio::spawn(read_capped(child.stderr.take().expect("piped")));
    let status = tokio::time::timeout(timeout, child.wait()).await;
    // Whether it finished or timed out, nothing it started lives on.
    group.kill();
    if status.is_err() {
        let _ = child.kill().await;
    }
    feed.abort();
    let (stdout, stdout_truncated) = crate::process::drain(out).await;
    let (stderr, stderr_truncated) = crate::process::drain(err).await;
    let record = |exit: serde_json::Value| {
        with(
            base(),
            serde_json::json!({
                "exit_code": exit,
                "stdout": stdout, "stdout_truncated": stdout_truncated,
                "stderr": stderr, "stderr_truncated": stderr_truncated,
                "duration_ms": started.elapsed().as_millis() as u64,
            }),
        )
    };
    match status {
        Err(_) => Err(with(record(serde_json::Value::Null), serde_json::json!({"error": format!("timed out after {} s and was killed", timeout.as_secs())}))),
        Ok(Err(e)) => Err(with(record(serde_json::Value::Null), serde_json::json!({"error": format!("waiting for the command failed: {e}")}))),
        Ok(Ok(st)) if st.success() => Ok(record(st.code().into())),
        Ok(Ok(st)) => {
            let why = match st.code() {
                Some(c) => format!("exited with status {c}"),
                None => "was killed by a signal".to_string(),
            };
            Err(with(record(st.code().into()), serde_json::json!({"error": why})))
        }
    }
}
