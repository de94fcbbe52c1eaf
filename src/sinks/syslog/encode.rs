//! Records into syslog messages: RFC 5424 or RFC 3164, with the header
//! fields rendered from the sink's templates and the record's message as
//! MSG.

use crate::event::{EventTime, RecordRef};
use crate::format::time::TimeFormat;
use crate::format::Template;
use crate::protocol::msgpack::{Reader, Value};
use crate::protocol::syslog::{FACILITIES, SEVERITIES};

use super::config::{Rfc, SyslogSinkConfig};

/// What a facility or severity that names none becomes.
const DEFAULT_FACILITY: u8 = 1; // user
const DEFAULT_SEVERITY: u8 = 5; // notice

/// The sink's templates, ready to render.
pub struct Encoder {
    /// RFC 5424 or 3164.
    rfc: Rfc,
    facility: Template,
    severity: Template,
    app_name: Template,
    /// Unset: `host`.
    hostname: Option<Template>,
    /// Unset: `-`.
    msg_id: Option<Template>,
    /// The field holding the structured data, if configured.
    structured_data: Option<Vec<u8>>,
    /// This machine's host name, for `{host}` and the default HOSTNAME.
    host: String,
    /// For `{time}` in templates.
    time_format: TimeFormat,
    /// Scratch space for rendering one template.
    scratch: Vec<u8>,
}

/// What rendering one message found wrong (the message is sent anyway).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Unnamed {
    /// The facility named none; `user` was sent.
    pub facility: bool,
    /// The severity named none; `notice` was sent.
    pub severity: bool,
}

impl Encoder {
    pub fn new(c: &SyslogSinkConfig) -> Result<Self, String> {
        let optional = |t: &str| (!t.is_empty()).then(|| Template::parse(t)).transpose();
        Ok(Encoder {
            rfc: c.rfc,
            facility: Template::parse(&c.facility)?,
            severity: Template::parse(&c.severity)?,
            app_name: Template::parse(&c.app_name)?,
            hostname: optional(&c.hostname)?,
            msg_id: optional(&c.msg_id)?,
            structured_data: c.structured_data.as_ref().map(|f| f.as_bytes().to_vec()),
            host: crate::format::hostname(),
            time_format: TimeFormat::new(None)?,
            scratch: Vec::new(),
        })
    }

    /// Appends one message (without framing) for a record.
    pub fn message(
        &mut self,
        out: &mut Vec<u8>,
        tag: &str,
        time: EventTime,
        rec: RecordRef<'_>,
    ) -> Unnamed {
        let mut unnamed = Unnamed::default();
        let facility = self.code(Part::Facility, tag, time, rec);
        let severity = self.code(Part::Severity, tag, time, rec);
        unnamed.facility = facility.is_none();
        unnamed.severity = severity.is_none();
        let pri = u16::from(facility.unwrap_or(DEFAULT_FACILITY)) * 8
            + u16::from(severity.unwrap_or(DEFAULT_SEVERITY));
        out.extend_from_slice(format!("<{pri}>").as_bytes());
        let secs = i64::from(time.secs);
        match self.rfc {
            Rfc::Rfc5424 => {
                out.extend_from_slice(b"1 ");
                match chrono::DateTime::from_timestamp(secs, time.nanos) {
                    Some(t) => out.extend_from_slice(
                        t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
                            .as_bytes(),
                    ),
                    None => out.push(b'-'),
                }
                out.push(b' ');
                self.header(out, Part::Hostname, 255, tag, time, rec);
                out.push(b' ');
                self.header(out, Part::AppName, 48, tag, time, rec);
                out.extend_from_slice(b" - ");
                self.header(out, Part::MsgId, 32, tag, time, rec);
                out.push(b' ');
                self.structured(out, rec);
                out.push(b' ');
            }
            Rfc::Rfc3164 => {
                use chrono::TimeZone;
                match chrono::Local.timestamp_opt(secs, 0).single() {
                    Some(t) => {
                        out.extend_from_slice(t.format("%b %e %H:%M:%S").to_string().as_bytes())
                    }
                    None => out.extend_from_slice(b"Jan  1 00:00:00"),
                }
                out.push(b' ');
                self.header(out, Part::Hostname, 255, tag, time, rec);
                out.push(b' ');
                self.header(out, Part::AppName, 32, tag, time, rec);
                out.extend_from_slice(b": ");
            }
        }
        crate::format::write_message(rec, out);
        unnamed
    }

    fn render(&mut self, part: Part, tag: &str, time: EventTime, rec: RecordRef<'_>) -> bool {
        self.scratch.clear();
        let t = match part {
            Part::Facility => &self.facility,
            Part::Severity => &self.severity,
            Part::AppName => &self.app_name,
            Part::Hostname => match &self.hostname {
                Some(t) => t,
                None => {
                    self.scratch.extend_from_slice(self.host.as_bytes());
                    return true;
                }
            },
            Part::MsgId => match &self.msg_id {
                Some(t) => t,
                None => return false,
            },
        };
        t.render(
            &mut self.scratch,
            tag,
            time,
            rec,
            &self.host,
            &mut self.time_format,
        );
        true
    }

    /// A facility or severity code from its rendered name or number.
    fn code(&mut self, part: Part, tag: &str, time: EventTime, rec: RecordRef<'_>) -> Option<u8> {
        self.render(part, tag, time, rec);
        let text = std::str::from_utf8(&self.scratch).ok()?.trim();
        let names: &[&str] = if part == Part::Facility {
            &FACILITIES
        } else {
            &SEVERITIES
        };
        let code = match text.parse::<u8>() {
            Ok(n) => n,
            Err(_) => names.iter().position(|n| n.eq_ignore_ascii_case(text))? as u8,
        };
        (usize::from(code) < names.len()).then_some(code)
    }

