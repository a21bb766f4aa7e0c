//! UAMP over real TLS 1.3 on loopback: envelopes, every error code, streams with
//! back-pressure and cancel, replay, the manifest, and plain HTTP refused.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use ed25519_dalek::SigningKey;
use gatehouse_app::doors::uamp::UampDoor;
use gatehouse_app::doors::{ExecutorConfig, ExecutorSpec, ServeOptions, UampOptions};
use gatehouse_store::{Policy, RateLimit, Store, TrustEntry};
use gatehouse_uamp::{sign, Intent};
use serde_json::{json, Value};
use tokio::sync::oneshot;

pub(crate) struct Peer {
    pub(crate) key: SigningKey,
    pub(crate) did: String,
    pub(crate) token: Option<String>,
}

pub(crate) struct Uamp {
    _dir: tempfile::TempDir,
    pub(crate) store: Arc<Store>,
    pub(crate) inbox: Arc<UampDoor>,
    pub(crate) https: String,
    pub(crate) plain: String,
    /// The folder EPP envelope files are dropped into.
    pub(crate) watch: std::path::PathBuf,
    client: reqwest::Client,
    _stop: oneshot::Sender<()>,
}

impl Uamp {
    pub(crate) async fn start(executor: ExecutorSpec) -> Uamp {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::common::test_store(dir.path());
        Uamp::start_on(dir, store, executor).await
    }

    /// A gate on `store` (a node of a team's gate, when several share its database), its
    /// listeners' files in `dir`.
    pub(crate) async fn start_on(dir: tempfile::TempDir, store: Store, executor: ExecutorSpec) -> Uamp {
        let store = Arc::new(store);
        ExecutorConfig { default: executor, scopes: Default::default() }.save(&store).unwrap();
        let key = SigningKey::from_bytes(&[3; 32]);
        let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tls = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (plain_addr, tls_addr) = (plain.local_addr().unwrap(), tls.local_addr().unwrap());
        let (started_tx, started_rx) = oneshot::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let watch = dir.path().join("drop");
        let opts = ServeOptions {
            listener: Some(plain),
            watch: Some(watch.clone()),
            uamp: Some(UampOptions { listener: tls, key: key.clone(), data_dir: dir.path().to_path_buf(), certificate: None, started: Some(started_tx) }),
            ..Default::default()
        };
        tokio::spawn(gatehouse_app::doors::run(
            store.clone(),
            gatehouse_epp::public_key_hex(&key),
            opts,
            async {
                let _ = stop_rx.await;
            },
            |_| {},
        ));
        let inbox = started_rx.await.unwrap();
        let pem = std::fs::read(dir.path().join(gatehouse_app::doors::uamp::tls::CERT_FILE)).unwrap();
        let client =
            reqwest::Client::builder().add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap()).tls_built_in_root_certs(false).build().unwrap();
        Uamp { _dir: dir, store, inbox, https: format!("https://{tls_addr}"), plain: format!("http://{plain_addr}"), watch, client, _stop: stop_tx }
    }

    /// Where the gate keeps its files (the TLS certificate).
    pub(crate) fn dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// The gate's identity key, as it names itself (hex).
    pub(crate) fn gate_key(&self) -> String {
        gatehouse_epp::public_key_hex(&SigningKey::from_bytes(&[3; 32]))
    }

    /// A sender the user trusts for `scopes`, with the bearer token the app issued.
    pub(crate) fn trusted(&self, seed: u8, scopes: &[&str], rate: RateLimit) -> Peer {
        let key = SigningKey::from_bytes(&[seed; 32]);
        let did = sign::did_of(&key);
        let policy = Policy { allowed_scopes: scopes.iter().map(|s| s.to_string()).collect(), rate_limit: rate, ..Policy::default() };
        self.store
            .trust_add(&TrustEntry {
                door: "uamp".into(),
                facts: Default::default(),
                public_key: did.clone(),
                name: format!("peer {seed}"),
                added_at: "2026-01-01T00:00:00Z".into(),
                policy,
            })
            .unwrap();
        let token = UampDoor::issue_token(&self.store, &did, chrono::Utc::now()).unwrap();
        Peer { key, did, token: Some(token) }
    }

    pub(crate) fn envelope(&self, p: &Peer, intent: Intent, content: &str, extra: Value) -> Value {
        let mut e = sign::draft(&p.did, &[self.inbox.did()], intent, "text/plain", content);
        if let (Some(o), Some(x)) = (e.as_object_mut(), extra.as_object()) {
            o.extend(x.clone());
        }
        sign::sign(e, &p.key)
    }

    async fn post_raw(&self, p: &Peer, body: Vec<u8>) -> reqwest::Response {
        let mut req = self.client.post(format!("{}/v1/messages", self.https)).header("content-type", "application/uamp+json;v=1").body(body);
        if let Some(t) = &p.token {
            req = req.bearer_auth(t);
        }
        req.send().await.unwrap()
    }

    pub(crate) async fn post(&self, p: &Peer, env: &Value) -> (u16, Value, reqwest::header::HeaderMap) {
        let r = self.post_raw(p, serde_json::to_vec(env).unwrap()).await;
        let (status, headers) = (r.status().as_u16(), r.headers().clone());
        (status, r.json().await.unwrap(), headers)
    }

    async fn open_stream(&self, p: &Peer, location: &str) -> Sse {
        let r = self.client.get(format!("{}{location}", self.https)).bearer_auth(p.token.as_ref().unwrap()).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.version(), reqwest::Version::HTTP_2, "ALPN h2 was negotiated");
        Sse { resp: r, buf: String::new() }
    }
}

