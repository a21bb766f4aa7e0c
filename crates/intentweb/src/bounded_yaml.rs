//! YAML read into JSON values within a budget.
//!
//! YAML aliases let a few hundred bytes name the same node millions of times (the
//! "billion laughs"); serde_yaml expands them while it builds a value. Reading through
//! this seed counts every node and every byte of text as it is built, so a manifest can
//! expand to at most [`MAX_NODES`] nodes and [`MAX_TEXT`] bytes of text, whatever its
//! aliases say, and reading fails as soon as it would exceed them.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Nodes (scalars, lists, mappings) a document may expand to.
pub const MAX_NODES: usize = 100_000;
/// Bytes of keys and strings a document may expand to.
pub const MAX_TEXT: usize = 4 * 1024 * 1024;

/// Reads `yaml` into a JSON value, refusing a document larger once expanded than the bounds.
pub fn from_str(yaml: &str) -> Result<Value, serde_yaml::Error> {
    let budget = Budget { nodes: Cell::new(MAX_NODES), text: Cell::new(MAX_TEXT) };
    Node(&budget).deserialize(serde_yaml::Deserializer::from_str(yaml))
}

struct Budget {
    nodes: Cell<usize>,
    text: Cell<usize>,
}

impl Budget {
    fn take<E: de::Error>(&self, text: usize) -> Result<(), E> {
        let (Some(n), Some(t)) = (self.nodes.get().checked_sub(1), self.text.get().checked_sub(text)) else {
            return Err(E::custom(format!("the document expands to more than {MAX_NODES} nodes or {MAX_TEXT} bytes of text (YAML aliases?)")));
        };
        self.nodes.set(n);
        self.text.set(t);
        Ok(())
    }
}

#[derive(Clone, Copy)]
struct Node<'a>(&'a Budget);

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(v.into())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(v.into())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.0.take(v.len())?;
        Ok(Value::String(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.0.take(0)?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.0.take(0)?;
        let mut out = Map::new();
        while let Some(k) = map.next_key_seed(self)? {
            // A key that is itself a list or mapping would have to be written out as text,
            // and written out again (escaped) at every level it is nested in: a few
            // hundred bytes of `{{{{…}}}}` grew past 500 MB that way (a fuzz finding). No
            // manifest needs one.
            let key = match k {
                Value::String(s) => s,
                Value::Array(_) | Value::Object(_) => return Err(de::Error::custom("a mapping key must be text or a number, not a list or mapping")),
                scalar => scalar.to_string(),
            };
            let v = map.next_value_seed(self)?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_are_mappings_are_refused_not_written_out_level_by_level() {
        // fuzz/artifacts/intentweb/oom-08655ae1…: nested flow mappings used as keys; each
        // level's key was its inner mapping written as escaped JSON text (2^n bytes).
        let found = "{".repeat(41) + &"}".repeat(69) + &"{".repeat(67) + ":?[ zz" + &"{".repeat(20) + "N{";
        assert!(from_str(&found).is_err());
        let e = from_str("? {a: 1}\n: b\n").unwrap_err();
        assert!(e.to_string().contains("mapping key must be text"), "{e}");
        let e = from_str("{[x]: 1}").unwrap_err();
        assert!(e.to_string().contains("mapping key must be text"), "{e}");
        // Scalar keys still read as their text.
        assert_eq!(from_str("1: a\ntrue: b\n").unwrap(), serde_json::json!({"1": "a", "true": "b"}));
    }

    #[test]
    fn an_alias_bomb_is_refused_after_a_bounded_amount_of_work() {
        // Ten levels of ten aliases: 10^10 strings once expanded, from under a kilobyte.
        let mut doc = String::from("a0: &a0 [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n");
        for i in 1..10 {
            let p = i - 1;
            doc.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        let started = std::time::Instant::now();
        let e = from_str(&doc).unwrap_err();
        assert!(e.to_string().contains("expands to more than") || e.to_string().contains("repetition limit"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
        // A long string named many times is bounded by its bytes, not its node count.
        let long = "x".repeat(64 * 1024);
        let doc = format!("s: &s \"{long}\"\nl: [{}]\n", vec!["*s"; 100].join(", "));
        assert!(from_str(&doc).unwrap_err().to_string().contains("expands to more than"));
        // An ordinary document reads as before.
        let v = from_str("company: Acme\ncapabilities:\n  - id: order\n    price: 1.5\n    ok: true\n").unwrap();
        assert_eq!(v, serde_json::json!({"company": "Acme", "capabilities": [{"id": "order", "price": 1.5, "ok": true}]}));
    }
}
