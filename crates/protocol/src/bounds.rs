//! The time bounds the extension and a backend must agree on, in one place: how long the
//! extension may take to answer a command, the limits a tool declares for itself, and the margin
//! a backend adds for the result to arrive. The worker enforces them; the reference server waits
//! at least this long before it gives up on a browser.

use serde_json::{Map, Value};

/// The extension answers every command within this: a tool still running then is answered with
/// an error naming the bound.
pub const COMMAND_MS: u32 = 120_000;

/// `btcp_run_script`'s `timeoutMs`: its default and the range it may ask for (the catalog's
/// schema says the same). The longest run ends well within [`COMMAND_MS`].
pub const SCRIPT_DEFAULT_MS: u32 = 30_000;
pub const SCRIPT_MIN_MS: u32 = 100;
pub const SCRIPT_MAX_MS: u32 = 110_000;
/// After a script's time limit, the time the worker may take to stop it and report.
pub const SCRIPT_STOP_MS: u32 = 5_000;

/// The longest `computer` `wait` or `hold_key` may take (`duration`, seconds; the catalog's
/// schema says the same): it ends well within [`COMMAND_MS`], so neither declares a limit of
/// its own.
pub const INPUT_DURATION_MAX_S: u32 = 30;

/// What a backend adds to the longest a tool may take, for the result to reach it (a result POST
/// is retried for about 4 s; the outbox waits for a reconnect).
pub const DELIVERY_MARGIN_MS: u32 = 10_000;

/// How long a backend should wait for any command by default: the extension's bound on every
/// command plus the delivery margin.
pub const BACKEND_WAIT_MS: u32 = COMMAND_MS + DELIVERY_MARGIN_MS;

// The longest script run ends within the command bound, and a backend waits longer than it.
const _: () = assert!(SCRIPT_MAX_MS + SCRIPT_STOP_MS <= COMMAND_MS);
const _: () = assert!(BACKEND_WAIT_MS > COMMAND_MS);
// The longest hold or wait, with time to spare for the input around it.
const _: () = assert!(INPUT_DURATION_MAX_S * 1000 + 30_000 <= COMMAND_MS);

/// The limit a tool declares for this call from its own arguments, when it has one (today:
/// `btcp_run_script`'s `timeoutMs`, clamped to its range, plus the time to stop the script).
/// Every other tool is bounded by [`COMMAND_MS`] only.
pub fn declared_ms(tool: &str, args: &Map<String, Value>) -> Option<u32> {
    match tool {
        "btcp_run_script" => {
            let asked = args
                .get("timeoutMs")
                .and_then(Value::as_u64)
                .map_or(SCRIPT_DEFAULT_MS, |ms| {
                    u32::try_from(ms).unwrap_or(SCRIPT_MAX_MS)
                });
            let run = asked.clamp(SCRIPT_MIN_MS, SCRIPT_MAX_MS);
            Some((run + SCRIPT_STOP_MS).min(COMMAND_MS))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_catalog_declares_the_script_range() {
        let spec = crate::tool("btcp_run_script").expect("listed");
        let t = &spec.input_schema["properties"]["timeoutMs"];
        assert_eq!(t["minimum"], json!(SCRIPT_MIN_MS));
        assert_eq!(t["maximum"], json!(SCRIPT_MAX_MS));
        assert!(t["description"]
            .as_str()
            .unwrap_or_default()
            .contains(&SCRIPT_DEFAULT_MS.to_string()));
    }

    #[test]
    fn the_catalog_bounds_wait_and_hold_key_by_the_same_duration() {
        let spec = crate::tool("computer").expect("listed");
        let d = &spec.input_schema["properties"]["duration"];
        assert_eq!(d["maximum"], json!(INPUT_DURATION_MAX_S));
        assert_eq!(d["minimum"], json!(0));
    }

    #[test]
    fn every_declared_limit_ends_within_the_command_bound() {
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(
            declared_ms("btcp_run_script", &args(json!({"timeoutMs": 110_000}))),
            Some(115_000)
        );
        assert_eq!(
            declared_ms("btcp_run_script", &args(json!({}))),
            Some(35_000)
        );
        assert_eq!(
            declared_ms("btcp_run_script", &args(json!({"timeoutMs": u64::MAX}))),
            Some(115_000)
        );
        assert_eq!(declared_ms("navigate", &args(json!({}))), None);
    }
}
