//! Vector's sinks as logferry's: the `encoding` codec as the sink's
//! format, `buffer`, `batch` and `request` as the sink's queue, batch and
//! retry keys. `match` is set by the wiring.

use super::super::model::{Component, Kind, Value};
use super::graph::Node;
use super::keys::{self, Keys};
use super::wiring::tag_of;
use super::Settings;

const LEFT: &str = "no logferry equivalent";

/// The logferry sink type of a Vector sink type, if there is one.
fn target(type_: &str) -> Option<&'static str> {
    Some(match type_ {
        "file" => "file",
        "console" => "stdout",
        "blackhole" => "null",
        "kafka" => "kafka",
        "elasticsearch" => "opensearch",
        "http" => "http",
        "aws_s3" => "s3",
        "opentelemetry" => "otlp",
        "loki" => "loki",
        "splunk_hec_logs" | "splunk_hec" => "splunk_hec",
        _ => return None,
    })
}

/// Whether logferry runs `node` (others are written commented out).
pub fn supported(node: &Node) -> bool {
    target(&node.type_).is_some() && template_free_path(node)
}

/// A file sink's path with a `{{ field }}` template cannot be written:
/// logferry's paths take the tag and the time only.
fn template_free_path(node: &Node) -> bool {
    node.type_ != "file"
        || !node
            .keys
            .get("path")
            .and_then(|p| p.as_str())
            .is_some_and(|p| p.contains("{{"))
}

