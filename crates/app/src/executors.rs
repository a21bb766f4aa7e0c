//! Which executor runs for which scope, as the user sets it: validated (a scope's name, a
//! program to run, a swarm or peer that exists, a model's address), programs and folders
//! that are new confirmed by the user, then saved and audited.

use crate::Context;
use std::future::Future;
use std::path::Path;

use gatehouse_store::Store;

use crate::{blocking, Code, CommandError, Result};

use crate::doors::a2a::executor::{AgentSpec, KIND as A2A};
pub use crate::doors::gate::model::DEFAULT_ENDPOINT as DEFAULT_MODEL_ENDPOINT;
use crate::doors::mail::executor::{SwarmSpec, KIND as SWARM};
use crate::doors::uamp::executor::{PeerSpec, KIND as PEER};
pub use crate::doors::{ExecutorConfig, ExecutorSpec};

/// Keeps a cloud model's API key for `scope` in the keychain; the executor names it by
/// the name returned (the setting never holds the key).
pub fn keep_model_api_key(data_dir: &std::path::Path, scope: &str, key: &str) -> Result<String> {
    let name = format!("model-api-key:{scope}");
    gatehouse_keys::Secrets::open(data_dir).and_then(|s| s.put(&name, key))?;
    Ok(name)
}

pub fn get(ctx: &Context) -> Result<ExecutorConfig> {
    get_in(&ctx.store)
}

/// [`get`] on the store itself, for this crate's own callers.
pub(crate) fn get_in(store: &Store) -> Result<ExecutorConfig> {
    Ok(ExecutorConfig::load(store)?)
}

/// Hands the prompt to a MAIL swarm the user connected and follows its task.
pub fn swarm(swarm: &str, entrypoint: Option<&str>) -> ExecutorSpec {
    SwarmSpec::executor(swarm, entrypoint)
}

/// Asks a UAMP peer the user added and follows its stream.
pub fn peer(peer: &str, timeout_secs: u64) -> ExecutorSpec {
    PeerSpec::executor(peer, timeout_secs)
}

/// Sends the prompt to an A2A agent the user added and follows its answer.
pub fn a2a_agent(agent: &str, timeout_secs: u64) -> ExecutorSpec {
    AgentSpec::executor(agent, timeout_secs)
}

