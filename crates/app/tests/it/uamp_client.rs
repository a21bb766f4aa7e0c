//! Gatehouse as a UAMP client against a second, real Gatehouse inbox over TLS 1.3 on
//! loopback: the peer added by URL (signed manifest verified, certificate pinned), an
//! `ask` whose image answer streams back in chunks under a small window and is
//! reassembled into the same PNG, and the ways it can go wrong.

use std::path::Path;
use std::sync::Arc;

use ed25519_dalek::SigningKey;
use gatehouse_app::doors::uamp::client::{self, Ask, Client, ClientError};
use gatehouse_app::doors::uamp::UampDoor;
use gatehouse_app::doors::{ExecutorConfig, ExecutorSpec, ServeOptions, UampOptions};
use gatehouse_store::uamp::PeerRow;
use gatehouse_store::{Policy, Store, TrustEntry};
use tokio::sync::oneshot;

/// The peer: a Gatehouse inbox serving UAMP whose executor answers with `executor`.
struct PeerInbox {
    dir: tempfile::TempDir,
    store: Arc<Store>,
    inbox: Arc<UampDoor>,
    url: String,
    _stop: oneshot::Sender<()>,
}

async fn peer(executor: ExecutorSpec) -> PeerInbox {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("gatehouse.db")).unwrap());
    ExecutorConfig { default: executor, scopes: Default::default() }.save(&store).unwrap();
    let key = SigningKey::from_bytes(&[42; 32]);
    let tls = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", tls.local_addr().unwrap());
    let (started_tx, started_rx) = oneshot::channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let opts = ServeOptions {
        listener: None,
        watch: None,
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
    PeerInbox { dir, store, inbox, url, _stop: stop_tx }
}

impl PeerInbox {
    fn fingerprint(&self) -> String {
        gatehouse_app::doors::uamp::tls::load_or_create(self.dir.path(), &SigningKey::from_bytes(&[42; 32])).unwrap().fingerprint
    }

    /// The peer's user trusts `did` for asks and issues it a token.
    fn trust(&self, did: &str) -> String {
        let policy = Policy { allowed_scopes: vec!["ask".into()], ..Policy::default() };
        self.store
            .trust_add(&TrustEntry {
                door: "uamp".into(),
                facts: Default::default(),
                public_key: did.into(),
                name: "gatehouse".into(),
                added_at: "2026-01-01T00:00:00Z".into(),
                policy,
            })
            .unwrap();
        UampDoor::issue_token(&self.store, did, chrono::Utc::now()).unwrap()
    }
}

fn me() -> (Client, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("gatehouse.db")).unwrap());
    (Client { key: SigningKey::from_bytes(&[7; 32]), store, files_dir: dir.path().join("received") }, dir)
}

/// A noisy RGB image (incompressible, so it spans many 16 KiB chunks).
fn write_png(path: &Path, w: u32, h: u32) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_compression(png::Compression::Fast);
        let mut writer = enc.write_header().unwrap();
        let mut x: u32 = 0x1234_5678;
        let pixels: Vec<u8> = (0..w * h * 3)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        writer.write_image_data(&pixels).unwrap();
    }
    std::fs::write(path, &out).unwrap();
    out
}

fn peer_row(d: &client::Discovered) -> PeerRow {
    PeerRow {
        did: d.did.clone(),
        name: "image peer".into(),
        url: d.url.clone(),
        cert_sha256: d.cert_sha256.clone(),
        manifest: serde_json::to_value(&d.manifest).unwrap(),
        added_at: "2026-11-22T00:00:00Z".into(),
    }
}