pub fn translate(node: &Node, settings: &Settings) -> Component {
    let name = tag_of(&node.id);
    let Some(t) = target(&node.type_).filter(|_| supported(node)) else {
        let mut c = Component::new(Kind::Sink, &name, &node.type_, node.origin());
        for (key, v) in node.keys.iter().filter(|(key, _)| *key != "type") {
            let v = keys::value(v, &mut c);
            c.set(key, v);
        }
        c.comment_out(match node.type_.as_str() {
            "socket" => "logferry has no raw TCP/UDP line sink (its syslog sink writes syslog messages, forward Fluentd's protocol)".to_string(),
            "file" => "the path takes record fields ({{ … }}); logferry's file paths take the tag (${tag}) and the time".to_string(),
            t => format!("logferry has no {t} sink"),
        });
        return c;
    };
    let mut c = Component::new(Kind::Sink, &name, t, node.origin());
    let mut k = Keys::new(node.keys.clone(), "");
    k.skip("type");
    k.skip("inputs");
    let http_like = matches!(t, "http" | "opensearch" | "otlp" | "loki" | "splunk_hec");
    match t {
        "file" => {
            if let Some(p) = k.text("path") {
                keys::set_str(&mut c, "path", &p);
                if p.contains('%') {
                    c.remark("strftime sequences in the path take the local time of the write (Vector: the record's timestamp)");
                }
            }
            encoding(&mut k, &mut c, "format");
            k.refuse(
                "idle_timeout_secs",
                "logferry closes a file unused for 60 s",
                &mut c,
            );
            k.refuse(
                "compression",
                "logferry's file sink writes plain text",
                &mut c,
            );
        }
        "stdout" => {
            encoding(&mut k, &mut c, "format");
            if matches!(k.text("target").as_deref(), Some("stderr")) {
                c.untranslated(
                    "target = \"stderr\"",
                    "logferry's stdout sink writes standard output",
                );
            }
        }
        "null" => {
            k.refuse(
                "print_interval_secs",
                "logferry counts what it drops in logferry_sink_records_total",
                &mut c,
            );
            k.refuse("rate", LEFT, &mut c);
        }
        "kafka" => {
            if let Some(v) = k.text("bootstrap_servers") {
                let brokers: Vec<Value> = v
                    .split(',')
                    .map(|b| Value::from(keys::string(b.trim(), &mut c)))
                    .collect();
                c.set("brokers", Value::List(brokers));
            }
            if let Some(v) = k.text("topic") {
                let topic = templates(&v, "${record.", "}");
                keys::set_str(&mut c, "topic", &topic);
            }
            if let Some(v) = k.text("key_field") {
                c.set("key_field", v.trim_start_matches('.').to_string());
            }
            if let Some(v) = k.text("compression") {
                c.set("compression", v);
            }
            encoding(&mut k, &mut c, "format");
            if let Some(v) = k.take("librdkafka_options") {
                let v = keys::value(&v, &mut c);
                c.set("librdkafka_options", v);
            }
            keys::tls(&mut k, &mut c, false);
        }
        "opensearch" => {
            let endpoints = k
                .list("endpoints")
                .or_else(|| k.list("endpoint"))
                .unwrap_or_default();
            let endpoints = endpoints
                .iter()
                .map(|e| {
                    let e = if e.contains("://") {
                        e.clone()
                    } else {
                        format!("http://{e}")
                    };
                    Value::from(keys::string(&e, &mut c))
                })
                .collect();
            c.set("endpoints", Value::List(endpoints));
            if let Some(mut b) = k.table("bulk") {
                if let Some(i) = b.text("index") {
                    if i.contains("{{") {
                        c.untranslated(&format!("bulk.index = {i:?}"), "logferry's index takes the tag (${tag}) and the time, not record fields");
                    } else {
                        keys::set_str(&mut c, "index", &i);
                    }
                }
                if let Some(a) = b.text("action") {
                    c.set("action", a);
                }
                b.finish(&mut c, LEFT);
            } else {
                c.set("index", "vector-%Y.%m.%d");
            }
            for (from, to) in [("pipeline", "pipeline"), ("id_key", "id_key")] {
                if let Some(v) = k.text(from) {
                    c.set(to, v);
                }
            }
            c.set("time_key", "timestamp");
            c.remark("the record's timestamp field is sent as it is (Vector's; logferry's default is @timestamp)");
            k.refuse(
                "doc_type",
                "types are gone from Elasticsearch 7 and OpenSearch",
                &mut c,
            );
            if k.peek_text("mode").as_deref() == Some("bulk") {
                k.skip("mode");
            }
            k.refuse(
                "mode",
                "logferry indexes documents (action = \"create\" writes to a data stream)",
                &mut c,
            );
            k.refuse(
                "api_version",
                "logferry speaks the bulk API of Elasticsearch 7+ and OpenSearch",
                &mut c,
            );
            k.refuse("suppress_type_name", LEFT, &mut c);
        }
        "http" => {
            if let Some(v) = k.text("uri") {
                keys::set_str(&mut c, "uri", &v);
            }
            if let Some(v) = k.text("method") {
                c.set("method", v.to_ascii_lowercase());
            }
            encoding(&mut k, &mut c, "encoding");
            if let Some(v) = k.take("headers") {
                let v = keys::value(&v, &mut c);
                c.set("headers", v);
            }
        }
        "s3" => {
            for key in ["bucket", "region", "endpoint"] {
                if let Some(v) = k.text(key) {
                    keys::set_str(&mut c, key, &v);
                }
            }
            let prefix = k.text("key_prefix").unwrap_or_else(|| "date=%F".into());
            let ext = match node.keys.get("compression").and_then(|v| v.as_str()) {
                Some("gzip") | None => ".log.gz",
                Some("zstd") => ".log.zst",
                _ => ".log",
            };
            keys::set_str(&mut c, "key", &format!("{prefix}{{unique}}{ext}"));
            if let Some(v) = k.text("compression") {
                c.set("compression", v);
            }
            encoding(&mut k, &mut c, "encoding");
            for key in [
                "filename_time_format",
                "filename_append_uuid",
                "filename_extension",
            ] {
                k.refuse(
                    key,
                    "logferry names objects {unique}: the time and random characters",
                    &mut c,
                );
            }
            for key in [
                "acl",
                "storage_class",
                "server_side_encryption",
                "ssekms_key_id",
                "tags",
                "content_type",
                "content_encoding",
                "grant_full_control",
                "grant_read",
                "grant_read_acp",
                "grant_write_acp",
            ] {
                k.refuse(key, LEFT, &mut c);
            }
            k.refuse(
                "auth",
                "logferry takes AWS credentials from the environment, credentials_file or profile",
                &mut c,
            );
        }
        "otlp" => {
            if let Some(mut p) = k.table("protocol") {
                if let Some(uri) = p.text("uri") {
                    let base = uri
                        .trim_end_matches('/')
                        .trim_end_matches("/v1/logs")
                        .to_string();
                    keys::set_str(&mut c, "endpoint", &base);
                }
                p.skip("type");
                if let Some(mut e) = p.table("encoding") {
                    e.skip("codec");
                    e.finish(&mut c, LEFT);
                }
                for key in ["compression", "batch", "request", "auth", "tls", "headers"] {
                    if let Some(v) = p.take(key) {
                        k_insert(&mut k, key, v);
                    }
                }
                p.finish(&mut c, LEFT);
            }
        }
        "loki" => {
            if let Some(v) = k.text("endpoint") {
                keys::set_str(&mut c, "endpoint", &v);
            }
            if let Some(mut l) = k.table("labels") {
                let mut labels = Vec::new();
                for key in l.keys() {
                    if let Some(v) = l.text(&key) {
                        labels.push((key.clone(), Value::from(templates(&v, "{", "}"))));
                    }
                }
                l.finish(&mut c, "logferry's labels are names, not maps of labels");
                c.set("labels", Value::Map(labels));
            }
            if let Some(v) = k.text("tenant_id") {
                keys::set_str(&mut c, "tenant_id", &v);
            }
            if let Some(v) = k.bool("remove_label_fields") {
                c.set("remove_label_fields", Value::Bool(v));
            }
            if let Some(mut e) = k.table("encoding") {
                match e.text("codec").as_deref() {
                    Some("json") | None => c.set("line_format", "json"),
                    Some(other) => c.untranslated(
                        &format!("encoding.codec = {other:?}"),
                        "logferry's loki lines are JSON records",
                    ),
                }
                e.finish(&mut c, LEFT);
            }
            if let Some(v) = k.text("compression") {
                if v == "gzip" {
                    c.set("encoding", "json");
                    c.set("compression", "gzip");
                } else if v != "snappy" {
                    c.untranslated(
                        &format!("compression = {v:?}"),
                        "protobuf pushes are snappy-compressed",
                    );
                }
            }
            k.refuse(
                "out_of_order_action",
                "Loki accepts out-of-order entries since 2.4",
                &mut c,
            );
            k.refuse("remove_timestamp", LEFT, &mut c);
        }
        "splunk_hec" => {
            if let Some(v) = k.text("endpoint") {
                keys::set_str(&mut c, "endpoint", &v);
            }
            if let Some(v) = k.text("default_token") {
                keys::set_str(&mut c, "token", &v);
            }
            if let Some(v) = k.text("endpoint_target") {
                c.set("endpoint_target", v);
            }
            for key in [
                "index",
                "sourcetype",
                "source",
                "host_key",
                "indexed_fields",
                "timestamp_key",
            ] {
                k.refuse(key, "logferry takes HEC metadata from the tag and the record (see its splunk_hec sink)", &mut c);
            }
            k.skip("encoding");
        }
        _ => {}
    }
    if http_like && t != "loki" {
        match k.text("compression").as_deref() {
            Some("none") | None => {}
            Some(v @ ("gzip" | "zstd")) if t == "http" => c.set("compression", v),
            Some("gzip") => c.set("compression", "gzip"),
            Some(v) => c.untranslated(
                &format!("compression = {v:?}"),
                "logferry compresses with gzip (or zstd for http)",
            ),
        }
    }
    if http_like {
        if let Some(mut a) = k.table("auth") {
            let strategy = a.text("strategy").unwrap_or_default();
            c.set_in("auth", "strategy", strategy.as_str());
            for key in ["user", "password", "token"] {
                if let Some(v) = a.text(key) {
                    let v = keys::string(&v, &mut c);
                    c.set_in("auth", key, v);
                }
            }
            a.finish(&mut c, LEFT);
        }
        if t != "splunk_hec" {
            keys::tls(&mut k, &mut c, false);
        }
    }
    batch_and_request(&mut k, &mut c, http_like);
    buffer(&mut k, &mut c, settings, &node.id);
    if let Some(mut a) = k.table("acknowledgements") {
        a.skip("enabled");
        if t == "splunk_hec" {
            if let Some(b) = a.bool("indexer_acknowledgements_enabled") {
                c.set("acknowledgements", Value::Bool(b));
            }
        }
        a.finish(&mut c, LEFT);
    } else {
        k.skip("acknowledgements");
    }
    if let Some(mut h) = k.table("healthcheck") {
        h.skip("enabled");
        h.finish(&mut c, LEFT);
    }
    k.finish(&mut c, LEFT);
    c
}

