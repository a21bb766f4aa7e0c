//! The gate core imports no door: doors depend on the gate, and the service composes them
//! (docs/architecture.md). A `use crate::uamp::…` in the gate would bring the import loop
//! back without any compiler complaint, so the sources are read here.

use std::path::Path;

/// What the gate may not name: the doors and shared transports of this crate, the
/// composition, and the protocol crates other than EPP's receipt vocabulary.
const FORBIDDEN: [&str; 11] = [
    "crate::epp",
    "crate::uamp",
    "crate::mail",
    "crate::intent",
    "crate::guardian",
    "crate::service",
    "crate::net",
    "gatehouse_uamp",
    "gatehouse_mail",
    "gatehouse_intentweb",
    "gatehouse_asop",
];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn offences(dir: &Path) -> Vec<String> {
    offences_of(dir, &FORBIDDEN)
}

fn offences_of(path: &Path, forbidden: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    if path.is_dir() {
        rust_files(path, &mut files);
    } else {
        files.push(path.to_path_buf());
    }
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for bad in forbidden {
                // A whole path segment: `crate::mail` is not `crate::mail_x`.
                let hit = code.match_indices(bad).any(|(i, _)| !code[i + bad.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_'));
                if hit {
                    found.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn the_gate_core_imports_no_door() {
    let gate = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/gate");
    let found = offences(&gate);
    assert!(found.is_empty(), "the gate names a door:\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_a_door_import() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.rs"), "use crate::uamp::UampInbox; // a back-link\n// crate::mail in a comment is fine\n").unwrap();
    assert_eq!(offences(dir.path()).len(), 1);
}

/// The doors of this crate, each with its own files: EPP (with its HTTP, folder and email
/// transports), UAMP, MAIL, IntentWeb, the guardian.
const DOORS: [(&str, &[&str]); 5] =
    [("epp", &["src/epp", "src/email"]), ("uamp", &["src/uamp"]), ("mail", &["src/mail"]), ("intent", &["src/intent.rs"]), ("guardian", &["src/guardian.rs"])];

#[test]
fn doors_never_import_each_other_or_the_composition() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for (door, paths) in DOORS {
        let mut forbidden: Vec<&str> = vec!["crate::service"];
        for (other, _) in DOORS.iter().filter(|(o, _)| *o != door) {
            forbidden.push(match *other {
                "epp" => "crate::epp",
                "uamp" => "crate::uamp",
                "mail" => "crate::mail",
                "intent" => "crate::intent",
                _ => "crate::guardian",
            });
        }
        if door != "epp" {
            forbidden.push("crate::email");
        }
        for p in paths.iter() {
            found.extend(offences_of(&root.join(p), &forbidden));
        }
    }
    assert!(found.is_empty(), "a door names another door:\n{}", found.join("\n"));
}