struct Sse {
    resp: reqwest::Response,
    buf: String,
}

impl Sse {
    /// The next frame, or None when nothing arrives within `wait` (or the stream ended).
    async fn next(&mut self, wait: Duration) -> Option<Value> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(i) = self.buf.find("\n\n") {
                let event: String = self.buf.drain(..i + 2).collect();
                let data: Vec<&str> = event.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim_start).collect();
                if data.is_empty() {
                    continue; // keep-alive comment
                }
                return Some(serde_json::from_str(&data.join("\n")).unwrap());
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            match tokio::time::timeout(left, self.resp.chunk()).await {
                Ok(Ok(Some(c))) => self.buf.push_str(&String::from_utf8_lossy(&c)),
                _ => return None,
            }
        }
    }
}

pub(crate) fn cat() -> ExecutorSpec {
    ExecutorSpec::Command { program: "cat".into(), args: vec![], timeout_secs: 30 }
}

#[tokio::test]
async fn an_ask_streams_its_executors_output_back_over_tls_and_http2() {
    let u = Uamp::start(cat()).await;
    let p = u.trusted(10, &["ask", "inform"], RateLimit::default());
    let (status, body, headers) = u.post(&p, &u.envelope(&p, Intent::Ask, "Draw me a sheep", json!({}))).await;
    assert_eq!(status, 202, "{body}");
    let location = headers["location"].to_str().unwrap().to_string();
    assert_eq!(location, format!("/v1/stream/{}", body["stream_id"].as_str().unwrap()));
    let mut sse = u.open_stream(&p, &location).await;
    let chunk = sse.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!((chunk["delta_seq"].as_u64(), chunk["type"].as_str()), (Some(0), Some("chunk")));
    let bytes = base64::engine::general_purpose::STANDARD.decode(chunk["payload"]["chunk_b64"].as_str().unwrap()).unwrap();
    assert_eq!(bytes, b"Draw me a sheep");
    let done = sse.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!((done["delta_seq"].as_u64(), done["type"].as_str()), (Some(1), Some("done")));
    gatehouse_uamp::Delta::check_strict(&done).unwrap();
    assert!(sse.next(Duration::from_secs(2)).await.is_none(), "the stream ends after done");
    let s = u.store.uamp_stream(body["stream_id"].as_str().unwrap()).unwrap().unwrap();
    assert_eq!(s.state, "COMPLETED");
    // An inform is answered 200 with its receipt and opens no stream.
    let (status, body, headers) = u.post(&p, &u.envelope(&p, Intent::Inform, "fyi", json!({}))).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("accepted")), "{body}");
    assert!(headers.get("location").is_none());
}

#[tokio::test]
async fn every_error_code_with_its_status_and_a_receipt() {
    let u = Uamp::start(ExecutorSpec::Noop).await;
    let p = u.trusted(11, &["inform"], RateLimit { max_per_hour: Some(2), max_per_day: None });
    // 4.00: malformed, naming the field.
    let mut bad_id = u.envelope(&p, Intent::Inform, "a", json!({}));
    bad_id["id"] = "x".into();
    let (s, b, _) = u.post(&p, &bad_id).await;
    assert_eq!((s, b["code"].as_str(), b["field"].as_str()), (400, Some("4.00"), Some("/id")), "{b}");
    // 4.01: a signature that does not match.
    let mut env = u.envelope(&p, Intent::Inform, "a", json!({}));
    env["body"]["content"] = "b".into();
    let (s, b, _) = u.post(&p, &env).await;
    assert_eq!((s, b["code"].as_str(), b["reason"].as_str()), (401, Some("4.01"), Some("invalid_signature")), "{b}");
    // 4.01: a trusted sender without its bearer token.
    let no_token = Peer { key: p.key.clone(), did: p.did.clone(), token: None };
    let (s, b, _) = u.post(&no_token, &u.envelope(&p, Intent::Inform, "a", json!({}))).await;
    assert_eq!((s, b["reason"].as_str()), (401, Some("no_credentials")), "{b}");
    // 4.03: a scope the policy does not allow.
    let (s, b, _) = u.post(&p, &u.envelope(&p, Intent::Ask, "a", json!({}))).await;
    assert_eq!((s, b["code"].as_str(), b["reason"].as_str()), (403, Some("4.03"), Some("policy_denied")), "{b}");
    // 4.03: an unknown sender knocks: the user is asked.
    let stranger = Peer { key: SigningKey::from_bytes(&[99; 32]), did: sign::did_of(&SigningKey::from_bytes(&[99; 32])), token: None };
    let (s, b, _) = u.post(&stranger, &u.envelope(&stranger, Intent::Ask, "hi", json!({}))).await;
    assert_eq!((s, b["reason"].as_str()), (403, Some("untrusted_sender")), "{b}");
    assert!(u.store.pending_list().unwrap().iter().any(|x| x.public_key == stranger.did), "the DID waits for the user, case kept");
    // 4.09: an acknowledgement without delta_seq.
    let (s, b, _) = u.post(&p, &u.envelope(&p, Intent::Progress, "ok", json!({"stream_id": "str-none"}))).await;
    assert_eq!(s, 400, "an unknown stream is named first: {b}");
    // 4.13: too large.
    let r = u.post_raw(&p, vec![b' '; gatehouse_uamp::MAX_ENVELOPE_BYTES + 10]).await;
    assert_eq!(r.status(), 413);
    assert_eq!(r.json::<Value>().await.unwrap()["code"], "4.13");
    // 5.04: the policy's hourly limit, with Retry-After: counted per minute as at every
    // door, a slot frees when the minute of the first message leaves the hour.
    let t0 = chrono::Utc::now().timestamp_millis();
    for _ in 0..2 {
        let (s, b, _) = u.post(&p, &u.envelope(&p, Intent::Inform, "x", json!({}))).await;
        assert_eq!(s, 200, "{b}");
    }
    let (s, b, h) = u.post(&p, &u.envelope(&p, Intent::Inform, "x", json!({}))).await;
    assert_eq!((s, b["code"].as_str(), b["reason"].as_str()), (504, Some("5.04"), Some("rate_limited")), "{b}");
    let t1 = chrono::Utc::now().timestamp_millis();
    let retry: i64 = h["retry-after"].to_str().unwrap().parse().unwrap();
    let frees = |first: i64, refused: i64| ((first.div_euclid(60_000) + 1) * 60_000 + 3_600_000 - refused + 999).div_euclid(1000);
    assert!((frees(t0, t1)..=frees(t1, t0)).contains(&retry), "{retry} not in {}..={}", frees(t0, t1), frees(t1, t0));
    // Each refusal is a receipt the user can see.
    let receipts = u.store.receipts(100, 0).unwrap();
    let uamp: Vec<_> = receipts.iter().filter(|r| r.transport == "uamp").collect();
    assert_eq!(uamp.iter().filter(|r| r.status == "rejected").count(), 8, "{uamp:#?}");
    assert!(uamp.iter().any(|r| r.code.as_deref() == Some("UAMP_4.13")));
    assert_eq!(uamp.iter().filter(|r| r.status == "accepted").count(), 2);
}

