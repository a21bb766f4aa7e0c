//! The `modify` decision: a pattern redacted from what the step carries — message and tool
//! output text parts, trigger content, memory, and string tool arguments (nested too) —
//! returned as `modifiedRequest`, the same request with the matches replaced.

use regex::Regex;
use serde_json::Value;

pub const MASK: &str = "[REDACTED]";

fn walk(v: &mut Value, re: &Regex, n: &mut usize) {
    match v {
        Value::String(s) => {
            let count = re.find_iter(s).count();
            if count > 0 {
                *n = n.saturating_add(count);
                *s = re.replace_all(s, MASK).into_owned();
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| walk(x, re, n)),
        Value::Object(o) => o.values_mut().for_each(|x| walk(x, re, n)),
        _ => {}
    }
}

/// The request with `pattern` redacted from what the agent would pass on; returns it and
/// how many matches were replaced. Context (agent, session, user) is left as it was.
pub fn redact(request: &Value, pattern: &str) -> Result<(Value, usize), regex::Error> {
    let re = Regex::new(pattern)?;
    let mut out = request.clone();
    let mut n = 0;
    if let Some(params) = out.get_mut("params").and_then(Value::as_object_mut) {
        for (k, v) in params.iter_mut() {
            if k == "context" {
                continue;
            }
            match k.as_str() {
                // Tool arguments: only their values.
                "toolCallRequest" => {
                    if let Some(inputs) = v.get_mut("inputs").and_then(Value::as_array_mut) {
                        for i in inputs {
                            if let Some(val) = i.get_mut("value") {
                                walk(val, &re, &mut n);
                            }
                        }
                    }
                }
                // The schema's form of a tool result.
                "toolCallResult" => {
                    if let Some(parts) = v.pointer_mut("/result/outputs").and_then(Value::as_array_mut) {
                        for p in parts.iter_mut().filter(|p| p["kind"] == "text") {
                            if let Some(t) = p.get_mut("text") {
                                walk(t, &re, &mut n);
                            }
                        }
                    }
                }
                // Text parts only: ids, roles and kinds stay as they were.
                "message" | "trigger" | "result" => {
                    let field = ["content", "outputs"].into_iter().find(|f| v.get(*f).is_some_and(Value::is_array));
                    match field.and_then(|f| v.get_mut(f)).and_then(Value::as_array_mut) {
                        Some(parts) => {
                            for p in parts.iter_mut().filter(|p| p["kind"] == "text") {
                                if let Some(t) = p.get_mut("text") {
                                    walk(t, &re, &mut n);
                                }
                            }
                        }
                        // A raw A2A/MCP message: every string in it.
                        None => walk(v, &re, &mut n),
                    }
                }
                _ => walk(v, &re, &mut n),
            }
        }
    }
    Ok((out, n))
}
