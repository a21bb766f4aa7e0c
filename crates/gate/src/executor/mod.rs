//! Executors (spec 9): what happens to accepted work, whichever door it came through.
//! Chosen per scope, stored in the settings table so the CLI and the app edit the same
//! configuration. One implementation: a door describes the work ([`Work`]) and where the
//! output goes ([`Sink`]); the runner collects it into the stored result, a door's stream
//! sends it on as frames. Executors that hand work to another agent are [`Delegate`]s a
//! door provides and the composition registers; the gate does not know them.
//!
//! - [`command`]: a program, no shell, killed with its process group
//! - [`file_queue`]: a JSON file per piece of work, written atomically
//! - the model executor is [`super::model`]

pub mod command;
pub mod file_queue;
pub mod here;

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use gatehouse_store::Store;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub const SETTINGS_KEY: &str = "executors";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ExecutorSpec {
    /// Accepts and logs; no action.
    Noop,
    /// Writes each accepted envelope as a JSON file into `dir` for later processing.
    FileQueue { dir: PathBuf },
    /// Runs `program` with `args` (no shell), the prompt on stdin, the facts its door
    /// names in environment variables; killed after `timeout_secs`.
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
    /// Hands the work to another agent through the door that registered a delegate under
    /// this kind ([`Delegates`]).
    #[serde(untagged)]
    Delegated(Delegation),
}

/// The executors the gate runs itself; every other kind is a [`Delegation`].
const OWN_KINDS: [&str; 4] = ["noop", "file-queue", "command", "model"];

/// Work handed to another agent: `kind` names the delegate a door registered, the other
/// fields are that door's to read ([`Delegation::read`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Delegation {
    pub kind: String,
    #[serde(flatten)]
    pub fields: serde_json::Map<String, Value>,
}

impl<'de> Deserialize<'de> for Delegation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            kind: String,
            #[serde(flatten)]
            fields: serde_json::Map<String, Value>,
        }
        let Raw { kind, fields } = Raw::deserialize(d)?;
        // One of the gate's own kinds that did not read as itself is a mistake in its
        // fields, never work for someone else.
        if OWN_KINDS.contains(&kind.as_str()) {
            return Err(serde::de::Error::custom(format!("the {kind} executor's fields are not valid")));
        }
        Ok(Delegation { kind, fields })
    }
}

