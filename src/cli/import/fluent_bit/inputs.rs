//! `[INPUT]` sections as logferry sources.

use std::collections::HashMap;

use super::parsers::{apply_multiline, Multiline, Parsers};
use super::tag_regex::{self, Refusal, PATH_FIELD};
use super::{address, boolean, list, seconds, size, Head, Keys, Section};
use crate::cli::import::model::{Component, Imported, Kind, Value};

pub fn translate(
    s: &Section,
    parsers: &Parsers,
    counters: &mut HashMap<String, usize>,
    imported: &mut Imported,
) {
    let mut head = Head::new(s, Kind::Source, counters, imported);
    let plugin = head.plugin.clone();
    let inst = head.instance.clone();
    let name = head.name.clone();
    let keys = &mut head.keys;
    // an input without Tag tags its records with its instance name
    let tag = keys.take("tag").unwrap_or_else(|| inst.clone());
    let origin = s.origin();
    let mut extra: Vec<Component> = Vec::new();
    let mut c = match plugin.as_str() {
        "tail" => tail(keys, &name, &tag, parsers, origin, &mut extra, imported),
        "forward" => {
            let mut c = Component::new(Kind::Source, &name, "forward", origin);
            c.set(
                "address",
                address(keys.take("listen"), keys.take("port"), "0.0.0.0", 24224),
            );
            if let Some(v) = keys.take("buffer_max_size").and_then(|v| size(&v)) {
                c.set("max_frame_bytes", v);
            }
            if let Some(v) = keys.take("shared_key") {
                c.set("shared_key", v);
            }
            if let Some(v) = keys.take("self_hostname") {
                c.set("self_hostname", v);
            }
            if s.get("tag").is_some() {
                c.untranslated("Tag", "a forward source keeps the tags its clients send");
            }
            tls_listener(keys, &mut c);
            c
        }
        "http" => {
            let mut c = Component::new(Kind::Source, &name, "http", origin);
            c.set(
                "address",
                address(keys.take("listen"), keys.take("port"), "0.0.0.0", 9880),
            );
            if let Some(v) = keys.take("buffer_max_size").and_then(|v| size(&v)) {
                c.set("max_body_bytes", v);
            }
            c.remark(
                "the tag is the request's path (POST /app.web), as Fluent Bit's http input does",
            );
            if s.get("tag").is_some() {
                c.untranslated("Tag", "an http source tags records with the request's path");
            }
            tls_listener(keys, &mut c);
            c
        }
        "tcp" | "udp" => {
            let mut c = Component::new(Kind::Source, &name, &plugin, origin);
            c.set(
                "address",
                address(keys.take("listen"), keys.take("port"), "0.0.0.0", 5170),
            );
            c.set("tag", tag.clone());
            match keys
                .take("format")
                .map(|f| f.to_ascii_lowercase())
                .as_deref()
            {
                Some("none") => {
                    c.set("format", "raw");
                    c.remark("a line is {\"message\": LINE} here, {\"log\": LINE} in Fluent Bit");
                }
                _ => c.set("format", "json"),
            }
            if let Some(v) = keys.take("buffer_size").and_then(|v| size(&v)) {
                if plugin == "tcp" {
                    c.set("max_line_bytes", v);
                } else {
                    c.untranslated("Buffer_Size", "a datagram is read whole");
                }
            }
            if plugin == "tcp" {
                tls_listener(keys, &mut c);
            }
            c
        }
        "syslog" => {
            let mode = keys
                .take("mode")
                .unwrap_or_else(|| "unix_udp".into())
                .to_ascii_lowercase();
            let ty = if mode == "tcp" { "tcp" } else { "udp" };
            let mut c = Component::new(Kind::Source, &name, ty, origin);
            if mode.starts_with("unix") {
                c.comment_out(format!(
                    "Mode {mode}: logferry listens on TCP and UDP ports, not Unix sockets"
                ));
            }
            c.set(
                "address",
                address(keys.take("listen"), keys.take("port"), "0.0.0.0", 5140),
            );
            c.set("tag", tag.clone());
            c.set("format", "raw");
            c.set("parser", "syslog");
            if ty == "tcp" {
                c.set("framing", "octet_counting");
            }
            if let Some(p) = keys.take("parser") {
                c.remark(format!(
                    "Parser {p}: logferry's syslog parser reads RFC 5424 and RFC 3164 alike"
                ));
            }
            if let Some(v) = keys.take("buffer_max_size").and_then(|v| size(&v)) {
                if ty == "tcp" {
                    c.set("max_line_bytes", v);
                }
            }
            if let Some(p) = keys.take("path") {
                c.untranslated(&format!("Path {p}"), "no Unix sockets");
            }
            c
        }
        "systemd" => {
            let mut c = Component::new(Kind::Source, &name, "journald", origin);
            if let Some(p) = keys.take("path") {
                c.set("directory", p);
            }
            c.set("tag", tag.clone());
            let mut matches: Vec<(String, Vec<String>)> = Vec::new();
            for f in keys.take_all("systemd_filter") {
                if let Some((k, v)) = f.split_once('=') {
                    match matches.iter_mut().find(|(m, _)| m == k) {
                        Some((_, vs)) => vs.push(v.to_string()),
                        None => matches.push((k.to_string(), vec![v.to_string()])),
                    }
                }
            }
            if let Some(t) = keys.take("systemd_filter_type") {
                if t.eq_ignore_ascii_case("and") {
                    c.untranslated("Systemd_Filter_Type And", "logferry's matches take any value of a field and every field (Or within one field)");
                }
            }
            if !matches.is_empty() {
                c.set(
                    "matches",
                    Value::Map(
                        matches
                            .into_iter()
                            .map(|(k, vs)| {
                                (k, Value::List(vs.into_iter().map(Value::Str).collect()))
                            })
                            .collect(),
                    ),
                );
            }
            if let Some(v) = keys.take("read_from_tail").and_then(|v| boolean(&v)) {
                c.set("read_from", if v { "tail" } else { "head" });
            }
            if let Some(db) = keys.take("db") {
                checkpoint_dir(&db, &mut c);
            }
            for (k, ours) in [
                ("lowercase", "lowercase"),
                ("strip_underscores", "strip_underscores"),
            ] {
                if let Some(v) = keys.take(k).and_then(|v| boolean(&v)) {
                    c.set(ours, Value::Bool(v));
                }
            }
            c
        }
        "opentelemetry" => {
            let mut c = Component::new(Kind::Source, &name, "otlp", origin);
            c.set(
                "address",
                address(keys.take("listen"), keys.take("port"), "0.0.0.0", 4318),
            );
            c.set("tag", tag.clone());
            if let Some(v) = keys.take("buffer_max_size").and_then(|v| size(&v)) {
                c.set("max_body_bytes", v);
            }
            tls_listener(keys, &mut c);
            c
        }
        "kafka" => {
            let mut c = Component::new(Kind::Source, &name, "kafka", origin);
            let brokers = list(&keys.take("brokers").unwrap_or_default());
            c.set(
                "brokers",
                Value::List(brokers.into_iter().map(Value::Str).collect()),
            );
            let topics = list(&keys.take("topics").unwrap_or_default());
            c.set(
                "topics",
                Value::List(topics.into_iter().map(Value::Str).collect()),
            );
            c.set(
                "group_id",
                keys.take("group_id").unwrap_or_else(|| "fluent-bit".into()),
            );
            c.set("tag", tag.clone());
            match keys
                .take("format")
                .map(|f| f.to_ascii_lowercase())
                .as_deref()
            {
                Some("json") => c.set("format", "json"),
                _ => {
                    c.set("format", "raw");
                    c.remark("Fluent Bit puts the message under payload beside topic, partition, offset and key; logferry's raw record is {\"message\": value}");
                }
            }
            librdkafka_options(keys, &mut c);
            c
        }
        "dummy" => {
            let mut c = Component::new(Kind::Source, &name, "generator", origin);
            c.set("tag", tag.clone());
            let dummy = keys
                .take("dummy")
                .unwrap_or_else(|| "{\"message\":\"dummy\"}".into());
            let parsed: Option<serde_json::Map<String, serde_json::Value>> =
                serde_json::from_str(&dummy).ok();
            match parsed
                .as_ref()
                .and_then(|m| (m.len() == 1).then(|| m.get("message")).flatten())
            {
                Some(serde_json::Value::String(m)) => c.set("message", m.clone()),
                _ => c.untranslated(
                    &format!("Dummy {dummy}"),
                    "the generator makes {\"message\": …} records only",
                ),
            }
            let rate = keys
                .take("rate")
                .and_then(|r| r.trim().parse::<i64>().ok())
                .unwrap_or(1);
            c.set("rate", Value::Int(rate));
            if let Some(n) = keys
                .take("samples")
                .and_then(|r| r.trim().parse::<i64>().ok())
            {
                c.set("count", Value::Int(n));
            }
            c
        }
        "kubernetes_events"
        | "cpu"
        | "mem"
        | "disk"
        | "netif"
        | "proc"
        | "health"
        | "exec"
        | "stdin"
        | "random"
        | "head"
        | "serial"
        | "docker"
        | "docker_events"
        | "node_exporter_metrics"
        | "prometheus_scrape"
        | "fluentbit_metrics"
        | "statsd"
        | "collectd"
        | "thermal"
        | "mqtt"
        | "nginx_exporter_metric"
        | "windows_exporter_metrics"
        | "winlog"
        | "winevtlog"
        | "process_exporter_metrics"
        | "event_type"
        | "podman_metrics"
        | "prometheus_remote_write"
        | "splunk"
        | "elasticsearch"
        | "exec_wasi"
        | "kmsg" => {
            let mut c = Component::new(Kind::Source, &name, &plugin, origin);
            c.set("tag", tag.clone());
            c.comment_out(format!("logferry has no {plugin} input"));
            c
        }
        other => {
            let mut c = Component::new(Kind::Source, &name, other, origin);
            c.comment_out(format!("logferry has no {other} input"));
            c
        }
    };
    if let Some(t) = keys.take("storage.type") {
        if t.eq_ignore_ascii_case("filesystem") {
            c.remark(
                "storage.type filesystem: the sinks of these records keep them in a disk buffer",
            );
        }
    }
    if let Some(m) = keys.take("mem_buf_limit") {
        c.untranslated(
            &format!("Mem_Buf_Limit {m}"),
            "logferry bounds memory with [limits] memory and each sink's buffer.max_bytes",
        );
    }
    head.finish(c, imported);
    imported.components.extend(extra);
}

