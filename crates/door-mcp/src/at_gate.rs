//! A wrapped server's call at the gate. Who may call at all is the gate's decision, as for
//! every door ([`gatehouse_gate::Gate::accept`], door [`DOOR`], scope [`SCOPE`]): an unknown
//! server knocks (the user is asked to let it in), a blocked or revoked one is refused, one
//! whose grant ended has every call asked of the user, and its rate is counted. What the
//! call itself may do (the user's rules per tool with conditions on its arguments, or the
//! user asked) is decided by the [`Judge`] the composition gives the door: this crate
//! names no other door.

use std::cell::RefCell;
use std::sync::{Arc, Weak};

use futures_util::future::BoxFuture;
use gatehouse_gate::{Arrival, Gate, Keep, Refusal, Stored, Why, Words};
use gatehouse_store::{Durable, RateCount, Store};
use serde_json::Value;

use crate::signed::{Answer, Answers, Asked, Decided, Listed, ServerAsks, Withheld};
use crate::DOOR;
use gatehouse_mcp::tools::{self, Change, Pin};
use serde_json::json;

/// The trust-registry scope of a server let in.
pub const SCOPE: &str = "mcp";

/// What the gate decided about the server behind a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Let in; `held`: every call is asked of the user (a grant that ended, a key changed).
    Admitted { held: bool },
    /// Unknown: the user has been asked to let it in.
    Knocked { message: String },
    /// Refused (`blocked`: the user blocked or revoked it), in words the client shows.
    Refused { message: String, blocked: bool },
}

/// A call as the gate hands it to the judge.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The server's registry key ([`crate::signed::sender`]).
    pub sender: String,
    pub asked: Asked,
    pub admission: Admission,
    /// What the user called the server when they let it in.
    pub named: Option<String>,
    /// Its count against its server's rate, not taken yet: a judge that decides it by rule
    /// takes it in the transaction that records it ([`Judge::by_rule`]); otherwise the door
    /// does.
    pub count: Option<RateCount>,
}

/// What the user's rules made of a call ([`Judge::by_rule`]).
#[derive(Debug)]
pub enum ByRule {
    /// Decided and recorded (counted, when [`Judged::count`] was given), on disk once the
    /// [`Durable`] is done.
    Decided(Decided, Durable),
    /// No rule decides it: nothing was recorded or counted; the user is asked.
    Undecided,
    /// Its count was refused (the registry changed since the gate let it in, or the
    /// server's rate is over): nothing was recorded; the gate judges it again.
    NotCounted,
}

/// A request of a server's for the user or their app, as the gate hands it to the judge.
#[derive(Debug, Clone)]
pub struct AskedOfUser {
    pub sender: String,
    pub asked: ServerAsks,
    /// What it asks, in words the user reads.
    pub words: String,
    pub admission: Admission,
    /// What the user called the server when they let it in.
    pub named: Option<String>,
}

/// Decides a call once the gate has judged its server; records it either way. A server's
/// request for the user is always the user's to pass on: no rule answers it.
pub trait Judge: Send + Sync + 'static {
    fn judge(&self, call: Judged) -> BoxFuture<'static, Decided>;
    /// Decides `call` by the user's rules alone, here, on the thread its server was judged
    /// on (off the async workers: one trip for both), and records it, counted in the same
    /// transaction when [`Judged::count`] is given (on disk once the [`Durable`] is done);
    /// [`ByRule::Undecided`] when no rule decides it, for [`Judge::judge`] (which asks the
    /// user). The call is lent, not given: should this fail midway, the door still holds
    /// it to record why it was refused.
    fn by_rule(&self, _call: &Judged) -> ByRule {
        ByRule::Undecided
    }
    fn server_asks(&self, request: AskedOfUser) -> BoxFuture<'static, Answer>;
    /// Keeps what answered calls the judge let go on (told by the server `sender`'s wrap,
    /// each under the step it was kept as): how many were calls of that server's waiting
    /// for their answers.
    fn answered(&self, sender: String, told: Answers) -> BoxFuture<'static, usize>;
}

/// The gate's answer to a call, and when its record is on disk: the call may go on to its
/// server before, but the server's answer must not reach the app before.
#[derive(Debug)]
pub struct Ruling {
    pub decided: Decided,
    pub on_disk: Durable,
}

impl Ruling {
    /// An answer whose record (if any) was on disk when it was made.
    pub fn kept(decided: Decided) -> Ruling {
        Ruling { decided, on_disk: Durable::now() }
    }