#[tokio::test]
async fn an_acknowledgement_without_delta_seq_is_4_09() {
    let u = Uamp::start(ExecutorSpec::Command { program: "sh".into(), args: vec!["-c".into(), "sleep 5".into()], timeout_secs: 30 }).await;
    let p = u.trusted(12, &["ask"], RateLimit::default());
    let (s, b, _) = u.post(&p, &u.envelope(&p, Intent::Ask, "x", json!({}))).await;
    assert_eq!(s, 202, "{b}");
    let sid = b["stream_id"].as_str().unwrap().to_string();
    let (s, b, _) = u.post(&p, &u.envelope(&p, Intent::Progress, "not json", json!({"stream_id": sid}))).await;
    assert_eq!((s, b["code"].as_str(), b["retry"].as_bool()), (409, Some("4.09"), Some(true)), "{b}");
    let (s, b, _) = u.post(&p, &u.envelope(&p, Intent::Progress, "{\"delta_seq\": 0}", json!({"stream_id": sid}))).await;
    assert_eq!((s, b["effect"]["acked_seq"].as_i64()), (200, Some(0)), "{b}");
}

#[tokio::test]
async fn a_slow_consumer_never_has_more_than_delta_window_frames_outstanding() {
    // 200 KB of output is 13 chunks of 16 KiB.
    let u = Uamp::start(ExecutorSpec::Command { program: "head".into(), args: vec!["-c".into(), "200000".into(), "/dev/zero".into()], timeout_secs: 60 }).await;
    let p = u.trusted(13, &["ask"], RateLimit::default());
    let window = 3u64;
    let (s, b, h) = u.post(&p, &u.envelope(&p, Intent::Ask, "go", json!({"delta_window": window}))).await;
    assert_eq!(s, 202, "{b}");
    let sid = b["stream_id"].as_str().unwrap().to_string();
    let mut sse = u.open_stream(&p, h["location"].to_str().unwrap()).await;
    let mut acked: i64 = -1;
    let mut total = 0usize;
    let mut last_seq: i64 = -1;
    loop {
        // Read everything the producer is allowed to send, then check it stopped there.
        let mut got = Vec::new();
        while let Some(f) = sse.next(Duration::from_millis(700)).await {
            let end = f["type"] == "done";
            got.push(f);
            if end {
                break;
            }
        }
        for f in &got {
            let seq = f["delta_seq"].as_i64().unwrap();
            assert_eq!(seq, last_seq + 1, "no gaps, no repeats");
            last_seq = seq;
            assert!(seq - acked <= window as i64, "frame {seq} sent with only {acked} acknowledged (window {window})");
            if f["type"] == "chunk" {
                total += base64::engine::general_purpose::STANDARD.decode(f["payload"]["chunk_b64"].as_str().unwrap()).unwrap().len();
            }
        }
        if got.last().is_some_and(|f| f["type"] == "done") {
            break;
        }
        assert_eq!(last_seq - acked, window as i64, "the producer waits with a full window");
        let stored = u.store.uamp_stream(&sid).unwrap().unwrap();
        assert_eq!(stored.next_seq - 1, last_seq, "and stores nothing beyond it");
        // Acknowledge one frame at a time: exactly one more may come.
        acked += 1;
        let (s, b, _) = u.post(&p, &u.envelope(&p, Intent::Progress, "", json!({"stream_id": sid, "ext": {"delta_seq": acked}}))).await;
        assert_eq!(s, 200, "{b}");
    }
    assert_eq!(total, 200_000, "every byte arrived");
    assert_eq!(u.store.uamp_stream(&sid).unwrap().unwrap().state, "COMPLETED");
}

