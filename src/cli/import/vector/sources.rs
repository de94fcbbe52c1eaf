//! Vector's sources as logferry's: each tags its records with its id (or,
//! where the client tags them, the wiring does), and a `remap` beside it
//! adds the fields Vector's source adds (`source_type`, `timestamp`, and
//! for files `file` and `host`).

use super::super::model::vrl_str;
use super::super::model::{Component, Kind, Value};
use super::graph::Node;
use super::keys::{self, Keys};
use super::wiring::tag_of;
use super::Settings;

/// A translated source.
#[derive(Clone)]
pub struct Source {
    pub component: Component,
    /// It tags its records with its id (forward and HTTP clients tag theirs).
    pub tagged: bool,
    /// A VRL program adding the fields Vector's source adds.
    pub fields: Option<String>,
}

const LEFT: &str = "no logferry equivalent";

pub fn translate(node: &Node, settings: &Settings) -> Source {
    let mut k = Keys::new(node.keys.clone(), "");
    k.skip("type");
    let target = match node.type_.as_str() {
        "file" => "tail",
        "kubernetes_logs" => "kubernetes",
        "socket" | "syslog" => match node.keys.get("mode").and_then(|m| m.as_str()) {
            Some("tcp") | None => "tcp",
            Some("udp") => "udp",
            Some(_) => "",
        },
        "http_server" | "http" => "http",
        "fluent" => "forward",
        "kafka" => "kafka",
        "opentelemetry" => "otlp",
        "journald" => "journald",
        "demo_logs" => "generator",
        _ => "",
    };
    let mut c = Component::new(Kind::Source, &tag_of(&node.id), target, node.origin());
    let mut out = Source {
        component: c.clone(),
        tagged: true,
        fields: None,
    };
    let mut fields = vec![
        format!(".source_type = {}", vrl_str(&node.type_)),
        ".timestamp = %timestamp".to_string(),
    ];
    if target.is_empty() {
        c.set("type", node.type_.as_str());
        let reason = match node.type_.as_str() {
            "stdin" => {
                "logferry has no stdin source: tail a file, or send the lines to a tcp source"
                    .to_string()
            }
            "socket" | "syslog" => {
                "logferry listens on TCP and UDP, not on Unix sockets".to_string()
            }
            t => format!("logferry has no {t} source"),
        };
        for (key, v) in node.keys.iter().filter(|(key, _)| *key != "type") {
            let v = keys::value(v, &mut c);
            c.set(key, v);
        }
        c.comment_out(reason);
        out.component = c;
        return out;
    }
    if !matches!(target, "http" | "forward") {
        c.set("tag", tag_of(&node.id));
    }
    match node.type_.as_str() {
        "file" => file(&mut k, &mut c, &mut fields, settings),
        "kubernetes_logs" => {
            if let Some(v) = k.text("self_node_name") {
                keys::set_str(&mut c, "node_name", &v);
            }
            if let Some(v) = k.text("kube_config_file") {
                keys::set_str(&mut c, "kubeconfig", &v);
            }
            if let Some(v) = k.text("extra_label_selector") {
                keys::set_str(&mut c, "pod_selector", &v);
            }
            if let Some(v) = k.text("extra_namespace_label_selector") {
                keys::set_str(&mut c, "namespace_selector", &v);
            }
            if let Some(v) = k.int("max_line_bytes") {
                c.set("max_line_bytes", Value::Int(v));
            }
            checkpoints(&mut k, &mut c, settings);
            c.remark("Vector's kubernetes.* fields are logferry's kubernetes metadata fields (see docs/configuration.md, kubernetes source)");
        }
        "socket" | "syslog" => {
            k.skip("mode");
            if let Some(v) = k.text("address") {
                keys::set_str(&mut c, "address", &v);
            }
            if let Some(v) = k.int("max_length") {
                if target == "tcp" {
                    c.set("max_line_bytes", Value::Int(v));
                } else {
                    c.untranslated(
                        &format!("max_length = {v}"),
                        "a UDP datagram is read whole (up to 64 KiB)",
                    );
                }
            }
            if let Some(v) = k.int("receive_buffer_bytes") {
                c.set("receive_buffer_bytes", Value::Int(v));
            }
            if let Some(v) = k.int("connection_limit") {
                c.set("max_connections", Value::Int(v));
            }
            if node.type_ == "syslog" {
                c.set("parser", "syslog");
                c.remark("Vector's syslog fields (appname, hostname, severity, …) are named as logferry's syslog parser names them (app_name, hostname, severity, …)");
            } else {
                decoding(&mut k, &mut c);
                c.remark("Vector's host and port fields (the peer's address) are not added");
            }
            if target == "tcp" {
                keys::tls(&mut k, &mut c, true);
            }
        }
        "http_server" | "http" => {
            out.tagged = false;
            if let Some(v) = k.text("address") {
                keys::set_str(&mut c, "address", &v);
            }
            if let Some(mut d) = k.table("decoding") {
                d.skip("codec");
                d.finish(&mut c, LEFT);
                c.remark("logferry's http source reads JSON or text lines by the request's Content-Type, whatever decoding.codec says");
            }
            keys::tls(&mut k, &mut c, true);
            for key in ["path", "strict_path", "method", "path_key"] {
                k.refuse(
                    key,
                    "logferry's http source takes POST on any path and tags records with it",
                    &mut c,
                );
            }
            c.remark("Vector's path field is not added");
        }
        "fluent" => {
            out.tagged = false;
            if let Some(v) = k.text("address") {
                keys::set_str(&mut c, "address", &v);
            }
            if let Some(v) = k.int("connection_limit") {
                c.set("max_connections", Value::Int(v));
            }
            keys::tls(&mut k, &mut c, true);
            c.remark("the forward client's tag is kept in the tag field, as Vector does; the record's tag is this source's id; Vector's host field (the client's address) is not added");
        }
        "kafka" => {
            if let Some(v) = k.text("bootstrap_servers") {
                let brokers: Vec<Value> = v.split(',').map(|b| Value::from(b.trim())).collect();
                c.set("brokers", Value::List(brokers));
            }
            if let Some(v) = k.text("group_id") {
                keys::set_str(&mut c, "group_id", &v);
            }
            if let Some(v) = k.list("topics") {
                c.set(
                    "topics",
                    Value::List(v.into_iter().map(Value::from).collect()),
                );
            }
            if let Some(v) = k.text("auto_offset_reset") {
                c.set("auto_offset_reset", v);
            }
            for (from, to) in [
                ("key_field", "key_field"),
                ("offset_key", "offset_field"),
                ("partition_key", "partition_field"),
            ] {
                if let Some(v) = k.text(from) {
                    c.set(to, v);
                }
            }
            if let Some(v) = k.int("commit_interval_ms") {
                c.set("commit_interval", format!("{v}ms"));
            }
            if let Some(v) = k.take("librdkafka_options") {
                let v = keys::value(&v, &mut c);
                c.set("librdkafka_options", v);
            }
            decoding(&mut k, &mut c);
        }
        "opentelemetry" => {
            if let Some(mut http) = k.table("http") {
                if let Some(v) = http.text("address") {
                    keys::set_str(&mut c, "address", &v);
                }
                http.finish(&mut c, LEFT);
            }
            if let Some(mut grpc) = k.table("grpc") {
                if let Some(v) = grpc.text("address") {
                    keys::set_str(&mut c, "grpc_address", &v);
                }
                grpc.finish(&mut c, LEFT);
            }
            k.refuse(
                "use_otlp_decoding",
                "logferry's otlp source always decodes OTLP into records",
                &mut c,
            );
        }
        "journald" => {
            if let Some(v) = k.list("include_units") {
                c.set(
                    "units",
                    Value::List(v.into_iter().map(Value::from).collect()),
                );
            }
            if let Some(v) = k.bool("current_boot_only") {
                c.set("current_boot_only", Value::Bool(v));
            }
            if let Some(v) = k.text("journal_directory") {
                keys::set_str(&mut c, "directory", &v);
            }
            if k.bool("since_now") == Some(true) {
                c.set("read_from", "tail");
            }
            checkpoints(&mut k, &mut c, settings);
        }
        "demo_logs" => {
            if let Some(n) = k.int("count") {
                c.set("count", Value::Int(n));
            }
            if let Some(secs) = k.take("interval").and_then(|v| v.as_f64()) {
                if secs > 0.0 {
                    c.set("rate", Value::Int((1.0 / secs).round().max(1.0) as i64));
                }
            }
            match k.list("lines") {
                Some(lines) if lines.len() == 1 => keys::set_str(&mut c, "message", &lines[0]),
                Some(_) => c.untranslated("lines", "the generator repeats one message"),
                None => {}
            }
            k.refuse("format", "the generator writes numbered lines (or its message), not Vector's fake log formats", &mut c);
        }
        _ => {}
    }
    k.refuse(
        "acknowledgements",
        "logferry acknowledges every source once its sinks have the records",
        &mut c,
    );
    k.finish(&mut c, LEFT);
    out.fields = Some(fields.join("\n"));
    out.component = c;
    out
}

