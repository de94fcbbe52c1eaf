//! `<source>` sections: in_tail, in_forward, in_http, in_syslog,
//! in_udp/in_tcp, in_sample/in_dummy; with the parser filters their
//! `<parse>` sections become.

use super::super::model::{Component, Imported, Kind, Value};
use super::parse::{self, Merge, Parsed};
use super::syntax::Element;
use super::{address, component, duration, list, size, unsupported, Keys};

/// What the routing needs of a source.
pub struct SourceOut {
    /// Tag patterns of its events.
    pub tags: Vec<String>,
    /// The label its events go to (`@label`), if not the top level.
    pub label: Option<String>,
}

/// Translates `<source>` `el` into `imported`.
pub fn translate(el: &Element, imported: &mut Imported) -> SourceOut {
    let label = el.get("@label").map(String::from).filter(|l| l != "@ROOT");
    let plugin = el.get("@type").unwrap_or("").to_string();
    let mut keys = Keys::new(el);
    keys.take("@label");
    let tags = match plugin.as_str() {
        "tail" => tail(el, keys, imported),
        "forward" => forward(el, keys, imported),
        "http" => http(el, keys, imported),
        "syslog" => syslog(el, keys, imported),
        "udp" | "tcp" => socket(el, keys, &plugin, imported),
        "sample" | "dummy" => sample(el, keys, imported),
        "" => {
            unsupported(el, Kind::Source, "a <source> without @type", imported);
            Vec::new()
        }
        other => {
            let why = match other {
                "exec" | "exec_filter" => "logferry runs no commands".to_string(),
                "monitor_agent" => {
                    "logferry's own metrics are served by [api] (/metrics)".to_string()
                }
                "windows_eventlog" | "windows_eventlog2" => {
                    "logferry runs on Linux only".to_string()
                }
                "systemd" => "use logferry's journald source".to_string(),
                _ => format!("logferry has no {other} source"),
            };
            unsupported(el, Kind::Source, &why, imported);
            Vec::new()
        }
    };
    SourceOut { tags, label }
}

/// The pattern of the tags a tag with `*` expansion gives.
fn space_of(tag: &str) -> String {
    if tag.contains('*') {
        tag.replace("**", "*").replace('*', "**")
    } else {
        tag.to_string()
    }
}

fn tail(el: &Element, mut keys: Keys, imported: &mut Imported) -> Vec<String> {
    let mut c = component(el, &mut keys, Kind::Source, "tail", "tail", imported);
    let paths = list(&keys.take("path").unwrap_or_default());
    if paths.iter().any(|p| p.contains('%')) {
        c.remark("Fluentd fills strftime sequences (%Y) in path with today's date; logferry reads them as they are: use a glob");
    }
    c.set(
        "paths",
        Value::List(paths.into_iter().map(Value::Str).collect()),
    );
    if let Some(x) = keys.take("exclude_path") {
        c.set(
            "exclude",
            Value::List(list(&x).into_iter().map(Value::Str).collect()),
        );
    }
    let tag = keys.take("tag").unwrap_or_else(|| "tail".into());
    c.set("tag", tag.as_str());
    if let Some(pos) = keys.take("pos_file") {
        let dir = std::path::Path::new(&pos)
            .parent()
            .map(|d| d.display().to_string())
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| ".".into());
        c.set("checkpoint_dir", dir);
        c.remark(format!(
            "pos_file {pos}: logferry keeps its offsets in {}.checkpoint in that directory, in its own format",
            c.name
        ));
    }
    if let Some(v) = keys.take_bool("read_from_head") {
        c.set("read_from_head", Value::Bool(v));
    }
    if let Some(v) = keys.take("refresh_interval").and_then(|v| duration(&v)) {
        c.set("refresh_interval", v);
    }
    let flush = keys
        .take("multiline_flush_interval")
        .and_then(|v| duration(&v));
    let path_key = keys.take("path_key");
    let pattern = space_of(&tag);
    let before = imported.components.len();
    if let Some(p) = parse_section(el, &mut keys) {
        let start = parser_filter(&p, &pattern, &mut c, imported);
        if let Some(start) = start {
            c.set_in("multiline", "start", start);
            if let Some(f) = flush {
                c.set_in("multiline", "flush_timeout", f);
            } else {
                c.remark("Fluentd holds a multiline record's last lines until the next first line (no multiline_flush_interval); logferry sends it after the multiline flush_timeout (1s)");
            }
        }
    }
    if let Some(v) = path_key {
        if imported.components.len() == before {
            c.set("path_key", v);
        } else {
            // Fluentd adds it to the parsed record; logferry adds it to the
            // line, which the parser filter (without reserve_data) replaces
            c.untranslated(
                &format!("path_key {v}"),
                "logferry adds the path before the <parse> filter, which keeps only the parsed fields",
            );
        }
    }
    keys.finish(&mut c);
    imported.components.push(c);
    vec![pattern]
}

