//! `<match>` sections: out_file, out_forward, out_stdout, out_null,
//! out_kafka2, out_elasticsearch/out_opensearch, out_s3, out_http,
//! out_copy (`<store>`s), out_relabel, rewrite_tag_filter; with their
//! `<buffer>`, `<format>` and `<inject>` sections.

use super::super::model::{Component, Imported, Kind, Value};
use super::routing::Routed;
use super::syntax::Element;
use super::{component, duration, list, regex, size, unsupported, Keys};

/// Translates `<match>` (or `<store>`) `el`, routed by `m`, into `imported`.
pub fn translate(el: &Element, m: &str, imported: &mut Imported) -> Routed {
    let plugin = el.get("@type").unwrap_or("").to_string();
    let mut routed = Routed::default();
    let mut keys = Keys::new(el);
    match plugin.as_str() {
        "copy" => {
            keys.take("copy_mode");
            keys.take("deep_copy");
            for store in keys.sections("store") {
                let r = translate(store, m, imported);
                routed.relabel.extend(r.relabel);
                routed.retags |= r.retags;
                if !store.arg.is_empty() {
                    if let Some(c) = imported.components.last_mut() {
                        c.remark(format!(
                            "<store {}>: a failing store here holds up only itself",
                            store.arg
                        ));
                    }
                }
            }
            let mut c = Component::new(Kind::Sink, "", "copy", el.origin());
            keys.finish(&mut c);
            if let Some(last) = imported.components.last_mut() {
                for u in c.untranslated {
                    last.untranslated(&format!("<match> {}", u.key), u.reason);
                }
            }
        }
        "relabel" => {
            if let Some(l) = keys.take("@label") {
                routed.relabel.push(l);
            }
        }
        "rewrite_tag_filter" => {
            rewrite_tag(el, keys, m, imported);
            routed.retags = true;
        }
        "file" => file(el, keys, m, imported),
        "stdout" => {
            let mut c = sink(el, &mut keys, "stdout", m, imported);
            c.set("format", "json");
            c.remark("Fluentd prints TIME TAG: RECORD; logferry's json lines are {\"time\",\"tag\",\"record\"}");
            format_and_inject(&mut keys, &mut c, false);
            buffer(&mut keys, &mut c, true);
            keys.finish(&mut c);
            imported.components.push(c);
        }
        "null" => {
            let mut c = sink(el, &mut keys, "null", m, imported);
            keys.section("buffer");
            keys.take("never_flush");
            keys.finish(&mut c);
            imported.components.push(c);
        }
        "forward" => forward(el, keys, m, imported),
        "kafka2" | "kafka" | "kafka_buffered" | "rdkafka2" => kafka(el, keys, m, imported),
        "elasticsearch" | "opensearch" | "elasticsearch_data_stream" => {
            opensearch(el, keys, m, imported)
        }
        "s3" => s3(el, keys, m, imported),
        "http" => http(el, keys, m, imported),
        other => {
            let why = match other {
                "" => "a <match> without @type".to_string(),
                "exec" | "exec_filter" => "logferry runs no commands".into(),
                "secondary_file" => "logferry's counterpart is the sink's dead_letter file".into(),
                "roundrobin" => {
                    "use one forward sink with several servers and mode = \"round_robin\"".into()
                }
                _ => format!("logferry has no {other} output"),
            };
            unsupported(el, Kind::Sink, &why, imported);
        }
    }
    routed
}

fn sink(el: &Element, keys: &mut Keys, type_: &str, m: &str, imported: &Imported) -> Component {
    let plugin = el.get("@type").unwrap_or(type_);
    let mut c = component(el, keys, Kind::Sink, type_, plugin, imported);
    c.set("match", m);
    c
}