#[tokio::test]
async fn an_ask_to_a_peer_added_by_url_comes_back_as_the_same_png() {
    let img_dir = tempfile::tempdir().unwrap();
    let png_path = img_dir.path().join("cat.png");
    let png = write_png(&png_path, 160, 120);
    assert!(png.len() > 3 * gatehouse_app::doors::uamp::streams::CHUNK_BYTES, "the image spans several chunks");
    let p = peer(ExecutorSpec::Command { program: "cat".into(), args: vec![png_path.to_string_lossy().into()], timeout_secs: 30 }).await;

    // Adding the peer: its manifest is verified against its DID and its certificate shown.
    let found = client::discover(&p.url, None).await.unwrap();
    assert_eq!(found.did, p.inbox.did());
    assert!(client::same_fingerprint(&found.cert_sha256, &p.fingerprint()), "{} vs {}", found.cert_sha256, p.fingerprint());
    assert!(found.manifest.intents.iter().any(|i| i == "ask"));
    // Fetching again with the pin the user confirmed works.
    client::discover(&p.url, Some(&found.cert_sha256)).await.unwrap();

    let (me, _mine) = me();
    let token = p.trust(&me.did());
    let row = peer_row(&found);
    me.store.uamp_peer_put(&row).unwrap();
    let mut seen = Vec::new();
    let ask = Ask { body_type: "text/plain".into(), content: "160×120 noise, please".into(), delta_window: 2 };
    let end = me.ask(&row, Some(&token), &ask, |p| seen.push(p.clone())).await.unwrap();

    assert_eq!(end.state, "COMPLETED", "{end:?}");
    assert_eq!(end.mime.as_deref(), Some("image/png"));
    let file = end.file.clone().unwrap();
    assert_eq!(file.extension().unwrap(), "png");
    assert_eq!(std::fs::read(&file).unwrap(), png, "the chunks reassemble into the very same image");
    // The progress the user watched only moved forward and ended at 100 %.
    assert!(seen.len() as u64 > png.len() as u64 / gatehouse_app::doors::uamp::streams::CHUNK_BYTES as u64);
    assert!(seen.windows(2).all(|w| w[1].bytes >= w[0].bytes && w[1].frames >= w[0].frames));
    assert_eq!(seen.last().unwrap().pct, Some(100.0));
    // Both sides remember the stream: the peer saw acknowledgements (the window of 2 let
    // the whole image through), and this side kept the file's place.
    let theirs = p.store.uamp_stream(&end.stream_id).unwrap().unwrap();
    assert_eq!(theirs.state, "COMPLETED");
    assert!(theirs.acked_seq >= 1, "{theirs:?}");
    let mine = me.store.uamp_stream(&end.stream_id).unwrap().unwrap();
    assert_eq!((mine.direction.as_str(), mine.state.as_str(), mine.bytes as usize), ("out", "COMPLETED", png.len()));
    assert_eq!(mine.file.as_deref(), Some(file.to_str().unwrap()));
    assert_eq!(me.store.uamp_deltas(&end.stream_id, 0).unwrap().len() as u64, end.frames);
    assert_eq!(me.store.uamp_messages(10).unwrap()[0].direction, "out");
}

#[tokio::test]
async fn a_changed_certificate_is_refused_by_its_pin() {
    let p = peer(ExecutorSpec::Noop).await;
    let wrong = "00:".repeat(31) + "00";
    match client::discover(&p.url, Some(&wrong)).await {
        Err(ClientError::PinMismatch { got, .. }) => assert!(client::same_fingerprint(&got, &p.fingerprint())),
        other => panic!("{other:?}"),
    }
    let (me, _mine) = me();
    let token = p.trust(&me.did());
    let mut row = peer_row(&client::discover(&p.url, None).await.unwrap());
    row.cert_sha256 = wrong;
    let ask = Ask { body_type: "text/plain".into(), content: "hi".into(), delta_window: 4 };
    let e = me.ask(&row, Some(&token), &ask, |_| {}).await.unwrap_err();
    assert!(matches!(e, ClientError::PinMismatch { .. }), "{e}");
    assert_eq!(p.store.uamp_messages(10).unwrap().len(), 0, "nothing reached the peer");
}

#[tokio::test]
async fn a_refusal_and_a_failed_stream_are_reported_and_what_arrived_is_kept() {
    let p = peer(ExecutorSpec::Command {
        program: "sh".into(),
        args: vec!["-c".into(), "printf partial; echo 'disk on fire' >&2; exit 3".into()],
        timeout_secs: 30,
    })
    .await;
    let (me, _mine) = me();
    let row = peer_row(&client::discover(&p.url, None).await.unwrap());
    let ask = Ask { body_type: "text/plain".into(), content: "hi".into(), delta_window: 4 };
    // Not trusted there yet: the peer's refusal, with its code.
    match me.ask(&row, None, &ask, |_| {}).await {
        Err(ClientError::Refused { status, code, reason, .. }) => assert_eq!((status, code.as_str(), reason.as_str()), (403, "4.03", "untrusted_sender")),
        other => panic!("{other:?}"),
    }
    // Trusted, but the peer's executor fails: the stream ends in ERROR, the partial
    // output is kept aside with the reason beside it. No token was handed over: Gatehouse
    // presents its identity certificate (mTLS), which the peer maps to the trusted DID.
    let _token_never_given = p.trust(&me.did());
    let end = me.ask(&row, None, &ask, |_| {}).await.unwrap();
    assert_eq!(end.state, "ERROR");
    let file = end.file.unwrap();
    assert_eq!(file.extension().unwrap(), "partial");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "partial");
    let reason = std::fs::read_to_string(file.with_extension("partial.reason.txt")).unwrap();
    assert!(reason.contains("disk on fire"), "{reason}");
    let mine = me.store.uamp_stream(&end.stream_id).unwrap().unwrap();
    assert_eq!(mine.state, "ERROR");
    assert!(mine.detail.unwrap().contains("disk on fire"));
}

