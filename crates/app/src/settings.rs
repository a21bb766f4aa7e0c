//! Settings both faces change: how long history is kept (refused bodies and receipts,
//! the audit log), bounded and audited by the store's one path; where the desktop's
//! inbox listens and which folder it watches.

use crate::Context;
use std::path::{Path, PathBuf};

use gatehouse_store::Store;

pub use gatehouse_store::Retention;
use serde::{Deserialize, Serialize};

use crate::{Code, CommandError, Result};

const SETTINGS_KEY: &str = "desktop";
pub const DEFAULT_PORT: u16 = 8765;
pub const DEFAULT_UAMP_PORT: u16 = 8766;

// The starting values below may come from the environment (README, "The first start"):
// documented settings, read only until Settings are saved.
fn default_uamp_port() -> u16 {
    std::env::var("GATEHOUSE_UAMP_PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(DEFAULT_UAMP_PORT)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
/// Where the desktop's inbox listens and which folder it watches.
pub struct DesktopSettings {
    pub port: u16,
    pub watch_dir: PathBuf,
    /// UAMP over TLS 1.3 (settings saved before UAMP existed get the default).
    #[serde(default = "default_uamp_port")]
    pub uamp_port: u16,
}

impl DesktopSettings {
    pub fn load(ctx: &Context) -> Self {
        let store: &Store = &ctx.store;
        store.setting(SETTINGS_KEY).ok().flatten().unwrap_or_else(|| DesktopSettings {
            port: std::env::var("GATEHOUSE_PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(DEFAULT_PORT),
            watch_dir: std::env::var_os("GATEHOUSE_WATCH_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| dirs::home_dir().unwrap_or_else(|| PathBuf::from(".")).join("Gatehouse").join("inbox")),
            uamp_port: default_uamp_port(),
        })
    }

    pub fn save(&self, store: &Store) -> crate::Result<()> {
        Ok(store.set_setting(SETTINGS_KEY, self)?)
    }
}

/// Changes where the desktop's inbox listens and what it watches, checked and audited.
/// `may_watch` is asked about a new folder (the window: a folder the user chose in its
/// own dialog); the caller restarts the inbox on what is saved.
pub fn set_desktop(ctx: &Context, settings: &DesktopSettings, may_watch: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let store: &Store = &ctx.store;
    if settings.port == 0 || settings.uamp_port == 0 {
        return Err(CommandError::new(Code::Invalid, "choose ports between 1 and 65535"));
    }
    if settings.port == settings.uamp_port {
        return Err(CommandError::new(Code::Invalid, "EPP and UAMP need two different ports"));
    }
    if !settings.watch_dir.is_absolute() {
        return Err(CommandError::new(Code::Invalid, "the watched folder must be an absolute path"));
    }
    let before = DesktopSettings::load(ctx);
    // Files dropped there are read and moved: the folder is one the user chose.
    if settings.watch_dir != before.watch_dir {
        may_watch(&settings.watch_dir)?;
    }
    settings.save(store)?;
    store.audit("settings.update", None, &serde_json::json!({"before": before, "after": settings}), &crate::now())?;
    Ok(())
}

pub fn retention(ctx: &Context) -> Retention {
    let store: &Store = &ctx.store;
    store.retention()
}

/// Applied by the inbox's next clean-up (every 10 minutes), not at once.
pub fn set_retention(ctx: &Context, retention: &Retention) -> Result<Retention> {
    let store: &Store = &ctx.store;
    store.set_retention(retention, &crate::now())?;
    Ok(store.retention())
}

/// Whether a sender the user trusts, writing about a scope it is not allowed, asks the user
/// (true unless they said otherwise) or is only refused.
pub fn ask_new_scopes(ctx: &Context) -> crate::Result<bool> {
    Ok(crate::doors::gate::state::asks_new_scopes_in(&ctx.store)?)
}

/// The user's rule for it, followed from the next arrival on. Audited.
pub fn set_ask_new_scopes(ctx: &Context, ask: bool) -> crate::Result<bool> {
    ctx.store.set_setting(crate::doors::gate::state::ASK_NEW_SCOPES_SETTING, &ask)?;
    ctx.store.audit("settings.ask_new_scopes", None, &serde_json::json!({"ask": ask}), &crate::doors::gate::consent::now_string(crate::clock::now()))?;
    Ok(ask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_settings_are_checked_asked_about_a_new_folder_and_audited() {
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(Store::open(&dir.path().join("g.db")).unwrap());
        let ctx = crate::Context::with_store(dir.path().to_path_buf(), ed25519_dalek::SigningKey::from_bytes(&[7; 32]), store.clone());
        let good = DesktopSettings { port: 9001, watch_dir: dir.path().join("drop"), uamp_port: 9002 };
        for (bad, why) in [
            (DesktopSettings { port: 0, ..good.clone() }, "between 1 and 65535"),
            (DesktopSettings { uamp_port: 9001, ..good.clone() }, "two different ports"),
            (DesktopSettings { watch_dir: "drop".into(), ..good.clone() }, "absolute path"),
        ] {
            let e = set_desktop(&ctx, &bad, |_| Ok(())).unwrap_err();
            assert!(e.code == Code::Invalid && e.message.contains(why), "{e:?}");
        }
        // A folder the window did not let the user choose is refused; nothing is saved.
        let refused = set_desktop(&ctx, &good, |_| Err(CommandError::new(Code::ForbiddenPath, "not chosen"))).unwrap_err();
        assert_eq!(refused.code, Code::ForbiddenPath);
        assert_ne!(DesktopSettings::load(&ctx), good);
        set_desktop(&ctx, &good, |d| if d == good.watch_dir { Ok(()) } else { Err(CommandError::new(Code::ForbiddenPath, "other")) }).unwrap();
        assert_eq!(DesktopSettings::load(&ctx), good);
        // The same folder again is not asked about.
        set_desktop(&ctx, &DesktopSettings { port: 9003, ..good.clone() }, |_| Err(CommandError::new(Code::ForbiddenPath, "asked"))).unwrap();
        let audit = store.audit_list(10).unwrap();
        assert_eq!(audit.iter().filter(|a| a.action == "settings.update").count(), 2);
    }
}
