//! The 48 JSON-RPC examples shipped with ASOP/AOS: each is read as the guardian would and
//! either validates or is refused with the JSON-RPC code and reason stated here.

use gatehouse_asop::jsonrpc::{self, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND};
use gatehouse_asop::{schema, METHODS};
use serde_json::Value;

fn examples() -> Vec<(String, Value)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/vectors/asop/examples");
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// What the guardian does with one example: Ok(method) or the error code.
fn classify(v: &Value) -> Result<String, i64> {
    let r = jsonrpc::read(v).map_err(|(_, e)| e.code)?;
    if !METHODS.contains(&r.method.as_str()) {
        return Err(METHOD_NOT_FOUND);
    }
    schema::check(&r.method, v).map_err(|e| e.code)?;
    Ok(r.method)
}

#[test]
fn the_embedded_schema_is_the_specs_own_file() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/vectors/asop/asop-1.0.0.schema.json");
    assert_eq!(schema::SCHEMA, std::fs::read_to_string(p).unwrap());
}

#[test]
fn every_shipped_example_validates_or_is_refused_for_its_stated_reason() {
    let all = examples();
    assert_eq!(all.len(), 48);
    for (name, v) in &all {
        let got = classify(v);
        let expected: Result<&str, (i64, &str)> = match name.as_str() {
            // ASOP requests as the spec defines them.
            "hooks_03" | "hooks_07" => Ok("steps/message"),
            // The later AOS form: protocols/MCP whose params *are* the MCP message, where
            // ASOP 1.0.0 wants it under params.message.
            "extend_mcp_01" | "extend_mcp_04" | "extend_mcp_07" | "hooks_08" => Err((INVALID_PARAMS, "params.message is required")),
            // Raw A2A / MCP traffic (the payloads ASOP wraps), or AOS hooks named after the
            // A2A method: not ASOP methods.
            n if n.starts_with("a2a_") && v.get("method").is_some() => Err((METHOD_NOT_FOUND, "an A2A method, not an ASOP one")),
            "extend_mcp_00" | "extend_mcp_03" | "extend_mcp_06" => Err((METHOD_NOT_FOUND, "an MCP method, not an ASOP one")),
            // Methods only the successor spec (AOS) has, sent as notifications (no id): the
            // guardian knows no such method, and a notification gets no response at all.
            "docs_aos_00" | "docs_aos_03" => Err((METHOD_NOT_FOUND, "an AOS-only method")),
            // Responses and trace fragments: no method at all.
            _ => Err((INVALID_REQUEST, "not a request (a response or a fragment)")),
        };
        match (&got, expected) {
            (Ok(m), Ok(want)) => assert_eq!(m, want, "{name}"),
            (Err(code), Err((want, why))) => assert_eq!(*code, want, "{name} should be refused: {why}"),
            _ => panic!("{name}: got {got:?}, expected {expected:?}"),
        }
    }
}