/// `<buffer>`: a file buffer is the sink's disk buffer; limits and
/// retries where the sink has them; the rest listed.
fn buffer(keys: &mut Keys, c: &mut Component, retries: bool) {
    let Some(b) = keys.section("buffer") else {
        return;
    };
    let mut bk = Keys::new(b);
    if b.get("@type") == Some("file") {
        c.set_in("buffer", "type", "disk");
        match bk.take("path") {
            Some(p) => c.set_in("buffer", "dir", p),
            None => {
                c.set_in(
                    "buffer",
                    "dir",
                    format!("/var/lib/logferry/buffer/{}", c.name),
                );
                c.remark("a file <buffer> without path (Fluentd's root_dir): its disk buffer is put under /var/lib/logferry/buffer");
            }
        }
    }
    if let Some(v) = bk.take("total_limit_size").and_then(|v| size(&v)) {
        c.set_in("buffer", "max_bytes", v);
    }
    match bk.take("overflow_action").as_deref() {
        None | Some("block") => {
            if b.get("overflow_action").is_some() {
                c.set_in("buffer", "when_full", "block");
            }
        }
        Some("drop_oldest_chunk") => c.untranslated(
            "<buffer> overflow_action drop_oldest_chunk",
            "logferry drops the newest (when_full = \"drop_newest\") or blocks",
        ),
        Some(other) => c.untranslated(
            &format!("<buffer> overflow_action {other}"),
            "logferry blocks (when_full = \"block\") or drops the newest",
        ),
    }
    if c.get("type") == Some(&Value::from("forward")) {
        if let Some(v) = bk.take("flush_interval").and_then(|v| duration(&v)) {
            c.set("flush_interval", v);
        }
    }
    if retries {
        if let Some(v) = bk.take("retry_wait").and_then(|v| duration(&v)) {
            c.set_in("retry", "initial", v);
        }
        if let Some(v) = bk.take("retry_max_interval").and_then(|v| duration(&v)) {
            c.set_in("retry", "max", v);
        }
        if let Some(v) = bk
            .take("retry_max_times")
            .and_then(|v| v.trim().parse::<i64>().ok())
        {
            c.set_in("retry", "max_attempts", Value::Int(v));
        }
        if bk.take_bool("retry_forever") == Some(true) {
            c.set_in("retry", "max_attempts", Value::Int(0));
        }
    }
    let mut scratch = Component::new(Kind::Sink, "", "", String::new());
    bk.finish(&mut scratch);
    for u in scratch.untranslated {
        let why = if u.key.starts_with("chunk_limit")
            || u.key.starts_with("flush_")
            || u.key.starts_with("queue")
            || u.key.starts_with("chunk_")
            || u.key.starts_with("timekey")
        {
            "logferry batches and flushes by the sink's own batch settings, as soon as its queue runs empty".to_string()
        } else if u.key.starts_with("retry_") {
            "this sink keeps its own retry settings".to_string()
        } else {
            u.reason
        };
        c.untranslated(&format!("<buffer {}> {}", b.arg, u.key), why);
    }
    if !b.arg.is_empty()
        && !b
            .arg
            .split(',')
            .all(|k| matches!(k.trim(), "tag" | "time" | "[]" | ""))
    {
        c.untranslated(
            &format!("<buffer {}>", b.arg),
            "logferry chunks by tag only",
        );
    }
}

