//! `[OUTPUT]` sections as logferry sinks.

use std::collections::HashMap;

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
        "file" => file(keys, &mut c),
        "stdout" => {
            match keys
                .take("format")
                .map(|f| f.to_ascii_lowercase())
                .as_deref()
            {
                Some("json_lines") | Some("json_stream") | Some("json") => {
                    ndjson(keys, &mut c, "format", "date")
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
            tls_client(keys, &mut c, true);
            if let Some(r) = keys.take("retry_limit") {
                match retry_limit(&r) {
                    Some(n) if n > 0 => c.set("max_attempts", Value::Int(n)),
                    _ => c.untranslated(&format!("Retry_Limit {r}"), "a forward sink gives a chunk up after max_attempts (10); set it high for no limit"),
                }
            }
        }
        "http" => {
            let tls = tls_client(keys, &mut c, false);
            let uri = keys.take("uri").unwrap_or_else(|| "/".into());
            c.set("uri", url(keys, tls, 80, &uri));
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
            http_time(keys, &mut c);
            headers(keys, &mut c);
            basic_auth(keys, &mut c);
            compress(keys, &mut c);
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
        "es" | "elasticsearch" | "opensearch" => {
            let tls = tls_client(keys, &mut c, false);
            let path = keys.take("path").unwrap_or_default();
            c.set(
                "endpoints",
                Value::List(vec![Value::Str(url(keys, tls, 9200, &path))]),
            );
            let logstash = keys
                .take("logstash_format")
                .and_then(|v| boolean(&v))
                .unwrap_or(false);
            let index = keys.take("index").unwrap_or_else(|| "fluent-bit".into());
            if logstash {
                let prefix = keys
                    .take("logstash_prefix")
                    .unwrap_or_else(|| "logstash".into());
                let date = keys
                    .take("logstash_dateformat")
                    .unwrap_or_else(|| "%Y.%m.%d".into());
                c.set("index", format!("{prefix}-{date}"));
            } else {
                c.set("index", index);
            }
            if let Some(k) = keys.take("time_key") {
                c.set("time_key", k);
            }
            if let Some(v) = keys.take("generate_id").and_then(|v| boolean(&v)) {
                c.set("generate_id", Value::Bool(v));
            }
            if let Some(v) = keys.take("pipeline") {
                c.set("pipeline", v);
            }
            if let Some(v) = keys.take("write_operation") {
                match v.to_ascii_lowercase().as_str() {
                    "index" | "create" => c.set("action", v.to_ascii_lowercase()),
                    _ => c.untranslated(
                        &format!("Write_Operation {v}"),
                        "logferry indexes or creates documents",
                    ),
                }
            }
            if let Some(v) = keys.take("include_tag_key").and_then(|v| boolean(&v)) {
                if v {
                    c.set(
                        "tag_key",
                        keys.take("tag_key").unwrap_or_else(|| "flb-key".into()),
                    );
                }
            }
            basic_auth(keys, &mut c);
            compress(keys, &mut c);
            for k in ["suppress_type_name", "type"] {
                if let Some(v) = keys.take(k) {
                    c.untranslated(&format!("{k} {v}"), "logferry sends no mapping type (OpenSearch 2 and Elasticsearch 8 have none)");
                }
            }
        }
        "opentelemetry" => {
            let tls = tls_client(keys, &mut c, false);
            c.set("protocol", "http");
            c.set("endpoint", url(keys, tls, 4318, ""));
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
            headers(keys, &mut c);
            compress(keys, &mut c);
        }
        "loki" => loki(keys, &mut c),
        "splunk" => {
            let tls = tls_client(keys, &mut c, false);
            c.set("endpoint", url(keys, tls, 8088, ""));
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
            compress(keys, &mut c);
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
        "s3" => s3(keys, &mut c),
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

fn file(keys: &mut Keys, c: &mut Component) {
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
            if template.contains("{time}") {
                c.remark("{time} is RFC 3339 here, seconds.nanoseconds in Fluent Bit");
            }
            c.set(
                "format",
                Value::Map(vec![
                    ("type".into(), "template".into()),
                    ("template".into(), Value::Str(template)),
                ]),
            );
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
fn ndjson(keys: &mut Keys, c: &mut Component, table: &str, default_key: &str) {
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

fn http_time(keys: &mut Keys, c: &mut Component) {
    let key = keys.take("json_date_key").unwrap_or_else(|| "date".into());
    let key = if boolean(&key) == Some(false) {
        String::new()
    } else {
        key
    };
    c.set("time_key", key);
    if let Some(f) = keys
        .take("json_date_format")
        .map(|f| f.to_ascii_lowercase())
    {
        match f.as_str() {
            "double" | "epoch" => c.set("time_format", "epoch"),
            "iso8601" | "java_sql_timestamp" => c.set("time_format", "rfc3339"),
            "epoch_ms" => c.set("time_format", "epoch_millis"),
            other => c.untranslated(
                &format!("json_date_format {other}"),
                "epoch, epoch_millis or rfc3339",
            ),
        }
    }
}

fn headers(keys: &mut Keys, c: &mut Component) {
    for h in keys.take_all("header") {
        if let Some((k, v)) = h.trim().split_once(char::is_whitespace) {
            c.set_in("headers", k, v.trim());
        }
    }
}

fn basic_auth(keys: &mut Keys, c: &mut Component) {
    let user = keys.take("http_user");
    let password = keys.take("http_passwd");
    if let Some(user) = user {
        c.set(
            "auth",
            Value::Map(vec![
                ("strategy".into(), "basic".into()),
                ("user".into(), Value::Str(user)),
                ("password".into(), Value::Str(password.unwrap_or_default())),
            ]),
        );
    }
}

fn compress(keys: &mut Keys, c: &mut Component) {
    if let Some(v) = keys.take("compress") {
        match v.to_ascii_lowercase().as_str() {
            "gzip" | "zstd" => c.set("compression", v.to_ascii_lowercase()),
            _ => c.untranslated(&format!("compress {v}"), "gzip or zstd"),
        }
    }
}

/// `http(s)://Host:Port/path` from Fluent Bit's `Host` and `Port`.
fn url(keys: &mut Keys, tls: bool, default_port: u16, path: &str) -> String {
    let host = keys.take("host").unwrap_or_else(|| "127.0.0.1".into());
    let port = keys
        .take("port")
        .unwrap_or_else(|| default_port.to_string());
    let scheme = if tls { "https" } else { "http" };
    let host = super::address(Some(host), Some(port), "", 0);
    if path.is_empty() || path == "/" {
        format!("{scheme}://{host}")
    } else {
        format!("{scheme}://{host}/{}", path.trim_start_matches('/'))
    }
}

/// Client TLS keys; true when `tls On`.
fn tls_client(keys: &mut Keys, c: &mut Component, table_when_on: bool) -> bool {
    let on = keys.take("tls").and_then(|v| boolean(&v)).unwrap_or(false);
    let mut t: Vec<(String, Value)> = Vec::new();
    if let Some(v) = keys.take("tls.verify").and_then(|v| boolean(&v)) {
        if !v {
            t.push(("insecure_skip_verify".into(), Value::Bool(true)));
        }
    }
    for (fb, ours) in [
        ("tls.ca_file", "ca_file"),
        ("tls.crt_file", "cert_file"),
        ("tls.key_file", "key_file"),
        ("tls.vhost", "server_name"),
    ] {
        if let Some(v) = keys.take(fb) {
            t.push((ours.into(), Value::Str(v)));
        }
    }
    if on && (table_when_on || !t.is_empty()) {
        c.set("tls", Value::Map(t));
    }
    on
}

fn loki(keys: &mut Keys, c: &mut Component) {
    let tls = tls_client(keys, c, false);
    let uri = keys.take("uri");
    c.set("endpoint", url(keys, tls, 3100, ""));
    if let Some(u) = uri {
        c.set("path", u);
    }
    let mut labels: Vec<(String, Value)> = Vec::new();
    if let Some(l) = keys.take("labels") {
        for item in l.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item.split_once('=') {
                Some((k, v)) => {
                    let v = v.trim();
                    let v = match v.strip_prefix('$') {
                        Some(f) if !f.contains('[') => format!("{{{f}}}"),
                        _ => v.to_string(),
                    };
                    labels.push((k.trim().to_string(), Value::Str(v)));
                }
                None => match item.strip_prefix('$') {
                    Some(f) if !f.contains('[') => {
                        labels.push((f.to_string(), Value::Str(format!("{{{f}}}"))))
                    }
                    _ => c.untranslated(
                        &format!("labels {item}"),
                        "a label from a nested field has no logferry template",
                    ),
                },
            }
        }
    }
    if let Some(l) = keys.take("label_keys") {
        for item in l.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item.strip_prefix('$') {
                Some(f) if !f.contains('[') => {
                    labels.push((f.to_string(), Value::Str(format!("{{{f}}}"))))
                }
                _ => c.untranslated(
                    &format!("label_keys {item}"),
                    "a label from a nested field has no logferry template",
                ),
            }
        }
    }
    if labels.is_empty() {
        labels.push(("job".into(), "fluent-bit".into()));
    }
    c.set("labels", Value::Map(labels));
    if let Some(v) = keys.take("remove_keys") {
        c.untranslated(
            &format!("remove_keys {v}"),
            "use a modify filter's remove before the sink, or remove_label_fields",
        );
    }
    if let Some(v) = keys.take("line_format") {
        match v.to_ascii_lowercase().as_str() {
            "json" => c.set("line_format", "json"),
            "key_value" => c.set("line_format", "logfmt"),
            other => c.untranslated(&format!("line_format {other}"), "json or key_value"),
        }
    }
    if let Some(t) = keys.take("tenant_id") {
        c.set("tenant_id", t);
    }
    basic_auth(keys, c);
    if let Some(v) = keys.take("auto_kubernetes_labels") {
        c.untranslated(
            &format!("auto_kubernetes_labels {v}"),
            "name the labels: labels = { app = \"{kubernetes.labels.app}\" }",
        );
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

fn s3(keys: &mut Keys, c: &mut Component) {
    c.set("bucket", keys.take("bucket").unwrap_or_default());
    c.set(
        "region",
        keys.take("region").unwrap_or_else(|| "us-east-1".into()),
    );
    if let Some(e) = keys.take("endpoint") {
        c.set("endpoint", e);
    }
    let format = keys
        .take("s3_key_format")
        .unwrap_or_else(|| "/fluent-bit-logs/$TAG/%Y/%m/%d/%H/%M/%S".into());
    let mut key = format
        .trim_start_matches('/')
        .replace("$TAG[", "${tag[")
        .replace("$UUID", "{unique}")
        .replace("$INDEX", "{unique}");
    // `$TAG[N]` became `${tag[N]`: close it
    while let Some(at) = key
        .find("${tag[")
        .and_then(|i| key[i..].find(']').map(|j| i + j))
    {
        if key[at + 1..].starts_with('}') {
            break;
        }
        key.insert(at + 1, '}');
    }
    let key = key.replace("$TAG", "${tag}");
    let key = if key.contains("{unique}") {
        key
    } else {
        format!("{key}-{{unique}}")
    };
    c.set("key", key);
    c.set("encoding", "ndjson");
    c.set(
        "time_key",
        keys.take("json_date_key").unwrap_or_else(|| "date".into()),
    );
    match keys
        .take("json_date_format")
        .map(|f| f.to_ascii_lowercase())
        .as_deref()
    {
        Some("double") | Some("epoch") => c.set("time_format", "epoch"),
        Some("epoch_ms") => c.set("time_format", "epoch_millis"),
        _ => c.set("time_format", "rfc3339"),
    }
    if let Some(v) = keys.take("compression") {
        match v.to_ascii_lowercase().as_str() {
            "gzip" | "zstd" => c.set("compression", v.to_ascii_lowercase()),
            _ => c.untranslated(&format!("compression {v}"), "gzip or zstd"),
        }
    }
    if let Some(v) = keys.take("total_file_size").and_then(|v| size(&v)) {
        c.set("max_object_bytes", v);
    }
    if let Some(v) = keys.take("upload_timeout") {
        c.set("max_object_age", v);
    }
    if let Some(v) = keys.take("upload_chunk_size").and_then(|v| size(&v)) {
        c.set("multipart_part_bytes", v);
    }
    if let Some(v) = keys.take("store_dir") {
        c.set("state_dir", v);
    }
}
