//! A container's joined line as a record: the runtime's time, stream and
//! text, and the pod's `kubernetes` map.
//!
//! - CRI (containerd, CRI-O): `<time> <stream> <F|P> <text>`; a record
//!   still marked `P` was cut short (by a bound, or its file ended) and
//!   keeps `logtag = "P"` so it can be told from a whole one.
//! - Docker json-file: `{"log":"<text>\n","stream":…,"time":…}`; the
//!   newline that ended the line is not kept.
//!
//! A line in neither format goes on whole under the message key, with the
//! time it was read, and is counted.

use serde::Deserialize;

use crate::event::EventTime;
use crate::protocol::msgpack::write;

/// A container line's parts.
#[derive(Debug, PartialEq, Eq)]
pub struct Line<'a> {
    pub time: Option<EventTime>,
    pub stream: &'a [u8],
    /// CRI's `F` or `P`; docker: none.
    pub logtag: Option<&'a [u8]>,
    pub text: std::borrow::Cow<'a, [u8]>,
}

#[derive(Deserialize)]
struct DockerLine<'a> {
    #[serde(borrow)]
    log: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    stream: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    time: std::borrow::Cow<'a, str>,
}

/// Reads a CRI or docker json-file line; `None` for neither.
pub fn parse(line: &[u8]) -> Option<Line<'_>> {
    if line.first() == Some(&b'{') {
        return docker(line);
    }
    let mut parts = line.splitn(4, |b| *b == b' ');
    let time = parts.next()?;
    let stream = parts.next()?;
    let logtag = parts.next()?;
    let text = parts.next().unwrap_or_default();
    if !(stream == b"stdout" || stream == b"stderr") {
        return None;
    }
    Some(Line {
        time: Some(crate::protocol::syslog::rfc3339(time)?),
        stream,
        logtag: Some(logtag),
        text: text.into(),
    })
}

fn docker(line: &[u8]) -> Option<Line<'_>> {
    let d: DockerLine<'_> = serde_json::from_slice(line).ok()?;
    // the stream is one of two words: borrowed from static text
    let stream: &'static [u8] = match &*d.stream {
        "stderr" => b"stderr",
        _ => b"stdout",
    };
    let text = match d.log {
        std::borrow::Cow::Borrowed(s) => {
            std::borrow::Cow::Borrowed(s.strip_suffix('\n').unwrap_or(s).as_bytes())
        }
        std::borrow::Cow::Owned(mut s) => {
            if s.ends_with('\n') {
                s.pop();
            }
            std::borrow::Cow::Owned(s.into_bytes())
        }
    };
    Some(Line {
        time: crate::protocol::syslog::rfc3339(d.time.as_bytes()),
        stream,
        logtag: None,
        text,
    })
}

/// Writes `[time, {stream, logtag?, <key>: text, kubernetes}]`;
/// `kubernetes` is a msgpack map already encoded (empty: left out).
pub fn write_entry(out: &mut Vec<u8>, line: &Line<'_>, key: &str, kubernetes: &[u8]) {
    let time = line.time.unwrap_or_else(EventTime::now);
    write::array_len(out, 2);
    write::event_time(out, time.secs, time.nanos);
    let partial = line.logtag.filter(|t| *t != b"F");
    let fields = 2 + usize::from(partial.is_some()) + usize::from(!kubernetes.is_empty());
    write::map_len(out, fields);
    write::str(out, b"stream");
    write::str(out, line.stream);
    if let Some(tag) = partial {
        write::str(out, b"logtag");
        write::str(out, tag);
    }
    write::str(out, key.as_bytes());
    write::str(out, &line.text);
    if !kubernetes.is_empty() {
        write::str(out, b"kubernetes");
        out.extend_from_slice(kubernetes);
    }
}

/// Writes a line in neither format: `[now, {<key>: line, kubernetes}]`.
pub fn write_unparsed(out: &mut Vec<u8>, line: &[u8], key: &str, kubernetes: &[u8]) {
    let time = EventTime::now();
    write::array_len(out, 2);
    write::event_time(out, time.secs, time.nanos);
    write::map_len(out, 1 + usize::from(!kubernetes.is_empty()));
    write::str(out, key.as_bytes());
    write::str(out, line);
    if !kubernetes.is_empty() {
        write::str(out, b"kubernetes");
        out.extend_from_slice(kubernetes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cri_lines() {
        let l = parse(b"2026-12-06T05:12:07.123456789Z stderr F boom: it broke").unwrap();
        assert_eq!(l.stream, b"stderr");
        assert_eq!(l.logtag, Some(&b"F"[..]));
        assert_eq!(&*l.text, b"boom: it broke");
        let t = l.time.unwrap();
        assert_eq!(t.nanos, 123_456_789);
        let empty = parse(b"2026-12-06T05:12:07Z stdout F").unwrap();
        assert_eq!(&*empty.text, b"");
        assert!(parse(b"2026-12-06T05:12:07Z stdin F x").is_none());
        assert!(parse(b"not a time stdout F x").is_none());
    }

    #[test]
    fn docker_lines() {
        let l =
            parse(br#"{"log":"tab\there\n","stream":"stderr","time":"2026-12-06T05:12:07.5Z"}"#)
                .unwrap();
        assert_eq!(&*l.text, b"tab\there");
        assert_eq!(l.stream, b"stderr");
        assert_eq!(l.logtag, None);
        assert_eq!(l.time.unwrap().nanos, 500_000_000);
        assert!(parse(b"{\"nolog\":1}").is_none());
    }
}