    /// What to answer now, and the record's flush still to be waited for (none when it is
    /// on disk already). A record that could not be kept refuses the call.
    pub fn now(self) -> (Decided, Option<Durable>) {
        let Ruling { decided, mut on_disk } = self;
        match on_disk.try_done() {
            Some(Ok(())) => (decided, None),
            Some(Err(e)) => {
                let message = format!("Gatehouse could not keep its record of the call: {e}; the call was not sent");
                (Decided::unkept(Answer::Deny { message }), None)
            }
            None => (decided, Some(on_disk)),
        }
    }
}

/// What the trip off the async workers made of a call: decided by rule, or to be judged
/// (asked of the user, or recorded as refused).
enum Trip {
    Ruled(Ruling),
    Ask(Judged),
}

/// The server of `asked` judged by the gate, and the call by the user's rules when they
/// decide it. `count_later`: its count against the server's rate is taken with its record;
/// should that be refused (or no rule decide it, and the count then be refused), the call
/// comes back to be judged again, counted on its own (never with `count_later` false).
fn trip(gate: &Gate, judge: &dyn Judge, asked: Asked, sender: String, size: u64, count_later: bool) -> Result<Trip, Box<Judged>> {
    let (who, tool) = (asked.server.clone(), asked.tool.clone());
    let judged = unwound("judging its server", || {
        let (admission, count) = admit_call(gate, &sender, &who, size, count_later);
        match admission {
            // Only a tool the user let in, as they saw it, is called.
            Admission::Admitted { held } => match gate.store().mcp_call(&sender, &tool) {
                Ok(facts) => match tool_held(facts.pin, facts.offered, &who, &tool) {
                    Ok(described) => (Admission::Admitted { held }, facts.name, described, count),
                    Err(message) => (Admission::Refused { message, blocked: false }, None, None, count),
                },
                Err(e) => (Admission::Refused { message: format!("Gatehouse could not read the tools you let in: {e}"), blocked: false }, None, None, count),
            },
            other => (other, None, None, count),
        }
    });
    let (admission, named, described, count) = judged.unwrap_or_else(|message| (Admission::Refused { message, blocked: false }, None, None, None));
    // The tool's words shown with the call are those the user let in (the pin), not what
    // the wrap says the server listed last.
    let asked = match described {
        Some(d) => Asked { description: Some(d), ..asked },
        None => asked,
    };
    let mut judged = Judged { sender, asked, admission, named, count };
    if let Admission::Admitted { .. } = judged.admission {
        match unwound("applying your rules to it", || judge.by_rule(&judged)) {
            Ok(ByRule::Decided(decided, on_disk)) => return Ok(Trip::Ruled(Ruling { decided, on_disk })),
            Ok(ByRule::Undecided) => {}
            Ok(ByRule::NotCounted) => return Err(Box::new(judged)),
            // Refused, and recorded as refused by the judge (which reads no rule for a
            // call its server was not let in for).
            Err(message) => judged.admission = Admission::Refused { message, blocked: false },
        }
    }
    // Asked of the user, or refused after the gate let it in (its tool held): counted
    // now, as the gate counts every arrival it lets in.
    if let Some(count) = judged.count.take() {
        if !matches!(gate.store().take_rate_of(&count), Ok(Ok(()))) {
            return Err(Box::new(judged));
        }
    }
    Ok(Trip::Ask(judged))
}

/// The door at the gate.
pub struct McpDoor {
    gate: Weak<Gate>,
    judge: Arc<dyn Judge>,
}

impl McpDoor {
    pub fn new(gate: &Arc<Gate>, judge: Arc<dyn Judge>) -> Arc<McpDoor> {
        Arc::new(McpDoor { gate: Arc::downgrade(gate), judge })
    }

    /// The answer to `asked`, signed by the key `public_hex`, `size` bytes as it came.
    pub async fn ask(&self, public_hex: &str, asked: Asked, size: u64) -> Ruling {
        let sender = crate::signed::sender(&asked.server, public_hex);
        let Some(gate) = self.gate.upgrade() else {
            return Ruling::kept(Decided::unkept(Answer::Deny { message: "Gatehouse is stopping; the call was not sent".into() }));
        };
        let judge = self.judge.clone();
        // The server judged, and the call by the user's rules when they decide it, in one
        // trip off the async workers; its count against the server's rate taken with its
        // record (one write), or, should that be refused, the whole judged again and
        // counted on its own.
        let decided = tokio::task::spawn_blocking(move || match trip(&gate, &*judge, asked, sender, size, true) {
            Ok(trip) => trip,
            Err(again) => trip(&gate, &*judge, again.asked, again.sender, size, false).unwrap_or_else(|j| Trip::Ask(*j)),
        })
        .await;
        match decided {
            Ok(Trip::Ruled(ruling)) => ruling,
            Ok(Trip::Ask(judged)) => Ruling::kept(self.judge.judge(judged).await),
            Err(e) => Ruling::kept(Decided::unkept(Answer::Deny { message: format!("Gatehouse could not decide: {e}; the call was not sent") })),
        }
    }

