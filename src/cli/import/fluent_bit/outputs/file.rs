//! The `file` and `stdout` outputs' formats.

use super::super::{boolean, Keys};
use crate::cli::import::model::{Component, Value};

pub fn file(keys: &mut Keys, c: &mut Component) {
    let dir = keys.take("path");
    let file = keys.take("file").unwrap_or_else(|| "${tag}".into());
    let path = match dir {
        Some(d) => format!("{}/{file}", d.trim_end_matches('/')),
        None => {
            c.remark("no Path: Fluent Bit writes into its working directory; here the path is relative to logferry's");
            file
        }
    };
    c.set("path", path);
    match keys
        .take("format")
        .map(|f| f.to_ascii_lowercase())
        .as_deref()
    {
        Some("plain") => {
            c.set(
                "format",
                Value::Map(vec![
                    ("type".into(), "ndjson".into()),
                    ("time_key".into(), "".into()),
                ]),
            );
        }
        Some("template") => {
            let template = keys
                .take("template")
                .unwrap_or_else(|| "{time} {message}".into());
            let mut format = vec![
                ("type".to_string(), Value::from("template")),
                ("template".into(), Value::Str(template)),
            ];
            // Fluent Bit writes {time} as seconds with six decimals ("%f")
            format.push(("time_format".into(), "%s%.6f".into()));
            c.remark("a {field} the record lacks is written as nothing here; Fluent Bit writes the placeholder as it is");
            c.set("format", Value::Map(format));
        }
        Some("msgpack") => c.set("format", "msgpack"),
        Some(other) if other != "out_file" => {
            c.untranslated(
                &format!("Format {other}"),
                "logferry writes raw, json, ndjson, msgpack or template lines",
            );
            c.set("format", "json");
        }
        _ => {
            c.set("format", "json");
            c.remark("Fluent Bit's default lines are TAG: [time, {record}]; logferry's json lines are {\"time\", \"tag\", \"record\"}");
        }
    }
    if let Some(m) = keys.take("mkdir") {
        c.remark(format!(
            "Mkdir {m}: logferry creates the directories of a path"
        ));
    }
}

/// `format` (or the http sink's own keys) as ndjson with Fluent Bit's
/// `json_date_key` / `json_date_format`.
pub fn ndjson(keys: &mut Keys, c: &mut Component, table: &str, default_key: &str) {
    let key = keys
        .take("json_date_key")
        .unwrap_or_else(|| default_key.to_string());
    let key = if boolean(&key) == Some(false) {
        String::new()
    } else {
        key
    };
    let mut t = vec![
        ("type".to_string(), Value::Str("ndjson".into())),
        ("time_key".into(), Value::Str(key)),
    ];
    if let Some(f) = keys
        .take("json_date_format")
        .map(|f| f.to_ascii_lowercase())
    {
        match f.as_str() {
            "double" | "epoch" => {}
            "iso8601" | "java_sql_timestamp" => t.push(("time_format".into(), "rfc3339".into())),
            "epoch_ms" => t.push(("time_format".into(), "epoch_millis".into())),
            other => c.untranslated(
                &format!("json_date_format {other}"),
                "epoch, epoch_millis or rfc3339",
            ),
        }
    }
    c.set(table, Value::Map(t));
}
