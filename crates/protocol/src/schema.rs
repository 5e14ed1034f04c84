//! Checks tool arguments against the catalog's JSON Schemas (the subset the catalog uses:
//! `type`, `properties`, `required`, `enum`, `minimum`/`maximum`, `items`, `minItems`/`maxItems`,
//! `minLength`). One mechanism for every tool, so every bad argument gets the same kind of
//! message, naming the argument and the rule.

use serde_json::{Map, Value};

/// Validates an object of arguments against an object schema.
pub fn check_args(schema: &Value, args: &Map<String, Value>) -> Result<(), String> {
    check_object(schema, args, "")
}

fn check_object(schema: &Value, obj: &Map<String, Value>, prefix: &str) -> Result<(), String> {
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if obj.get(name).is_none_or(Value::is_null) {
                let expected = props
                    .and_then(|p| p.get(name))
                    .map(describe)
                    .unwrap_or_else(|| "a value".into());
                return Err(format!(
                    "Missing required argument `{prefix}{name}` ({expected})."
                ));
            }
        }
    }
    if let Some(props) = props {
        for (name, sub) in props {
            match obj.get(name) {
                None | Some(Value::Null) => {}
                Some(v) => check_value(sub, v, &format!("{prefix}{name}"))?,
            }
        }
    }
    Ok(())
}

fn check_value(schema: &Value, v: &Value, path: &str) -> Result<(), String> {
    let bad = |rule: String| {
        Err(format!(
            "Invalid argument `{path}`: {rule}, got {}.",
            shown(v)
        ))
    };
    if let Some(types) = schema.get("type") {
        let ok = match types {
            Value::String(t) => type_matches(t, v),
            Value::Array(ts) => ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| type_matches(t, v)),
            _ => true,
        };
        if !ok {
            return bad(format!("expected {}", describe(schema)));
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if !options.contains(v) {
            let list = options.iter().map(shown).collect::<Vec<_>>().join(", ");
            return bad(format!("must be one of {list}"));
        }
    }
    if let Some(n) = v.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
            if n < min {
                return bad(format!("must be at least {min}"));
            }
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
            if n > max {
                return bad(format!("must be at most {max}"));
            }
        }
    }
    if let (Some(s), Some(min)) = (v.as_str(), schema.get("minLength").and_then(Value::as_u64)) {
        if (s.chars().count() as u64) < min {
            return bad(format!("must have at least {min} character(s)"));
        }
    }
    if let Some(items) = v.as_array() {
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
            if (items.len() as u64) < min {
                return bad(format!("must have at least {min} item(s)"));
            }
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
            if (items.len() as u64) > max {
                return bad(format!("must have at most {max} item(s)"));
            }
        }
        if let Some(item_schema) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                check_value(item_schema, item, &format!("{path}[{i}]"))?;
            }
        }
    }
    if let Some(obj) = v.as_object() {
        if schema.get("properties").is_some() {
            check_object(schema, obj, &format!("{path}."))?;
        }
    }
    Ok(())
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "number" => v.is_number(),
        "integer" => v.as_f64().is_some_and(|n| n.fract() == 0.0),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

/// "integer", "string or boolean", "array of integer", … for messages.
fn describe(schema: &Value) -> String {
    let base = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "a value".into(),
    };
    match schema.get("items") {
        Some(items) if base == "array" => format!("array of {}", describe(items)),
        _ => base,
    }
}

fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "tabId": {"type": "integer"},
                "action": {"type": "string", "enum": ["screenshot", "left_click"]},
                "coordinate": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
                "repeat": {"type": "integer", "minimum": 1, "maximum": 100},
                "value": {"type": ["string", "boolean", "number"]}
            },
            "required": ["tabId", "action"]
        })
    }

    #[test]
    fn accepts_valid_args_and_ignores_extras() {
        check_args(
            &schema(),
            &args(json!({"tabId": 3, "action": "screenshot", "extra": 1})),
        )
        .unwrap();
        check_args(&schema(), &args(json!({"tabId": 3.0, "action": "left_click", "coordinate": [1, 2.5], "value": true}))).unwrap();
    }

    #[test]
    fn messages_name_the_argument_and_rule() {
        let e = check_args(&schema(), &args(json!({"action": "screenshot"}))).unwrap_err();
        assert_eq!(e, "Missing required argument `tabId` (integer).");
        let e = check_args(
            &schema(),
            &args(json!({"tabId": "3", "action": "screenshot"})),
        )
        .unwrap_err();
        assert_eq!(e, "Invalid argument `tabId`: expected integer, got \"3\".");
        let e = check_args(
            &schema(),
            &args(json!({"tabId": 1.5, "action": "screenshot"})),
        )
        .unwrap_err();
        assert!(e.contains("`tabId`"), "{e}");
        let e = check_args(&schema(), &args(json!({"tabId": 1, "action": "fly"}))).unwrap_err();
        assert_eq!(e, "Invalid argument `action`: must be one of \"screenshot\", \"left_click\", got \"fly\".");
        let e = check_args(
            &schema(),
            &args(json!({"tabId": 1, "action": "screenshot", "repeat": 0})),
        )
        .unwrap_err();
        assert!(e.contains("`repeat`: must be at least 1"), "{e}");
        let e = check_args(
            &schema(),
            &args(json!({"tabId": 1, "action": "screenshot", "coordinate": [1]})),
        )
        .unwrap_err();
        assert!(e.contains("at least 2 item"), "{e}");
        let e = check_args(
            &schema(),
            &args(json!({"tabId": 1, "action": "screenshot", "coordinate": [1, "a"]})),
        )
        .unwrap_err();
        assert!(e.contains("`coordinate[1]`: expected number"), "{e}");
        let e = check_args(
            &schema(),
            &args(json!({"tabId": 1, "action": "screenshot", "value": []})),
        )
        .unwrap_err();
        assert!(e.contains("string or boolean or number"), "{e}");
    }
}
