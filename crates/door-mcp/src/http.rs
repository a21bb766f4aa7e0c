//! The door's endpoint on the inbox ([`crate::signed::PATH`]): a wrap asks about one call,
//! signed by its server's key; the answer is the gate's. The inbox's listener checks Host
//! and Origin before a request gets here (a web page cannot ask on a server's behalf).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::json;

use futures_util::StreamExt as _;

use crate::at_gate::McpDoor;
use crate::signed::{self, Asked, Listed};

/// `POST /mcp/v1/calls`, `POST /mcp/v1/tools`, `POST /mcp/v1/asks` and `POST /mcp/v1/answers`.
pub fn router(door: Arc<McpDoor>) -> Router {
    Router::new()
        .route(signed::PATH, post(call))
        .route(signed::TOOLS_PATH, post(tools))
        .route(signed::ASKS_PATH, post(asks))
        .route(signed::ANSWERS_PATH, post(answers))
        .route(crate::line::LINE_PATH, {
            // Wraps' lines open at once.
            let lines = Arc::new(tokio::sync::Semaphore::new(crate::line::MAX_LINES));
            axum::routing::get(move |door, req| line(door, lines.clone(), req))
        })
        .with_state(door)
}

fn refused(status: StatusCode, message: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], json!({"error": message}).to_string()).into_response()
}

/// The gate's answer, as JSON.
fn answer(v: impl serde::Serialize) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], json!(v).to_string()).into_response()
}

/// The body of a request to `path` read as `T` (`what` says what it should have been),
/// the key that signed it, and its size; or the refusal.
async fn signed_json<T: serde::de::DeserializeOwned>(req: axum::extract::Request, path: &str, what: &str) -> Result<(String, T, u64), Response> {
    let (public, body) = signed_body(req, path).await?;
    match serde_json::from_slice(&body) {
        Ok(t) => Ok((public, t, body.len() as u64)),
        Err(e) => Err(refused(StatusCode::BAD_REQUEST, format!("not {what}: {e}"))),
    }
}

/// The body of a request to `path`, and the key that signed it; or the refusal.
async fn signed_body(req: axum::extract::Request, path: &str) -> Result<(String, axum::body::Bytes), Response> {
    let headers: HeaderMap = req.headers().clone();
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
    let body = match gatehouse_net::body::read(req.into_body(), declared, signed::MAX_BODY).await {
        Ok(r) => r,
        Err(gatehouse_net::body::BodyError::TooLarge(_)) => {
            return Err(refused(StatusCode::PAYLOAD_TOO_LARGE, format!("a request is judged up to {} bytes; this one is larger", signed::MAX_BODY)))
        }
        Err(_) => return Err(refused(StatusCode::REQUEST_TIMEOUT, "the request did not arrive in time".into())),
    };
    let h = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let now = gatehouse_gate::clock::now().timestamp();
    // The signature first: nothing of an unsigned body is read.
    match signed::verify(h(signed::KEY_HEADER), h(signed::TIME_HEADER), h(signed::SIGNATURE_HEADER), path, &body.bytes, now) {
        Ok(k) => Ok((k, body.bytes.clone())),
        Err(e) => Err(refused(StatusCode::UNAUTHORIZED, e.to_string())),
    }
}

async fn call(State(door): State<Arc<McpDoor>>, req: axum::extract::Request) -> Response {
    let (public, asked, size) = match signed_json::<Asked>(req, signed::PATH, "a call Gatehouse can judge").await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if !asked.well_formed() {
        return refused(StatusCode::BAD_REQUEST, signed::MALFORMED_CALL.into());
    }
    match door.ask(&public, asked, size).await.now() {
        (decided, None) => answer(decided),
        // The call may go on while its record is flushed: the decision now, and a second
        // line once the record is on disk (the wrap holds the server's answer until then).
        (decided, Some(on_disk)) => {
            let mut first = serde_json::to_value(&decided).unwrap_or_default();
            first[signed::KEEPING] = true.into();
            let first = futures_util::stream::once(std::future::ready(format!("{first}\n")));
            let then = futures_util::stream::once(async move {
                let kept = match on_disk.done().await {
                    Ok(()) => json!({"kept": true}),
                    Err(e) => json!({"kept": false, "error": e.to_string()}),
                };
                format!("{kept}\n")
            });
            let lines = first.chain(then).map(|l| Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(l)));
            ([(header::CONTENT_TYPE, "application/x-ndjson")], axum::body::Body::from_stream(lines)).into_response()
        }
    }
}

