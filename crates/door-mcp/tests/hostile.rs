//! A server that floods the client: its notifications reach the client at a bounded rate
//! and the answer the client waits for still arrives; a message over the bound is skipped
//! and the session goes on. Both sides are plain pipes here: the relay is all that is
//! between them.

use std::time::{Duration, Instant};

use gatehouse_door_mcp::relay::{self, Called, Keeper, Verdict, NOTIFICATIONS_PER_SECOND};
use gatehouse_mcp::call::ToolCall;
use gatehouse_mcp::tools::Pin;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

struct Open;

impl Keeper for Open {
    async fn call(&self, _call: &ToolCall) -> Called {
        Called { verdict: Verdict::Pass, step: None, on_disk: None }
    }
    async fn answered(&self, _step: String, _answer: gatehouse_door_mcp::answered::Summary) {}
    async fn listed(&self, _tools: &[Pin]) -> Vec<String> {
        Vec::new()
    }
    async fn server_asks(&self, _method: &str, _message: &[u8]) -> Verdict {
        Verdict::Refuse("no".into())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_notifications_is_bounded_and_the_answer_still_arrives() {
    let (client, relay_client) = tokio::io::duplex(1 << 16);
    let (server, relay_server) = tokio::io::duplex(1 << 16);
    let (rc_read, rc_write) = tokio::io::split(relay_client);
    let (rs_read, rs_write) = tokio::io::split(relay_server);
    let relay = tokio::spawn(relay::run(BufReader::new(rc_read), rc_write, BufReader::new(rs_read), rs_write, Open));

    // The server: reads the client's request, then floods before it answers, with one
    // message over the relay's bound in the middle.
    let (s_read, mut s_write) = tokio::io::split(server);
    let flood = tokio::spawn(async move {
        let mut lines = BufReader::new(s_read).lines();
        let asked = lines.next_line().await.unwrap().unwrap();
        assert!(asked.contains("\"ping\""), "{asked}");
        let note = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"spam\"}}\n";
        for i in 0..20_000 {
            if i == 10_000 {
                let mut huge = vec![b'x'; gatehouse_mcp::MAX_MESSAGE + 10];
                huge.push(b'\n');
                s_write.write_all(&huge).await.unwrap();
            }
            s_write.write_all(note).await.unwrap();
        }
        s_write.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n").await.unwrap();
        s_write.flush().await.unwrap();
        lines
    });

    let (c_read, mut c_write) = tokio::io::split(client);
    let t = Instant::now();
    c_write.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await.unwrap();
    let mut lines = BufReader::new(c_read).lines();
    let mut notes = 0u64;
    let answer = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let l = lines.next_line().await.unwrap().unwrap();
            if l.contains("\"id\":1") {
                return l;
            }
            notes += 1;
        }
    })
    .await
    .expect("the answer arrived despite the flood");
    assert!(answer.contains("result"), "{answer}");
    let seconds = t.elapsed().as_secs() + 1;
    assert!(notes <= u64::from(NOTIFICATIONS_PER_SECOND) * seconds, "{notes} notifications in {seconds} s reached the client");
    assert!(notes > 0, "notifications within the bound still pass");
    let _server = flood.await.unwrap();
    relay.abort();
}