#[tokio::test]
async fn cancel_stops_the_executor_mid_stream() {
    let u =
        Uamp::start(ExecutorSpec::Command { program: "sh".into(), args: vec!["-c".into(), "printf started; sleep 30; printf never".into()], timeout_secs: 60 })
            .await;
    let p = u.trusted(14, &["ask"], RateLimit::default());
    let ask = u.envelope(&p, Intent::Ask, "go", json!({"stream_id": "str-cancel-me"}));
    let (s, b, h) = u.post(&p, &ask).await;
    assert_eq!((s, b["stream_id"].as_str()), (202, Some("str-cancel-me")), "{b}");
    let mut sse = u.open_stream(&p, h["location"].to_str().unwrap()).await;
    let first = sse.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(first["type"], "chunk");
    let t = Instant::now();
    // Cancel by replying to the ask (no stream_id): the stream is found through it.
    let (s, b, _) = u.post(&p, &u.envelope(&p, Intent::Cancel, "stop", json!({"reply_to": ask["id"]}))).await;
    assert_eq!((s, b["effect"]["cancelled"].as_bool()), (200, Some(true)), "{b}");
    let last = sse.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(last["type"], "cancel");
    assert!(t.elapsed() < Duration::from_secs(5), "the command was killed, not waited for");
    assert_eq!(u.store.uamp_stream("str-cancel-me").unwrap().unwrap().state, "CANCELLED");
    // Both messages sit in one conversation.
    let m = u.store.uamp_message(&gatehouse_uamp::envelope::parse_uuid(ask["id"].as_str().unwrap()).unwrap().to_string()).unwrap().unwrap();
    assert_eq!(u.store.uamp_thread(&m.thread).unwrap().len(), 2);
}

#[tokio::test]
async fn a_replayed_envelope_id_is_refused_in_either_spelling() {
    let u = Uamp::start(ExecutorSpec::Noop).await;
    let p = u.trusted(15, &["inform"], RateLimit::default());
    let env = u.envelope(&p, Intent::Inform, "once", json!({}));
    assert_eq!(u.post(&p, &env).await.0, 200);
    let (s, b, _) = u.post(&p, &env).await;
    assert_eq!((s, b["reason"].as_str()), (403, Some("replay")), "{b}");
    // The same id written bare (and re-signed) is the same message.
    let mut bare = env.clone();
    bare["id"] = env["id"].as_str().unwrap().trim_start_matches("urn:uuid:").into();
    let bare = sign::sign(bare, &p.key);
    let (s, b, _) = u.post(&p, &bare).await;
    assert_eq!((s, b["reason"].as_str()), (403, Some("replay")), "{b}");
}

#[tokio::test]
async fn plain_http_is_refused_and_tls_below_1_3_cannot_connect() {
    let u = Uamp::start(ExecutorSpec::Noop).await;
    let plain = reqwest::Client::new();
    // The EPP port answers UAMP paths with a refusal and reads nothing.
    let r = plain.post(format!("{}/v1/messages", u.plain)).header("content-type", "application/uamp+json").body("{}").send().await.unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(r.json::<Value>().await.unwrap()["reason"], "tls_required");
    // Plain HTTP to the TLS port gets no HTTP answer at all.
    let tls_as_plain = u.https.replace("https://", "http://");
    assert!(plain.get(format!("{tls_as_plain}/health")).send().await.is_err());
    // Nor does TLS 1.2.
    let pem = std::fs::read(u._dir.path().join(gatehouse_app::doors::uamp::tls::CERT_FILE)).unwrap();
    let old = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .max_tls_version(reqwest::tls::Version::TLS_1_2)
        .build()
        .unwrap();
    assert!(old.get(format!("{}/health", u.https)).send().await.is_err());
    assert!(u.client.get(format!("{}/health", u.https)).send().await.unwrap().status().is_success());
}

#[tokio::test]
async fn the_manifest_is_served_signed_by_the_inbox() {
    let u = Uamp::start(ExecutorSpec::Noop).await;
    let r = u.client.get(format!("{}/.well-known/agent-manifest.json", u.https)).send().await.unwrap();
    assert_eq!(r.headers()["content-type"], "application/manifest+jws");
    let signed = gatehouse_uamp::manifest::SignedManifest::parse(&r.text().await.unwrap()).unwrap();
    assert_eq!(gatehouse_uamp::did::split_kid(&signed.kid).0, u.inbox.did());
    assert!(signed.verify(&gatehouse_uamp::did::resolve_did_key(&signed.kid).unwrap()));
    assert_eq!(signed.manifest.limits.max_body_kb, Some(1024));
    assert!(signed.manifest.intents.iter().any(|i| i == "ask"));
    assert_eq!(signed.manifest.auth, ["oauth2", "mtls"], "both ways of authenticating are announced");
}

