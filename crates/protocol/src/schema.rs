//! Checks tool arguments against the catalog's JSON Schemas (the subset the catalog uses:
//! `type`, `properties`, `required`, `enum`, `minimum`/`maximum`, `items`, `minItems`/`maxItems`,
//! `minLength`). One mechanism for every tool, so every bad argument gets the same kind of
//! message, naming the argument and the rule.

use serde_json::{Map, Value};

/// An argument that does not fit: which one (its path, e.g. `coordinate[1]`) and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    pub argument: String,
    pub message: String,
}

/// Validates an object of arguments against an object schema.
pub fn check_args(schema: &Value, args: &Map<String, Value>) -> Result<(), String> {
    check_args_at(schema, args).map_err(|e| e.message)
}

/// [`check_args`], saying which argument failed.
pub fn check_args_at(schema: &Value, args: &Map<String, Value>) -> Result<(), ArgError> {
    check_object(schema, args, "")
}

fn check_object(schema: &Value, obj: &Map<String, Value>, prefix: &str) -> Result<(), ArgError> {
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if obj.get(name).is_none_or(Value::is_null) {
                let expected = props
                    .and_then(|p| p.get(name))
                    .map(describe)
                    .unwrap_or_else(|| "a value".into());
                return Err(ArgError {
                    argument: format!("{prefix}{name}"),
                    message: format!("Missing required argument `{prefix}{name}` ({expected})."),
                });
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

fn check_value(schema: &Value, v: &Value, path: &str) -> Result<(), ArgError> {
    let bad = |rule: String| {
        Err(ArgError {
            argument: path.to_string(),
            message: format!("Invalid argument `{path}`: {rule}, got {}.", shown(v)),
        })
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
            let whole = matches!(types, Value::String(t) if t == "integer") && v.is_number();
            let rule = if whole {
                "expected integer (a whole number written without a fraction or exponent, such as 5)".to_string()
            } else {
                format!("expected {}", describe(schema))
            };
            return bad(rule);
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
        // Written as an integer: `5.0`, `1e20` and `"3"` are not (the typed parse would refuse
        // them with a message naming nothing, or round them).
        "integer" => v.is_i64() || v.is_u64(),
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
        check_args(
            &schema(),
            &args(
                json!({"tabId": 3, "action": "left_click", "coordinate": [1, 2.5], "value": true}),
            ),
        )
        .unwrap();
    }

    #[test]
    fn integers_are_written_as_integers() {
        for (bad, shown) in [
            (json!(5.0), "5.0"),
            (json!(1e20), "1e+20"),
            (json!(1.5), "1.5"),
            (json!("3"), "\"3\""),
            (json!(true), "true"),
        ] {
            let e = check_args_at(
                &schema(),
                &args(json!({"tabId": bad, "action": "screenshot"})),
            )
            .unwrap_err();
            assert_eq!(e.argument, "tabId");
            assert!(
                e.message
                    .starts_with("Invalid argument `tabId`: expected integer"),
                "{e:?}"
            );
            assert!(e.message.ends_with(&format!("got {shown}.")), "{e:?}");
        }
        let e = check_args(
            &schema(),
            &args(json!({"tabId": 1, "action": "screenshot", "repeat": 2.0})),
        )
        .unwrap_err();
        assert!(
            e.contains("`repeat`: expected integer (a whole number"),
            "{e}"
        );
        check_args(
            &schema(),
            &args(json!({"tabId": -1, "action": "screenshot", "repeat": 7})),
        )
        .unwrap();
        check_args(
            &schema(),
            &args(json!({"tabId": u64::MAX, "action": "screenshot"})),
        )
        .unwrap();
    }

    /// Every integer argument of every tool in the catalog refuses `5.0`, naming itself.
    #[test]
    fn every_integer_argument_of_the_catalog_refuses_a_float() {
        let mut checked = 0;
        for spec in crate::catalog() {
            let Some(props) = spec
                .input_schema
                .get("properties")
                .and_then(Value::as_object)
            else {
                continue;
            };
            for (name, sub) in props {
                if sub.get("type").and_then(Value::as_str) != Some("integer") {
                    continue;
                }
                let e = check_args_at(&spec.input_schema, &args(json!({ name.clone(): 5.0 })));
                let e = match e {
                    Err(e) if e.argument == *name => e,
                    // A required argument checked first: give the others too.
                    _ => {
                        let mut all = Map::new();
                        for (n, s) in props {
                            all.insert(n.clone(), sample(s));
                        }
                        all.insert(name.clone(), json!(5.0));
                        check_args_at(&spec.input_schema, &all).unwrap_err()
                    }
                };
                assert_eq!(e.argument, *name, "{} {name}: {e:?}", spec.name);
                assert!(e.message.contains("expected integer"), "{e:?}");
                checked += 1;
            }
        }
        assert!(checked >= 20, "{checked} integer arguments");
    }

    /// A valid value for a property schema (for the catalog-wide check above).
    fn sample(s: &Value) -> Value {
        if let Some(first) = s
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            return first.clone();
        }
        let min = s.get("minimum").and_then(Value::as_i64).unwrap_or(1);
        match s.get("type").and_then(Value::as_str) {
            Some("integer") | Some("number") => json!(min.max(1)),
            Some("boolean") => json!(true),
            Some("array") => {
                let n = s.get("minItems").and_then(Value::as_u64).unwrap_or(1) as usize;
                let item = s.get("items").map(sample).unwrap_or(json!(1));
                Value::Array(vec![item; n])
            }
            // Every property sampled (an object an array holds may require some).
            Some("object") => Value::Object(
                s.get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.iter().map(|(n, sub)| (n.clone(), sample(sub))).collect())
                    .unwrap_or_default(),
            ),
            _ => json!("x"),
        }
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
