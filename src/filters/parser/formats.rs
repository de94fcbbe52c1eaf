//! The formats a parser filter reads: each turns a field's text into an
//! encoded msgpack map.

use std::borrow::Cow;
use std::cell::OnceCell;

use regex::bytes::Regex;
use serde::Deserialize;

use super::access_log::Preset;
use super::syslog::Rfc;
use crate::event::EventTime;
use crate::protocol::msgpack::write;
use crate::protocol::syslog::Clock;

/// The `format` of a parser filter.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Json,
    Logfmt,
    Regex,
    Apache,
    Apache2,
    ApacheError,
    Nginx,
    /// A CRI container log line: `TIME STREAM P|F MESSAGE`.
    Cri,
    /// Docker's json-file line: `{"log": …, "stream": …, "time": …}`.
    Docker,
    /// A syslog message, RFC 5424 or RFC 3164 (told apart by the `1`
    /// after `<PRI>`); sets the record time from its timestamp.
    Syslog,
    /// RFC 3164 only (Fluent Bit's `syslog-rfc3164`).
    #[serde(alias = "syslog-rfc3164")]
    SyslogRfc3164,
    /// RFC 5424 only (Fluent Bit's `syslog-rfc5424`).
    #[serde(alias = "syslog-rfc5424")]
    SyslogRfc5424,
    /// Comma-separated values, named by `columns`.
    Csv,
}

impl Format {
    /// The `time_key` and `time_format` a format has unless told otherwise.
    pub(super) fn default_time(self) -> Option<(&'static str, &'static str)> {
        match self {
            // RFC 3339 with nanoseconds, as the container runtimes write it
            Format::Cri | Format::Docker => Some(("time", "%+")),
            // as Fluent Bit's presets read them
            Format::Apache | Format::Apache2 | Format::Nginx => {
                Some(("time", "%d/%b/%Y:%H:%M:%S %z"))
            }
            _ => None,
        }
    }

    /// Whether a format's own `time_key` field stays among the fields
    /// unless told otherwise: Fluent Bit's `cri` and `docker` presets have
    /// `Time_Keep On`, its access-log presets not.
    pub(super) fn keeps_time(self) -> bool {
        matches!(self, Format::Cri | Format::Docker)
    }
}

// Fluent Bit's parsers.conf presets, so that a Fluent Bit user's fields
// keep their names.
pub(super) const APACHE: &str = r#"^(?<host>[^ ]*) [^ ]* (?<user>[^ ]*) \[(?<time>[^\]]*)\] "(?<method>\S+)(?: +(?<path>[^\"]*?)(?: +\S*)?)?" (?<code>[^ ]*) (?<size>[^ ]*)(?: "(?<referer>[^\"]*)" "(?<agent>[^\"]*)")?$"#;
pub const APACHE2: &str = r#"^(?<host>[^ ]*) [^ ]* (?<user>[^ ]*) \[(?<time>[^\]]*)\] "(?<method>\S+)(?: +(?<path>[^ ]*) +\S*)?" (?<code>[^ ]*) (?<size>[^ ]*)(?: "(?<referer>[^\"]*)" "(?<agent>.*)")?$"#;
const APACHE_ERROR: &str = r#"^\[[^ ]* (?<time>[^\]]*)\] \[(?<level>[^\]]*)\](?: \[pid (?<pid>[^\]]*)\])?( \[client (?<client>[^\]]*)\])? (?<message>.*)$"#;
// the message may hold newlines: a multiline chain (`["cri", "java"]`)
// joins a trace's lines into one CRI line
const CRI: &str =
    r#"^(?<time>[^ ]+) (?<stream>stdout|stderr) (?<logtag>[^ ]*) (?<message>(?s:.*))$"#;
const NGINX: &str = r#"^(?<remote>[^ ]*) (?<host>[^ ]*) (?<user>[^ ]*) \[(?<time>[^\]]*)\] "(?<method>\S+)(?: +(?<path>[^\"]*?)(?: +\S*)?)?" (?<code>[^ ]*) (?<size>[^ ]*)(?: "(?<referer>[^\"]*)" "(?<agent>[^\"]*)")"#;

/// A compiled format.
pub(super) enum Parser {
    Json,
    Logfmt,
    Regex(Regex),
    /// An Apache access-log preset: the scanner where it can, else the
    /// regex.
    AccessLog(Preset, Regex),
    Syslog(Rfc),
    /// The column names.
    Csv(Vec<String>),
}

/// What a parsed field's text gave.
pub(super) struct Parsed {
    /// How many fields the written map has.
    pub(super) fields: usize,
    /// The record's time, for formats that carry one in a known layout
    /// (syslog).
    pub(super) time: Option<EventTime>,
}