    /// Keeps what answered calls of the server whose key is `public_hex`. Only a server
    /// let in under that key is heard (each step's id, which only the wrap that asked was
    /// told, names its call).
    pub async fn answered(&self, public_hex: &str, told: Answers) -> usize {
        let sender = crate::signed::sender(&told.server, public_hex);
        let Some(gate) = self.gate.upgrade() else { return 0 };
        let key = sender.clone();
        let let_in =
            tokio::task::spawn_blocking(move || gate.store().admission(&key, "").is_ok_and(|a| !a.blocked && a.revoked.is_none() && a.trust.is_some()))
                .await
                .unwrap_or(false);
        match let_in {
            true => self.judge.answered(sender, told).await,
            false => 0,
        }
    }

    /// Whether a server's request may reach the user's app: only a server let in, and only
    /// as the user answers.
    pub async fn server_asks(&self, public_hex: &str, asked: ServerAsks, size: u64) -> Answer {
        let sender = crate::signed::sender(&asked.server, public_hex);
        let Some(gate) = self.gate.upgrade() else { return Answer::Deny { message: "Gatehouse is stopping".into() } };
        let (who, key) = (asked.server.clone(), sender.clone());
        let judged = tokio::task::spawn_blocking(move || match admit(&gate, &key, &who, size, None) {
            Admission::Admitted { held } => (Admission::Admitted { held }, gate.store().trust_name(&key).ok().flatten()),
            other => (other, None),
        })
        .await;
        let (admission, named) = judged.unwrap_or_else(|e| (Admission::Refused { message: format!("Gatehouse could not decide: {e}"), blocked: false }, None));
        let words = asked_in_words(&asked.method, &asked.params);
        self.judge.server_asks(AskedOfUser { sender, asked, words, admission, named }).await
    }

    /// The tools of `listed` to withhold from the client: all of them from a server not let
    /// in (they wait with its knock, shown to the user, and are pinned when it is let in);
    /// from one let in, each that differs from its pin (kept as offered, shown to the user,
    /// withheld until accepted).
    pub async fn listed(&self, public_hex: &str, listed: Listed, size: u64) -> Withheld {
        let sender = crate::signed::sender(&listed.server, public_hex);
        let everything = |message: String| Withheld { withhold: listed.tools.iter().map(|t| t.name.clone()).collect(), message: Some(message) };
        let Some(gate) = self.gate.upgrade() else { return everything("Gatehouse is stopping".into()) };
        let tools: Vec<Pin> = listed.tools.iter().cloned().map(Pin::checked).collect();
        let who = listed.server.clone();
        let decided = tokio::task::spawn_blocking(move || -> Result<Withheld, String> {
            match admit(&gate, &sender, &who, size, Some(&tools)) {
                Admission::Admitted { .. } => {
                    let store = gate.store();
                    let pins: Vec<Pin> =
                        store.mcp_pins(&sender).map_err(|e| e.to_string())?.into_iter().filter_map(|p| serde_json::from_value(p.pin).ok()).collect();
                    let differs: Vec<&Pin> = tools::changes(&pins, &tools)
                        .iter()
                        .filter_map(|c| match c {
                            Change::Added { now } | Change::Changed { now, .. } => Some(now.name.as_str()),
                            Change::Removed { .. } => None,
                        })
                        .filter_map(|name| tools.iter().find(|t| t.name == name))
                        .collect();
                    if differs.is_empty() {
                        return Ok(Withheld { withhold: Vec::new(), message: None });
                    }
                    let kept: Vec<_> = differs.iter().map(|t| offer(t)).collect();
                    if store.mcp_offer(&sender, &kept, &gatehouse_gate::clock::now_string()).map_err(|e| e.to_string())? > 0 {
                        tell(&gate, &sender);
                    }
                    let names: Vec<String> = differs.iter().map(|t| t.name.clone()).collect();
                    let message = format!("held until you accept them in Gatehouse (they differ from what you let in): {}", names.join(", "));
                    Ok(Withheld { withhold: names, message: Some(message) })
                }
                Admission::Knocked { message } | Admission::Refused { message, .. } => {
                    Ok(Withheld { withhold: tools.iter().map(|t| t.name.clone()).collect(), message: Some(message) })
                }
            }
        })
        .await;
        match decided {
            Ok(Ok(w)) => w,
            Ok(Err(e)) => everything(format!("Gatehouse could not read the tools you let in: {e}")),
            Err(e) => everything(format!("Gatehouse could not decide: {e}")),
        }
    }
}

