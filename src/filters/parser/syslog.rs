//! `format = "syslog"` (and `syslog_rfc3164`, `syslog_rfc5424`): a syslog
//! message into the fields Fluent Bit's `syslog-rfc3164` and
//! `syslog-rfc5424` parsers give (`pri`, `time`, `host`, `ident`, `pid`,
//! `msgid`, `extradata`, `message`), read by the TCP source's parser
//! ([`crate::protocol::syslog`]), so both accept the same messages.

use crate::event::EventTime;
use crate::protocol::msgpack::write;
use crate::protocol::syslog::{parse_with, Clock};

/// Which RFC a syslog format accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Rfc {
    /// Either: `<PRI>1 ` starts an RFC 5424 message, anything else after
    /// `<PRI>` is read as RFC 3164.
    Any,
    Rfc3164,
    Rfc5424,
}

/// Writes the message's fields as a map into `out` (empty); `None` if it
/// is not a syslog message of `rfc`. A part the message leaves out (or
/// gives as `-`) is no field, but with `Rfc5424` (Fluent Bit's
/// `syslog-rfc5424`) a header part is the text `-`, as Fluent Bit's regex
/// gives it. `time` is the text as written; the second
/// value is the time it stands for, when it reads as one (an RFC 3164
/// timestamp has no year and no zone: the year is guessed from `clock`,
/// the zone is the local one, as for the TCP source).
pub(super) fn parse<'a>(
    text: &'a [u8],
    rfc: Rfc,
    clock: &Clock,
    out: &mut Vec<u8>,
) -> Option<(usize, Option<EventTime>)> {
    let m = parse_with(text, clock).ok()?;
    match (rfc, m.version) {
        (Rfc::Rfc3164, Some(_)) | (Rfc::Rfc5424, None) => return None,
        _ => {}
    }
    let pri = (u16::from(m.facility) * 8 + u16::from(m.severity)).to_string();
    // Fluent Bit's `syslog-rfc5424` regex gives a header part written as
    // `-` as that text; `syslog` leaves it out
    let part = |v: Option<&'a [u8]>| match rfc {
        Rfc::Rfc5424 => v.or(Some(b"-")),
        _ => v,
    };
    let fields: [(&[u8], Option<&[u8]>); 8] = [
        (b"pri", Some(pri.as_bytes())),
        (b"time", part(m.time_text)),
        (b"host", part(m.hostname)),
        (b"ident", part(m.app_name)),
        (b"pid", part(m.procid)),
        (b"msgid", part(m.msgid)),
        (b"extradata", part(m.structured_data_text)),
        (b"message", Some(m.message)),
    ];
    let n = fields.iter().filter(|(_, v)| v.is_some()).count();
    write::map_len(out, n);
    for (k, v) in fields {
        if let Some(v) = v {
            write::str(out, k);
            write::str(out, v);
        }
    }
    Some((n, m.time))
}