/// `<format>` (and `<inject>`) as a logferry format table: json as the
/// record alone (`ndjson`), with the time and tag `<inject>` adds.
/// `ndjson_only`: the sink takes `time_key`/`tag_key` at its top level.
fn format_and_inject(keys: &mut Keys, c: &mut Component, top_level: bool) -> Option<String> {
    let format = keys.section("format");
    let kind = format
        .and_then(|f| f.get("@type"))
        .unwrap_or("")
        .to_string();
    if let Some(f) = format {
        let mut fk = Keys::new(f);
        match kind.as_str() {
            "json" => {}
            "single_value" => {
                let key = fk.take("message_key").unwrap_or_else(|| "message".into());
                if fk.take_bool("add_newline") == Some(false) {
                    c.untranslated(
                        "<format> add_newline false",
                        "logferry writes one line per record",
                    );
                }
                fk.finish_in("<format>", c);
                if key == "message" {
                    c.set("format", "raw");
                } else {
                    c.set_in("format", "type", "template");
                    c.set_in("format", "template", format!("{{{key}}}"));
                }
                return Some("single_value".into());
            }
            other => {
                c.untranslated(
                    &format!("<format> @type {other}"),
                    "written as logferry's json lines ({\"time\",\"tag\",\"record\"})",
                );
                c.set("format", "json");
                return Some(other.to_string());
            }
        }
        fk.finish_in("<format>", c);
    }
    let (time_key, tag_key, time_format) = inject(keys, c);
    if top_level {
        c.set("time_key", time_key.unwrap_or_default());
        if let Some(t) = tag_key {
            c.set("tag_key", t);
        }
        if let Some(f) = time_format {
            c.set("time_format", f);
        }
    } else if format.is_some() {
        c.set_in("format", "type", "ndjson");
        c.set_in("format", "time_key", time_key.unwrap_or_default());
        if let Some(t) = tag_key {
            c.set_in("format", "tag_key", t);
        }
        if let Some(f) = time_format {
            c.set_in("format", "time_format", f);
        }
    }
    (!kind.is_empty()).then_some(kind)
}

/// `<inject>`: the time key, tag key and time format.
fn inject(keys: &mut Keys, c: &mut Component) -> (Option<String>, Option<String>, Option<String>) {
    let Some(i) = keys.section("inject") else {
        return (None, None, None);
    };
    let mut ik = Keys::new(i);
    let time_key = ik.take("time_key");
    let tag_key = ik.take("tag_key");
    let time_type = ik.take("time_type").unwrap_or_else(|| "float".into());
    let time_format = ik.take("time_format");
    let format = match time_type.as_str() {
        "unixtime" => {
            c.remark("<inject> time_type unixtime: whole seconds in Fluentd, seconds with nanoseconds here (epoch)");
            Some("epoch".to_string())
        }
        "string" => Some(match &time_format {
            Some(f) => super::parse::strptime(f),
            None => "rfc3339".into(),
        }),
        _ => None,
    };
    if let Some(local) = ik
        .take_bool("localtime")
        .or_else(|| ik.take_bool("utc").map(|u| !u))
    {
        if local && time_type == "string" {
            c.remark("<inject> localtime: logferry writes times in UTC");
        }
    } else if time_type == "string" {
        c.remark("Fluentd injects string times in local time; logferry writes them in UTC");
    }
    ik.take("timezone");
    ik.finish_in("<inject>", c);
    (time_key, tag_key, format)
}