/// The file source's keys, on a `tail` source.
fn file(k: &mut Keys, c: &mut Component, fields: &mut Vec<String>, settings: &Settings) {
    let include = k.list("include").unwrap_or_default();
    let paths: Vec<Value> = include
        .iter()
        .map(|p| Value::from(keys::string(p, c)))
        .collect();
    c.set("paths", Value::List(paths));
    if let Some(v) = k.list("exclude") {
        let exclude: Vec<Value> = v.iter().map(|p| Value::from(keys::string(p, c))).collect();
        c.set("exclude", Value::List(exclude));
    }
    // Vector reads a file it has no checkpoint for from its beginning
    let from_end = k.text("read_from").as_deref() == Some("end")
        || k.bool("start_at_beginning") == Some(false);
    c.set("read_from_head", Value::Bool(!from_end));
    for key in ["ignore_older_secs", "ignore_older"] {
        k.refuse(
            key,
            "logferry follows every file its globs match, however old",
            c,
        );
    }
    if let Some(mut f) = k.table("fingerprint") {
        match f.text("strategy").as_deref() {
            Some("device_and_inode") => {}
            _ => c.untranslated(
                "fingerprint",
                "logferry tells files apart by device and inode, and a rotated file by its checkpointed size",
            ),
        }
        for key in ["lines", "ignored_header_bytes", "bytes"] {
            f.skip(key);
        }
        f.finish(c, LEFT);
    }
    if let Some(mut m) = k.table("multiline") {
        let start = m.text("start_pattern");
        let condition = m.text("condition_pattern");
        let mode = m.text("mode").unwrap_or_default();
        if let Some(s) = &start {
            c.set_in("multiline", "start", s.as_str());
        }
        match (mode.as_str(), condition) {
            ("continue_through", Some(cond)) => c.set_in("multiline", "continue", cond),
            (_, Some(cond)) => c.untranslated(
                &format!("multiline.condition_pattern = {cond:?} (mode {mode})"),
                "logferry joins lines from a start pattern, with an optional continue pattern (Vector's continue_through)",
            ),
            _ => {}
        }
        if let Some(ms) = m.int("timeout_ms") {
            c.set_in("multiline", "flush_timeout", format!("{ms}ms"));
        }
        m.finish(c, LEFT);
        if start.is_none() {
            c.keys.retain(|(key, _)| key != "multiline");
        }
    }
    checkpoints(k, c, settings);
    if let Some(ms) = k.int("glob_minimum_cooldown_ms") {
        c.set("refresh_interval", format!("{ms}ms"));
    }
    if let Some(n) = k.int("max_line_bytes") {
        c.set("max_line_bytes", Value::Int(n));
    }
    if let Some(n) = k.int("max_read_bytes") {
        c.set("read_bytes", Value::Int(n));
    }
    if matches!(k.text("line_delimiter").as_deref(), Some(d) if d != "\n") {
        c.untranslated("line_delimiter", "logferry's lines end at \\n");
    }
    k.skip("ignore_not_found");
    let host_key = k.text("host_key").unwrap_or_else(|| "host".into());
    let file_key = k.text("file_key").unwrap_or_else(|| "file".into());
    k.refuse(
        "offset_key",
        "logferry does not give a record its offset in the file",
        c,
    );
    for key in [
        "ignore_checkpoints",
        "remove_after_secs",
        "oldest_first",
        "rotate_wait_secs",
        "encoding",
        "internal_metrics",
    ] {
        k.refuse(key, LEFT, c);
    }
    // the path each record was read from, as Vector's file field
    c.set("path_key", file_key.trim_start_matches('.').to_string());
    fields.insert(0, format!(".{} = get_hostname!()", vrl_path(&host_key)));
}