/// An HTTPS client that trusts exactly the inbox's certificate and presents a client
/// certificate on `key` (mTLS).
fn mtls_client(u: &Uamp, key: &SigningKey) -> reqwest::Client {
    let cert = gatehouse_app::doors::uamp::tls::load_or_create(u._dir.path(), &SigningKey::from_bytes(&[3; 32])).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from(cert.der)).unwrap();
    let (chain, private) = gatehouse_app::doors::uamp::tls::client_identity(key).unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, private)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    reqwest::Client::builder().use_preconfigured_tls(config).build().unwrap()
}

async fn post_with(u: &Uamp, client: &reqwest::Client, env: Value) -> (u16, Value, reqwest::header::HeaderMap) {
    let r = client.post(format!("{}/v1/messages", u.https)).header("content-type", "application/uamp+json;v=1").json(&env).send().await.unwrap();
    let (s, h) = (r.status().as_u16(), r.headers().clone());
    (s, r.json::<Value>().await.unwrap(), h)
}

#[tokio::test]
async fn a_client_certificate_on_the_senders_key_stands_in_for_the_bearer_token() {
    let u = Uamp::start(cat()).await;
    let p = u.trusted(16, &["ask"], RateLimit::default());
    // No bearer token: the certificate proves the connection holds the sender's key.
    let own = mtls_client(&u, &p.key);
    let (s, b, h) = post_with(&u, &own, u.envelope(&p, Intent::Ask, "by certificate", json!({}))).await;
    assert_eq!(s, 202, "{b}");
    let location = h["location"].to_str().unwrap().to_string();
    let r = own.get(format!("{}{location}", u.https)).send().await.unwrap();
    assert_eq!(r.status(), 200, "the stream is read with the same certificate");
    let mut sse = Sse { resp: r, buf: String::new() };
    let chunk = sse.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(chunk["payload"]["chunk_b64"].as_str().unwrap()).unwrap(), b"by certificate");
    assert_eq!(sse.next(Duration::from_secs(10)).await.unwrap()["type"], "done");

    // Another key's certificate speaks neither for the sender nor for its stream.
    let other = SigningKey::from_bytes(&[17; 32]);
    let theirs = mtls_client(&u, &other);
    let (s, b, _) = post_with(&u, &theirs, u.envelope(&p, Intent::Ask, "not mine", json!({}))).await;
    assert_eq!((s, b["reason"].as_str()), (401, Some("client_cert_mismatch")), "{b}");
    assert!(b["message"].as_str().unwrap().contains(&sign::did_of(&other)), "the message names the certificate's key: {b}");
    let r = theirs.get(format!("{}{location}", u.https)).send().await.unwrap();
    assert_eq!(r.status(), 401);
    // A did:web sender's certificate counts when its key is one the trust entry holds.
    let web = "did:web:agents.example.com";
    let entry = |keys: Vec<gatehouse_store::UampKey>| TrustEntry {
        door: "uamp".into(),
        facts: gatehouse_store::Facts::uamp(keys),
        public_key: web.into(),
        name: "web".into(),
        added_at: "2026-01-01T00:00:00Z".into(),
        policy: Policy::default(),
    };
    let pk = gatehouse_uamp::did::PublicKey::Ed25519(other.verifying_key());
    let held = gatehouse_store::UampKey { kid: format!("{web}#k1"), jwk: pk.to_jwk() };
    assert!(gatehouse_app::doors::uamp::key_speaks_for(&pk, web, Some(&entry(vec![held]))));
    assert!(!gatehouse_app::doors::uamp::key_speaks_for(&pk, web, Some(&entry(vec![]))));
    assert!(!gatehouse_app::doors::uamp::key_speaks_for(&pk, web, None));
}

/// A WebSocket client that trusts exactly the inbox's certificate.
async fn ws_connect(u: &Uamp, token: Option<&str>) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    ws_try(u, token).await.unwrap()
}

async fn ws_try(
    u: &Uamp,
    token: Option<&str>,
) -> Result<tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>, tokio_tungstenite::tungstenite::Error> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
    let cert = gatehouse_app::doors::uamp::tls::load_or_create(u._dir.path(), &SigningKey::from_bytes(&[3; 32])).unwrap();
    let der = rustls::pki_types::CertificateDer::from(cert.der);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let url = format!("{}/uamp/1/ws", u.https.replace("https://", "wss://"));
    let mut req = url.into_client_request().unwrap();
    if let Some(t) = token {
        req.headers_mut().insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    let connector = tokio_tungstenite::Connector::Rustls(std::sync::Arc::new(config));
    tokio_tungstenite::connect_async_tls_with_config(req, None, false, Some(connector)).await.map(|(ws, _)| ws)
}

async fn ws_next(ws: &mut tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>) -> Value {
    use futures_util::StreamExt as _;
    let msg = tokio::time::timeout(Duration::from_secs(10), ws.next()).await.expect("a message in time").unwrap().unwrap();
    let bytes = msg.into_data();
    let items = gatehouse_app::doors::uamp::ws::unframe(&bytes).unwrap();
    assert_eq!(items.len(), 1);
    serde_json::from_slice(items[0]).unwrap()
}