fn file(el: &Element, mut keys: Keys, m: &str, imported: &mut Imported) {
    let mut c = sink(el, &mut keys, "file", m, imported);
    let path = keys.take("path").unwrap_or_default();
    let append = keys.take_bool("append").unwrap_or(false);
    let suffix = if keys.take_bool("add_path_suffix") == Some(false) {
        keys.take("path_suffix");
        String::new()
    } else {
        keys.take("path_suffix").unwrap_or_else(|| ".log".into())
    };
    // Fluentd's chunks are per day unless <buffer> names its chunk keys
    let timed = match el.children("buffer").next() {
        None => true,
        // `<buffer>` alone takes out_file's default chunk key, time
        Some(b) => b.arg.trim().is_empty() || b.arg.split(',').any(|k| k.trim() == "time"),
    };
    let slice = keys.take("time_slice_format").unwrap_or_else(|| {
        let timekey = el
            .children("buffer")
            .next()
            .and_then(|b| b.get("timekey"))
            .unwrap_or("1d");
        match timekey {
            "1h" | "3600" => "%Y%m%d%H".into(),
            "1m" | "60" => "%Y%m%d%H%M".into(),
            _ => "%Y%m%d".into(),
        }
    });
    let compress = keys.take("compress");
    let written = if path.contains('*') {
        path.replace('*', &slice)
    } else if timed && !path.contains('%') {
        format!("{path}.{slice}{suffix}")
    } else {
        format!("{path}{suffix}")
    };
    c.set("path", written.as_str());
    if timed {
        c.remark("Fluentd names a file by the time of its records' chunk (local time); logferry by the local time of the write");
    }
    if !append {
        c.remark("Fluentd writes each chunk to a new file (_0, _1, … before the suffix) without `append true`; logferry appends to one");
    }
    if let Some(z) = compress {
        c.untranslated(
            &format!("compress {z}"),
            "logferry's file sink writes plain files (rotate and compress them with logrotate)",
        );
    }
    if format_and_inject(&mut keys, &mut c, false).is_none() {
        c.set("format", "json");
        c.untranslated(
            "<format> out_file (the default)",
            "Fluentd writes TIME<TAB>TAG<TAB>JSON; logferry writes its json lines ({\"time\",\"tag\",\"record\"}); use <format> @type json for records as they are",
        );
    }
    for k in ["symlink_path", "recompress"] {
        if let Some(v) = keys.take(k) {
            c.untranslated(&format!("{k} {v}"), "no logferry equivalent");
        }
    }
    buffer(&mut keys, &mut c, true);
    keys.finish(&mut c);
    imported.components.push(c);
}

/// TLS of a client from Fluentd's `tls_*` keys.
fn client_tls(keys: &mut Keys, c: &mut Component, transport_tls: bool) {
    let mut any = transport_tls;
    if let Some(ca) = keys
        .take("tls_cert_path")
        .or_else(|| keys.take("tls_ca_cert_path"))
    {
        c.set_in(
            "tls",
            "ca_file",
            list(&ca).into_iter().next().unwrap_or_default(),
        );
        any = true;
    }
    if let Some(v) = keys.take("tls_client_cert_path") {
        c.set_in("tls", "cert_file", v);
    }
    if let Some(v) = keys.take("tls_client_private_key_path") {
        c.set_in("tls", "key_file", v);
    }
    if keys.take_bool("tls_verify_hostname") == Some(false)
        || keys.take("tls_verify_mode").as_deref() == Some("none")
        || keys.take_bool("tls_insecure_mode") == Some(true)
    {
        c.set_in("tls", "insecure_skip_verify", Value::Bool(true));
        any = true;
    }
    if any && c.get("tls").is_none() {
        c.set("tls", Value::Map(Vec::new()));
    }
}

