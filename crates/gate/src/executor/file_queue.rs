//! The file-queue executor: each piece of work becomes one JSON file in the folder the
//! user chose, written under a temporary name and renamed, so a reader never sees half.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Writes `record` as `dir/name` (the name is chosen by the door, never by a sender).
pub async fn write(dir: &Path, name: &str, record: &Value) -> std::io::Result<PathBuf> {
    tokio::fs::create_dir_all(dir).await?;
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    tokio::fs::write(&tmp, serde_json::to_vec_pretty(record).expect("serialises")).await?;
    tokio::fs::rename(&tmp, &path).await?;
    Ok(path)
}
