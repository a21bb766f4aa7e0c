//! Notifications, with a real notification daemon (dunst) on the test's display and
//! session bus: a click on a prompt's notification opens the window on that prompt, not
//! merely on the list; in quiet hours nothing is announced, and one digest follows when
//! they end (on a clock the test moves).

use crate::harness::*;
use std::process::{Child, Command, Stdio};

/// dunst showing one notification at a time (the rest wait their turn), so "the one shown"
/// is known.
struct Dunst {
    child: Child,
    _conf: tempfile::TempDir,
    /// The session's notification daemon is this test's only while no other app runs.
    _one: OneApp,
}

impl Dunst {
    fn start() -> Dunst {
        let one = one_app();
        let conf = tempfile::tempdir().unwrap();
        let path = conf.path().join("dunstrc");
        std::fs::write(&path, "[global]\nnotification_limit = 1\n").unwrap();
        let spawn = || {
            Command::new("dunst")
                .args(["-config", path.to_str().unwrap()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("dunst (scripts/setup.sh installs it)")
        };
        let mut d = Dunst { child: spawn(), _conf: conf, _one: one };
        // Another test's notification (or a dunstctl call) may have started dunst on this
        // session bus through D-Bus activation, with its default settings: that one goes
        // (only it: the daemon this session's bus names), until ours holds the name. Ours
        // exits when it finds the name taken: it is started again once the other is gone.
        let t = Instant::now();
        loop {
            match notification_daemon_pid() {
                Some(pid) if pid == d.child.id() => return d,
                Some(other) => {
                    let _ = Command::new("kill").arg(other.to_string()).status();
                }
                None if d.child.try_wait().ok().flatten().is_some() => d.child = spawn(),
                None => {}
            }
            assert!(t.elapsed() < Duration::from_secs(10), "dunst did not take the session bus");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn ctl(args: &[&str]) -> Option<String> {
        let out = Command::new("dunstctl").args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn count(&self, what: &str) -> Option<u32> {
        Self::ctl(&["count", what])?.parse().ok()
    }

    /// Waits until `n` notifications are shown or waiting.
    fn wait_for(&mut self, n: u32) {
        let t = Instant::now();
        while self.count("displayed").unwrap_or(0) + self.count("waiting").unwrap_or(0) < n {
            if t.elapsed() > Duration::from_secs(20) {
                // Which daemon had the notifications, if any: ours may have exited or lost
                // the session bus's name (a CI run once saw dunst say so).
                let ours = self.child.id();
                let exited = self.child.try_wait().ok().flatten();
                panic!(
                    "no notification came: {} of {n} counted; our dunst (pid {ours}) {}; the bus names {:?} as the notification daemon",
                    self.count("displayed").unwrap_or(0) + self.count("waiting").unwrap_or(0),
                    exited.map_or("still runs".to_string(), |s| format!("exited ({s})")),
                    notification_daemon_pid()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A click on the notification shown. The app listens for the click right after the
    /// daemon took the notification (notify-rust subscribes then); a person takes longer
    /// than that to click, and so does this.
    fn click(&self) {
        std::thread::sleep(Duration::from_secs(1));
        Self::ctl(&["action", "0"]).expect("dunstctl action");
    }

    /// Bodies of notifications closed so far, newest first.
    fn history(&self) -> Vec<String> {
        let v: Value = serde_json::from_str(&Self::ctl(&["history"]).unwrap_or_default()).unwrap_or_default();
        v["data"][0].as_array().map(|a| a.iter().filter_map(|n| n["body"]["data"].as_str().map(String::from)).collect()).unwrap_or_default()
    }
}

/// The process holding the notification service on this session's bus, if any.
fn notification_daemon_pid() -> Option<u32> {
    let out = Command::new("dbus-send")
        .args([
            "--session",
            "--print-reply",
            "--dest=org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus.GetConnectionUnixProcessID",
            "string:org.freedesktop.Notifications",
        ])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).split_whitespace().last()?.parse().ok()
}

impl Drop for Dunst {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn active_sender(app: &App) -> Option<String> {
    app.script("return document.activeElement && document.activeElement.dataset ? (document.activeElement.dataset.sender || null) : null;")
        .as_str()
        .map(String::from)
}

#[test]
fn a_click_on_a_prompts_notification_opens_the_window_on_that_prompt() {
    let mut dunst = Dunst::start();
    let app = App::start();
    let (first, second) = (gatehouse_epp::generate_signing_key(), gatehouse_epp::generate_signing_key());
    assert_eq!(app.send(&first, "support", "The first knock").0, 401);
    dunst.wait_for(1);
    assert_eq!(app.send(&second, "billing", "The second knock").0, 401);
    dunst.wait_for(2);
    app.click("#nav-inbox");
    // The one shown is the first's; the newest prompt (the second's) is on top of the list.
    dunst.click();
    let first_key = gatehouse_epp::public_key_hex(&first);
    app.wait("the first sender's prompt to have the focus", || active_sender(&app).as_deref() == Some(first_key.as_str()));
    assert!(app.script("return document.querySelector('#nav-consent').classList.contains('active');").as_bool().unwrap());
    let top = app.script("return document.querySelector('.consent-card').dataset.sender;");
    assert_eq!(top.as_str(), Some(gatehouse_epp::public_key_hex(&second).as_str()), "not simply the first card");
    app.screenshot("notification-opened");
}

#[test]
fn in_quiet_hours_prompts_wait_unannounced_and_one_digest_follows() {
    let mut dunst = Dunst::start();
    let app = App::start();
    // Quiet from an hour ago to an hour from now, on the app's (local) clock.
    let now = chrono::Local::now();
    let hm = |t: chrono::DateTime<chrono::Local>| t.format("%H:%M").to_string();
    app.click("#nav-settings");
    app.click("#quiet-on");
    app.script(&format!(
        "document.querySelector('#quiet-from').value = '{}'; document.querySelector('#quiet-to').value = '{}';",
        hm(now - chrono::Duration::hours(1)),
        hm(now + chrono::Duration::hours(1))
    ));
    app.click("#quiet-save");
    app.wait_text("#quiet-msg", "Quiet hours are on now");

    let stranger = gatehouse_epp::generate_signing_key();
    assert_eq!(app.send(&stranger, "support", "Sent at night").0, 401);
    assert_eq!(app.send(&gatehouse_epp::generate_signing_key(), "support", "Also at night").0, 401);
    app.click("#nav-consent");
    app.wait_text("#quiet-banner", "(2 so far)");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!((dunst.count("displayed"), dunst.count("waiting"), dunst.count("history")), (Some(0), Some(0), Some(0)), "nothing announced");
    app.screenshot("quiet-hours");

    // Two hours later quiet hours are over: one notification says how many waited.
    app.set_clock(2 * 3600);
    dunst.wait_for(1);
    app.click("#nav-inbox");
    dunst.click();
    app.wait("the window on what waits", || app.script("return document.querySelector('#nav-consent').classList.contains('active');").as_bool() == Some(true));
    Dunst::ctl(&["close"]).expect("dunstctl close");
    let said = dunst.history();
    assert!(said.len() == 1 && said[0].contains("2 requests waited"), "{said:?}");
}

/// A decision made anywhere withdraws the notification of what it decided: here, in the
/// window, while the notification is still up.
#[test]
fn a_decided_prompts_notification_is_withdrawn() {
    let mut dunst = Dunst::start();
    let app = App::start();
    let stranger = gatehouse_epp::generate_signing_key();
    assert_eq!(app.send(&stranger, "support", "A knock to be denied").0, 401);
    dunst.wait_for(1);
    app.click("#nav-consent");
    app.click(&format!(".consent-card[data-sender='{}'] button[data-decision='deny']", gatehouse_epp::public_key_hex(&stranger)));
    let t = Instant::now();
    while dunst.count("displayed").unwrap_or(0) + dunst.count("waiting").unwrap_or(0) > 0 {
        assert!(t.elapsed() < Duration::from_secs(3), "the notification of a decided prompt is still up");
        std::thread::sleep(Duration::from_millis(100));
    }
}
