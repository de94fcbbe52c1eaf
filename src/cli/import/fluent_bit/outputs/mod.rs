//! `[OUTPUT]` sections as logferry sinks.

use std::collections::HashMap;

mod file;
mod request;

use super::service::Settings;
use super::{boolean, list, route, size, Head, Keys, Section};
use crate::cli::import::model::{Component, Imported, Kind, Value};

/// Sinks with a `retry` table (`max_attempts` from `Retry_Limit`).
const RETRY_TABLE: &[&str] = &[
    "file",
    "stdout",
    "http",
    "loki",
    "opensearch",
    "otlp",
    "s3",
    "splunk_hec",
];

pub fn translate(
    s: &Section,
    settings: &Settings,
    counters: &mut HashMap<String, usize>,
    imported: &mut Imported,
) {
    let mut head = Head::new(s, Kind::Sink, counters, imported);
    let plugin = head.plugin.clone();
    let name = head.name.clone();
    let keys = &mut head.keys;
    let ty = match plugin.as_str() {
        "file" | "forward" | "http" | "kafka" | "opensearch" | "loki" | "syslog" | "stdout"
        | "null" | "counter" | "s3" => plugin.as_str(),
        "es" | "elasticsearch" => "opensearch",
        "opentelemetry" => "otlp",
        "splunk" => "splunk_hec",
        other => other,
    };
    let mut c = Component::new(Kind::Sink, &name, ty, s.origin());
    route(keys, &mut c);
    match plugin.as_str() {
        "file" => file::file(keys, &mut c),
        "stdout" => {
            match keys
                .take("format")
                .map(|f| f.to_ascii_lowercase())
                .as_deref()
            {
                Some("json_lines") | Some("json_stream") | Some("json") => {
                    file::ndjson(keys, &mut c, "format", "date")
                }
                _ => {
                    c.set("format", "json");
                    c.remark("Fluent Bit prints msgpack-style [tag] [time, {record}] lines; logferry's json format writes {time, tag, record}");
                }
            }
        }
        "forward" => {
            let host = keys.take("host").unwrap_or_else(|| "127.0.0.1".into());
            let port = keys.take("port").unwrap_or_else(|| "24224".into());
            c.set(
                "servers",
                Value::List(vec![Value::Map(vec![(
                    "address".into(),
                    Value::Str(super::address(Some(host), Some(port), "", 0)),
                )])]),
            );
            for (fb, ours) in [
                ("shared_key", "shared_key"),
                ("self_hostname", "self_hostname"),
                ("username", "username"),
                ("password", "password"),
            ] {
                if let Some(v) = keys.take(fb) {
                    c.set(ours, v);
                }
            }
            if let Some(v) = keys.take("require_ack_response").and_then(|v| boolean(&v)) {
                c.set("require_ack", Value::Bool(v));
            }
            if let Some(v) = keys.take("compress") {
                if v.eq_ignore_ascii_case("gzip") {
                    c.set("compress", "gzip");
                }
            }
            request::tls_client(keys, &mut c, true);
            if let Some(r) = keys.take("retry_limit") {
                match retry_limit(&r) {
                    Some(n) if n > 0 => c.set("max_attempts", Value::Int(n)),
                    _ => c.untranslated(&format!("Retry_Limit {r}"), "a forward sink gives a chunk up after max_attempts (10); set it high for no limit"),
                }
            }
        }
        "http" => {
            let tls = request::tls_client(keys, &mut c, false);
            let uri = keys.take("uri").unwrap_or_else(|| "/".into());
            c.set("uri", request::url(keys, tls, 80, &uri));
            let format = keys
                .take("format")
                .unwrap_or_else(|| "msgpack".into())
                .to_ascii_lowercase();
            match format.as_str() {
                "json_lines" | "json_stream" => c.set("encoding", "ndjson"),
                "json" => c.set("encoding", "json"),
                "msgpack" => c.set("encoding", "msgpack"),
                other => c.untranslated(
                    &format!("Format {other}"),
                    "logferry's http sink writes ndjson, json, msgpack or text",
                ),
            }
            request::http_time(keys, &mut c);
            request::headers(keys, &mut c);
            request::basic_auth(keys, &mut c);
            request::compress(keys, &mut c);
        }
        "kafka" => {
            let brokers = list(&keys.take("brokers").unwrap_or_default());
            c.set(
                "brokers",
                Value::List(brokers.into_iter().map(Value::Str).collect()),
            );
            let topics = list(&keys.take("topics").unwrap_or_else(|| "fluent-bit".into()));
            c.set("topic", topics.first().cloned().unwrap_or_default());
            if topics.len() > 1 {
                c.untranslated(&format!("Topics {}", topics.join(",")), format!("a kafka sink writes one topic pattern: {} (with Topic_Key, use ${{record.FIELD}} in topic)", topics[0]));
            }
            match keys
                .take("format")
                .unwrap_or_else(|| "json".into())
                .to_ascii_lowercase()
                .as_str()
            {
                "json" => {
                    let key = keys
                        .take("timestamp_key")
                        .unwrap_or_else(|| "@timestamp".into());
                    let fmt = keys
                        .take("timestamp_format")
                        .unwrap_or_default()
                        .to_ascii_lowercase();
                    let mut t = vec![
                        ("type".into(), Value::Str("ndjson".into())),
                        ("time_key".into(), Value::Str(key)),
                    ];
                    if fmt.starts_with("iso8601") {
                        t.push(("time_format".into(), "rfc3339".into()));
                    }
                    c.set("format", Value::Map(t));
                }
                "msgpack" => c.set("format", "msgpack"),
                "raw" => c.set("format", "raw"),
                other => c.untranslated(
                    &format!("Format {other}"),
                    "logferry's kafka sink writes raw, json, ndjson or msgpack",
                ),
            }
            if let Some(k) = keys.take("message_key") {
                c.set("key_field", k);
            }
            super::inputs::librdkafka_options(keys, &mut c);
        }
        "es" | "elasticsearch" | "opensearch" => request::opensearch(keys, &mut c),
        "opentelemetry" => {
            let tls = request::tls_client(keys, &mut c, false);
            c.set("protocol", "http");
            c.set("endpoint", request::url(keys, tls, 4318, ""));
            if let Some(u) = keys.take("logs_uri") {
                if u != "/v1/logs" {
                    c.untranslated(
                        &format!("Logs_uri {u}"),
                        "logferry posts to /v1/logs under the endpoint",
                    );
                }
            }
            if let Some(k) = keys.take("logs_body_key") {
                c.set(
                    "body_keys",
                    Value::List(vec![Value::Str(super::filters::field(&k))]),
                );
            }
            request::headers(keys, &mut c);
            if let Some(v) = keys.take("compress") {
                if v.eq_ignore_ascii_case("gzip") {
                    c.set("compression", "gzip");
                } else {
                    c.untranslated(
                        &format!("compress {v}"),
                        "the otlp sink compresses with gzip only (receivers need not read zstd)",
                    );
                }
            }
        }
        "loki" => request::loki(keys, &mut c),
        "splunk" => {
            let tls = request::tls_client(keys, &mut c, false);
            c.set("endpoint", request::url(keys, tls, 8088, ""));
            c.set("token", keys.take("splunk_token").unwrap_or_default());
            for (fb, ours) in [
                ("event_index", "index"),
                ("event_sourcetype", "sourcetype"),
                ("event_source", "source"),
                ("event_host", "host"),
            ] {
                if let Some(v) = keys.take(fb) {
                    c.set(ours, v);
                }
            }
            if let Some(v) = keys.take("splunk_send_raw").and_then(|v| boolean(&v)) {
                if v {
                    c.set("endpoint_target", "raw");
                }
            }
            request::compress(keys, &mut c);
        }
        "syslog" => {
            let mode = keys
                .take("mode")
                .unwrap_or_else(|| "udp".into())
                .to_ascii_lowercase();
            c.set(
                "address",
                super::address(keys.take("host"), keys.take("port"), "127.0.0.1", 514),
            );
            match mode.as_str() {
                "tcp" | "udp" => c.set("mode", mode.as_str()),
                "tls" => {
                    c.set("mode", "tcp");
                    c.set("tls", Value::Map(Vec::new()));
                }
                other => c.untranslated(&format!("Mode {other}"), "tcp, udp or tls"),
            }
            if let Some(f) = keys.take("syslog_format") {
                c.set(
                    "rfc",
                    f.to_ascii_lowercase().trim_start_matches("rfc").to_string(),
                );
            }
            for (fb, ours) in [
                ("syslog_severity_key", "severity"),
                ("syslog_facility_key", "facility"),
                ("syslog_hostname_key", "hostname"),
                ("syslog_appname_key", "app_name"),
                ("syslog_msgid_key", "msg_id"),
            ] {
                if let Some(k) = keys.take(fb) {
                    c.set(ours, format!("{{{}}}", super::filters::field(&k)));
                }
            }
            if let Some(k) = keys.take("syslog_message_key") {
                if super::filters::field(&k) != "message" {
                    c.untranslated(
                        &format!("syslog_message_key {k}"),
                        "logferry's message is the record's message field (or log)",
                    );
                }
            }
        }
        "s3" => request::s3(keys, &mut c),
        "null" => {}
        "counter" => {}
        other => c.comment_out(format!("logferry has no {other} output")),
    }
    if RETRY_TABLE.contains(&ty) {
        if let Some(r) = keys.take("retry_limit") {
            match retry_limit(&r) {
                Some(n) => c.set_in("retry", "max_attempts", Value::Int(n)),
                None => c.untranslated(&format!("Retry_Limit {r}"), "a number, no_limits or False"),
            }
        }
    }
    disk_buffer(keys, &mut c, settings);
    head.finish(c, imported);
}