impl Parser {
    pub(super) fn new(
        format: Format,
        regex: Option<&str>,
        columns: Option<&[String]>,
    ) -> Result<Parser, String> {
        match (format, columns) {
            (Format::Csv, None) => {
                return Err("format = \"csv\" needs `columns` (the field names, in order)".into())
            }
            (Format::Csv, Some([])) => return Err("`columns` is empty".into()),
            (Format::Csv, Some(c)) if regex.is_none() => {
                if let Some(dup) = c.iter().enumerate().find(|(i, n)| c[..*i].contains(n)) {
                    return Err(format!("columns: {:?} twice", dup.1));
                }
                return Ok(Parser::Csv(c.to_vec()));
            }
            (Format::Csv, Some(_)) => {}
            (_, Some(_)) => return Err("`columns` goes with format = \"csv\" only".into()),
            (_, None) => {}
        }
        let preset = match (format, regex) {
            (Format::Regex, None) => return Err("format = \"regex\" needs `regex`".into()),
            (Format::Regex, Some(r)) => r,
            (_, Some(_)) => return Err("`regex` goes with format = \"regex\" only".into()),
            (Format::Syslog, None) => return Ok(Parser::Syslog(Rfc::Any)),
            (Format::SyslogRfc3164, None) => return Ok(Parser::Syslog(Rfc::Rfc3164)),
            (Format::SyslogRfc5424, None) => return Ok(Parser::Syslog(Rfc::Rfc5424)),
            (Format::Csv, None) => return Err("format = \"csv\" needs `columns`".into()),
            (Format::Json | Format::Docker, None) => return Ok(Parser::Json),
            (Format::Cri, None) => CRI,
            (Format::Logfmt, None) => return Ok(Parser::Logfmt),
            (Format::Apache, None) => APACHE,
            (Format::Apache2, None) => APACHE2,
            (Format::ApacheError, None) => APACHE_ERROR,
            (Format::Nginx, None) => NGINX,
        };
        let re = Regex::new(preset).map_err(|e| format!("regex: {e}"))?;
        if re.capture_names().flatten().next().is_none() {
            return Err("regex: no named capture, so no field (name them: (?<level>\\w+))".into());
        }
        Ok(match format {
            Format::Apache => Parser::AccessLog(Preset::Apache, re),
            Format::Apache2 => Parser::AccessLog(Preset::Apache2, re),
            _ => Parser::Regex(re),
        })
    }

    /// Writes `text` parsed as a msgpack map into `out` (empty) and says
    /// how many fields it has; `None` if it does not parse (`out` may then
    /// hold part of it: the caller drops it). `clock` is the time of the
    /// batch, for syslog timestamps without a year, worked out by the
    /// first syslog message that needs it.
    pub(super) fn parse(
        &self,
        text: &[u8],
        clock: &OnceCell<Clock>,
        out: &mut Vec<u8>,
    ) -> Option<Parsed> {
        let fields = match self {
            Parser::Syslog(rfc) => {
                let clock = clock.get_or_init(|| Clock::new(EventTime::now()));
                let (fields, time) = super::syslog::parse(text, *rfc, clock, out)?;
                return Some(Parsed { fields, time });
            }
            Parser::Csv(columns) => super::csv::parse(text, columns, out)?,
            Parser::Json => {
                crate::protocol::json::object_to_msgpack(out, text).ok()?;
                // the map header says how many (`out` holds only this map)
                crate::protocol::msgpack::Reader::new(out)
                    .read_map_len()
                    .ok()?
            }
            Parser::Logfmt => logfmt(text, out)?,
            Parser::AccessLog(preset, re) => match super::access_log::scan(text, *preset) {
                Some(fields) => {
                    const NAMES: [&str; 9] = [
                        "host", "user", "time", "method", "path", "code", "size", "referer",
                        "agent",
                    ];
                    let n = fields.iter().flatten().count();
                    write::map_len(out, n);
                    for (name, value) in NAMES.iter().zip(fields) {
                        if let Some(value) = value {
                            write::str(out, name.as_bytes());
                            write::str(out, value);
                        }
                    }
                    n
                }
                None => regex_fields(re, text, out)?,
            },
            Parser::Regex(re) => regex_fields(re, text, out)?,
        };
        Some(Parsed { fields, time: None })
    }
}

/// The named captures of `re` in `text` as a map of strings; `None` if it
/// does not match.
fn regex_fields(re: &Regex, text: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let caps = re.captures(text)?;
    let fields: Vec<(&str, &[u8])> = re
        .capture_names()
        .enumerate()
        .filter_map(|(i, name)| Some((name?, caps.get(i)?.as_bytes())))
        .collect();
    write::map_len(out, fields.len());
    for (name, value) in &fields {
        write::str(out, name.as_bytes());
        write::str(out, value);
    }
    Some(fields.len())
}