#[allow(clippy::too_many_arguments)]
fn tail(
    keys: &mut Keys,
    name: &str,
    tag: &str,
    parsers: &Parsers,
    origin: String,
    extra: &mut Vec<Component>,
    imported: &Imported,
) -> Component {
    let mut c = Component::new(Kind::Source, name, "tail", origin.clone());
    let paths = keys
        .take_all("path")
        .iter()
        .flat_map(|p| list(p))
        .collect::<Vec<_>>();
    c.set(
        "paths",
        Value::List(paths.into_iter().map(Value::Str).collect()),
    );
    let excludes = keys
        .take_all("exclude_path")
        .iter()
        .flat_map(|p| list(p))
        .collect::<Vec<_>>();
    if !excludes.is_empty() {
        c.set(
            "exclude",
            Value::List(excludes.into_iter().map(Value::Str).collect()),
        );
    }
    let path_key = keys.take("path_key");
    let retag = keys
        .take("tag_regex")
        .map(|re| tag_regex_filter(&re, tag, name, path_key.as_deref(), &origin, imported));
    // with Tag_Regex the records go on under a tag of this source's own
    // until the remap filter after it gives them theirs
    let own_tag = format!("{name}.tag_regex.*");
    let tag = match &retag {
        Some(Ok(_)) => own_tag.as_str(),
        _ => tag,
    };
    c.set("tag", tag);
    if let Some(k) = &path_key {
        c.set("path_key", k.clone());
    } else if let Some(Ok(_)) = &retag {
        c.set("path_key", PATH_FIELD);
    }
    // Fluent Bit's tail puts the line under `log`
    c.set(
        "message_key",
        keys.take("key").unwrap_or_else(|| "log".into()),
    );
    if let Some(v) = keys.take("read_from_head").and_then(|v| boolean(&v)) {
        c.set("read_from_head", Value::Bool(v));
    }
    if let Some(db) = keys.take("db") {
        checkpoint_dir(&db, &mut c);
    }
    if let Some(v) = keys.take("refresh_interval").and_then(|v| seconds(&v)) {
        c.set("refresh_interval", v);
    }
    if let Some(v) = keys.take("buffer_max_size").and_then(|v| size(&v)) {
        c.set("max_line_bytes", v);
    }
    if let Some(v) = keys.take("skip_long_lines").and_then(|v| boolean(&v)) {
        c.set("on_long_line", if v { "skip" } else { "split" });
    }
    let ml: Vec<String> = keys
        .take_all("multiline.parser")
        .iter()
        .flat_map(|v| list(v))
        .collect();
    for (i, p) in ml.iter().enumerate() {
        match parsers.multiline(p) {
            Ok(m) if i == 0 => {
                if let Multiline::Builtin(b) = &m {
                    let name = imported.unique_name(Kind::Filter, &format!("{name}_{b}"));
                    let key = c.get("message_key").cloned().unwrap_or_else(|| "log".into());
                    extra.extend(runtime_fields(b, &name, tag, key, &origin).map(|mut f| {
                        keep_path(&c, &mut f);
                        f
                    }));
                }
                apply_multiline(m, &mut c, Some("multiline"))
            }
            Ok(_) => c.untranslated(
                &format!("multiline.parser {p}"),
                format!(
                    "Fluent Bit gives each line to the first parser that takes it, so {p} joins only lines {} does not take; logferry's tail takes one rule set: {} applies",
                    ml[0], ml[0]
                ),
            ),
            Err(e) => c.untranslated(&format!("multiline.parser {p}"), e),
        }
    }
    if let Some(v) = keys.take("multiline.key_content") {
        c.untranslated(
            &format!("multiline.key_content {v}"),
            "the tail source joins the line itself",
        );
    }
    if let Some(p) = keys.take("parser") {
        // Fluent Bit parses each line in the input; logferry does it in a
        // parser filter on the source's tag, right after it
        let mut f = Component::new(
            Kind::Filter,
            &imported.unique_name(Kind::Filter, &format!("{name}_parser")),
            "parser",
            format!("{origin}: Parser {p}"),
        );
        if let Ok(m) = super::tags::from_match(tag) {
            f.set("match", m);
        }
        keep_path(&c, &mut f);
        f.set(
            "key",
            c.get("message_key")
                .cloned()
                .unwrap_or_else(|| "log".into()),
        );
        match parsers.apply(&p, &mut f) {
            Ok(()) => extra.push(f),
            Err(e) => c.untranslated(&format!("Parser {p}"), e),
        }
    }
    for k in [
        "rotate_wait",
        "ignore_older",
        "inotify_watcher",
        "offset_key",
        "exit_on_eof",
        "docker_mode",
        "multiline",
        "parser_firstline",
        "multiline_flush",
    ] {
        if let Some(v) = keys.take(k) {
            let reason = match k {
                "rotate_wait" => "logferry follows a rotated file until it is read to its end",
                "inotify_watcher" => "logferry uses inotify and polls where it cannot (poll_interval)",
                "multiline" | "parser_firstline" | "multiline_flush" => "the old multiline mode: use multiline.parser, or the tail source's multiline.start",
                _ => "no logferry equivalent",
            };
            c.untranslated(&format!("{k} {v}"), reason);
        }
    }
    match retag {
        Some(Ok(f)) => extra.push(f),
        Some(Err((key, Refusal::Unreadable(e)))) => c.untranslated(&key, e),
        Some(Err((_, Refusal::FollowsNothing(e)))) => c.comment_out(e),
        None => {}
    }
    c
}