/// A field name as a VRL path segment.
fn vrl_path(name: &str) -> String {
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        name.to_string()
    } else {
        vrl_str(name)
    }
}

/// `data_dir` (the source's, else the global one) as the checkpoint directory.
fn checkpoints(k: &mut Keys, c: &mut Component, settings: &Settings) {
    if let Some(dir) = k.text("data_dir").or_else(|| settings.data_dir.clone()) {
        keys::set_str(c, "checkpoint_dir", &dir);
    }
}

/// `decoding.codec`: `bytes` is logferry's raw lines, `json` its json format.
fn decoding(k: &mut Keys, c: &mut Component) {
    if let Some(mut d) = k.table("decoding") {
        match d.text("codec").as_deref() {
            Some("bytes") | None => {}
            Some("json") => c.set("format", "json"),
            Some(other) => c.untranslated(
                &format!("decoding.codec = {other:?}"),
                "logferry's sources read raw lines or JSON",
            ),
        }
        d.finish(c, LEFT);
    }
    if let Some(mut f) = k.table("framing") {
        match f.text("method").as_deref() {
            Some("newline_delimited" | "character_delimited") | None => {}
            Some("octet_counting") => c.set("framing", "octet_counting"),
            Some(other) => c.untranslated(
                &format!("framing.method = {other:?}"),
                "logferry frames by newline or octet counting",
            ),
        }
        f.skip("newline_delimited");
        f.finish(c, LEFT);
    }
}
