//! Runs against the real OS keychain (Secret Service on Linux): `scripts/test.sh` starts
//! a D-Bus session with an unlocked gnome-keyring for it.

use gatehouse_keys::{delete, load, load_or_create, KeyError, KeystoreKind};

#[test]
fn os_keychain_identity_survives_reload_and_stays_out_of_the_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let (id, created) = load_or_create(dir.path(), KeystoreKind::Os).expect("Secret Service must be running (see scripts/test.sh)");
    assert!(created);
    let (again, created_again) = load_or_create(dir.path(), KeystoreKind::Os).unwrap();
    assert!(!created_again);
    assert_eq!(id.public_key, again.public_key);
    // Nothing in the data dir holds the secret.
    let secret = hex::encode(id.signing_key().to_bytes());
    for f in std::fs::read_dir(dir.path()).unwrap() {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap_or_default();
        assert!(!text.contains(&secret));
    }
    assert!(!format!("{id:?}").contains(&secret));
    // Asking for the file keystore on an OS-keychain identity is an error, not a new key.
    assert!(matches!(load(dir.path(), KeystoreKind::File), Err(KeyError::WrongKeystore { .. })));
    delete(dir.path()).unwrap();
    assert!(matches!(load(dir.path(), KeystoreKind::Os), Err(KeyError::Missing(_))));
}

#[test]
fn two_data_dirs_get_two_identities() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let ia = load_or_create(a.path(), KeystoreKind::Os).unwrap().0;
    let ib = load_or_create(b.path(), KeystoreKind::Os).unwrap().0;
    assert_ne!(ia.public_key, ib.public_key);
    assert_eq!(load(a.path(), KeystoreKind::Os).unwrap().public_key, ia.public_key);
    delete(a.path()).unwrap();
    delete(b.path()).unwrap();
}

#[cfg(unix)]
#[test]
fn file_keystore_is_0600_and_refused_when_loose() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let (id, _) = load_or_create(dir.path(), KeystoreKind::File).unwrap();
    let key_path = dir.path().join("identity.key");
    let mode = std::fs::metadata(&key_path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(load(dir.path(), KeystoreKind::File).unwrap().public_key, id.public_key);
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(matches!(load(dir.path(), KeystoreKind::File), Err(KeyError::LooseFile { .. })));
}

#[test]
fn a_peer_token_is_kept_in_the_keychain_not_the_data_dir() {
    use gatehouse_keys::Secrets;
    for kind in [KeystoreKind::Os, KeystoreKind::File] {
        let dir = tempfile::tempdir().unwrap();
        load_or_create(dir.path(), kind).unwrap();
        let secrets = Secrets::open(dir.path()).unwrap();
        let name = "uamp-token:did:key:z6MkpeerA";
        assert_eq!(secrets.get(name).unwrap(), None);
        secrets.put(name, "ghu_first").unwrap();
        secrets.put(name, "ghu_second").unwrap();
        assert_eq!(Secrets::open(dir.path()).unwrap().get(name).unwrap().as_deref(), Some("ghu_second"));
        if kind == KeystoreKind::Os {
            for f in walk(dir.path()) {
                assert!(!std::fs::read_to_string(&f).unwrap_or_default().contains("ghu_second"), "{f:?} holds the token");
            }
        }
        secrets.delete(name).unwrap();
        assert_eq!(secrets.get(name).unwrap(), None);
        delete(dir.path()).unwrap();
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A wrap's key file: made private in a private folder, the same key when read again or
/// made by two processes at once, and refused once others may read it.
#[cfg(unix)]
#[test]
fn a_key_file_of_its_own_is_private_made_once_and_refused_when_loose() {
    use gatehouse_keys::load_or_create_file;
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp").join("files.key");
    let keys: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn({
                let p = path.clone();
                move || load_or_create_file(&p).unwrap().to_bytes()
            })
        })
        .collect();
    let keys: Vec<_> = keys.into_iter().map(|k| k.join().unwrap()).collect();
    assert!(keys.iter().all(|k| *k == keys[0]), "processes starting together must share one key");
    assert_eq!(load_or_create_file(&path).unwrap().to_bytes(), keys[0]);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&path), mode(path.parent().unwrap())), (0o600, 0o700));
    assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "nothing left beside it");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(matches!(load_or_create_file(&path), Err(KeyError::LooseFile { .. })));
}
