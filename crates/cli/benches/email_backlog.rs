//! Draining a backlog of envelope mail: N mails (10,000 unless `GATEHOUSE_BENCH_MAILS`
//! says otherwise) wait in a real Dovecot's INBOX (Debian's, on loopback, written into its
//! Maildir as a delivery agent would) before `gatehouse serve` starts; the figure is the
//! time from its start until every mail's envelope has its receipt committed and the mail
//! is filed (the account's progress reaches the last UID, and it is written only after
//! filing), then checked: N accepted, INBOX empty, N in Gatehouse/Accepted. The receipts
//! mailed back to the senders through a real Exim are timed apart (they leave a queue
//! after filing). Beside it, in the same run: `gatehouse bench` over HTTP with the same N,
//! which also prints this machine's limits.
//!
//! Needs Dovecot and Exim (scripts/setup.sh), root (Exim's own configuration) and a
//! keychain: `dbus-run-session -- scripts/with-keyring.sh cargo bench -p gatehouse-cli
//! --bench email_backlog`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gatehouse_email_testservers::{Dovecot, Exim, PASSWORD, USER};

const BIN: &str = env!("CARGO_BIN_EXE_gatehouse");
const SENDERS: usize = 10;

fn gh(dir: &Path, args: &[&str], stdin: &str) -> String {
    use std::io::Write as _;
    let mut child = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env("GATEHOUSE_KEYSTORE", "file")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "gatehouse {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Mail files in a Maildir folder (`""` for INBOX, `.Gatehouse.Accepted`, …).
fn in_folder(maildir: &Path, folder: &str) -> usize {
    ["new", "cur"].iter().map(|s| std::fs::read_dir(maildir.join(folder).join(s)).map(|d| d.count()).unwrap_or(0)).sum()
}

/// CPU seconds and peak RSS (MB) of a process.
fn usage(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let field = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the command name.
    let cpu = field(11) + field(12);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let hwm = status.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok()).unwrap_or(0.0);
    (cpu / ticks, hwm / 1024.0)
}