/// Refuses a configuration that could not run as the user means it.
pub fn validate(store: &Store, config: &ExecutorConfig) -> Result<()> {
    let invalid = |m: String| Err(CommandError::new(Code::Invalid, m));
    for (scope, spec) in config.scopes.iter().map(|(s, v)| (s.as_str(), v)).chain([("default", &config.default)]) {
        if scope != "default" && !gatehouse_gate::consent::is_scope_like(scope) {
            return invalid(format!("scope {scope:?} may contain only letters, digits and hyphens"));
        }
        match spec {
            ExecutorSpec::Command { program, .. } if program.trim().is_empty() => return invalid(format!("the command for {scope} needs a program")),
            ExecutorSpec::Delegated(d) if d.kind == SWARM => {
                let SwarmSpec { swarm, .. } = d.read().map_err(|e| CommandError::new(Code::Invalid, e))?;
                if store.mail_swarm(&swarm)?.is_none() {
                    return invalid(format!(
                        "no MAIL swarm named {swarm:?}: connect it in the window (Conversations → Send a task to a swarm) or with `gatehouse mail add` first"
                    ));
                }
            }
            ExecutorSpec::Delegated(d) if d.kind == PEER => {
                let PeerSpec { peer, .. } = d.read().map_err(|e| CommandError::new(Code::Invalid, e))?;
                if store.uamp_peer(&peer)?.is_none() {
                    return invalid(format!("no UAMP peer named {peer:?}: add it in the window (People & agents → Add someone → An agent’s address) or with `gatehouse uamp peer add` first"));
                }
            }
            ExecutorSpec::Delegated(d) if d.kind == A2A => {
                let AgentSpec { agent, .. } = d.read().map_err(|e| CommandError::new(Code::Invalid, e))?;
                if !crate::doors::a2a::executor::agents(store)?.iter().any(|a| a.name == agent) {
                    return invalid(format!("no A2A agent named {agent:?}: add it with `gatehouse a2a agent add` first"));
                }
            }
            ExecutorSpec::Delegated(d) => {
                return invalid(format!("there is no {:?} executor (a swarm, a peer, an A2A agent, a model, a command, a folder or none)", d.kind))
            }
            ExecutorSpec::Model { model, endpoint, .. } => {
                if model.trim().is_empty() {
                    return invalid(format!("the model for {scope} needs a name (e.g. llama3.2)"));
                }
                let u = url::Url::parse(endpoint).map_err(|e| CommandError::new(Code::Invalid, format!("{endpoint}: {e}")))?;
                if !matches!(u.scheme(), "http" | "https") {
                    return invalid(format!("{endpoint}: the model's address is http(s)"));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Programs to run and folders to write into that `after` names and `before` did not:
/// each is confirmed by the user before it is saved.
pub fn new_programs_and_folders(before: &ExecutorConfig, after: &ExecutorConfig) -> Vec<String> {
    let of = |c: &ExecutorConfig| -> Vec<(String, ExecutorSpec)> {
        c.scopes.iter().map(|(s, v)| (s.clone(), v.clone())).chain([("default".to_string(), c.default.clone())]).collect()
    };
    let old = of(before);
    let mut asks = Vec::new();
    for (scope, spec) in of(after) {
        let known = |f: &dyn Fn(&ExecutorSpec) -> bool| old.iter().any(|(_, o)| f(o));
        match &spec {
            ExecutorSpec::Command { program, args, .. }
                if !known(&|o| matches!(o, ExecutorSpec::Command { program: p, args: a, .. } if p == program && a == args)) =>
            {
                asks.push(format!("run {program} {} for \"{scope}\"", args.join(" ")));
            }
            ExecutorSpec::FileQueue { dir } if !known(&|o| matches!(o, ExecutorSpec::FileQueue { dir: d } if d == dir)) => {
                asks.push(format!("write messages for \"{scope}\" into {}", dir.display()));
            }
            _ => {}
        }
    }
    asks
}

/// Validates, asks `confirm` about new programs and folders (the window: a native dialog
/// the page cannot answer; the CLI: the user typed the command), lists them as allowed on
/// this machine (`data_dir`'s own list: a setting in the database alone runs nothing),
/// saves and audits.
pub async fn set<F, Fut>(ctx: &Context, config: ExecutorConfig, confirm: F) -> Result<()>
where
    F: FnOnce(Vec<String>) -> Fut,
    Fut: Future<Output = bool>,
{
    let data_dir: &Path = &ctx.data_dir;
    let store = ctx.store.clone();
    let (s, c) = (store.clone(), config.clone());
    let before = blocking(move || {
        validate(&s, &c)?;
        Ok(ExecutorConfig::load(&s)?)
    })
    .await?;
    let asks = new_programs_and_folders(&before, &config);
    if !asks.is_empty() && !confirm(asks).await {
        return Err(CommandError::new(Code::NotConfirmed, "not saved: the new program or folder was not confirmed"));
    }
    allow_here(data_dir, &config)?;
    blocking(move || {
        config.save(&store)?;
        store.audit("executors.update", None, &serde_json::to_value(&config).unwrap_or_default(), &crate::now())?;
        Ok(())
    })
    .await
}

/// Lists every program and folder `config` names as allowed on this machine (in
/// `data_dir`); returns what was newly listed, in words.
pub fn allow_here(data_dir: &Path, config: &ExecutorConfig) -> Result<Vec<String>> {
    use crate::doors::gate::executor::here;
    let io = |e: String| CommandError::new(Code::Io, e);
    let mut listed = here::load(data_dir).map_err(io)?;
    let mut added = Vec::new();
    for spec in config.scopes.values().chain([&config.default]) {
        if !listed.permits(spec) {
            listed.add(spec);
            added.push(match spec {
                ExecutorSpec::Command { program, args, .. } => format!("run {program} {}", args.join(" ")).trim_end().to_string(),
                ExecutorSpec::FileQueue { dir } => format!("write into {}", dir.display()),
                other => other.name().to_string(),
            });
        }
    }
    if !added.is_empty() {
        here::save(data_dir, &listed).map_err(io)?;
    }
    Ok(added)
}

/// Sets one scope's executor (or the default), keeping the others: what the CLI's
/// `executor set` does.
pub async fn set_scope(ctx: &Context, scope: &str, spec: ExecutorSpec) -> Result<ExecutorConfig> {
    let store = ctx.store.clone();
    let s = store.clone();
    let mut config = blocking(move || get_in(&s)).await?;
    if scope == "default" {
        config.default = spec;
    } else {
        config.scopes.insert(scope.to_string(), spec);
    }
    set(ctx, config.clone(), |_| async { true }).await?;
    Ok(config)
}

/// Runs a failed executor again (the model was unreachable, the swarm refused its token…),
/// audited. A paused inbox keeps it queued until it resumes.
pub fn retry(inbox: &crate::doors::Gate, envelope_row: i64) -> Result<()> {
    let queued = inbox.retry(envelope_row).map_err(|e| CommandError::new(Code::NotAllowed, e.to_string()))?;
    if !queued {
        return Err(CommandError::new(Code::NotRunning, "queued; it runs when the inbox is resumed"));
    }
    inbox.store().audit("executor.retry", None, &serde_json::json!({"envelope_row": envelope_row}), &crate::now())?;
    Ok(())
}
