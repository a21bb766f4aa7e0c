//! The layers, as Cargo holds them: the gate names no protocol and no door; a door names
//! no other door and not the composition. Each is its own crate, so an import across is a
//! compile error only while the manifests stay as they are: these read the manifests, so a
//! dependency added by mistake fails a test rather than slipping into the tree.

use std::path::Path;

/// The crates the gate may depend on: the store and what sits below every door.
const GATE_MAY_USE: [&str; 6] = ["gatehouse-store", "gatehouse-code", "gatehouse-keys", "gatehouse-risk", "gatehouse-http", "gatehouse-sse"];

/// Gatehouse crates a manifest's `[dependencies]` names (not its dev-dependencies).
fn gatehouse_dependencies(manifest: &str) -> Vec<String> {
    let mut section = "";
    let mut out = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[dependencies]" && line.starts_with("gatehouse-") {
            out.push(line.split(|c: char| c == '=' || c == '.' || c.is_whitespace()).next().unwrap_or("").to_string());
        }
    }
    out
}

#[test]
fn the_gate_names_no_protocol_and_no_door() {
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../gate/Cargo.toml")).unwrap();
    let deps = gatehouse_dependencies(&manifest);
    assert!(deps.contains(&"gatehouse-store".to_string()), "the manifest was not read: {deps:?}");
    let named: Vec<&String> = deps.iter().filter(|d| !GATE_MAY_USE.contains(&d.as_str())).collect();
    assert!(named.is_empty(), "the gate depends on {named:?}");
}

/// The protocols' names, as a word in the gate's source would name one.
const PROTOCOL_WORDS: [&str; 11] = ["epp", "uamp", "a2a", "asop", "mail", "swarm", "intentweb", "intentsite", "guardian", "mcp", "peer"];

/// The protocol words in `text`, each with its line (whole words, any case).
fn protocol_words(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for word in line.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
            let w = word.to_ascii_lowercase();
            // A word and its plural or possessive-free form: "peers", "swarms".
            if PROTOCOL_WORDS.iter().any(|p| w == *p || w.strip_suffix('s') == Some(p)) {
                found.push(format!("{}: {word}", n + 1));
            }
        }
    }
    found
}

// Cargo keeps the gate's dependencies apart; this keeps its words: what it decides is
// said without naming a protocol, its tests included (a door's words belong to the door).
#[test]
fn the_gates_source_names_no_protocol() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../gate");
    let mut files = vec![root.join("Cargo.toml")];
    let mut dirs = vec![root.join("src")];
    if root.join("tests").is_dir() {
        dirs.push(root.join("tests"));
    }
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    assert!(files.len() > 10, "the gate's source was not found: {files:?}");
    let named: Vec<String> =
        files.iter().flat_map(|f| protocol_words(&std::fs::read_to_string(f).unwrap()).into_iter().map(move |w| format!("{}:{w}", f.display()))).collect();
    assert!(named.is_empty(), "the gate names a protocol: {named:#?}");
}

#[test]
fn the_protocol_word_check_sees_one() {
    assert_eq!(protocol_words("a UAMP peer's stream\nnothing here\nswarms: A2A"), ["1: UAMP", "1: peer", "3: swarms", "3: A2A"]);
    assert!(protocol_words("the gate's own words: map, guard, emails, peering").is_empty());
}

#[test]
fn the_manifest_check_sees_a_door() {
    let manifest =
        "[dependencies]\ngatehouse-store.workspace = true\ngatehouse-epp = { workspace = true }\n\n[dev-dependencies]\ngatehouse-uamp.workspace = true\n";
    assert_eq!(gatehouse_dependencies(manifest), ["gatehouse-store", "gatehouse-epp"]);
}

/// Where others' messages arrive, and what reaches counterparts the user chose.
const DOORS: [&str; 5] = ["door-epp", "door-uamp", "door-a2a", "door-guardian", "door-mcp"];
const CLIENTS: [&str; 2] = ["client-mail", "client-intentweb"];

#[test]
fn a_door_names_no_other_door_and_not_the_composition() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for one in DOORS.iter().chain(CLIENTS.iter()) {
        let manifest = std::fs::read_to_string(crates.join(format!("{one}/Cargo.toml"))).unwrap();
        let deps = gatehouse_dependencies(&manifest);
        assert!(deps.contains(&"gatehouse-gate".to_string()), "{one}'s manifest was not read: {deps:?}");
        found.extend(
            deps.into_iter()
                .filter(|d| d.starts_with("gatehouse-door-") || d.starts_with("gatehouse-client-") || d == "gatehouse-app")
                .map(|d| format!("{one} -> {d}")),
        );
    }
    assert!(found.is_empty(), "a door or client names another or the composition: {found:?}");
    // Every crate named as one is listed here, so a new one is checked too.
    let listed: Vec<String> = std::fs::read_dir(&crates)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("door-") || n.starts_with("client-"))
        .collect();
    for n in &listed {
        assert!(DOORS.contains(&n.as_str()) || CLIENTS.contains(&n.as_str()), "{n} is not checked here");
    }
}

/// What a face (the window's crate, the CLI) may not name: everything below the application
/// layer but the pure protocol crates (whose types it shows).
fn below_the_app_layer(dep: &str) -> bool {
    matches!(dep, "gatehouse-store" | "gatehouse-keys" | "gatehouse-gate" | "gatehouse-net")
        || dep.starts_with("gatehouse-door-")
        || dep.starts_with("gatehouse-client-")
}

#[test]
fn the_faces_stand_on_the_application_layer_only() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (face, manifest) in [("the window", crates.join("../Cargo.toml")), ("the CLI", crates.join("cli/Cargo.toml"))] {
        let deps = gatehouse_dependencies(&std::fs::read_to_string(&manifest).unwrap());
        assert!(deps.contains(&"gatehouse-app".to_string()), "{face}'s manifest was not read: {deps:?}");
        let below: Vec<&String> = deps.iter().filter(|d| below_the_app_layer(d)).collect();
        assert!(below.is_empty(), "{face} depends on {below:?} beside the application layer");
    }
    assert!(below_the_app_layer("gatehouse-door-uamp") && below_the_app_layer("gatehouse-store") && !below_the_app_layer("gatehouse-epp"));
}

#[test]
fn no_test_server_is_in_a_release_build() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mut manifests = vec![root.join("Cargo.toml")];
    for dir in std::fs::read_dir(root.join("crates")).unwrap() {
        let m = dir.unwrap().path().join("Cargo.toml");
        if m.exists() {
            manifests.push(m);
        }
    }
    assert!(manifests.len() > 20 && workspace.contains("gatehouse-mail-testswarm"), "{} manifests", manifests.len());
    let test_server = |d: &str| ["-testswarm", "-testsite", "-testserver", "-testservers", "-testhost"].iter().any(|t| d.ends_with(t));
    assert!(test_server("gatehouse-email-testservers") && !test_server("gatehouse-email"));
    let mut found = Vec::new();
    for m in &manifests {
        let deps = gatehouse_dependencies(&std::fs::read_to_string(m).unwrap());
        found.extend(deps.into_iter().filter(|d| test_server(d)).map(|d| format!("{} -> {d}", m.display())));
    }
    assert!(found.is_empty(), "a release build carries a test server: {found:?}");
}