/// Fluent Bit adds the path (`Path_Key`) to the record its input's parser
/// made; the parser filter here keeps it beside the parsed fields.
fn keep_path(source: &Component, parser: &mut Component) {
    if source.get("path_key").is_some() {
        parser.set("reserve_data", Value::Bool(true));
    }
}

/// The `remap` filter giving the records of source `name` the tag
/// `Tag_Regex` `regex` and `Tag` `template` make from their file's path,
/// right after the source and its parser filters; or the key and why not.
fn tag_regex_filter(
    regex: &str,
    template: &str,
    name: &str,
    path_key: Option<&str>,
    origin: &str,
    imported: &Imported,
) -> Result<Component, (String, Refusal)> {
    let field = path_key.unwrap_or(PATH_FIELD);
    let program = tag_regex::program(regex, template, field, path_key.is_none())
        .map_err(|e| (format!("Tag_Regex {regex}"), e))?;
    let mut f = Component::new(
        Kind::Filter,
        &imported.unique_name(Kind::Filter, &format!("{name}_tag_regex")),
        "remap",
        format!("{origin}: Tag {template}, Tag_Regex {regex}"),
    );
    f.set("match", format!("{name}.tag_regex.**"));
    f.set("source", program);
    f.remark("the tag Fluent Bit makes from the captures of Tag_Regex in the file's path; the records of a file it does not match are dropped, as Fluent Bit does not follow that file");
    Ok(f)
}