/// At most this much of what a server asks is shown (the rest is said to be cut).
const WORDS_SHOWN: usize = 4000;

/// A server's request in words: what it would have the app's model answer, or what it
/// would ask the user.
fn asked_in_words(method: &str, params: &Value) -> String {
    let texts = |v: &Value| -> String {
        let mut out = Vec::new();
        for m in v.get("messages").and_then(Value::as_array).into_iter().flatten() {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
            let content = m.get("content");
            let parts: Vec<&Value> = match content {
                Some(Value::Array(a)) => a.iter().collect(),
                Some(c) => vec![c],
                None => Vec::new(),
            };
            for p in parts {
                match p.get("text").and_then(Value::as_str) {
                    Some(t) => out.push(format!("{role}: {t}")),
                    None => out.push(format!("{role}: ({})", p.get("type").and_then(Value::as_str).unwrap_or("content"))),
                }
            }
        }
        out.join("\n")
    };
    let said = match method {
        "sampling/createMessage" => {
            let system = params.get("systemPrompt").and_then(Value::as_str).map(|s| format!("\nIts instructions to the model: {s}")).unwrap_or_default();
            format!("asks your AI app to run its model on:\n{}{system}", texts(params))
        }
        "elicitation/create" => format!("asks you, through your AI app: {}", params.get("message").and_then(Value::as_str).unwrap_or("(no question given)")),
        other => format!("asks your AI app: {other}"),
    };
    match said.char_indices().nth(WORDS_SHOWN) {
        Some((cut, _)) => format!("{}… (cut: {} characters in all)", said.get(..cut).unwrap_or_default(), said.chars().count()),
        None => said,
    }
}

/// A tool as the store keeps it offered: its name, its JSON, its digest.
fn offer(t: &Pin) -> (String, String, String) {
    (t.name.clone(), json!(t).to_string(), t.digest.clone())
}

/// Whether a call of `tool` may go on now its server is let in, from its pin and whether
/// the server listed it otherwise since: its description as the user let it in; or why
/// not (the tool is not among those the user let in, or it changed since).
fn tool_held(pinned: Option<gatehouse_store::mcp::McpTool>, offered: bool, who: &str, tool: &str) -> Result<Option<String>, String> {
    match (pinned, offered) {
        (Some(p), false) => Ok(p.pin.get("description").and_then(Value::as_str).filter(|d| !d.is_empty()).map(str::to_string)),
        (Some(_), true) => Err(format!("the tool {tool:?} of “{who}” changed since you let it in; it is held until you accept the change in Gatehouse")),
        (None, _) => Err(format!("{tool:?} is not among the tools of “{who}” you let in; it is held until you accept it in Gatehouse")),
    }
}

/// `f`'s value, or, should it panic, why the call is refused in words the client shows (a
/// fault of Gatehouse's own while `doing` refuses the call and is recorded with it, never
/// lets it through).
fn unwound<T>(doing: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| {
        let why = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
        format!("Gatehouse failed while {doing} ({why}); the call was not sent")
    })
}

/// Tells the window (and the phone) that something waits for the user at this door.
fn tell(gate: &Gate, key: &str) {
    gate.emit_event(gatehouse_gate::state::ArrivalEvent {
        receipt_id: format!("mcp-knock:{key}"),
        status: gatehouse_gate::state::Status::Rejected,
        code: None,
        sender: Some(key.to_string()),
        scope: Some(SCOPE.into()),
        transport: DOOR.into(),
        needs_consent: true,
        key_change: false,
    });
}

/// The gate's decision on the server behind a call or a list; a knock is recorded, with
/// the tools the server `offered` (its list), and the user told. The knock is known by the
/// tools offered (`offers_digest`): letting it in pins exactly those the user saw.
fn admit(gate: &Gate, key: &str, who: &str, size: u64, offered: Option<&[Pin]>) -> Admission {
    admitted(gate, key, size, offered, &Call { who, later: None })
}

