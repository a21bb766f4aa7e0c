//! Real mail servers on loopback for the tests of EPP by email: Debian's Dovecot for IMAP
//! (one user, `alice`/`secret`, Maildir) and Exim for SMTP submission (AUTH PLAIN with the
//! same credentials, every accepted mail delivered into one Maildir the test reads). Each
//! runs in a temp dir of its own and is killed with its process group when dropped.
//!
//! Missing servers skip the test, unless `GATEHOUSE_REQUIRE_PEERS` is set (the README's
//! test command sets it after `scripts/setup.sh` installed them): then they fail it.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const USER: &str = "alice";
pub const PASSWORD: &str = "secret";

/// A server process in its own group, killed with the group when dropped.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.0.id())]).status();
        let _ = self.0.wait();
    }
}

fn find(what: &str, package: &str, candidates: &[&str]) -> Option<PathBuf> {
    let bin = candidates.iter().map(PathBuf::from).find(|p| p.exists());
    if bin.is_none() {
        let why = format!("{what} is not installed (Debian: {package}); run scripts/setup.sh");
        assert!(std::env::var_os("GATEHOUSE_REQUIRE_PEERS").is_none(), "{why}");
        eprintln!("skipped: {why}");
    }
    bin
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

fn wait_listening(port: u16, what: &str, log: &Path) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what} did not listen on {port}: {}", std::fs::read_to_string(log).unwrap_or_default());
}

/// Waits until Dovecot lets `USER` log in on its plain port: the port listens before its
/// auth process answers, and a login in between is refused "[UNAVAILABLE] Temporary
/// authentication failure" (seen on a loaded 2-core CI machine).
fn wait_login(port: u16, log: &Path) {
    use std::io::{BufRead, BufReader, Write};
    let mut last = String::from("no answer");
    // A refused login is answered after Dovecot's 2 s failure delay: bounded in time, not tries.
    let t = std::time::Instant::now();
    while t.elapsed() < Duration::from_secs(30) {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            if r.read_line(&mut line).is_ok() && line.starts_with("* OK") && s.write_all(format!("a LOGIN {USER} {PASSWORD}\r\n").as_bytes()).is_ok() {
                // Untagged lines may come first; the tagged one is the answer.
                line.clear();
                while r.read_line(&mut line).unwrap_or(0) > 0 && !line.starts_with("a ") {
                    line.clear();
                }
                if line.starts_with("a OK") {
                    let _ = s.write_all(b"b LOGOUT\r\n");
                    return;
                }
                last = line.trim().to_string();
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("Dovecot did not let {USER} log in on {port}: {last}; {}", std::fs::read_to_string(log).unwrap_or_default());
}

fn start(bin: &Path, args: &[&str]) -> Group {
    Group(Command::new(bin).args(args).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0).spawn().unwrap())
}

/// A certificate for 127.0.0.1 and localhost, made for one test server (self-signed:
/// a client trusts it only when told to).
pub struct Certificate {
    /// What a client is told to trust.
    pub pem: String,
    key_pem: String,
}

impl Certificate {
    pub fn new() -> Certificate {
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        Certificate { pem: cert.pem(), key_pem: key.serialize_pem() }
    }

    /// Writes the certificate and its key into `dir`; returns their paths.
    fn write(&self, dir: &Path) -> (PathBuf, PathBuf) {
        let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&c, &self.pem).unwrap();
        std::fs::write(&k, &self.key_pem).unwrap();
        (c, k)
    }
}

impl Default for Certificate {
    fn default() -> Self {
        Self::new()
    }
}

/// Dovecot serving IMAP for `alice`: without TLS (loopback only), or with TLS only.
pub struct Dovecot {
    child: Option<Group>,
    bin: PathBuf,
    dir: tempfile::TempDir,
    /// IMAP (plain, or STARTTLS with `start_tls`).
    pub port: u16,
    /// IMAPS (TLS from the first byte), with `start_tls` only.
    pub tls_port: u16,
    /// The server's certificate, with `start_tls`.
    pub certificate: Option<Certificate>,
}

impl Dovecot {
    pub fn start() -> Option<Dovecot> {
        Self::start_with("", None)
    }

    /// A server that does not offer IDLE (some providers' do not).
    pub fn start_without_idle() -> Option<Dovecot> {
        Self::start_with("imap_capability = IMAP4rev1 SASL-IR LITERAL+ ID ENABLE UNSELECT CHILDREN NAMESPACE UIDPLUS LIST-EXTENDED MOVE", None)
    }

    /// A server that takes logins over TLS only: STARTTLS on `port`, TLS from the first
    /// byte on `tls_port`, with a certificate of its own (`certificate`).
    pub fn start_tls() -> Option<Dovecot> {
        Self::start_with("", Some(Certificate::new()))
    }

