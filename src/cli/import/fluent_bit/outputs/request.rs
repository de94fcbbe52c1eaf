//! Outputs that send requests: http, opensearch, otlp, loki, splunk, s3;
//! their URLs, TLS, headers, credentials and compression.

use super::super::{boolean, size, Keys};
use crate::cli::import::model::{Component, Value};

pub fn http_time(keys: &mut Keys, c: &mut Component) {
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

pub fn headers(keys: &mut Keys, c: &mut Component) {
    for h in keys.take_all("header") {
        if let Some((k, v)) = h.trim().split_once(char::is_whitespace) {
            c.set_in("headers", k, v.trim());
        }
    }
}

pub fn basic_auth(keys: &mut Keys, c: &mut Component) {
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

pub fn compress(keys: &mut Keys, c: &mut Component) {
    if let Some(v) = keys.take("compress") {
        match v.to_ascii_lowercase().as_str() {
            "gzip" | "zstd" => c.set("compression", v.to_ascii_lowercase()),
            _ => c.untranslated(&format!("compress {v}"), "gzip or zstd"),
        }
    }
}

/// `http(s)://Host:Port/path` from Fluent Bit's `Host` and `Port`.
pub fn url(keys: &mut Keys, tls: bool, default_port: u16, path: &str) -> String {
    let host = keys.take("host").unwrap_or_else(|| "127.0.0.1".into());
    let port = keys
        .take("port")
        .unwrap_or_else(|| default_port.to_string());
    let scheme = if tls { "https" } else { "http" };
    let host = super::super::address(Some(host), Some(port), "", 0);
    if path.is_empty() || path == "/" {
        format!("{scheme}://{host}")
    } else {
        format!("{scheme}://{host}/{}", path.trim_start_matches('/'))
    }
}

/// Client TLS keys; true when `tls On`.
pub fn tls_client(keys: &mut Keys, c: &mut Component, table_when_on: bool) -> bool {
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

pub fn loki(keys: &mut Keys, c: &mut Component) {
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
            "key_value" => c.untranslated(
                "line_format key_value",
                "logferry's loki sink writes the line as json or as the record's message",
            ),
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

/// Fluent Bit's `es` and `opensearch` outputs.
pub fn opensearch(keys: &mut Keys, c: &mut Component) {
    let tls = tls_client(keys, c, false);
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
    basic_auth(keys, c);
    compress(keys, c);
    for k in ["suppress_type_name", "type"] {
        if let Some(v) = keys.take(k) {
            c.untranslated(
                &format!("{k} {v}"),
                "logferry sends no mapping type (OpenSearch 2 and Elasticsearch 8 have none)",
            );
        }
    }
}

pub fn s3(keys: &mut Keys, c: &mut Component) {
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