#[tokio::test]
async fn the_websocket_binding_carries_the_same_envelopes_and_deltas_length_prefixed() {
    use futures_util::SinkExt as _;
    use tokio_tungstenite::tungstenite::Message;
    let u = Uamp::start(cat()).await;
    let p = u.trusted(14, &["ask"], RateLimit::default());
    let mut ws = ws_connect(&u, p.token.as_deref()).await;
    let env = u.envelope(&p, Intent::Ask, "over a websocket", json!({"delta_window": 4}));
    ws.send(Message::Binary(gatehouse_app::doors::uamp::ws::frame(&serde_json::to_vec(&env).unwrap()).into())).await.unwrap();
    let receipt = ws_next(&mut ws).await;
    assert_eq!(receipt["status"], "accepted", "{receipt}");
    let sid = receipt["stream_id"].as_str().unwrap().to_string();
    let chunk = ws_next(&mut ws).await;
    assert_eq!((chunk["delta_seq"].as_u64(), chunk["type"].as_str(), chunk["stream_id"].as_str()), (Some(0), Some("chunk"), Some(sid.as_str())));
    let bytes = base64::engine::general_purpose::STANDARD.decode(chunk["payload"]["chunk_b64"].as_str().unwrap()).unwrap();
    assert_eq!(bytes, b"over a websocket");
    let done = ws_next(&mut ws).await;
    assert_eq!((done["delta_seq"].as_u64(), done["type"].as_str()), (Some(1), Some("done")));
    // The same checks as over HTTP: a replay is refused with its code.
    ws.send(Message::Binary(gatehouse_app::doors::uamp::ws::frame(&serde_json::to_vec(&env).unwrap()).into())).await.unwrap();
    let refused = ws_next(&mut ws).await;
    assert_eq!((refused["code"].as_str(), refused["reason"].as_str()), (Some("4.03"), Some("replay")), "{refused}");
    // Bad framing is answered, not dropped, and the socket stays usable.
    ws.send(Message::Binary(vec![0, 0, 0, 50, b'{'].into())).await.unwrap();
    assert_eq!(ws_next(&mut ws).await["reason"], "ws_framing");
    ws.send(Message::Text("{}".into())).await.unwrap();
    assert_eq!(ws_next(&mut ws).await["reason"], "ws_framing");
    // Without credentials no socket is opened at all (it would hold a session slot): the
    // upgrade is refused, with the reason.
    match ws_try(&u, None).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), 401);
            let body: Value = serde_json::from_slice(resp.body().as_deref().unwrap_or_default()).unwrap();
            assert_eq!(body["reason"], "no_credentials");
        }
        other => panic!("an anonymous upgrade was not refused: {:?}", other.map(|_| ())),
    }
    assert!(matches!(ws_try(&u, Some("ghu_not-a-token-this-inbox-issued")).await, Err(tokio_tungstenite::tungstenite::Error::Http(r)) if r.status() == 401));
    assert_eq!(u.store.uamp_stream(&sid).unwrap().unwrap().state, "COMPLETED");
}

#[tokio::test]
async fn an_ask_held_for_consent_waits_on_its_stream_until_the_user_decides() {
    use gatehouse_app::consent::{self, ConsentItem, ConsentTarget, Decision};
    let u = Uamp::start(cat()).await;
    let p = u.trusted(15, &["ask"], RateLimit::default());
    let mut t = u.store.trust_get(&p.did).unwrap().unwrap();
    t.policy.hold_for_consent = true;
    u.store.trust_update(&p.did, None, &t.policy, None).unwrap();

    let (s, b, h) = u.post(&p, &u.envelope(&p, Intent::Ask, "Delete my old drafts", json!({}))).await;
    assert_eq!((s, b["held_for_consent"].as_bool()), (202, Some(true)), "{b}");
    let sid = b["stream_id"].as_str().unwrap().to_string();
    let mut sse = u.open_stream(&p, h["location"].to_str().unwrap()).await;
    assert!(sse.next(Duration::from_millis(800)).await.is_none(), "nothing runs before the user decides");
    let stream = u.store.uamp_stream(&sid).unwrap().unwrap();
    assert_eq!((stream.state.as_str(), stream.detail.as_deref()), ("NEW", Some(gatehouse_store::uamp::HELD_FOR_CONSENT)));
    let waiting = consent::pending(&crate::common::ctx(&u.store)).unwrap();
    assert!(matches!(&waiting[0], ConsentItem::HeldAsk { stream_id, prompt, .. } if *stream_id == sid && prompt == "Delete my old drafts"), "{waiting:?}");
    assert_eq!(consent::waiting_count(&crate::common::ctx(&u.store)).unwrap(), 1);

    // Allowed: the executor runs and the waiting reader gets its frames.
    let inbox = u.inbox.inbox().clone();
    gatehouse_app::consent::decide(&inbox, &ConsentTarget::HeldAsk { stream_id: sid.clone() }, Decision::AllowOnce, chrono::Utc::now()).unwrap();
    let chunk = sse.next(Duration::from_secs(10)).await.expect("the released stream's first frame");
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(chunk["payload"]["chunk_b64"].as_str().unwrap()).unwrap(), b"Delete my old drafts");
    assert_eq!(sse.next(Duration::from_secs(10)).await.unwrap()["type"], "done");
    assert_eq!(consent::waiting_count(&crate::common::ctx(&u.store)).unwrap(), 0);
    // Deciding twice finds nothing waiting.
    assert!(gatehouse_app::consent::decide(&inbox, &ConsentTarget::HeldAsk { stream_id: sid }, Decision::Deny, chrono::Utc::now()).is_err());

    // Denied: nothing runs and the stream ends with a cancel.
    let (_, b, h) = u.post(&p, &u.envelope(&p, Intent::Ask, "Also empty the bin", json!({}))).await;
    let sid2 = b["stream_id"].as_str().unwrap().to_string();
    let mut sse = u.open_stream(&p, h["location"].to_str().unwrap()).await;
    gatehouse_app::consent::decide(&inbox, &ConsentTarget::HeldAsk { stream_id: sid2.clone() }, Decision::Deny, chrono::Utc::now()).unwrap();
    let end = sse.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!((end["delta_seq"].as_u64(), end["type"].as_str()), (Some(0), Some("cancel")), "{end}");
    assert_eq!(u.store.uamp_stream(&sid2).unwrap().unwrap().state, "CANCELLED");
}

