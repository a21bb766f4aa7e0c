//! A call allowed before the gate's record of it is on disk goes on to the server at once,
//! but the server's answer reaches the client only once the gate says the record is kept;
//! when it cannot be kept the client is told, and never sees the answer.

use std::sync::Mutex;
use std::time::Duration;

use gatehouse_door_mcp::relay::{self, Called, Keeper, OnDisk, Verdict};
use gatehouse_mcp::call::ToolCall;
use gatehouse_mcp::tools::Pin;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;

/// Allows every call; its record is on disk when the test says.
struct Flushing(Mutex<Option<oneshot::Receiver<Result<(), String>>>>);

impl Keeper for Flushing {
    async fn call(&self, _call: &ToolCall) -> Called {
        let told = self.0.lock().unwrap().take().expect("one call");
        let on_disk: OnDisk = Box::pin(async move { told.await.unwrap_or_else(|_| Err("dropped".into())) });
        Called { verdict: Verdict::Pass, step: Some("step-1".into()), on_disk: Some(on_disk) }
    }
    async fn answered(&self, _step: String, _answer: gatehouse_door_mcp::answered::Summary) {}
    async fn listed(&self, _tools: &[Pin]) -> Vec<String> {
        Vec::new()
    }
    async fn server_asks(&self, _method: &str, _message: &[u8]) -> Verdict {
        Verdict::Refuse("no".into())
    }
}

const ANSWER: &str = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"done"}]}}"#;

/// A relay with a server that answers the call as soon as it arrives: the flush's switch,
/// the client's lines, and the client's writer.
async fn relayed() -> (oneshot::Sender<Result<(), String>>, tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>) {
    let (tell, told) = oneshot::channel();
    let (client, relay_client) = tokio::io::duplex(1 << 16);
    let (server, relay_server) = tokio::io::duplex(1 << 16);
    let (rc_read, rc_write) = tokio::io::split(relay_client);
    let (rs_read, rs_write) = tokio::io::split(relay_server);
    tokio::spawn(relay::run(BufReader::new(rc_read), rc_write, BufReader::new(rs_read), rs_write, Flushing(Mutex::new(Some(told)))));
    let (s_read, mut s_write) = tokio::io::split(server);
    tokio::spawn(async move {
        let mut lines = BufReader::new(s_read).lines();
        let call = lines.next_line().await.unwrap().unwrap();
        assert!(call.contains("tools/call"), "{call}");
        s_write.write_all(format!("{ANSWER}\n").as_bytes()).await.unwrap();
        // Kept open: the session goes on.
        while lines.next_line().await.ok().flatten().is_some() {}
    });
    let (c_read, mut c_write) = tokio::io::split(client);
    c_write.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{}}}\n").await.unwrap();
    tokio::spawn(async move {
        let _keep_open = c_write;
        std::future::pending::<()>().await
    });
    (tell, BufReader::new(c_read).lines())
}

#[tokio::test]
async fn the_answer_waits_until_the_record_of_the_call_is_on_disk() {
    let (tell, mut lines) = relayed().await;
    let early = tokio::time::timeout(Duration::from_millis(300), lines.next_line()).await;
    assert!(early.is_err(), "the answer reached the client before its record was on disk: {early:?}");
    tell.send(Ok(())).unwrap();
    let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line()).await.unwrap().unwrap().unwrap();
    assert_eq!(line, ANSWER, "the answer passes on as it came");
}

#[tokio::test]
async fn an_answer_whose_call_was_not_kept_is_withheld_and_the_client_told() {
    let (tell, mut lines) = relayed().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    tell.send(Err("the write-ahead log could not be synced to disk: No space left on device".into())).unwrap();
    let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line()).await.unwrap().unwrap().unwrap();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["id"], 7, "{line}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("withheld") && message.contains("No space left on device"), "{line}");
    assert!(!line.contains("done"), "the server's answer never reaches the client: {line}");
}