    /// A header field: printable US-ASCII without spaces, at most `max`
    /// bytes (others replaced by `_`); empty: `-`.
    fn header(
        &mut self,
        out: &mut Vec<u8>,
        part: Part,
        max: usize,
        tag: &str,
        time: EventTime,
        rec: RecordRef<'_>,
    ) {
        if !self.render(part, tag, time, rec) || self.scratch.is_empty() {
            return out.push(b'-');
        }
        out.extend(self.scratch.iter().take(max).map(|&b| {
            if (33..=126).contains(&b) {
                b
            } else {
                b'_'
            }
        }));
    }

    /// STRUCTURED-DATA from the configured field's map of maps; `-` when
    /// there is none.
    fn structured(&self, out: &mut Vec<u8>, rec: RecordRef<'_>) {
        let start = out.len();
        let written = self
            .structured_data
            .as_deref()
            .and_then(|f| rec.field_raw(f))
            .is_some_and(|raw| write_sd(out, raw).is_some() && out.len() > start);
        if !written {
            out.truncate(start);
            out.push(b'-');
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Facility,
    Severity,
    AppName,
    Hostname,
    MsgId,
}

/// `[id name="value" …]…` from an encoded map of maps; `None` (and part
/// written) if it is not one.
fn write_sd(out: &mut Vec<u8>, raw: &[u8]) -> Option<()> {
    let mut r = Reader::new(raw);
    let Value::Map(n) = r.read().ok()? else {
        return None;
    };
    for _ in 0..n {
        let Value::Str(id) = r.read().ok()? else {
            return None;
        };
        let Value::Map(params) = r.read().ok()? else {
            return None;
        };
        out.push(b'[');
        sd_name(out, id);
        for _ in 0..params {
            let Value::Str(name) = r.read().ok()? else {
                return None;
            };
            out.push(b' ');
            sd_name(out, name);
            out.extend_from_slice(b"=\"");
            match r.read().ok()? {
                Value::Str(v) => {
                    for &b in v {
                        if matches!(b, b'"' | b'\\' | b']') {
                            out.push(b'\\');
                        }
                        out.push(b);
                    }
                }
                Value::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
                Value::UInt(u) => out.extend_from_slice(u.to_string().as_bytes()),
                Value::Bool(b) => out.extend_from_slice(b.to_string().as_bytes()),
                _ => return None,
            }
            out.push(b'"');
        }
        out.push(b']');
    }
    Some(())
}

/// An SD-NAME: printable US-ASCII except `=`, space, `]` and `"`, at most
/// 32 bytes (others replaced by `_`).
fn sd_name(out: &mut Vec<u8>, name: &[u8]) {
    out.extend(name.iter().take(32).map(|&b| match b {
        b'=' | b' ' | b']' | b'"' => b'_',
        33..=126 => b,
        _ => b'_',
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::msgpack::write;

    fn config(extra: &str) -> SyslogSinkConfig {
        toml::from_str(&format!("address = \"127.0.0.1:514\"\n{extra}")).unwrap()
    }

    fn record() -> Vec<u8> {
        let mut m = Vec::new();
        write::map_len(&mut m, 4);
        write::str(&mut m, b"message");
        write::str(&mut m, b"hello world");
        write::str(&mut m, b"level");
        write::str(&mut m, b"err");
        write::str(&mut m, b"sd");
        write::map_len(&mut m, 1);
        write::str(&mut m, b"x@1");
        write::map_len(&mut m, 2);
        write::str(&mut m, b"k");
        write::str(&mut m, b"a\"b]");
        write::str(&mut m, b"n");
        write::uint(&mut m, 7);
        write::str(&mut m, b"id");
        write::str(&mut m, b"M 1");
        m
    }

    #[test]
    fn rfc5424_with_templates_and_structured_data() {
        let mut e = Encoder::new(&config(
            "facility = \"local3\"\nseverity = \"{level}\"\nhostname = \"h1\"\nmsg_id = \"{id}\"\nstructured_data = \"sd\"",
        ))
        .unwrap();
        let rec = record();
        let mut out = Vec::new();
        let u = e.message(
            &mut out,
            "app.x",
            EventTime::new(1_700_000_000, 5_000),
            RecordRef::Map(&rec),
        );
        assert_eq!(u, Unnamed::default());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "<155>1 2023-11-14T22:13:20.000005Z h1 app.x - M_1 [x@1 k=\"a\\\"b\\]\" n=\"7\"] hello world"
        );
    }

    #[test]
    fn rfc3164_and_unknown_names_fall_back() {
        let mut e = Encoder::new(&config(
            "rfc = \"3164\"\nfacility = \"nope\"\nseverity = \"9\"\nhostname = \"h1\"\napp_name = \"myapp\"",
        ))
        .unwrap();
        let mut out = Vec::new();
        let u = e.message(
            &mut out,
            "t",
            EventTime::new(1_700_000_000, 0),
            RecordRef::Line(b"line"),
        );
        assert_eq!(
            u,
            Unnamed {
                facility: true,
                severity: true
            }
        );
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with("<13>Nov "), "{s}");
        assert!(s.ends_with(" h1 myapp: line"), "{s}");
    }
}