/// The filter a source's `<parse>` becomes, added to `imported` (before
/// the source's own component); the multiline start regex, if any.
fn parser_filter(
    p: &Element,
    pattern: &str,
    source: &mut Component,
    imported: &mut Imported,
) -> Option<String> {
    let name = imported.unique_name(Kind::Filter, &format!("{}_parse", source.name));
    let mut f = Component::new(Kind::Filter, &name, "parser", p.origin());
    f.set("match", pattern);
    match parse::into_filter(p, "message", Merge::default(), &mut f) {
        Parsed::Lines(key) => {
            if key != "message" {
                if source.get("type") == Some(&Value::from("tail")) {
                    source.set("message_key", key);
                } else {
                    source.untranslated(
                        &format!("<parse> message_key {key}"),
                        "this source's lines are under message",
                    );
                }
            }
            None
        }
        Parsed::Filter => {
            f.remark(format!("the <parse> of source {}", source.name));
            imported.components.push(f);
            None
        }
        Parsed::Multiline(start) => {
            f.remark(format!(
                "the <parse> of source {}, after the lines are joined",
                source.name
            ));
            imported.components.push(f);
            Some(start)
        }
        Parsed::Unsupported(why) => {
            source.untranslated("<parse>", why);
            None
        }
    }
}

/// The source's `<parse>`, or the one its older keys (`format`,
/// `time_format`, … on the source itself, as before Fluentd v1) make.
fn parse_section(el: &Element, keys: &mut Keys) -> Option<Element> {
    if let Some(p) = keys.section("parse") {
        return Some(p.clone());
    }
    let format = keys.take("format")?;
    let mut p = Element {
        name: "parse".into(),
        file: el.file.clone(),
        line: el.line,
        ..Element::default()
    };
    let mut push = |key: &str, value: String| {
        p.attrs.push(super::syntax::Attr {
            key: key.into(),
            value,
            ruby: None,
            line: el.line,
        })
    };
    if format.starts_with('/') {
        push("@type", "regexp".into());
        push("expression", format);
    } else {
        push("@type", format);
    }
    let mut older: Vec<String> = [
        "time_format",
        "time_key",
        "keep_time_key",
        "types",
        "keys",
        "message_key",
        "format_firstline",
        "delimiter",
        "label_delimiter",
    ]
    .iter()
    .map(|k| k.to_string())
    .collect();
    older.extend((1..=20).map(|n| format!("format{n}")));
    for k in older {
        if let Some(v) = keys.take(&k) {
            push(&k, v);
        }
    }
    Some(p)
}

fn tls_listener(keys: &mut Keys, c: &mut Component) {
    let Some(t) = keys.section("transport") else {
        return;
    };
    if t.arg != "tls" {
        if !t.arg.is_empty() && t.arg != "tcp" && t.arg != "udp" {
            c.untranslated(&format!("<transport {}>", t.arg), "no logferry equivalent");
        }
        return;
    }
    tls_of(t, c);
}

/// `<transport tls>` `t` as the listener's `tls` of `c`.
fn tls_of(t: &Element, c: &mut Component) {
    let mut tk = Keys::new(t);
    if let Some(cert) = tk.take("cert_path") {
        c.set_in("tls", "cert_file", cert);
    }
    if let Some(key) = tk.take("private_key_path") {
        c.set_in("tls", "key_file", key);
    }
    for k in [
        "version",
        "min_version",
        "max_version",
        "ciphers",
        "insecure",
    ] {
        if let Some(v) = tk.take(k) {
            c.untranslated(
                &format!("<transport tls> {k} {v}"),
                "logferry's TLS versions and ciphers are rustls's defaults",
            );
        }
    }
    tk.finish_in("<transport tls>", c);
}