#[tokio::test]
async fn envelopes_from_far_ahead_or_too_old_are_refused_and_a_browser_never_reaches_the_listener() {
    let u = Uamp::start(ExecutorSpec::Noop).await;
    let p = u.trusted(21, &["ask", "inform"], RateLimit::default());
    for (ts, reason) in [(chrono::Utc::now() + chrono::Duration::days(1), "clock_skew"), (chrono::Utc::now() - chrono::Duration::days(400), "stale")] {
        let env = u.envelope(&p, Intent::Inform, "when?", json!({"ts": ts.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)}));
        let (status, body, _) = u.post(&p, &env).await;
        assert_eq!((status, body["reason"].as_str()), (400, Some(reason)), "{body}");
    }
    assert_eq!(u.store.uamp_messages(10).unwrap().len(), 0, "nothing kept");
    let env = u.envelope(&p, Intent::Inform, "now", json!({}));
    assert_eq!(u.post(&p, &env).await.0, 200);
    // A page's request carries its Origin; even with the sender's own token it is refused.
    let env = u.envelope(&p, Intent::Inform, "from a page", json!({}));
    let r = u
        .client
        .post(format!("{}/v1/messages", u.https))
        .header("content-type", "application/uamp+json;v=1")
        .header("origin", "https://evil.example")
        .bearer_auth(p.token.as_ref().unwrap())
        .body(serde_json::to_vec(&env).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 421);
    assert_eq!(u.store.uamp_messages(10).unwrap().len(), 1);
}

#[tokio::test]
async fn an_unknown_agents_capability_token_does_not_decide_what_the_prompt_grants() {
    let u = Uamp::start(ExecutorSpec::Noop).await;
    let key = SigningKey::from_bytes(&[33; 32]);
    let did = sign::did_of(&key);
    let p = Peer { key: key.clone(), did: did.clone(), token: None };
    // A token it made itself, claiming every scope: unchecked while it is unknown.
    let tok = gatehouse_uamp::captoken::issue(
        &key,
        &format!("{did}#key"),
        &json!({"aud": u.inbox.did(), "scope": "* admin", "exp": chrono::Utc::now().timestamp() + 3600}),
    );
    let env = u.envelope(&p, Intent::Ask, "let me in", json!({"cap_token": tok}));
    let (status, body, _) = u.post(&p, &env).await;
    assert_eq!((status, body["reason"].as_str()), (403, Some("untrusted_sender")), "{body}");
    let items = gatehouse_app::consent::pending(&crate::common::ctx(&u.store)).unwrap();
    let Some(gatehouse_app::consent::ConsentItem::UnknownSender { source, scope, prompt, knock, .. }) = items.first() else { panic!("{items:?}") };
    assert_eq!((*source, scope.as_deref()), (gatehouse_app::consent::Source::UampAgent, Some("ask")));
    // The knock is found by the waiting sender's key, not by EPP's words for it: the user
    // sees what the agent sent.
    assert_eq!(prompt.as_deref(), Some("let me in"), "{items:?}");
    assert!(knock.is_some(), "{items:?}");
    let target = crate::common::shown(u.inbox.inbox(), &did);
    let done = gatehouse_app::consent::decide(u.inbox.inbox(), &target, gatehouse_app::consent::Decision::AlwaysAllowScope, chrono::Utc::now()).unwrap();
    assert!(done.delivered.is_none() && done.message.starts_with("Trusted for"), "nothing of a UAMP knock is delivered as an envelope: {}", done.message);
    let entry = u.store.trust_get(&did).unwrap().unwrap();
    assert_eq!(entry.policy.allowed_scopes, vec!["ask".to_string()], "only what the prompt showed");
    // The entry records the door the knock came by (never read from the key's spelling).
    assert_eq!(entry.door, "uamp");
}