fn forward(el: &Element, mut keys: Keys, m: &str, imported: &mut Imported) {
    let mut c = sink(el, &mut keys, "forward", m, imported);
    let tls = keys.take("transport").as_deref() == Some("tls");
    let mut servers = Vec::new();
    for s in keys.sections("server") {
        let mut sk = Keys::new(s);
        let host = sk.take("host").unwrap_or_else(|| "127.0.0.1".into());
        let port = sk.take("port").unwrap_or_else(|| "24224".into());
        let mut entry = vec![(
            "address".to_string(),
            Value::Str(super::address(Some(host), Some(port), 24224)),
        )];
        if let Some(w) = sk.take("weight").and_then(|w| w.trim().parse::<i64>().ok()) {
            entry.push(("weight".into(), Value::Int(w)));
        }
        if sk.take_bool("standby") == Some(true) {
            entry.push(("standby".into(), Value::Bool(true)));
        }
        sk.take("name");
        if let Some(k) = sk.take("shared_key") {
            c.set("shared_key", k);
        }
        if let Some(u) = sk.take("username") {
            c.set("username", u);
        }
        if let Some(p) = sk.take("password") {
            c.set("password", p);
        }
        sk.finish_in("<server>", &mut c);
        servers.push(Value::Map(entry));
    }
    if servers.is_empty() {
        c.comment_out("out_forward without <server>");
    }
    c.set("servers", Value::List(servers));
    if let Some(s) = keys.section("security") {
        let mut sk = Keys::new(s);
        if let Some(k) = sk.take("shared_key") {
            c.set("shared_key", k);
        }
        if let Some(h) = sk.take("self_hostname") {
            c.set("self_hostname", h);
        }
        sk.finish_in("<security>", &mut c);
    }
    if keys.take_bool("require_ack_response") == Some(true) {
        c.set("require_ack", Value::Bool(true));
    }
    if let Some(t) = keys.take("ack_response_timeout").and_then(|v| duration(&v)) {
        c.set("ack_timeout", t);
    }
    if let Some(t) = keys.take("connect_timeout").and_then(|v| duration(&v)) {
        c.set("connect_timeout", t);
    }
    if keys.take("compress").as_deref() == Some("gzip") {
        c.set("compress", "gzip");
    }
    if keys.take_bool("keepalive") == Some(true) {
        keys.take("keepalive_timeout");
    }
    client_tls(&mut keys, &mut c, tls);
    buffer(&mut keys, &mut c, false);
    for k in [
        "heartbeat_type",
        "heartbeat_interval",
        "phi_threshold",
        "phi_failure_detector",
        "hard_timeout",
        "recover_wait",
        "expire_dns_cache",
        "dns_round_robin",
    ] {
        if let Some(v) = keys.take(k) {
            c.untranslated(&format!("{k} {v}"), "logferry tells a server down by its connection and acks, and retries it after reconnect_min…reconnect_max");
        }
    }
    keys.finish(&mut c);
    imported.components.push(c);
}

fn kafka(el: &Element, mut keys: Keys, m: &str, imported: &mut Imported) {
    let mut c = sink(el, &mut keys, "kafka", m, imported);
    let brokers = keys
        .take("brokers")
        .unwrap_or_else(|| "localhost:9092".into());
    c.set(
        "brokers",
        Value::List(list(&brokers).into_iter().map(Value::Str).collect()),
    );
    let topic = keys.take("default_topic").or_else(|| keys.take("topic"));
    c.set("topic", topic.unwrap_or_else(|| "${tag}".into()));
    if let Some(k) = keys.take("topic_key") {
        c.untranslated(
            &format!("topic_key {k}"),
            "the topic comes from the tag or is fixed (a record field: ${record.FIELD} in topic)",
        );
    }
    if let Some(k) = keys.take("message_key_key") {
        c.set("key_field", k);
    }
    match keys.take("required_acks").as_deref() {
        Some("-1") => c.set("acks", "all"),
        Some("1") => c.set("acks", "1"),
        Some("0") => c.set("acks", "0"),
        Some(other) => c.untranslated(
            &format!("required_acks {other}"),
            "logferry takes all, 1 or 0",
        ),
        None => {}
    }
    if let Some(z) = keys.take("compression_codec") {
        c.set("compression", z);
    }
    if let Some(v) = keys.take("headers_from_record") {
        c.untranslated(
            &format!("headers_from_record {v}"),
            "logferry's headers are tag_header and time_header",
        );
    }
    if format_and_inject(&mut keys, &mut c, false).is_none() {
        c.set("format", "json");
        c.untranslated(
            "<format> (default json)",
            "no <format>: written as logferry's json",
        );
    }
    client_tls(&mut keys, &mut c, false);
    buffer(&mut keys, &mut c, false);
    keys.finish(&mut c);
    imported.components.push(c);
}