fn forward(el: &Element, mut keys: Keys, imported: &mut Imported) -> Vec<String> {
    let mut c = component(el, &mut keys, Kind::Source, "forward", "forward", imported);
    c.set(
        "address",
        address(keys.take("bind"), keys.take("port"), 24224),
    );
    if let Some(v) = keys.take("chunk_size_limit").and_then(|v| size(&v)) {
        c.set("max_frame_bytes", v);
    }
    if let Some(s) = keys.section("security") {
        let mut sk = Keys::new(s);
        if let Some(k) = sk.take("shared_key") {
            c.set("shared_key", k);
        }
        if let Some(h) = sk.take("self_hostname") {
            c.set("self_hostname", h);
        }
        sk.take_bool("user_auth");
        let users: Vec<Value> = sk
            .sections("user")
            .iter()
            .map(|u| {
                Value::Map(vec![
                    ("username".into(), u.get("username").unwrap_or("").into()),
                    ("password".into(), u.get("password").unwrap_or("").into()),
                ])
            })
            .collect();
        if !users.is_empty() {
            c.set("users", Value::List(users));
        }
        sk.finish_in("<security>", &mut c);
    }
    tls_listener(&mut keys, &mut c);
    keys.finish(&mut c);
    imported.components.push(c);
    vec!["**".into()]
}

fn http(el: &Element, mut keys: Keys, imported: &mut Imported) -> Vec<String> {
    let mut c = component(el, &mut keys, Kind::Source, "http", "http", imported);
    c.set(
        "address",
        address(keys.take("bind"), keys.take("port"), 9880),
    );
    if let Some(v) = keys.take("body_size_limit").and_then(|v| size(&v)) {
        c.set("max_body_bytes", v);
    }
    if let Some(v) = keys.take("keepalive_timeout").and_then(|v| duration(&v)) {
        c.set("idle_timeout", v);
    }
    if let Some(p) = keys.section("parse") {
        if p.get("@type") != Some("json") && p.get("@type") != Some("in_http") {
            c.untranslated(
                "<parse>",
                "logferry's http source reads JSON and NDJSON bodies, and text lines",
            );
        }
    }
    tls_listener(&mut keys, &mut c);
    c.remark("the tag is the request's path, as in Fluentd (POST /app.web)");
    keys.finish(&mut c);
    imported.components.push(c);
    vec!["**".into()]
}

fn syslog(el: &Element, mut keys: Keys, imported: &mut Imported) -> Vec<String> {
    let mut protocol = keys.take("protocol_type").unwrap_or_else(|| "udp".into());
    let transport = keys.section("transport");
    if let Some(t) = transport {
        protocol = t.arg.clone();
    }
    let type_ = if protocol == "udp" { "udp" } else { "tcp" };
    let mut c = component(el, &mut keys, Kind::Source, type_, "syslog", imported);
    c.set(
        "address",
        address(keys.take("bind"), keys.take("port"), 5140),
    );
    let tag = keys.take("tag").unwrap_or_else(|| "syslog".into());
    c.set("tag", tag.as_str());
    c.set("parser", "syslog");
    c.remark(format!(
        "Fluentd tags each message {tag}.FACILITY.PRIORITY; logferry tags it {tag}: match {tag}.** still takes it, a pattern naming a facility does not"
    ));
    if let Some(p) = keys.section("parse") {
        let mut pk = Keys::new(p);
        pk.take("message_format");
        pk.take("with_priority");
        pk.finish_in("<parse>", &mut c);
    }
    if let Some(t) = transport {
        if t.arg == "tls" {
            tls_of(t, &mut c);
        }
    }
    for k in [
        "message_length_limit",
        "source_hostname_key",
        "source_address_key",
        "severity_key",
        "facility_key",
        "priority_key",
    ] {
        if let Some(v) = keys.take(k) {
            c.untranslated(
                &format!("{k} {v}"),
                "logferry's syslog fields are fixed (see the tcp source)",
            );
        }
    }
    keys.finish(&mut c);
    imported.components.push(c);
    vec![tag.clone(), format!("{tag}.**")]
}