/// Fluent Bit's built-in `cri` and `docker` multiline parsers also parse
/// the line they put together into fields (`time`, `stream`, `_p`, `log`
/// for CRI; the JSON object for docker, its `time` read and kept); logferry's
/// rule sets send the line, so a parser filter on `tag` right after the
/// source gives the same fields.
fn runtime_fields(
    builtin: &str,
    name: &str,
    tag: &str,
    key: Value,
    origin: &str,
) -> Option<Component> {
    let mut f = Component::new(
        Kind::Filter,
        name,
        "parser",
        format!("{origin}: the fields of multiline.parser {builtin}"),
    );
    f.set("match", super::tags::from_match(tag).ok()?);
    f.set("key", key);
    match builtin {
        "cri" => {
            f.set("format", "regex");
            f.set(
                "regex",
                "^(?<time>.+?) (?<stream>stdout|stderr) (?<_p>F|P) (?<log>.*)$",
            );
            f.set("time_key", "time");
            f.set("time_format", "%Y-%m-%dT%H:%M:%S.%L%z");
            f.set("time_keep", Value::Bool(true));
            f.remark("a record joined from partial lines has _p F here; Fluent Bit keeps its first part's P");
        }
        "docker" => f.set("format", "docker"),
        _ => return None,
    }
    Some(f)
}

