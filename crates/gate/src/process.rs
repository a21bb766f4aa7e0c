//! Programs Gatehouse starts (command executors) run in a process group of their own and
//! die with the whole group: at their timeout, when cancelled, when the run is dropped,
//! and when the program itself exits (a background child it left behind would otherwise
//! outlive the executor and hold its output pipes open).

use std::time::Duration;

/// How long the output readers get, once the group is gone, to hand over what they read.
pub const DRAIN: Duration = Duration::from_secs(2);

/// A command that starts its own process group (pgid = its pid).
pub fn command(program: &str) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(program);
    #[cfg(unix)]
    c.process_group(0);
    c.kill_on_drop(true);
    c
}

/// Kills the group when told, or when dropped.
pub struct Group(Option<i32>);

impl Group {
    pub fn of(child: &tokio::process::Child) -> Group {
        Group(child.id().and_then(|p| i32::try_from(p).ok()))
    }

    /// Sends SIGKILL to every process of the group (the program and anything it started
    /// that did not leave the group).
    pub fn kill(&mut self) {
        #[cfg(unix)]
        if let Some(pgid) = self.0.take() {
            // SAFETY: kill(2) with a negative pid signals that process group; no memory is touched.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits for an output reader at most [`DRAIN`]; a process that escaped the group and
/// still holds the pipe cannot hold the executor.
pub async fn drain<T: Default>(h: tokio::task::JoinHandle<T>) -> T {
    let abort = h.abort_handle();
    match tokio::time::timeout(DRAIN, h).await {
        Ok(r) => r.unwrap_or_default(),
        Err(_) => {
            abort.abort();
            T::default()
        }
    }
}