/// Puts a key back (for keys Vector nests under `protocol`).
fn k_insert(k: &mut Keys, key: &str, v: serde_json::Value) {
    let mut m = serde_json::Map::new();
    m.insert(key.to_string(), v);
    let mut one = Keys::new(m, "");
    if let Some(v) = one.take(key) {
        k.put(key, v);
    }
}

/// Vector's `{{ field }}` templates as `open field close`.
fn templates(s: &str, open: &str, close: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        match after.find("}}") {
            Some(end) => {
                let field = after[..end].trim().trim_start_matches('.');
                out.push_str(open);
                out.push_str(field);
                out.push_str(close);
                rest = &after[end + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `encoding.codec` as the sink's `key` (`format` or `encoding`).
fn encoding(k: &mut Keys, c: &mut Component, key: &str) {
    let Some(mut e) = k.table("encoding") else {
        return;
    };
    let codec = e.text("codec").unwrap_or_default();
    // an http body is a JSON array unless framed by newlines
    let framed = !matches!(c.get("type"), Some(Value::Str(t)) if t == "http")
        || k.peek("framing", "method").as_deref() == Some("newline_delimited");
    match (codec.as_str(), key) {
        ("json" | "ndjson" | "native_json", "format") => {
            c.set_in("format", "type", "ndjson");
            c.set_in("format", "time_key", "");
        }
        ("json", "encoding") if !framed => {
            c.set("encoding", "json");
            c.set("time_key", "");
        }
        ("json" | "ndjson", "encoding") => {
            c.set("encoding", "ndjson");
            c.set("time_key", "");
        }
        ("text" | "raw_message", "format") => c.set("format", "raw"),
        ("text" | "raw_message", "encoding") => c.set("encoding", "text"),
        ("", _) => {}
        (other, _) => c.untranslated(
            &format!("encoding.codec = {other:?}"),
            "logferry writes JSON or text lines",
        ),
    }
    if let Some(tf) = e.text("timestamp_format") {
        c.untranslated(
            &format!("encoding.timestamp_format = {tf:?}"),
            "timestamps in records are written as RFC 3339; convert with a remap (to_unix_timestamp)",
        );
    }
    for key in ["except_fields", "only_fields"] {
        e.refuse(
            key,
            "drop the fields with a remap filter (del, or . = { … })",
            c,
        );
    }
    e.finish(c, LEFT);
    if let Some(mut f) = k.table("framing") {
        match f.text("method").as_deref() {
            Some("newline_delimited") | None => {}
            Some(other) => c.untranslated(
                &format!("framing.method = {other:?}"),
                "logferry writes one record a line",
            ),
        }
        f.finish(c, LEFT);
    }
}

/// `batch` and `request` as the sink's own keys where it has them.
fn batch_and_request(k: &mut Keys, c: &mut Component, http_like: bool) {
    let s3 = matches!(c.get("type"), Some(Value::Str(t)) if t == "s3");
    if s3 {
        // an S3 object is Vector's batch
        if let Some(mut b) = k.table("batch") {
            if let Some(n) = b.int("max_bytes").or_else(|| b.int("max_size")) {
                c.set("max_object_bytes", Value::Int(n));
            }
            if let Some(d) = b.seconds("timeout_secs") {
                c.set("max_object_age", d);
            }
            b.finish(c, "logferry's s3 objects are bounded by bytes and age");
        }
    }
    if let Some(mut b) = k.table("batch") {
        if http_like {
            if let Some(n) = b.int("max_events") {
                c.set("batch_records", Value::Int(n));
            }
            if let Some(n) = b.int("max_bytes").or_else(|| b.int("max_size")) {
                c.set("batch_bytes", Value::Int(n));
            }
            if let Some(d) = b.seconds("timeout_secs") {
                c.set("linger", d);
            }
        }
        b.finish(
            c,
            "this logferry sink batches by its own rules (see its keys)",
        );
    }
    if let Some(mut r) = k.table("request") {
        if http_like {
            if let Some(d) = r.seconds("timeout_secs") {
                c.set("request_timeout", d);
            }
            if let Some(n) = r.int("concurrency") {
                c.set("concurrency", Value::Int(n));
            }
            if let Some(v) = r.take("headers") {
                let v = keys::value(&v, c);
                c.set("headers", v);
            }
        }
        let retries = matches!(c.get("type"), Some(Value::Str(t)) if matches!(t.as_str(), "http" | "file" | "stdout"));
        if retries {
            if let Some(n) = r.int("retry_attempts") {
                c.set_in("retry", "max_attempts", Value::Int(n));
            }
            if let Some(d) = r.seconds("retry_initial_backoff_secs") {
                c.set_in("retry", "initial", d);
            }
            if let Some(d) = r.seconds("retry_max_duration_secs") {
                c.set_in("retry", "max", d);
            }
        }
        r.finish(c, LEFT);
    }
}

/// Vector's `buffer`: a disk buffer under `data_dir`, its size, what to
/// do when full.
fn buffer(k: &mut Keys, c: &mut Component, settings: &Settings, id: &str) {
    let Some(mut b) = k.table("buffer") else {
        return;
    };
    if b.text("type").as_deref() == Some("disk") {
        c.set_in("buffer", "type", "disk");
        let dir = settings
            .data_dir
            .clone()
            .unwrap_or_else(|| "/var/lib/vector".into());
        let dir = format!("{}/buffer/{}", dir.trim_end_matches('/'), tag_of(id));
        let dir = keys::string(&dir, c);
        c.set_in("buffer", "dir", dir);
    }
    if let Some(n) = b.int("max_size") {
        c.set_in("buffer", "max_bytes", Value::Int(n));
    }
    match b.text("when_full").as_deref() {
        Some("block") => c.set_in("buffer", "when_full", "block"),
        Some("drop_newest") => c.set_in("buffer", "when_full", "drop_newest"),
        Some(other) => c.untranslated(
            &format!("buffer.when_full = {other:?}"),
            "logferry blocks or drops the newest",
        ),
        None => {}
    }
    b.refuse(
        "max_events",
        "logferry bounds its queues in bytes (max_bytes)",
        c,
    );
    b.finish(c, LEFT);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_templates() {
        assert_eq!(
            templates("logs-{{ service }}", "${record.", "}"),
            "logs-${record.service}"
        );
        assert_eq!(templates("{{ .app }}", "{", "}"), "{app}");
    }
}