    fn start_with(imap: &str, certificate: Option<Certificate>) -> Option<Dovecot> {
        let bin = find("Dovecot", "dovecot-imapd", &["/usr/sbin/dovecot", "/usr/local/sbin/dovecot"])?;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let port = free_port();
        let tls_port = if certificate.is_some() { free_port() } else { 0 };
        let ssl = match &certificate {
            Some(c) => {
                let (cert, key) = c.write(d);
                format!("ssl = required\nssl_cert = <{}\nssl_key = <{}\n", cert.display(), key.display())
            }
            None => "ssl = no\ndisable_plaintext_auth = no\n".into(),
        };
        let imaps = if tls_port == 0 { "port = 0".to_string() } else { format!("address = 127.0.0.1\n    port = {tls_port}\n    ssl = yes") };
        for sub in ["run", "state", "home"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        // Dovecot will not run its login or mail processes as root: as root they run as
        // Debian's dovecot/dovenull users (and the mail home is theirs); otherwise as us.
        let users = if is_root() {
            Command::new("chown").args(["-R", "dovecot:dovecot"]).arg(d.join("home")).status().unwrap();
            // Exim's deliveries (as dovecot) reach the Maildir through here.
            std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
            "default_internal_user = dovecot\ndefault_internal_group = dovecot\ndefault_login_user = dovenull\n".to_string()
        } else {
            let me = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap().trim().to_string();
            format!("default_internal_user = {me}\ndefault_login_user = {me}\n")
        };
        let mail_user =
            if is_root() { "uid=dovecot gid=dovecot".to_string() } else { format!("uid={} gid={}", unsafe { libc::getuid() }, unsafe { libc::getgid() }) };
        std::fs::write(d.join("passwd"), format!("{USER}:{{PLAIN}}{PASSWORD}\n")).unwrap();
        // Dovecot's auth process (the dovecot user, as root) reads it: readable whatever the
        // process's umask (a gate opened in the same test process sets 077 for its own files).
        std::fs::set_permissions(d.join("passwd"), std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        let conf = format!(
            "base_dir = {r}/run\nstate_dir = {r}/state\nlog_path = {r}/dovecot.log\nprotocols = imap\nlisten = 127.0.0.1\n{ssl}\
             auth_mechanisms = plain login\nfirst_valid_uid = 1\n{users}\
             passdb {{\n  driver = passwd-file\n  args = scheme=PLAIN username_format=%u {r}/passwd\n}}\n\
             userdb {{\n  driver = static\n  args = {mail_user} home={r}/home/%u\n}}\n\
             mail_location = maildir:~/Maildir\n\
             service imap-login {{\n  chroot =\n  inet_listener imap {{\n    address = 127.0.0.1\n    port = {port}\n  }}\n  inet_listener imaps {{\n    {imaps}\n  }}\n}}\n\
             service anvil {{\n  chroot =\n}}\nprotocol imap {{\n  mail_max_userip_connections = 50\n  {imap}\n}}\n",
            r = d.display()
        );
        std::fs::write(d.join("dovecot.conf"), conf).unwrap();
        let mut dv = Dovecot { child: None, bin, dir, port, tls_port, certificate };
        dv.restart();
        Some(dv)
    }

    /// Kills the server (every process of it) and starts it again on the same port with
    /// the same mail, as a server restart would.
    pub fn restart(&mut self) {
        self.child = None;
        let conf = self.dir.path().join("dovecot.conf");
        // Killed with its group when dropped, on the way out of a failed start too.
        self.child = Some(start(&self.bin, &["-c", conf.to_str().unwrap(), "-F"]));
        wait_listening(self.port, "Dovecot", &self.dir.path().join("dovecot.log"));
        if self.certificate.is_none() {
            wait_login(self.port, &self.dir.path().join("dovecot.log"));
        }
        if self.tls_port != 0 {
            wait_listening(self.tls_port, "Dovecot (IMAPS)", &self.dir.path().join("dovecot.log"));
        }
    }

    /// Stops the server until `restart`.
    pub fn stop(&mut self) {
        self.child = None;
    }

    /// alice's Maildir.
    pub fn maildir(&self) -> PathBuf {
        self.dir.path().join("home").join(USER).join("Maildir")
    }
}

/// Exim accepting SMTP submission (AUTH PLAIN as `alice`/`secret`, no TLS: loopback only)
/// and delivering every mail, whatever its recipient, into one Maildir.
pub struct Exim {
    child: Option<Group>,
    bin: PathBuf,
    dir: tempfile::TempDir,
    /// SMTP (plain, or STARTTLS with `start_tls`).
    pub port: u16,
    /// SMTPS (TLS from the first byte), with `start_tls` only.
    pub tls_port: u16,
    /// The server's certificate, with `start_tls`.
    pub certificate: Option<Certificate>,
}

impl Exim {
    /// Delivers into a Maildir of its own (see `delivered`).
    pub fn start() -> Option<Exim> {
        Self::start_into(None, None)
    }

    /// Delivers into alice's INBOX on `dovecot`, so what is sent arrives there.
    pub fn start_for(dovecot: &Dovecot) -> Option<Exim> {
        Self::start_into(Some(dovecot), None)
    }

    /// Takes logins over TLS only: STARTTLS on `port`, TLS from the first byte on
    /// `tls_port`, with a certificate of its own (`certificate`).
    pub fn start_tls() -> Option<Exim> {
        Self::start_into(None, Some(Certificate::new()))
    }

    fn start_into(dovecot: Option<&Dovecot>, certificate: Option<Certificate>) -> Option<Exim> {
        let bin = find("Exim", "exim4-daemon-light", &["/usr/sbin/exim4", "/usr/sbin/exim"])?;
        if !is_root() {
            // Exim takes another configuration file only from root (it is setuid root and
            // drops privilege for anyone else's -C); the README's test command runs as root.
            let why = "Exim needs root to run with the tests' own configuration";
            assert!(std::env::var_os("GATEHOUSE_REQUIRE_PEERS").is_none(), "{why}");
            eprintln!("skipped: {why}");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let port = free_port();
        for sub in ["spool", "log", "mail"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        // Deliveries never run as root; Debian's package makes this user.
        Command::new("chown").args(["Debian-exim"]).arg(d.join("mail")).status().unwrap();
        std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let tls_port = if certificate.is_some() { free_port() } else { 0 };
        let tls = match &certificate {
            // AUTH is offered only once TLS is on.
            Some(c) => {
                let (cert, key) = c.write(d);
                format!(
                    "daemon_smtp_ports = {port} : {tls_port}\ntls_on_connect_ports = {tls_port}\ntls_advertise_hosts = *\ntls_certificate = {}\ntls_privatekey = {}\n\
                     auth_advertise_hosts = ${{if eq{{$tls_in_cipher}}{{}}{{}}{{*}}}}\n",
                    cert.display(),
                    key.display()
                )
            }
            None => format!("daemon_smtp_ports = {port}\ntls_advertise_hosts =\nauth_advertise_hosts = *\n"),
        };
        let (maildir, owner) = match dovecot {
            Some(dv) => (dv.maildir(), "dovecot"),
            None => (d.join("mail/box"), "Debian-exim"),
        };
        let conf = format!(
            "primary_hostname = exim.test.localhost\ndomainlist local_domains = *\nspool_directory = {r}/spool\n\
             log_file_path = {r}/log/%slog\npid_file_path = {r}/exim.pid\n{tls}local_interfaces = 127.0.0.1\n\
             exim_user = root\nexim_group = root\ntrusted_users = root\nsmtp_accept_queue_per_connection = 0\n\
             acl_smtp_mail = check_mail\nacl_smtp_rcpt = check_rcpt\n\
             begin acl\ncheck_mail:\n  deny message = authentication required\n       !authenticated = *\n  accept\ncheck_rcpt:\n  accept\n\
             begin routers\nall:\n  driver = accept\n  transport = maildir\n\
             begin transports\nmaildir:\n  driver = appendfile\n  directory = {m}\n  maildir_format\n  create_directory\n  user = {owner}\n  envelope_to_add\n  return_path_add\n\
             begin authenticators\nplain:\n  driver = plaintext\n  public_name = PLAIN\n  server_prompts = :\n  server_set_id = $auth2\n",
            r = d.display(),
            m = maildir.display()
        ) + &"  server_condition = ${if and {{eq{$auth2}{USER}}{eq{$auth3}{PASS}}}}\n".replace("USER", USER).replace("PASS", PASSWORD);
        std::fs::write(d.join("exim.conf"), conf).unwrap();
        let mut ex = Exim { child: None, bin, dir, port, tls_port, certificate };
        ex.restart();
        Some(ex)
    }

    pub fn restart(&mut self) {
        self.child = None;
        let conf = self.dir.path().join("exim.conf");
        // -bdf: the daemon in the foreground (killed with its group); -odi: deliver at once.
        self.child = Some(start(&self.bin, &["-C", conf.to_str().unwrap(), "-bdf", "-odi"]));
        wait_listening(self.port, "Exim", &self.dir.path().join("log/mainlog"));
        if self.tls_port != 0 {
            wait_listening(self.tls_port, "Exim (SMTPS)", &self.dir.path().join("log/mainlog"));
        }
    }

    /// Stops the server until `restart`.
    pub fn stop(&mut self) {
        self.child = None;
    }

    /// How many mails were delivered so far.
    pub fn delivered_count(&self) -> usize {
        std::fs::read_dir(self.dir.path().join("mail/box/new")).map(|d| d.count()).unwrap_or(0)
    }

    /// Every mail delivered so far, oldest first.
    pub fn delivered(&self) -> Vec<Vec<u8>> {
        let new = self.dir.path().join("mail/box/new");
        let mut files: Vec<_> = std::fs::read_dir(new).map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect()).unwrap_or_default();
        files.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
        files.iter().filter_map(|p| std::fs::read(p).ok()).collect()
    }

    /// Waits (at most 20 s) until `n` mails were delivered; returns them.
    pub fn wait_delivered(&self, n: usize) -> Vec<Vec<u8>> {
        for _ in 0..200 {
            let got = self.delivered();
            if got.len() >= n {
                return got;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "{} of {n} mails delivered; Exim's log:\n{}",
            self.delivered().len(),
            std::fs::read_to_string(self.dir.path().join("log/mainlog")).unwrap_or_default()
        );
    }
}
