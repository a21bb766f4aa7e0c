//! A JSON Schema violation as the user and the sender read it: the field at fault as a JSON
//! pointer and a sentence. A missing member is named itself (`/payload/text`, not its
//! parent); so is an unexpected one, when the caller says what kind of object it is. Every
//! protocol crate that validates against a schema (UAMP, MAIL, IntentWeb, ASOP) reports
//! through this one function.

use jsonschema::error::ValidationErrorKind;
use jsonschema::Validator;
use serde_json::Value;

/// Which violation is reported when there are several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// The first the validator finds (the order of the schema's keywords).
    First,
    /// The deepest: an `if/then` failure is reported at its leaf as well as at the object
    /// holding it, and the leaf is the precise one.
    Deepest,
}

/// The field at fault and what is wrong with it, or None when `instance` is valid.
/// `object_kind`: names an unexpected member ("is not a {object_kind} field"); None leaves
/// that violation to the validator's own words at the object.
pub fn violation(validator: &Validator, instance: &Value, pick: Pick, object_kind: Option<&str>) -> Option<(String, String)> {
    let e = match pick {
        Pick::First => validator.iter_errors(instance).next()?,
        // The first of the deepest (max_by_key would keep the last).
        Pick::Deepest => {
            validator
                .iter_errors(instance)
                .map(|e| (e.instance_path().to_string().matches('/').count(), e))
                .fold(None, |best, (d, e)| match best {
                    Some((bd, _)) if bd >= d => best,
                    _ => Some((d, e)),
                })?
                .1
        }
    };
    let at = e.instance_path().to_string();
    let whole = |at: String| if at.is_empty() { "/".to_string() } else { at };
    Some(match (e.kind(), object_kind) {
        (ValidationErrorKind::Required { property }, _) => (format!("{at}/{}", property.as_str().unwrap_or_default()), "is required".to_string()),
        (ValidationErrorKind::AdditionalProperties { unexpected }, Some(kind)) => {
            (format!("{at}/{}", unexpected.first().cloned().unwrap_or_default()), format!("is not a {kind} field (additionalProperties is false)"))
        }
        _ => (whole(at), e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v() -> Validator {
        jsonschema::validator_for(&json!({
            "type": "object",
            "required": ["a"],
            "additionalProperties": false,
            "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}}, "c": {"type": "string"}}
        }))
        .unwrap()
    }

    #[test]
    fn a_missing_member_is_named_itself() {
        assert_eq!(violation(&v(), &json!({}), Pick::First, None), Some(("/a".into(), "is required".into())));
    }

    #[test]
    fn an_unexpected_member_is_named_when_the_kind_is_known() {
        let (field, msg) = violation(&v(), &json!({"a": {}, "z": 1}), Pick::First, Some("test")).unwrap();
        assert_eq!((field.as_str(), msg.as_str()), ("/z", "is not a test field (additionalProperties is false)"));
        let (field, _) = violation(&v(), &json!({"a": {}, "z": 1}), Pick::First, None).unwrap();
        assert_eq!(field, "/");
    }

    #[test]
    fn of_equally_deep_violations_the_first_is_reported() {
        let v = jsonschema::validator_for(&json!({"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}})).unwrap();
        let first = violation(&v, &json!({"x": "a", "y": "b"}), Pick::First, None).unwrap().0;
        assert_eq!(violation(&v, &json!({"x": "a", "y": "b"}), Pick::Deepest, None).unwrap().0, first);
    }

    #[test]
    fn the_deepest_violation_wins_when_asked() {
        let bad = json!({"a": {"b": "x"}, "c": 1});
        assert_eq!(violation(&v(), &bad, Pick::Deepest, None).unwrap().0, "/a/b");
        assert_eq!(violation(&v(), &json!({"a": {}}), Pick::Deepest, None), None);
    }
}