impl Delegation {
    /// A door's executor: its kind and its own fields.
    pub fn of<T: Serialize>(kind: &str, spec: &T) -> ExecutorSpec {
        let fields = match serde_json::to_value(spec) {
            Ok(Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        ExecutorSpec::Delegated(Delegation { kind: kind.to_string(), fields })
    }

    /// The door's own fields, as the door reads them.
    pub fn read<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_value(Value::Object(self.fields.clone())).map_err(|e| format!("the {} executor's settings: {e}", self.kind))
    }
}

fn default_endpoint() -> String {
    crate::model::DEFAULT_ENDPOINT.to_string()
}

/// How long a model (or an agent asked on the user's behalf) may take by default.
pub fn default_model_timeout() -> u64 {
    300
}

fn default_timeout() -> u64 {
    60
}

impl ExecutorSpec {
    pub fn name(&self) -> &str {
        match self {
            ExecutorSpec::Noop => "noop",
            ExecutorSpec::FileQueue { .. } => "file-queue",
            ExecutorSpec::Command { .. } => "command",
            ExecutorSpec::Model { .. } => "model",
            ExecutorSpec::Delegated(d) => &d.kind,
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

/// What runs for work whose executor was chosen when it was accepted (`kept`, the spec
/// whole as JSON), now that `now` is set for its scope: the one chosen then, once for all.
/// If the user changed it since, none runs (`Err`: the name of the one chosen then), and
/// the user runs it again to use the new one. Work kept before the choice was kept whole
/// runs under the one set now, as it would have then.
pub fn still_chosen(kept: Option<&str>, now: &ExecutorSpec) -> Result<ExecutorSpec, String> {
    let Some(kept) = kept else { return Ok(now.clone()) };
    match serde_json::from_str::<ExecutorSpec>(kept) {
        Ok(spec) if spec == *now => Ok(spec),
        Ok(spec) => Err(spec.name().to_string()),
        Err(_) => Err("an executor this build does not read".into()),
    }
}

/// What the no-op executor records.
pub fn noop_result() -> serde_json::Value {
    serde_json::json!({"executor": "noop"})
}

/// What an executor is given, described by the door the work came through.
pub struct Work {
    /// Who speaks, as the model is told ("Alice", "the sender 3f2a…", a DID).
    pub who: String,
    pub scope: String,
    /// The text the executor acts on (a command's stdin, the model's user message).
    pub prompt: String,
    /// Context the sender sent with its prompt (given to the model, marked as such).
    pub context: Option<Value>,
    /// Facts a command finds in its environment (named by the door); never its arguments.
    pub env: Vec<(&'static str, String)>,
    /// The file a file-queue executor writes: its name (chosen locally, never by the
    /// sender) and its content.
    pub queue_file: (String, Value),
    /// Turns true when the work is cancelled (its sender cancelled it).
    pub cancel: Option<tokio::sync::watch::Receiver<bool>>,
}

/// What an executor reports while it works.
pub enum Update<'a> {
    /// The answer so far.
    Text(&'a str),
    Note(String),
}

/// Where an executor's output goes as it is produced.
pub trait Sink: Send {
    /// Why the sink stopped taking output (the executor stops, its program is killed).
    type Stop: Send;
    /// A piece of a program's output. May wait (a stream's window is full): the program
    /// then blocks on its full pipe.
    fn output(&mut self, bytes: &[u8]) -> impl std::future::Future<Output = Result<(), Self::Stop>> + Send;
    /// Progress to show (a model's answer so far, another agent's stream).
    fn update(&mut self, _u: Update<'_>) {}
}

/// How an executor ended well.
pub enum Done {
    Noop,
    Queued(PathBuf),
    Command(command::Ran),
    Model(super::model::ModelAnswer),
    /// A delegate's record (the other agent's task or stream).
    Delegated(Value),
}

/// How an executor failed. `S`: the sink's reason for stopping it.
pub enum Failed<S> {
    Queue {
        dir: PathBuf,
        error: std::io::Error,
    },
    /// The program did not start.
    Start {
        program: String,
        error: String,
    },
    /// The program ran and failed (a status, a timeout, a cancel; what it wrote is kept).
    Command(command::Ran),
    Model {
        endpoint: String,
        model: String,
        error: String,
    },
    Delegated(Value),
    /// This kind of executor is not available to this door.
    Unavailable(String),
    /// A program or folder this machine's operator did not allow here ([`here`]).
    NotHere(String),
    Stopped(S),
}

/// An executor that hands the work to another agent and follows it; registered by the
/// service for the doors that may use it.
pub trait Delegate: Send + Sync {
    fn run<'a>(&'a self, spec: &'a Delegation, work: &'a Work, on_update: &'a mut (dyn FnMut(Update<'_>) + Send)) -> BoxFuture<'a, Result<Value, Value>>;
}

/// The delegates a door may use, by executor kind (the name each door gives its own).
#[derive(Clone, Default)]
pub struct Delegates(HashMap<&'static str, Arc<dyn Delegate>>);

impl Delegates {
    pub fn with(mut self, kind: &'static str, d: Arc<dyn Delegate>) -> Self {
        self.0.insert(kind, d);
        self
    }
}

/// Runs one executor for one piece of work, if it may run on this machine (`here`).
pub async fn run<S: Sink>(
    spec: &ExecutorSpec,
    work: &Work,
    store: &Arc<Store>,
    delegates: &Delegates,
    here: &here::RunsHere,
    sink: &mut S,
) -> Result<Done, Failed<S::Stop>> {
    if let Some(why) = here.refusal(spec) {
        return Err(Failed::NotHere(why));
    }
    match spec {
        ExecutorSpec::Noop => Ok(Done::Noop),
        ExecutorSpec::FileQueue { dir } => {
            file_queue::write(dir, &work.queue_file.0, &work.queue_file.1).await.map(Done::Queued).map_err(|error| Failed::Queue { dir: dir.clone(), error })
        }
        ExecutorSpec::Command { program, args, timeout_secs } => {
            let c = command::Command { program, args, env: &work.env, stdin: &work.prompt, timeout: Duration::from_secs(*timeout_secs) };
            match command::run(&c, sink, work.cancel.clone()).await {
                Err(error) => Err(Failed::Start { program: program.clone(), error }),
                Ok(Err((stop, _))) => Err(Failed::Stopped(stop)),
                Ok(Ok(ran)) if ran.succeeded() => Ok(Done::Command(ran)),
                Ok(Ok(ran)) => Err(Failed::Command(ran)),
            }
        }
        ExecutorSpec::Model { endpoint, model, system_prompt, timeout_secs, api_key_secret } => {
            let fail = |error: String| Failed::Model { endpoint: endpoint.clone(), model: model.clone(), error };
            let key = match api_key_secret {
                Some(name) => secret(store, name).map_err(fail)?,
                None => None,
            };
            let system = super::model::system_prompt(system_prompt.as_deref(), &work.who, &work.scope);
            // The sender's text and context go as data, never as instructions.
            let user = super::model::external_message(&work.prompt, work.context.as_ref());
            super::model::ask(endpoint, key.as_deref(), model, &system, &user, Duration::from_secs(*timeout_secs), |t| sink.update(Update::Text(t)))
                .await
                .map(Done::Model)
                .map_err(|e| fail(e.to_string()))
        }
        ExecutorSpec::Delegated(spec) => {
            let Some(d) = delegates.0.get(spec.kind.as_str()) else { return Err(Failed::Unavailable(spec.kind.clone())) };
            let mut on_update = |u: Update<'_>| sink.update(u);
            d.run(spec, work, &mut on_update).await.map(Done::Delegated).map_err(Failed::Delegated)
        }
    }
}

/// The result record the user reads beside accepted work (what the runner stores):
/// `Ok` and `Err` both carry one. The runner's sink never stops an executor.
pub fn record(spec: &ExecutorSpec, out: Result<Done, Failed<std::convert::Infallible>>) -> Result<Value, Value> {
    let command_record = |program: &str, args: &[String], ran: &command::Ran| {
        let mut v = json!({
            "executor": "command", "program": program, "args": args,
            "exit_code": ran.exit_code(),
            "stdout": String::from_utf8_lossy(&ran.stdout), "stdout_truncated": ran.stdout_truncated,
            "stderr": ran.stderr, "stderr_truncated": ran.stderr_truncated,
            "duration_ms": ran.duration.as_millis() as u64,
        });
        if let Some(why) = ran.failure() {
            v["error"] = why.into();
        }
        v
    };
    let (program, args) = match spec {
        ExecutorSpec::Command { program, args, .. } => (program.as_str(), args.as_slice()),
        _ => ("", &[][..]),
    };
    match out {
        Ok(Done::Noop) => Ok(noop_result()),
        Ok(Done::Queued(path)) => Ok(json!({"executor": "file-queue", "path": path.display().to_string()})),
        Ok(Done::Command(ran)) => Ok(command_record(program, args, &ran)),
        Ok(Done::Model(a)) => {
            let mut v = serde_json::to_value(&a).unwrap_or_default();
            if let (Some(o), ExecutorSpec::Model { endpoint, .. }) = (v.as_object_mut(), spec) {
                o.insert("executor".into(), "model".into());
                o.insert("endpoint".into(), endpoint.clone().into());
            }
            Ok(v)
        }
        Ok(Done::Delegated(v)) => Ok(v),
        Err(Failed::Delegated(v)) => Err(v),
        Err(Failed::Queue { dir, error }) => Err(json!({"executor": "file-queue", "error": format!("{}: {error}", dir.display())})),
        Err(Failed::Start { program, error }) => {
            Err(json!({"executor": "command", "program": program, "args": args, "error": format!("could not start {program}: {error}")}))
        }
        Err(Failed::Command(ran)) => Err(command_record(program, args, &ran)),
        Err(Failed::Model { endpoint, model, error }) => Err(json!({"executor": "model", "endpoint": endpoint, "model": model, "error": error})),
        Err(Failed::Unavailable(kind)) => Err(json!({"executor": kind, "error": format!("the {kind} executor is not available here")})),
        Err(Failed::NotHere(why)) => Err(json!({"executor": spec.name(), "error": why, "not_allowed_here": true})),
        Err(Failed::Stopped(never)) => match never {},
    }
}

/// A secret from the data dir's keystore (the OS keychain, or the opted-in file store).
pub fn secret(store: &Store, name: &str) -> Result<Option<String>, String> {
    let dir = store.data_dir().ok_or("this inbox has no data dir to find its keychain by")?;
    gatehouse_keys::Secrets::open(dir).and_then(|s| s.get(name)).map_err(|e| format!("the keychain: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_door_s_executor_is_kept_as_it_was_written_and_a_broken_own_one_is_an_error() {
        // As settings written before delegations were the doors' own still read.
        for raw in [r#"{"kind":"relay","relay":"helpers","entrypoint":null}"#, r#"{"kind":"forward","to":"did:web:a.example","timeout_secs":20}"#] {
            let spec: ExecutorSpec = serde_json::from_str(raw).unwrap();
            let ExecutorSpec::Delegated(d) = &spec else { panic!("{spec:?}") };
            assert_eq!(d.kind, serde_json::from_str::<Value>(raw).unwrap()["kind"]);
            assert_eq!(serde_json::to_value(&spec).unwrap(), serde_json::from_str::<Value>(raw).unwrap());
        }
        // A command without its program is a mistake, not work for a delegate named "command".
        let e = serde_json::from_str::<ExecutorSpec>(r#"{"kind":"command","args":["x"]}"#).unwrap_err();
        assert!(!e.to_string().is_empty());
        assert_eq!(serde_json::from_str::<ExecutorSpec>(r#"{"kind":"noop"}"#).unwrap(), ExecutorSpec::Noop);
        // A door reads its own fields; another door's are an error in words.
        let d = Delegation { kind: "relay".into(), fields: serde_json::from_str(r#"{"relay":"helpers"}"#).unwrap() };
        #[derive(Debug, Deserialize)]
        struct Forward {
            #[allow(dead_code)]
            to: String,
        }
        assert!(d.read::<Forward>().unwrap_err().contains("the relay executor's settings"));
    }
}