/// Fluent Bit's `Retry_Limit` as attempts (0: no limit). Fluent Bit counts
/// retries after the first try; logferry counts failed attempts.
fn retry_limit(v: &str) -> Option<i64> {
    match v.trim().to_ascii_lowercase().as_str() {
        "no_retries" => Some(1),
        "no_limits" | "false" => Some(0),
        n => n.parse::<i64>().ok().map(|n| n + 1),
    }
}

/// `storage.total_limit_size` and the inputs' `storage.type filesystem`
/// as the sink's disk buffer under `storage.path`.
fn disk_buffer(keys: &mut Keys, c: &mut Component, settings: &Settings) {
    let limit = keys.take("storage.total_limit_size");
    let Some(dir) = &settings.storage_path else {
        if let Some(l) = limit {
            c.untranslated(
                &format!("storage.total_limit_size {l}"),
                "no storage.path in [SERVICE]: no disk buffer",
            );
        }
        return;
    };
    let Some(Value::Str(pattern)) = c.get("match").cloned() else {
        return;
    };
    let Ok(pattern) = crate::router::TagPattern::new(&pattern) else {
        return;
    };
    // a tail tag's `*` becomes the file's path, dots and all
    let fed = settings
        .filesystem_tags
        .iter()
        .any(|t| pattern.matches(&t.replace('*', "var.log.file")));
    if !fed {
        if let Some(l) = limit {
            c.untranslated(
                &format!("storage.total_limit_size {l}"),
                "no input with storage.type filesystem reaches it",
            );
        }
        return;
    }
    let max = limit
        .as_deref()
        .and_then(size)
        .unwrap_or_else(|| "1GiB".into());
    c.set(
        "buffer",
        Value::Map(vec![
            ("type".into(), "disk".into()),
            (
                "dir".into(),
                Value::Str(format!("{}/{}", dir.trim_end_matches('/'), c.name)),
            ),
            ("max_bytes".into(), Value::Str(max)),
        ]),
    );
    c.remark("storage.type filesystem: a disk buffer under storage.path keeps what is not delivered across restarts");
}
