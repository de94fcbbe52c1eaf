//! `<parse>` sections: the parser (or remap) filter that reads a record's
//! line as Fluentd's parser plugin does, and the tail source's multiline
//! rule of `@type multiline`.

use super::super::model::{vrl_str, Component, Value};
use super::syntax::Element;
use super::{regex, Keys};

/// What a `<parse>` section became.
pub enum Parsed {
    /// `none`: the line stays `{"message": LINE}` (its key, if not `message`).
    Lines(String),
    /// The filter reads the line.
    Filter,
    /// `multiline`: lines join from one matching `format_firstline` (this
    /// regex), then the filter reads the joined text.
    Multiline(String),
    /// Not translated (`msgpack`, a parser plugin logferry lacks): why.
    Unsupported(String),
}

/// How the parsed fields meet the record (filter_parser's options).
#[derive(Default, Clone, Copy)]
pub struct Merge {
    /// Keep the record's other fields (`reserve_data`).
    pub reserve: bool,
    /// Keep the parsed field too (`reserve_data` without
    /// `remove_key_name_field`).
    pub keep_key: bool,
}

/// Sets the keys of `f` (a `parser` filter, or made a `remap` one) so it
/// parses field `key` as `parse` says.
pub fn into_filter(parse: &Element, key: &str, merge: Merge, f: &mut Component) -> Parsed {
    let mut keys = Keys::new(parse);
    let kind = parse.get("@type").unwrap_or("").to_string();
    let mut time_default = "time";
    let outcome = match kind.as_str() {
        "none" => {
            let k = keys.take("message_key").unwrap_or_else(|| "message".into());
            keys.finish(f);
            return Parsed::Lines(k);
        }
        "json" => {
            f.set("format", "json");
            Parsed::Filter
        }
        "regexp" => {
            let Some(expr) = keys.take("expression") else {
                return Parsed::Unsupported("a regexp <parse> without expression".into());
            };
            let re = regex(&expr);
            if !re.contains("(?<time>") && !re.contains("(?P<time>") {
                time_default = "";
            }
            f.set("format", "regex");
            f.set("regex", re);
            keys.take("ignorecase");
            keys.take("multiline");
            Parsed::Filter
        }
        "multiline" => {
            let Some(first) = keys.take("format_firstline") else {
                return Parsed::Unsupported("a multiline <parse> without format_firstline".into());
            };
            let mut re = String::from("(?s)");
            for n in 1..=20 {
                if let Some(part) = keys.take(&format!("format{n}")) {
                    re.push_str(&regex(&part));
                }
            }
            if re.len() == 4 {
                return Parsed::Unsupported("a multiline <parse> without format1".into());
            }
            if !re.contains("(?<time>") {
                time_default = "";
            }
            f.set("format", "regex");
            f.set("regex", re);
            Parsed::Multiline(regex(&first))
        }
        "csv" => {
            let columns = super::list(&keys.take("keys").unwrap_or_default());
            f.set("format", "csv");
            f.set(
                "columns",
                Value::List(columns.into_iter().map(Value::Str).collect()),
            );
            keys.take("parser_type");
            time_default = "";
            Parsed::Filter
        }
        "apache2" | "nginx" | "apache_error" => {
            f.set("format", kind.as_str());
            if kind != "apache_error" {
                f.set_in("types", "code", "int");
                f.set_in("types", "size", "int");
                f.remark(format!(
                    "logferry's {kind} is Fluent Bit's regex: a `-` size is a field \"-\" where Fluentd's is nil"
                ));
            }
            // logferry's built-in formats read the time themselves
            time_default = "";
            Parsed::Filter
        }
        "syslog" => {
            let format = match keys.take("message_format").as_deref() {
                Some("rfc5424") => "syslog_rfc5424",
                Some("auto") => "syslog",
                _ => "syslog_rfc3164",
            };
            f.set("format", format);
            keys.take("with_priority");
            f.remark("logferry's syslog fields are Fluent Bit's: pri (a string), time (kept), host, ident, pid, msgid, extradata, message");
            time_default = "";
            Parsed::Filter
        }
        "ltsv" | "tsv" => {
            let expr = if kind == "ltsv" {
                let fd = keys.take("delimiter").unwrap_or_else(|| "\t".into());
                let kv = keys.take("label_delimiter").unwrap_or_else(|| ":".into());
                format!(
                    "parse_key_value!(.{}, key_value_delimiter: {}, field_delimiter: {})",
                    vrl_field(key),
                    vrl_str(&kv),
                    vrl_str(&fd)
                )
            } else {
                let columns = super::list(&keys.take("keys").unwrap_or_default());
                let d = keys.take("delimiter").unwrap_or_else(|| "\t".into());
                let fields: Vec<String> = columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| format!("{}: values[{i}]", vrl_str(c)))
                    .collect();
                format!(
                    "{{ values = split(string!(.{}), {}); {{{}}} }}",
                    vrl_field(key),
                    vrl_str(&d),
                    fields.join(", ")
                )
            };
            f.set("type", "remap");
            let mut program = format!("parsed = {expr}\n");
            if merge.reserve {
                if !merge.keep_key {
                    program.push_str(&format!("del(.{})\n", vrl_field(key)));
                }
                program.push_str(". = merge(., parsed)\n");
            } else {
                program.push_str(". = parsed\n");
            }
            f.set("source", program);
            time_default = "";
            Parsed::Filter
        }
        other => {
            return Parsed::Unsupported(format!("logferry has no {other} parser"));
        }
    };
    let time_key = keys
        .take("time_key")
        .unwrap_or_else(|| time_default.to_string());
    let time_format = keys.take("time_format");
    let keep = keys.take_bool("keep_time_key");
    let is_remap = f.get("type") == Some(&Value::from("remap"));
    if !time_key.is_empty() && !is_remap {
        f.set("time_key", time_key);
        if let Some(tf) = time_format {
            f.set("time_format", strptime(&tf));
        }
        if let Some(k) = keep {
            f.set("time_keep", Value::Bool(k));
        }
    } else if let Some(tf) = time_format {
        f.untranslated(
            &format!("time_format {tf}"),
            "no time field is parsed (no time_key, no `time` group): the record keeps its time",
        );
    }
    keys.take("time_type");
    if let Some(types) = keys.take("types") {
        for t in super::list(&types) {
            let (name, ty) = t.split_once(':').unwrap_or((t.as_str(), "string"));
            match ty.trim() {
                "integer" => f.set_in("types", name.trim(), "int"),
                "float" => f.set_in("types", name.trim(), "float"),
                "bool" => f.set_in("types", name.trim(), "bool"),
                "string" => {}
                other => f.untranslated(
                    &format!("types {name}:{other}"),
                    "logferry converts to int, float and bool only",
                ),
            }
        }
    }
    for k in ["localtime", "utc", "timezone"] {
        if let Some(v) = keys.take(k) {
            f.untranslated(
                &format!("{k} {v}"),
                "logferry reads a time without a zone as UTC",
            );
        }
    }
    keys.finish(f);
    outcome
}

/// Ruby's strptime additions logferry writes otherwise: `%N` (and `%3N`,
/// `%6N`, `%9N`) as `%L`, the fraction.
pub fn strptime(format: &str) -> String {
    format
        .replace("%3N", "%L")
        .replace("%6N", "%L")
        .replace("%9N", "%L")
        .replace("%N", "%L")
}

/// A field as a VRL path segment: quoted.
pub fn vrl_field(k: &str) -> String {
    vrl_str(k)
}