fn opensearch(el: &Element, mut keys: Keys, m: &str, imported: &mut Imported) {
    let mut c = sink(el, &mut keys, "opensearch", m, imported);
    let scheme = keys.take("scheme").unwrap_or_else(|| "http".into());
    let endpoints: Vec<String> = match keys.take("hosts") {
        Some(h) => list(&h)
            .into_iter()
            .map(|h| {
                if h.contains("://") {
                    h
                } else {
                    format!("{scheme}://{h}")
                }
            })
            .collect(),
        None => {
            let host = keys.take("host").unwrap_or_else(|| "localhost".into());
            let port = keys.take("port").unwrap_or_else(|| "9200".into());
            vec![format!("{scheme}://{host}:{port}")]
        }
    };
    c.set(
        "endpoints",
        Value::List(endpoints.into_iter().map(Value::Str).collect()),
    );
    let logstash = keys.take_bool("logstash_format").unwrap_or(false);
    let prefix = keys
        .take("logstash_prefix")
        .unwrap_or_else(|| "logstash".into());
    let date = keys
        .take("logstash_dateformat")
        .unwrap_or_else(|| "%Y.%m.%d".into());
    let index = keys.take("index_name");
    if logstash {
        c.set("index", format!("{prefix}-{date}"));
        c.set(
            "time_key",
            keys.take("time_key").unwrap_or_else(|| "@timestamp".into()),
        );
    } else {
        c.set("index", index.unwrap_or_else(|| "fluentd".into()));
        c.set("time_key", "");
    }
    if keys.take_bool("include_tag_key") == Some(true) {
        c.set(
            "tag_key",
            keys.take("tag_key").unwrap_or_else(|| "tag".into()),
        );
    }
    if let Some(v) = keys.take("id_key") {
        c.set("id_key", v);
    }
    if let Some(v) = keys.take("routing_key") {
        c.set("routing_key", v);
    }
    if let Some(v) = keys.take("pipeline") {
        c.set("pipeline", v);
    }
    if let Some(a) = keys.take("write_operation") {
        match a.as_str() {
            "index" | "create" => c.set("action", a),
            other => c.untranslated(
                &format!("write_operation {other}"),
                "logferry indexes or creates",
            ),
        }
    }
    if let (Some(u), Some(p)) = (keys.take("user"), keys.take("password")) {
        c.set(
            "auth",
            Value::Map(vec![
                ("strategy".into(), "basic".into()),
                ("user".into(), Value::Str(u)),
                ("password".into(), Value::Str(p)),
            ]),
        );
    }
    if let Some(ca) = keys.take("ca_file") {
        c.set_in("tls", "ca_file", ca);
    }
    if keys.take_bool("ssl_verify") == Some(false) {
        c.set_in("tls", "insecure_skip_verify", Value::Bool(true));
    }
    if let Some(v) = keys.take("type_name") {
        c.untranslated(
            &format!("type_name {v}"),
            "document types are gone from OpenSearch and Elasticsearch 8",
        );
    }
    buffer(&mut keys, &mut c, false);
    keys.finish(&mut c);
    imported.components.push(c);
}