/// Fluent Bit's SQLite `DB` file: its offsets are not read, but its
/// directory holds logferry's checkpoint.
fn checkpoint_dir(db: &str, c: &mut Component) {
    let dir = std::path::Path::new(db)
        .parent()
        .map(|p| p.display().to_string())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| ".".into());
    c.set("checkpoint_dir", dir);
    c.remark(format!("DB {db}: offsets are kept in logferry's own checkpoint file in that directory; Fluent Bit's are not read, so set read_from_head for the first start"));
}

fn tls_listener(keys: &mut Keys, c: &mut Component) {
    let on = keys.take("tls").and_then(|v| boolean(&v)).unwrap_or(false);
    let cert = keys.take("tls.crt_file");
    let key = keys.take("tls.key_file");
    if on {
        if let (Some(cert), Some(key)) = (cert, key) {
            c.set(
                "tls",
                Value::Map(vec![
                    ("cert_file".into(), cert.into()),
                    ("key_file".into(), key.into()),
                ]),
            );
        } else {
            c.untranslated("tls On", "a listener needs tls.crt_file and tls.key_file");
        }
    }
}

pub(super) fn librdkafka_options(keys: &mut Keys, c: &mut Component) {
    let opts = keys.take_prefixed("rdkafka.");
    if !opts.is_empty() {
        c.set(
            "librdkafka_options",
            Value::Map(opts.into_iter().map(|(k, v)| (k, Value::Str(v))).collect()),
        );
    }
}