#[tokio::test]
async fn removing_a_sender_revokes_its_tokens_for_good() {
    let u = Uamp::start(ExecutorSpec::Noop).await;
    let p = u.trusted(34, &["inform"], RateLimit::default());
    assert_eq!(u.post(&p, &u.envelope(&p, Intent::Inform, "one", json!({}))).await.0, 200);
    gatehouse_app::trust::remove(&crate::common::ctx(&u.store), &p.did, chrono::Utc::now()).unwrap();
    // Trusted again later: the token issued under the old trust is dead.
    let policy = Policy { allowed_scopes: vec!["inform".into()], ..Policy::default() };
    gatehouse_app::trust::add(
        &crate::common::ctx(&u.store),
        &TrustEntry {
            door: "uamp".into(),
            facts: Default::default(),
            public_key: p.did.clone(),
            name: "again".into(),
            added_at: "2026-11-24T00:00:00Z".into(),
            policy,
        },
        chrono::Utc::now(),
    )
    .unwrap();
    let (status, body, _) = u.post(&p, &u.envelope(&p, Intent::Inform, "two", json!({}))).await;
    assert_eq!((status, body["reason"].as_str()), (401, Some("unknown_token")), "{body}");
    // A token issued now works, and the window can revoke it (audited).
    let fresh = Peer {
        token: Some(gatehouse_app::trust::token_issue(&crate::common::ctx(&u.store), &p.did, chrono::Utc::now()).unwrap()),
        key: p.key.clone(),
        did: p.did.clone(),
    };
    assert_eq!(u.post(&fresh, &u.envelope(&fresh, Intent::Inform, "three", json!({}))).await.0, 200);
    assert_eq!(gatehouse_app::trust::token_revoke(&crate::common::ctx(&u.store), &p.did, chrono::Utc::now()).unwrap(), 1);
    assert_eq!(u.post(&fresh, &u.envelope(&fresh, Intent::Inform, "four", json!({}))).await.0, 401);
    let actions: Vec<String> = u.store.audit_list(10).unwrap().into_iter().map(|a| a.action).collect();
    assert!(
        actions.starts_with(&["uamp.token_revoke".to_string(), "uamp.token_issue".to_string(), "trust.add".to_string(), "trust.remove".to_string()]),
        "{actions:?}"
    );
}

/// The scopes the guardian and IntentWeb record for themselves are no agent's to ask for,
/// at this door as at EPP's and A2A's: a trusted agent allowed everything that names one
/// in its capability token is refused, and nothing is kept or run.
#[tokio::test]
async fn a_capability_token_cannot_name_a_scope_gatehouse_keeps_for_itself() {
    let u = Uamp::start(ExecutorSpec::Noop).await;
    let p = u.trusted(35, &["*"], RateLimit::default());
    for (_, reserved) in gatehouse_app::doors::RESERVED_SCOPES {
        for scope in [reserved.to_string(), format!("ask {reserved}")] {
            let tok = gatehouse_uamp::captoken::issue(
                &p.key,
                &format!("{}#key", p.did),
                &json!({"aud": u.inbox.did(), "scope": scope, "exp": chrono::Utc::now().timestamp() + 3600}),
            );
            let env = u.envelope(&p, Intent::Ask, "register me", json!({"cap_token": tok}));
            let (status, body, _) = u.post(&p, &env).await;
            assert_eq!((status, body["reason"].as_str()), (403, Some("policy_denied")), "{scope}: {body}");
            assert!(body["message"].as_str().unwrap_or_default().contains(reserved), "{body}");
        }
    }
    assert_eq!(u.store.uamp_messages(10).unwrap().len(), 0, "nothing kept");
    assert!(u.store.uamp_streams(10).unwrap().is_empty(), "nothing run");
}

/// The executor is chosen once, when an ask is accepted, as for every door: one that is
/// changed while the ask waits for the user is not what runs once it is allowed. The ask
/// ends with an error that says so (as an EPP envelope's does), and nothing runs.
#[tokio::test]
async fn a_held_ask_does_not_run_under_an_executor_changed_while_it_waited() {
    use gatehouse_app::consent::{ConsentTarget, Decision};
    let u = Uamp::start(cat()).await;
    let p = u.trusted(36, &["ask"], RateLimit::default());
    let mut t = u.store.trust_get(&p.did).unwrap().unwrap();
    t.policy.hold_for_consent = true;
    u.store.trust_update(&p.did, None, &t.policy, None).unwrap();
    let (s, b, h) = u.post(&p, &u.envelope(&p, Intent::Ask, "Delete my old drafts", json!({}))).await;
    assert_eq!(s, 202, "{b}");
    let sid = b["stream_id"].as_str().unwrap().to_string();
    let mut sse = u.open_stream(&p, h["location"].to_str().unwrap()).await;
    // While it waits, the user sets another executor for everything.
    ExecutorConfig { default: ExecutorSpec::Noop, scopes: Default::default() }.save(&u.store).unwrap();
    let inbox = u.inbox.inbox().clone();
    gatehouse_app::consent::decide(&inbox, &ConsentTarget::HeldAsk { stream_id: sid.clone() }, Decision::AllowOnce, chrono::Utc::now()).unwrap();
    let end = sse.next(Duration::from_secs(10)).await.expect("the released stream's last frame");
    assert_eq!(end["type"], "error", "{end}");
    let stream = u.store.uamp_stream(&sid).unwrap().unwrap();
    assert_eq!(stream.state, "ERROR");
    assert!(stream.detail.as_deref().unwrap_or_default().contains("was changed after"), "{:?}", stream.detail);
}