fn socket(el: &Element, mut keys: Keys, plugin: &str, imported: &mut Imported) -> Vec<String> {
    let mut c = component(el, &mut keys, Kind::Source, plugin, plugin, imported);
    let default_port = if plugin == "udp" { 5160 } else { 5170 };
    c.set(
        "address",
        address(keys.take("bind"), keys.take("port"), default_port),
    );
    let tag = keys.take("tag").unwrap_or_else(|| plugin.into());
    c.set("tag", tag.as_str());
    if let Some(d) = keys.take("delimiter") {
        if d != "\n" {
            c.untranslated(
                &format!("delimiter {d:?}"),
                "logferry's tcp messages end at \\n (or are octet-counted)",
            );
        }
    }
    if let Some(v) = keys.take("message_length_limit").and_then(|v| size(&v)) {
        if plugin == "tcp" {
            c.set("max_line_bytes", v);
        } else {
            c.untranslated(
                &format!("message_length_limit {v}"),
                "a UDP datagram is at most 64 KiB",
            );
        }
    }
    if let Some(p) = parse_section(el, &mut keys) {
        if p.get("@type") == Some("json") && p.attrs.len() == 1 {
            c.set("format", "json");
        } else {
            parser_filter(&p, &tag, &mut c, imported);
        }
    }
    keys.finish(&mut c);
    imported.components.push(c);
    vec![tag]
}

fn sample(el: &Element, mut keys: Keys, imported: &mut Imported) -> Vec<String> {
    let mut c = component(el, &mut keys, Kind::Source, "generator", "sample", imported);
    let tag = keys.take("tag").unwrap_or_else(|| "sample".into());
    c.set("tag", tag.as_str());
    let rate: i64 = keys
        .take("rate")
        .and_then(|r| r.trim().parse().ok())
        .unwrap_or(1);
    let per = keys
        .take("size")
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or(1);
    c.set("rate", Value::Int(rate.saturating_mul(per)));
    let body = keys
        .take("sample")
        .or_else(|| keys.take("dummy"))
        .unwrap_or_else(|| "{\"message\":\"sample\"}".into());
    let record: Option<serde_json::Map<String, serde_json::Value>> = match serde_json::from_str::<
        serde_json::Value,
    >(&body)
    {
        Ok(serde_json::Value::Object(m)) => Some(m),
        Ok(serde_json::Value::Array(items)) => {
            match items.into_iter().next() {
                Some(serde_json::Value::Object(m)) => {
                    c.remark("Fluentd takes its sample records in turn; logferry makes the first one only");
                    Some(m)
                }
                _ => None,
            }
        }
        _ => None,
    };
    let Some(record) = record else {
        c.untranslated(&format!("sample {body}"), "not a JSON hash");
        keys.finish(&mut c);
        imported.components.push(c);
        return vec![tag];
    };
    let mut set: Vec<(String, Value)> = Vec::new();
    let mut has_message = false;
    for (k, v) in &record {
        match v {
            serde_json::Value::String(s) if k == "message" => {
                c.set("message", s.as_str());
                has_message = true;
            }
            serde_json::Value::String(s) => set.push((k.clone(), Value::Str(s.clone()))),
            other => c.untranslated(
                &format!("sample field {k} {other}"),
                "the generator's records hold strings only",
            ),
        }
    }
    if !has_message {
        c.set("message", "");
    }
    if let Some(k) = keys.take("auto_increment_key") {
        c.untranslated(
            &format!("auto_increment_key {k}"),
            "the generator numbers its lines only when it has no message",
        );
    }
    keys.finish(&mut c);
    imported.components.push(c);
    if !set.is_empty() || !has_message {
        let name = imported.unique_name(Kind::Filter, &format!("{tag}_fields"));
        let mut f = Component::new(Kind::Filter, &name, "modify", el.origin());
        f.set("match", tag.as_str());
        if !has_message {
            f.set("remove", Value::List(vec![Value::from("message")]));
        }
        if !set.is_empty() {
            f.set("set", Value::Map(set));
        }
        f.remark("the fields of Fluentd's sample record");
        imported.components.push(f);
    }
    vec![tag]
}