/// `GET /mcp/v1/line`, upgraded to a wrap's kept line ([`crate::line`]).
async fn line(State(door): State<Arc<McpDoor>>, lines: Arc<tokio::sync::Semaphore>, mut req: axum::extract::Request) -> Response {
    let asks = req.headers().get(header::UPGRADE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.eq_ignore_ascii_case(crate::line::UPGRADE));
    if !asks {
        return refused(StatusCode::UPGRADE_REQUIRED, format!("a line is asked for with Upgrade: {}", crate::line::UPGRADE));
    }
    let Ok(slot) = lines.try_acquire_owned() else {
        return refused(StatusCode::SERVICE_UNAVAILABLE, format!("{} wrapped servers have a line open already", crate::line::MAX_LINES));
    };
    let challenge = crate::line::challenge();
    let upgraded = hyper::upgrade::on(&mut req);
    let given = challenge.clone();
    tokio::spawn(async move {
        if let Ok(io) = upgraded.await {
            crate::line::serve(door, hyper_util::rt::TokioIo::new(io), given).await;
        }
        drop(slot);
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::CONNECTION, "upgrade")
        .header(header::UPGRADE, crate::line::UPGRADE)
        .header(crate::line::CHALLENGE_HEADER, challenge)
        .body(axum::body::Body::empty())
        .unwrap_or_else(|_| refused(StatusCode::INTERNAL_SERVER_ERROR, "could not answer".into()))
}

async fn tools(State(door): State<Arc<McpDoor>>, req: axum::extract::Request) -> Response {
    let (public, listed, size) = match signed_json::<Listed>(req, signed::TOOLS_PATH, "a list of tools Gatehouse can read").await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let mut names = std::collections::HashSet::new();
    let twice = !listed.tools.iter().all(|t| names.insert(t.name.as_str()));
    if !signed::name_ok(&listed.server) || listed.tools.len() > gatehouse_mcp::tools::MAX_TOOLS || twice || listed.tools.iter().any(|t| t.name.is_empty()) {
        return refused(StatusCode::BAD_REQUEST, format!("a list names its server and at most {} tools, each once by a name", gatehouse_mcp::tools::MAX_TOOLS));
    }
    answer(door.listed(&public, listed, size).await)
}

async fn asks(State(door): State<Arc<McpDoor>>, req: axum::extract::Request) -> Response {
    let (public, asked, size) = match signed_json::<signed::ServerAsks>(req, signed::ASKS_PATH, "a server's request Gatehouse can read").await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if !signed::name_ok(&asked.server) || !signed::SERVER_ASKS.contains(&asked.method.as_str()) || !asked.params.is_object() {
        return refused(StatusCode::BAD_REQUEST, format!("a server's request names its server and one of {}, with its params", signed::SERVER_ASKS.join(", ")));
    }
    answer(door.server_asks(&public, asked, size).await)
}

async fn answers(State(door): State<Arc<McpDoor>>, req: axum::extract::Request) -> Response {
    let (public, told, _) = match signed_json::<signed::Answers>(req, signed::ANSWERS_PATH, "answers Gatehouse can keep").await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if !signed::name_ok(&told.server) || told.answers.len() > signed::MAX_ANSWERS || !told.answers.iter().all(signed::Answered::well_formed) {
        return refused(
            StatusCode::BAD_REQUEST,
            format!(
                "answers name their server, and at most {} steps answered, with at most {} characters of each",
                signed::MAX_ANSWERS,
                crate::answered::EXCERPT
            ),
        );
    }
    answer(json!({"kept": door.answered(&public, told).await}))
}