/// A logfmt key and its value: `None` for a key without `=`.
type LogfmtPair<'a> = (&'a [u8], Option<Cow<'a, [u8]>>);

/// `key=value key="quoted \" value" flag` as a map of strings, read as
/// Go's logfmt (github.com/go-logfmt/logfmt) reads it: a quoted value's
/// escapes are JSON's (see [`unquote`]); a key without `=` is `true` and
/// `key=` an empty string, as in Fluent Bit. `None` for text with no key,
/// an unclosed quote, or an escape Go's logfmt refuses.
fn logfmt(text: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let mut pairs: Vec<LogfmtPair<'_>> = Vec::new();
    let mut i = 0;
    let n = text.len();
    while i < n {
        while i < n && text[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == n {
            break;
        }
        let start = i;
        while i < n && text[i] != b'=' && !text[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &text[start..i];
        if key.is_empty() {
            return None;
        }
        if i < n && text[i] == b'=' {
            i += 1;
            if i < n && text[i] == b'"' {
                // the closing quote: the first one no backslash escapes
                let open = i;
                i += 1;
                let mut escaped = false;
                loop {
                    match text.get(i)? {
                        _ if escaped => escaped = false,
                        b'\\' => escaped = true,
                        b'"' => break,
                        _ => {}
                    }
                    i += 1;
                }
                let inner = &text[open + 1..i];
                i += 1;
                let value = if inner.contains(&b'\\') {
                    Cow::Owned(unquote(inner)?)
                } else {
                    Cow::Borrowed(inner)
                };
                pairs.push((key, Some(value)));
            } else {
                let vs = i;
                while i < n && !text[i].is_ascii_whitespace() {
                    i += 1;
                }
                pairs.push((key, Some(Cow::Borrowed(&text[vs..i]))));
            }
        } else {
            pairs.push((key, None));
        }
    }
    if pairs.is_empty() {
        return None;
    }
    write::map_len(out, pairs.len());
    for (k, v) in &pairs {
        write::str(out, k);
        match v {
            Some(v) => write::str(out, v),
            None => out.push(0xc3),
        }
    }
    Some(pairs.len())
}

/// The text of a quoted logfmt value (without its quotes) with its
/// escapes read as Go's logfmt reads them, which are JSON's: `\"`, `\\`,
/// `\/`, `\'`, `\b`, `\f`, `\n`, `\r`, `\t` and `\uXXXX` (a UTF-16
/// surrogate pair is one character; a lone surrogate is U+FFFD). `None`
/// for any other escape, as there. Other bytes are kept as they are.
fn unquote(inner: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let c = inner[i];
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let decoded = match *inner.get(i + 1)? {
            c @ (b'"' | b'\\' | b'/' | b'\'') => c,
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let unit = hex4(inner.get(i + 2..i + 6)?)?;
                i += 6;
                let ch = if (0xd800..0xdc00).contains(&unit) {
                    // a high surrogate: one character with a low one after it
                    let low = inner
                        .get(i..i + 2)
                        .filter(|e| *e == b"\\u")
                        .and_then(|_| hex4(inner.get(i + 2..i + 6)?))
                        .filter(|l| (0xdc00..0xe000).contains(l));
                    match low {
                        Some(low) => {
                            i += 6;
                            char::from_u32(0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00))
                        }
                        None => None,
                    }
                } else {
                    char::from_u32(unit)
                };
                let ch = ch.unwrap_or(char::REPLACEMENT_CHARACTER);
                out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                continue;
            }
            _ => return None,
        };
        out.push(decoded);
        i += 2;
    }
    Some(out)
}

/// Four hex digits as a number.
fn hex4(digits: &[u8]) -> Option<u32> {
    if digits.len() != 4 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::unquote;

    fn text(quoted: &str) -> Option<String> {
        unquote(quoted.as_bytes()).map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn escapes_are_read_as_go_logfmt_reads_them() {
        assert_eq!(text(r#"a\"b\\c\/d\'e"#).unwrap(), "a\"b\\c/d'e");
        assert_eq!(text(r"\b\f\n\r\t").unwrap(), "\u{8}\u{c}\n\r\t");
        assert_eq!(text(r"caf\u00e9 \u00E9").unwrap(), "café é");
        // a surrogate pair is one character; a lone half is U+FFFD, and
        // what follows a lone high half is read on its own
        assert_eq!(text(r"\ud83d\ude00").unwrap(), "😀");
        assert_eq!(text(r"\ude00x").unwrap(), "\u{fffd}x");
        assert_eq!(text(r"\ud83dx").unwrap(), "\u{fffd}x");
        assert_eq!(text(r"\ud83d\u0041").unwrap(), "\u{fffd}A");
        // what Go's logfmt refuses
        for bad in [r"\x", r"\u12", r"\u12g4", "\\"] {
            assert_eq!(text(bad), None, "{bad}");
        }
    }
}