fn s3(el: &Element, mut keys: Keys, m: &str, imported: &mut Imported) {
    let mut c = sink(el, &mut keys, "s3", m, imported);
    c.set("bucket", keys.take("s3_bucket").unwrap_or_default());
    if let Some(r) = keys.take("s3_region") {
        c.set("region", r);
    }
    if let Some(e) = keys.take("s3_endpoint") {
        c.set("endpoint", e);
    }
    if let Some(v) = keys.take_bool("force_path_style") {
        c.set("force_path_style", Value::Bool(v));
    }
    if let Some(v) = keys.take("aws_key_id") {
        c.set("access_key_id", v);
    }
    if let Some(v) = keys.take("aws_sec_key") {
        c.set("secret_access_key", v);
    }
    let path = keys.take("path").unwrap_or_default();
    let store_as = keys.take("store_as").unwrap_or_else(|| "gzip".into());
    let (compression, ext) = match store_as.as_str() {
        "gzip" => ("gzip", "gz"),
        "zstd" => ("zstd", "zst"),
        "text" | "json" => ("none", if store_as == "json" { "json" } else { "txt" }),
        other => {
            c.untranslated(
                &format!("store_as {other}"),
                "logferry stores gzip, zstd or plain objects",
            );
            ("gzip", "gz")
        }
    };
    c.set("compression", compression);
    let slice = keys
        .take("time_slice_format")
        .unwrap_or_else(|| "%Y%m%d%H".into());
    match keys.take("s3_object_key_format") {
        Some(f) => {
            let key = f
                .replace("%{path}", &path)
                .replace("%{time_slice}", &slice)
                .replace("%{index}", "{unique}")
                .replace("%{file_extension}", ext)
                .replace("%{uuid_flush}", "{unique}")
                .replace("%{hex_random}", "{unique}");
            if key.contains("%{") {
                c.untranslated(
                    &format!("s3_object_key_format {f}"),
                    "a placeholder logferry does not fill",
                );
            }
            c.set("key", key);
        }
        None => c.set("key", format!("{path}{slice}_{{unique}}.{ext}")),
    }
    c.remark(
        "Fluentd numbers an hour's objects (%{index}); logferry names each one uniquely ({unique})",
    );
    match format_and_inject(&mut keys, &mut c, true) {
        None => {
            c.set("encoding", "ndjson");
            c.untranslated(
                "<format> out_file (the default)",
                "stored as NDJSON records",
            );
        }
        Some(k) if k == "json" => c.set("encoding", "ndjson"),
        Some(k) if k == "single_value" => {
            c.keys.retain(|(k, _)| k != "format");
            c.set("encoding", "text");
        }
        Some(_) => {
            c.keys.retain(|(k, _)| k != "format");
            c.set("encoding", "ndjson");
        }
    }
    buffer(&mut keys, &mut c, false);
    keys.finish(&mut c);
    imported.components.push(c);
}

fn http(el: &Element, mut keys: Keys, m: &str, imported: &mut Imported) {
    let mut c = sink(el, &mut keys, "http", m, imported);
    c.set("uri", keys.take("endpoint").unwrap_or_default());
    match keys.take("http_method").as_deref() {
        Some("put") => c.set("method", "put"),
        Some("post") | None => {}
        Some(other) => c.untranslated(&format!("http_method {other}"), "logferry posts or puts"),
    }
    let json_array = keys.take_bool("json_array").unwrap_or(false);
    match format_and_inject(&mut keys, &mut c, true) {
        Some(k) if k == "json" => c.set("encoding", if json_array { "json" } else { "ndjson" }),
        Some(k) if k == "single_value" => {
            c.keys.retain(|(k, _)| k != "format");
            c.set("encoding", "text");
        }
        _ => {
            c.keys.retain(|(k, _)| k != "format");
            c.set("encoding", "ndjson");
            c.untranslated("<format> (not json)", "sent as NDJSON records");
        }
    }
    if let Some(h) = keys.take("headers") {
        match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&h) {
            Ok(map) => c.set(
                "headers",
                Value::Map(
                    map.into_iter()
                        .map(|(k, v)| {
                            (
                                k,
                                Value::Str(
                                    v.as_str()
                                        .map(String::from)
                                        .unwrap_or_else(|| v.to_string()),
                                ),
                            )
                        })
                        .collect(),
                ),
            ),
            Err(_) => c.untranslated(&format!("headers {h}"), "not a JSON hash"),
        }
    }
    if let Some(a) = keys.section("auth") {
        let mut ak = Keys::new(a);
        ak.take("method");
        c.set(
            "auth",
            Value::Map(vec![
                ("strategy".into(), "basic".into()),
                (
                    "user".into(),
                    Value::Str(ak.take("username").unwrap_or_default()),
                ),
                (
                    "password".into(),
                    Value::Str(ak.take("password").unwrap_or_default()),
                ),
            ]),
        );
        ak.finish_in("<auth>", &mut c);
    }
    if let Some(t) = keys.take("open_timeout").and_then(|v| duration(&v)) {
        c.set("connect_timeout", t);
    }
    if let Some(t) = keys.take("read_timeout").and_then(|v| duration(&v)) {
        c.set("request_timeout", t);
    }
    if let Some(codes) = keys.take("retryable_response_codes") {
        let codes: Vec<Value> = list(codes.trim_matches(['[', ']']))
            .into_iter()
            .filter_map(|c| c.parse::<i64>().ok().map(Value::Int))
            .collect();
        c.set("retry_statuses", Value::List(codes));
    }
    if keys.take("compress").as_deref() == Some("gzip") {
        c.set("compression", "gzip");
    }
    client_tls(&mut keys, &mut c, false);
    if c.get("tls") == Some(&Value::Map(Vec::new())) {
        c.keys.retain(|(k, _)| k != "tls");
    }
    buffer(&mut keys, &mut c, true);
    keys.finish(&mut c);
    imported.components.push(c);
}