/// [`admit`] for a call; `count_later`: a call let in is not counted yet, and its count is
/// given back to be taken with its record.
fn admit_call(gate: &Gate, key: &str, who: &str, size: u64, count_later: bool) -> (Admission, Option<RateCount>) {
    let call = Call { who, later: count_later.then(|| RefCell::new(None)) };
    let admission = admitted(gate, key, size, None, &call);
    (admission, call.later.and_then(RefCell::into_inner))
}

fn admitted(gate: &Gate, key: &str, size: u64, offered: Option<&[Pin]>, call: &Call<'_>) -> Admission {
    let at = gatehouse_gate::clock::now();
    let received_at = gatehouse_gate::clock::utc_string(at);
    // A call is kept by the judge, with its decision: nothing of it is the gate's.
    let arrival = Arrival::counted_only(DOOR, key.to_string(), SCOPE, size, at, &received_at);
    let admission = gate.accept(call, &arrival).answer;
    if let Admission::Knocked { .. } = &admission {
        // Recorded here, as the guardian records its agents' knocks: a knock is a server
        // asking to be let in, never a row of the Inbox.
        let store = gate.store();
        let recorded = (|| {
            if let Some(tools) = offered {
                store.mcp_offer(key, &tools.iter().map(offer).collect::<Vec<_>>(), &received_at)?;
            }
            let offers = gatehouse_store::mcp::offers_digest(&store.mcp_offers(Some(key))?);
            store.pending_record(DOOR, key, SCOPE, &offers, &received_at)
        })();
        if let Err(e) = recorded {
            tracing::error!(error = %e, "could not record an MCP server's knock");
        }
        tell(gate, key);
    }
    admission
}

struct Call<'a> {
    who: &'a str,
    /// Where a call let in leaves its count, to be taken with its record; none: counted
    /// by the gate at once.
    later: Option<RefCell<Option<RateCount>>>,
}

impl gatehouse_gate::Checks for Call<'_> {
    type Refusal = std::convert::Infallible;
}

impl gatehouse_gate::Door for Call<'_> {
    type Answer = Admission;

    // The judge announces what it asks and decides.
    fn accepted(&self, _a: &Arrival<'_>, _executor: &str, held: bool) -> Words<Admission> {
        Words { code: None, message: None, receipt: Value::Null, answer: Admission::Admitted { held }, keep: false }
    }

    fn refused(&self, _a: &Arrival<'_>, why: &Why<std::convert::Infallible>) -> Words<Admission> {
        Words { code: None, message: None, receipt: Value::Null, answer: self.refusal(why), keep: false }
    }

    fn outcome(&self, r: &std::convert::Infallible) -> gatehouse_code::Outcome {
        match *r {}
    }

    fn keep(&self, store: &Store, k: &Keep<'_>) -> Option<gatehouse_store::Result<Stored<std::convert::Infallible>>> {
        match &self.later {
            Some(later) => {
                later.replace(Some(k.count_later()));
                Some(Ok(Stored::Row { row: 0, held: k.held }))
            }
            None => Some(k.count(store)),
        }
    }
}

impl Call<'_> {
    fn refusal(&self, why: &Why<std::convert::Infallible>) -> Admission {
        let who = self.who;
        let refused = |message: String| Admission::Refused { message, blocked: false };
        match why {
            Why::Knock => {
                Admission::Knocked { message: format!("Gatehouse asked you to let the MCP server “{who}” in (Waiting for you); call again once you have") }
            }
            Why::Refused(Refusal::Blocked) => Admission::Refused { message: format!("You blocked the MCP server “{who}” in Gatehouse"), blocked: true },
            Why::Refused(Refusal::Revoked(_)) => Admission::Refused { message: format!("You took the MCP server “{who}” out of Gatehouse"), blocked: true },
            Why::Refused(Refusal::Size { size, limit }) => refused(format!("The call is {size} bytes; you allow the MCP server “{who}” {limit}")),
            Why::Refused(Refusal::Scope(_) | Refusal::Delegation) | Why::Reserved(_) => {
                refused(format!("You let “{who}” in for something else, not as an MCP server"))
            }
            Why::Refused(Refusal::Door(never)) => match *never {},
            Why::RateLimited { window, limit, .. } => refused(format!("You allow the MCP server “{who}” {limit} calls per {window}; try again later")),
            other => refused(format!("Gatehouse could not decide ({}); the call was not sent", other.outcome(|n| match *n {}).as_str())),
        }
    }
}