/// A peer that names its stream `stream_id` and ends it with a Windows program declared
/// as `mime`: a real TLS 1.3 server on loopback speaking just enough UAMP.
async fn hostile_peer(stream_id: &'static str, mime: &'static str) -> (PeerRow, tempfile::TempDir, oneshot::Sender<()>) {
    use axum::routing::{get, post};
    let dir = tempfile::tempdir().unwrap();
    let key = SigningKey::from_bytes(&[99; 32]);
    let cert = gatehouse_app::doors::uamp::tls::load_or_create(dir.path(), &key).unwrap();
    let tls = gatehouse_app::doors::uamp::tls::config(&cert.der, &key).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    let exe = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00");
    let frames = format!(
        "data: {}\n\ndata: {}\n\n",
        serde_json::json!({"delta_seq": 0, "stream_id": stream_id, "type": "chunk", "payload": {"chunk_b64": exe}}),
        serde_json::json!({"delta_seq": 1, "stream_id": stream_id, "type": "done", "payload": {"mime": mime}}),
    );
    let app = axum::Router::new()
        .route(
            "/v1/messages",
            post(move || async move { (axum::http::StatusCode::ACCEPTED, axum::Json(serde_json::json!({"stream_id": stream_id, "receipt_id": "r1"}))) }),
        )
        .route(
            "/v1/stream/{id}",
            get(move || {
                let frames = frames.clone();
                async move { ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], frames) }
            }),
        );
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    tokio::spawn(gatehouse_app::doors::uamp::tls::serve(listener, tls, app, &[], Default::default(), async {
        let _ = stop_rx.await;
    }));
    let row = PeerRow {
        did: gatehouse_uamp::sign::did_of(&key),
        name: "hostile".into(),
        url,
        cert_sha256: cert.fingerprint,
        manifest: serde_json::json!({}),
        added_at: "2026-11-24T00:00:00Z".into(),
    };
    (row, dir, stop_tx)
}

#[tokio::test]
async fn a_peer_cannot_choose_where_a_received_file_is_written_or_that_it_is_a_program() {
    let (me, mine) = me();
    let ask = Ask { body_type: "text/plain".into(), content: "hi".into(), delta_window: 4 };
    // A stream named like a path is refused before anything is written.
    for evil in ["../escaped", "/tmp/gatehouse-escaped", "a/../../b"] {
        let (row, _d, _stop) = hostile_peer(evil, "application/x-msdownload").await;
        let e = me.ask(&row, None, &ask, |_| {}).await.unwrap_err();
        assert!(matches!(&e, ClientError::Protocol(m) if m.contains("not a stream id")), "{evil}: {e}");
    }
    assert!(!mine.path().join("escaped.exe").exists() && !mine.path().join("escaped.part").exists());
    assert!(!Path::new("/tmp/gatehouse-escaped.exe").exists());
    // A well-formed name the peer chose still does not name the file, and a program
    // arrives as inert data, whatever type the peer declared.
    let (row, _d, _stop) = hostile_peer("peer-chosen-name", "application/x-msdownload").await;
    let end = me.ask(&row, None, &ask, |_| {}).await.unwrap();
    assert_eq!(end.state, "COMPLETED", "{end:?}");
    let file = end.file.unwrap();
    assert_eq!(file.parent().unwrap(), mine.path().join("received"));
    assert!(!file.to_string_lossy().contains("peer-chosen-name"), "{}", file.display());
    assert_eq!(file.extension().unwrap(), "bin", "{}", file.display());
    assert!(std::fs::read(&file).unwrap().starts_with(b"MZ"));
}