/// rewrite_tag_filter as logferry's rewrite_tag filter.
fn rewrite_tag(el: &Element, mut keys: Keys, m: &str, imported: &mut Imported) {
    let mut c = component(
        el,
        &mut keys,
        Kind::Filter,
        "rewrite_tag",
        "rewrite_tag_filter",
        imported,
    );
    c.set("match", m);
    let mut rules = Vec::new();
    let mut add = |key: &str, pattern: &str, tag: &str, invert: bool, c: &mut Component| {
        if invert {
            c.untranslated(
                &format!("<rule> {key} {pattern} {tag} invert true"),
                "logferry's rules have no invert (its regexes cannot be negated)",
            );
            return;
        }
        let tag = tag
            .replace("__TAG__", "${tag}")
            .replace("__HOSTNAME__", "${hostname}")
            .replace("${tag_parts[", "${tag[");
        rules.push(Value::Map(vec![
            ("field".into(), Value::Str(super::field(key))),
            ("regex".into(), Value::Str(regex(pattern))),
            ("tag".into(), Value::Str(tag)),
        ]));
    };
    for r in keys.sections("rule") {
        match (r.get("key"), r.get("pattern"), r.get("tag")) {
            (Some(k), Some(p), Some(t)) => {
                let invert = matches!(r.get("invert"), Some("true"));
                add(k, p, t, invert, &mut c);
            }
            _ => c.untranslated(
                &format!("<rule> ({}:{})", r.file, r.line),
                "needs key, pattern and tag",
            ),
        }
    }
    for n in 1..=50 {
        if let Some(v) = keys.take(&format!("rewriterule{n}")) {
            let parts: Vec<&str> = v.split_whitespace().collect();
            match parts.as_slice() {
                [k, p, t] => add(k, p, t, false, &mut c),
                [k, p, t, ..] => add(k, p, t, false, &mut c),
                _ => c.untranslated(
                    &format!("rewriterule{n} {v}"),
                    "needs a key, a pattern and a tag",
                ),
            }
        }
    }
    if rules.is_empty() {
        c.comment_out("no rule logferry can take");
    }
    c.set("rules", Value::List(rules));
    c.set("keep", Value::Bool(false));
    c.remark("Fluentd drops an event no rule matches; here it keeps its tag, which the <match>es after this one exclude, so it reaches no sink they make either");
    c.remark("an event given a new tag starts again at the top of its label in Fluentd (the filters above meet it again); in logferry it goes on from the next filter");
    for k in [
        "hostname_command",
        "remove_tag_prefix",
        "remove_tag_regexp",
        "capitalize_regex_backreference",
        "@label",
    ] {
        if let Some(v) = keys.take(k) {
            c.untranslated(&format!("{k} {v}"), "no logferry equivalent");
        }
    }
    keys.finish(&mut c);
    imported.components.push(c);
}