fn main() {
    let n: usize = std::env::var("GATEHOUSE_BENCH_MAILS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let (Some(dv), Some(ex)) = (Dovecot::start(), Exim::start()) else {
        eprintln!("skipped: Dovecot and Exim are needed (scripts/setup.sh), and root for Exim");
        return;
    };
    println!("machine: {} cores", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0));

    // The HTTP figure of the same run (and the machine's limits).
    let http = Command::new(BIN).args(["bench", "--envelopes", &n.to_string(), "--senders", &SENDERS.to_string(), "--concurrency", "64"]).output().unwrap();
    assert!(http.status.success(), "{}", String::from_utf8_lossy(&http.stderr));
    print!("{}", String::from_utf8_lossy(&http.stdout));

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let inbox_key = gh(d, &["init"], "").lines().last().unwrap().trim().to_string();
    let senders: Vec<ed25519_dalek::SigningKey> = (0..SENDERS).map(|i| ed25519_dalek::SigningKey::from_bytes(&[i as u8 + 1; 32])).collect();
    for (i, s) in senders.iter().enumerate() {
        // Each let in with its mail address: receipts go there (and only there).
        let address = format!("sender{i}@agents.example");
        gh(d, &["trust", "add", &gatehouse_epp::public_key_hex(s), "--name", &format!("sender {i}"), "--scopes", "*", "--mail-address", &address], "");
    }
    let (imap, smtp) = (dv.port.to_string(), ex.port.to_string());
    #[rustfmt::skip]
    let add = [
        "email", "add", "bench", "--host", "127.0.0.1", "--port", &imap, "--plain", "--user", USER, "--password-stdin",
        "--smtp-host", "127.0.0.1", "--smtp-port", &smtp, "--smtp-plain", "--from", "alice@home.example", "--receipts", "known",
        // A backlog of 10,000 from 10 senders: the account's receipt rate is raised to let
        // every receipt go in the run (the defaults bound it at 300 an hour).
        "--receipts-per-hour", "100000", "--receipts-per-sender", "100000",
    ];
    gh(d, &add, PASSWORD);

    // The backlog, written into the Maildir as a delivery agent would.
    println!("writing {n} envelope mails into Dovecot's INBOX…");
    let maildir = dv.maildir();
    for sub in ["new", "cur", "tmp"] {
        std::fs::create_dir_all(maildir.join(sub)).unwrap();
    }
    let now = chrono::Utc::now();
    for i in 0..n {
        let mut draft = gatehouse_epp::Draft::new(&inbox_key, "bench", &format!("benchmark prompt number {i}: please summarise the attached ticket"));
        draft.context = Some(serde_json::json!({"ticket": i, "priority": "normal"}));
        let env = draft.sign(&senders[i % SENDERS], now);
        let mail = format!(
            "From: Agent {s} <agent{s}@sender.example>\r\nTo: alice+gatehouse@home.example\r\nMessage-ID: <bench-{i}@sender.example>\r\nSubject: ticket {i}\r\n\
             MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nAttached.\r\n--b\r\n\
             Content-Type: application/epp+json\r\nContent-Disposition: attachment; filename=\"envelope.epp.json\"\r\n\r\n{env}\r\n--b--\r\n",
            s = i % SENDERS
        );
        std::fs::write(maildir.join("new").join(format!("{}.M{i}P1.bench", now.timestamp())), mail).unwrap();
    }
    if unsafe { libc::geteuid() } == 0 {
        Command::new("chown").args(["-R", "dovecot:dovecot"]).arg(&maildir).status().unwrap();
    }

    let store = gatehouse_store::Store::open(&d.join("gatehouse.db")).unwrap();
    println!("starting gatehouse serve on that account…");
    let started = Instant::now();
    let mut serve = Command::new(BIN)
        .arg("--data-dir")
        .arg(d)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("GATEHOUSE_KEYSTORE", "file")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = serve.id();
    let filed = loop {
        let row = store.email_account("bench").unwrap().unwrap();
        if row.last_uid as usize >= n {
            break started.elapsed();
        }
        assert!(started.elapsed() < Duration::from_secs(900), "{} of {n} mails after 15 minutes ({:?})", row.last_uid, row.last_error);
        std::thread::sleep(Duration::from_millis(10));
    };
    let (cpu_filed, rss_filed) = usage(pid);
    // Receipt mails leave while the backlog is read too; their own pace is timed on what
    // was left to send once every mail was filed.
    let mailed_by_filing = ex.delivered_count();
    let secs = filed.as_secs_f64();
    println!(
        "email: {n} envelope mails receipted and filed in {secs:.2} s = {:.0} envelopes/s (timed from the start of gatehouse serve: connect, login and Dovecot reading the folder included)",
        n as f64 / secs
    );
    let receipts = store.receipts(n as u32 + 10, 0).unwrap();
    let stamps: Vec<chrono::DateTime<chrono::Utc>> = receipts.iter().filter_map(|r| r.received_at.parse().ok()).collect();
    if let (Some(first), Some(last)) = (stamps.iter().min(), stamps.iter().max()) {
        let span = (*last - *first).num_milliseconds() as f64 / 1000.0;
        println!("email: first to last receipt {span:.2} s = {:.0} envelopes/s once reading began", n as f64 / span.max(0.001));
    }
    let mailed = loop {
        if ex.delivered_count() >= n {
            break started.elapsed();
        }
        assert!(started.elapsed() < Duration::from_secs(1800), "{} of {n} receipts mailed after 30 minutes", ex.delivered_count());
        std::thread::sleep(Duration::from_millis(200));
    };
    let (cpu_mailed, rss) = usage(pid);
    let _ = serve.kill();
    let _ = serve.wait();

    let accepted = receipts.iter().filter(|r| r.status == "accepted" && r.transport == "email").count();
    let (left, filed_ok) = (in_folder(&maildir, ""), in_folder(&maildir, ".Gatehouse.Accepted"));
    assert_eq!((accepted, left, filed_ok), (n, 0, n), "every envelope accepted once and every mail filed");
    println!(
        "email: {n} receipts mailed back through Exim by {:.2} s = {:.0} receipt mails/s over the whole run",
        mailed.as_secs_f64(),
        n as f64 / mailed.as_secs_f64()
    );
    let rest = n.saturating_sub(mailed_by_filing);
    if rest > 0 {
        let span = (mailed - filed).as_secs_f64();
        println!("email: the {rest} receipt mails still to send once all was filed left in {span:.2} s = {:.0} receipt mails/s", rest as f64 / span.max(0.001));
    }
    println!(
        "inbox process: peak RSS {rss_filed:.0} MB until filed, {rss:.0} MB with the receipt mails; {cpu_filed:.2} CPU-seconds until filed = {:.0} µs per envelope; {cpu_mailed:.2} CPU-seconds with the receipt mails",
        cpu_filed * 1e6 / n as f64
    );
}
