//! A journal entry's fields into a record: `[time, {message, FIELD, …}]`.
//!
//! `MESSAGE` becomes `message`; every other field the entry stores keeps
//! its name (lower-cased and without leading underscores where the source
//! says). A field stored more than once in an entry (journald allows it)
//! becomes an array of its values, in the order stored. The fields follow
//! `message` in name order. Names and values that are not UTF-8 are kept
//! with U+FFFD in place of the bytes that are not.

use std::borrow::Cow;
use std::ops::Range;

use crate::event::EventTime;
use crate::protocol::msgpack::write;

/// How field names are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Names {
    pub lowercase: bool,
    pub strip_underscores: bool,
}

impl Names {
    /// The record key of the journal field `name`.
    fn key<'a>(&self, name: &'a [u8]) -> Cow<'a, [u8]> {
        if name == b"MESSAGE" {
            return Cow::Borrowed(b"message");
        }
        let name = if self.strip_underscores {
            let stripped = trim_underscores(name);
            // a name of underscores only stays as it is
            if stripped.is_empty() {
                name
            } else {
                stripped
            }
        } else {
            name
        };
        if self.lowercase {
            Cow::Owned(name.to_ascii_lowercase())
        } else {
            Cow::Borrowed(name)
        }
    }
}

fn trim_underscores(name: &[u8]) -> &[u8] {
    let n = name.iter().take_while(|&&b| b == b'_').count();
    &name[n..]
}

/// One entry's fields, copied out of the journal (its pointers live only
/// until the next field is read); reused from entry to entry.
#[derive(Debug, Default)]
pub struct Fields {
    /// Record keys and values, one after another.
    bytes: Vec<u8>,
    /// Each field's key and value in `bytes`.
    items: Vec<(Range<usize>, Range<usize>)>,
    /// `items` indices in key order, for writing.
    order: Vec<usize>,
    /// The value of the entry's first `_SYSTEMD_UNIT`, in `bytes`.
    unit: Option<Range<usize>>,
}

impl Fields {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.items.clear();
        self.unit = None;
    }

    /// Adds one `FIELD=value` as `names` says; data without `=` is not a
    /// field and is skipped (false).
    pub fn push(&mut self, data: &[u8], names: Names) -> bool {
        let Some(eq) = data.iter().position(|&b| b == b'=') else {
            return false;
        };
        let (name, value) = (&data[..eq], &data[eq + 1..]);
        let key = names.key(name);
        let k = self.bytes.len();
        match std::str::from_utf8(&key) {
            Ok(_) => self.bytes.extend_from_slice(&key),
            // journald writes only `A-Z0-9_` names, but a journal file
            // read here may come from elsewhere (journal-remote, a copy)
            Err(_) => self
                .bytes
                .extend_from_slice(String::from_utf8_lossy(&key).as_bytes()),
        }
        let v = self.bytes.len();
        self.bytes.extend_from_slice(value);
        if name == b"_SYSTEMD_UNIT" && self.unit.is_none() {
            self.unit = Some(v..self.bytes.len());
        }
        self.items.push((k..v, v..self.bytes.len()));
        true
    }

    /// The entry's systemd unit (`_SYSTEMD_UNIT`), whatever its key.
    pub fn unit(&self) -> Option<&[u8]> {
        self.unit.clone().map(|r| &self.bytes[r])
    }

    /// Writes `[time, {…}]` to `out`.
    pub fn write(&mut self, out: &mut Vec<u8>, time: EventTime) {
        let bytes = &self.bytes;
        let items = &self.items;
        let key = |i: usize| &bytes[items[i].0.clone()];
        self.order.clear();
        self.order.extend(0..items.len());
        // `message` first, then by key; equal keys keep their stored order
        self.order
            .sort_by(|&a, &b| (key(a) != b"message", key(a)).cmp(&(key(b) != b"message", key(b))));
        let distinct = self
            .order
            .windows(2)
            .filter(|w| key(w[0]) != key(w[1]))
            .count()
            + usize::from(!self.order.is_empty());
        write::array_len(out, 2);
        write::event_time(out, time.secs, time.nanos);
        write::map_len(out, distinct);
        let mut i = 0;
        while i < self.order.len() {
            let k = key(self.order[i]);
            let same = self.order[i..].iter().take_while(|&&j| key(j) == k).count();
            write::str(out, k);
            if same > 1 {
                write::array_len(out, same);
            }
            for &j in &self.order[i..i + same] {
                write_value(out, &bytes[items[j].1.clone()]);
            }
            i += same;
        }
    }
}

fn write_value(out: &mut Vec<u8>, value: &[u8]) {
    match std::str::from_utf8(value) {
        Ok(_) => write::str(out, value),
        Err(_) => write::str(out, String::from_utf8_lossy(value).as_bytes()),
    }
}

/// The record time of an entry written at `usec` microseconds since the
/// epoch (`__REALTIME_TIMESTAMP`).
pub fn time_of(usec: u64) -> EventTime {
    let secs = u32::try_from(usec / 1_000_000).unwrap_or(u32::MAX);
    let nanos = (usec % 1_000_000) as u32 * 1_000;
    EventTime::new(secs, nanos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::msgpack::{Reader, Value};

    fn record(fields: &[&[u8]], names: Names) -> (EventTime, Vec<(String, Vec<String>)>) {
        let mut f = Fields::default();
        for d in fields {
            f.push(d, names);
        }
        let mut out = Vec::new();
        f.write(&mut out, time_of(1_700_000_000_123_456));
        let mut r = Reader::new(&out);
        assert_eq!(r.read_array_len().unwrap(), 2);
        let time = EventTime::read(&mut r).unwrap();
        let n = r.read_map_len().unwrap();
        let mut got = Vec::new();
        for _ in 0..n {
            let Value::Str(k) = r.read().unwrap() else {
                panic!("a key")
            };
            let k = String::from_utf8(k.to_vec()).unwrap();
            let text = |v: Value<'_>| match v {
                Value::Str(s) => String::from_utf8(s.to_vec()).unwrap(),
                other => panic!("a string, not {other:?}"),
            };
            let values = match r.read().unwrap() {
                Value::Array(len) => (0..len).map(|_| text(r.read().unwrap())).collect(),
                v => vec![text(v)],
            };
            got.push((k, values));
        }
        assert!(r.is_empty());
        (time, got)
    }

    fn kv(k: &str, v: &[&str]) -> (String, Vec<String>) {
        (k.into(), v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn message_first_then_fields_by_name_with_the_entry_time() {
        let (time, got) = record(
            &[
                b"_SYSTEMD_UNIT=a.service",
                b"MESSAGE=hello = world",
                b"PRIORITY=6",
            ],
            Names::default(),
        );
        assert_eq!((time.secs, time.nanos), (1_700_000_000, 123_456_000));
        assert_eq!(
            got,
            vec![
                kv("message", &["hello = world"]),
                kv("PRIORITY", &["6"]),
                kv("_SYSTEMD_UNIT", &["a.service"]),
            ]
        );
    }

    #[test]
    fn a_field_stored_twice_is_an_array_in_stored_order() {
        let (_, got) = record(
            &[b"TAG=b", b"MESSAGE=m", b"TAG=a", b"X=1", b"TAG=c"],
            Names::default(),
        );
        assert_eq!(
            got,
            vec![
                kv("message", &["m"]),
                kv("TAG", &["b", "a", "c"]),
                kv("X", &["1"])
            ]
        );
    }

    #[test]
    fn names_lowercased_and_stripped_and_bad_data_skipped() {
        let names = Names {
            lowercase: true,
            strip_underscores: true,
        };
        let mut f = Fields::default();
        assert!(!f.push(b"NOEQUALS", names));
        assert!(f.push(b"_SYSTEMD_UNIT=a.service", names));
        assert_eq!(f.unit(), Some(&b"a.service"[..]));
        let (_, got) = record(
            &[
                b"_SYSTEMD_UNIT=u",
                b"MESSAGE=m",
                b"SYSLOG_IDENTIFIER=s",
                b"_=x",
                b"V=\xff\xfe",
                // a name journald would not write, from a journal file
                // made elsewhere
                b"\x8c\x8cW=w",
            ],
            names,
        );
        assert_eq!(
            got,
            vec![
                kv("message", &["m"]),
                kv("_", &["x"]),
                kv("syslog_identifier", &["s"]),
                kv("systemd_unit", &["u"]),
                kv("v", &["\u{fffd}\u{fffd}"]),
                kv("\u{fffd}\u{fffd}w", &["w"]),
            ]
        );
    }

    #[test]
    fn an_entry_without_message_is_still_a_record() {
        let (_, got) = record(&[b"A=1"], Names::default());
        assert_eq!(got, vec![kv("A", &["1"])]);
        let (_, none) = record(&[], Names::default());
        assert!(none.is_empty());
    }
}
