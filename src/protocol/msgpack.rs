//! The small part of MessagePack that logferry needs, written for speed and
//! for bytes that come from outside the process.
//!
//! Records stay encoded as msgpack for as long as possible, so the hot paths
//! are *skipping* values (to find frame and entry boundaries) and reading a
//! few scalars. Nothing here recurses, so a hostile nesting depth cannot
//! overflow the stack, and nothing allocates in proportion to a length field
//! the peer declared.

use std::fmt;

/// Why a msgpack value could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The value is not complete yet; at least `needed` bytes (counted from
    /// the start of the buffer) must be present before trying again.
    Incomplete { needed: usize },
    /// The bytes are not valid msgpack (or not the type the caller required).
    Invalid { offset: usize, reason: &'static str },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Incomplete { needed } => {
                write!(f, "incomplete msgpack value ({needed} bytes needed)")
            }
            Error::Invalid { offset, reason } => {
                write!(f, "invalid msgpack at byte {offset}: {reason}")
            }
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Length of what follows a marker: `Items(n)` more values to skip, or
/// `Bytes(n)` raw payload bytes.
enum Follows {
    Items(u64),
    Bytes(u64),
}

#[inline]
fn need(buf: &[u8], end: usize) -> Result<()> {
    if end > buf.len() {
        Err(Error::Incomplete { needed: end })
    } else {
        Ok(())
    }
}

#[inline]
fn be_uint(buf: &[u8], at: usize, width: usize) -> Result<u64> {
    need(buf, at + width)?;
    let mut v = 0u64;
    for b in &buf[at..at + width] {
        v = (v << 8) | u64::from(*b);
    }
    Ok(v)
}

/// Reads the header of the value at `pos`: returns the header length and
/// what follows it.
#[inline]
fn header(buf: &[u8], pos: usize) -> Result<(usize, Follows)> {
    need(buf, pos + 1)?;
    let m = buf[pos];
    Ok(match m {
        0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (1, Follows::Bytes(0)),
        0x80..=0x8f => (1, Follows::Items(2 * u64::from(m & 0x0f))),
        0x90..=0x9f => (1, Follows::Items(u64::from(m & 0x0f))),
        0xa0..=0xbf => (1, Follows::Bytes(u64::from(m & 0x1f))),
        0xc4 | 0xd9 => (2, Follows::Bytes(be_uint(buf, pos + 1, 1)?)),
        0xc5 | 0xda => (3, Follows::Bytes(be_uint(buf, pos + 1, 2)?)),
        0xc6 | 0xdb => (5, Follows::Bytes(be_uint(buf, pos + 1, 4)?)),
        // ext 8/16/32: length, then one type byte, then payload
        0xc7 => (3, Follows::Bytes(be_uint(buf, pos + 1, 1)?)),
        0xc8 => (4, Follows::Bytes(be_uint(buf, pos + 1, 2)?)),
        0xc9 => (6, Follows::Bytes(be_uint(buf, pos + 1, 4)?)),
        0xca => (1, Follows::Bytes(4)),
        0xcb => (1, Follows::Bytes(8)),
        0xcc | 0xd0 => (1, Follows::Bytes(1)),
        0xcd | 0xd1 => (1, Follows::Bytes(2)),
        0xce | 0xd2 => (1, Follows::Bytes(4)),
        0xcf | 0xd3 => (1, Follows::Bytes(8)),
        // fixext 1/2/4/8/16: one type byte plus a fixed payload
        0xd4 => (2, Follows::Bytes(1)),
        0xd5 => (2, Follows::Bytes(2)),
        0xd6 => (2, Follows::Bytes(4)),
        0xd7 => (2, Follows::Bytes(8)),
        0xd8 => (2, Follows::Bytes(16)),
        0xdc => (3, Follows::Items(be_uint(buf, pos + 1, 2)?)),
        0xdd => (5, Follows::Items(be_uint(buf, pos + 1, 4)?)),
        0xde => (3, Follows::Items(2 * be_uint(buf, pos + 1, 2)?)),
        0xdf => (5, Follows::Items(2 * be_uint(buf, pos + 1, 4)?)),
        0xc1 => {
            return Err(Error::Invalid {
                offset: pos,
                reason: "marker 0xc1 is never used",
            })
        }
    })
}

/// Skips one complete value starting at `pos` and returns the offset just
/// past it. Iterative: the only state is a count of values still to skip.
pub fn skip(buf: &[u8], pos: usize) -> Result<usize> {
    skip_from(buf, &mut Cursor::at(pos))
}

/// Where an unfinished [`skip_from`] stopped: the start of the first value
/// that was not complete, and how many values (it included) remain.
/// Resuming from it makes scanning a frame that arrives in many pieces
/// linear in its size instead of quadratic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pos: usize,
    remaining: u64,
}

impl Cursor {
    /// Skipping one value that starts at `pos`.
    pub fn at(pos: usize) -> Cursor {
        Cursor { pos, remaining: 1 }
    }
}

impl Default for Cursor {
    /// Skipping one value from the start of the buffer.
    fn default() -> Self {
        Cursor {
            pos: 0,
            remaining: 1,
        }
    }
}

/// Continues skipping from `cursor`; on `Incomplete` the cursor is left
/// where the next call with more bytes should resume.
pub fn skip_from(buf: &[u8], cursor: &mut Cursor) -> Result<usize> {
    let Cursor {
        mut pos,
        mut remaining,
    } = *cursor;
    while remaining > 0 {
        let start = pos;
        let stop = |e: Error, cursor: &mut Cursor| {
            if matches!(e, Error::Incomplete { .. }) {
                *cursor = Cursor {
                    pos: start,
                    remaining,
                };
            }
            e
        };
        let (hlen, follows) = header(buf, pos).map_err(|e| stop(e, cursor))?;
        pos += hlen;
        match follows {
            Follows::Items(n) => remaining += n,
            Follows::Bytes(n) => {
                let end = usize::try_from(n)
                    .ok()
                    .and_then(|n| pos.checked_add(n))
                    .ok_or(Error::Invalid {
                        offset: pos,
                        reason: "length does not fit in memory",
                    })?;
                need(buf, end).map_err(|e| stop(e, cursor))?;
                pos = end;
            }
        }
        remaining -= 1;
    }
    Ok(pos)
}

/// A scalar, or the header of a container, read at some position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    UInt(u64),
    /// A float 64.
    Float(f64),
    /// A float 32, kept apart so it prints as the shortest f32 (`0.1`, not
    /// the f64 digits of its widened value).
    Float32(f32),
    Str(&'a [u8]),
    Bin(&'a [u8]),
    /// An array header; its `n` items follow.
    Array(usize),
    /// A map header; its `n` key/value pairs follow.
    Map(usize),
    Ext(i8, &'a [u8]),
}

/// A cursor over a buffer of complete msgpack values. Reads never panic on
/// bad input; they return [`Error::Invalid`] (a truncated value is also
/// invalid here, since the caller holds complete frames).
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn at(buf: &'a [u8], pos: usize) -> Self {
        Reader { buf, pos }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn buffer(&self) -> &'a [u8] {
        self.buf
    }

    fn invalid<T>(&self, reason: &'static str) -> Result<T> {
        Err(Error::Invalid {
            offset: self.pos,
            reason,
        })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => self.invalid("value runs past the end of its frame"),
        }
    }

    fn uint(&mut self, width: usize) -> Result<u64> {
        let b = self.take(width)?;
        Ok(b.iter().fold(0u64, |v, b| (v << 8) | u64::from(*b)))
    }

    /// The marker byte of the next value, without consuming it.
    pub fn peek(&self) -> Result<u8> {
        match self.buf.get(self.pos) {
            Some(m) => Ok(*m),
            None => self.invalid("value expected, found end of frame"),
        }
    }

    /// Skips the next value (containers included).
    pub fn skip(&mut self) -> Result<()> {
        match skip(self.buf, self.pos) {
            Ok(end) => {
                self.pos = end;
                Ok(())
            }
            Err(Error::Incomplete { .. }) => self.invalid("value runs past the end of its frame"),
            Err(e) => Err(e),
        }
    }

    /// Reads the next value if it is a string of up to 255 bytes (the
    /// usual map key, and most values), else reads nothing (`None`, for
    /// [`Reader::read`] to read or refuse). Inlined where it is called,
    /// the string comes back in registers: a [`Value`] returned through
    /// memory cost the JSON conversion of records a stall per key and per
    /// value.
    #[inline]
    pub fn read_short_str(&mut self) -> Option<&'a [u8]> {
        let (start, len) = match *self.buf.get(self.pos)? {
            m @ 0xa0..=0xbf => (self.pos + 1, usize::from(m & 0x1f)),
            0xd9 => (self.pos + 2, usize::from(*self.buf.get(self.pos + 1)?)),
            _ => return None,
        };
        let s = self.buf.get(start..start + len)?;
        self.pos = start + len;
        Some(s)
    }

    /// Reads the next scalar or container header.
    pub fn read(&mut self) -> Result<Value<'a>> {
        let m = self.peek()?;
        self.pos += 1;
        Ok(match m {
            0x00..=0x7f => Value::UInt(u64::from(m)),
            0xe0..=0xff => Value::Int(i64::from(m as i8)),
            0x80..=0x8f => Value::Map(usize::from(m & 0x0f)),
            0x90..=0x9f => Value::Array(usize::from(m & 0x0f)),
            0xa0..=0xbf => Value::Str(self.take(usize::from(m & 0x1f))?),
            0xc0 => Value::Nil,
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4 | 0xd9 => {
                let n = self.uint(1)? as usize;
                bin_or_str(m, self.take(n)?)
            }
            0xc5 | 0xda => {
                let n = self.uint(2)? as usize;
                bin_or_str(m, self.take(n)?)
            }
            0xc6 | 0xdb => {
                let n = self.uint(4)? as usize;
                bin_or_str(m, self.take(n)?)
            }
            0xc7..=0xc9 => {
                let n = self.uint(1 << (m - 0xc7))? as usize;
                let t = self.take(1)?[0] as i8;
                Value::Ext(t, self.take(n)?)
            }
            0xd4..=0xd8 => {
                let t = self.take(1)?[0] as i8;
                Value::Ext(t, self.take(1 << (m - 0xd4))?)
            }
            0xca => Value::Float32(f32::from_bits(self.uint(4)? as u32)),
            0xcb => Value::Float(f64::from_bits(self.uint(8)?)),
            0xcc..=0xcf => Value::UInt(self.uint(1 << (m - 0xcc))?),
            0xd0 => Value::Int(i64::from(self.uint(1)? as u8 as i8)),
            0xd1 => Value::Int(i64::from(self.uint(2)? as u16 as i16)),
            0xd2 => Value::Int(i64::from(self.uint(4)? as u32 as i32)),
            0xd3 => Value::Int(self.uint(8)? as i64),
            0xdc => Value::Array(self.uint(2)? as usize),
            0xdd => Value::Array(self.uint(4)? as usize),
            0xde => Value::Map(self.uint(2)? as usize),
            0xdf => Value::Map(self.uint(4)? as usize),
            _ => {
                self.pos -= 1;
                return self.invalid("marker 0xc1 is never used");
            }
        })
    }

    pub fn read_array_len(&mut self) -> Result<usize> {
        match self.read()? {
            Value::Array(n) => Ok(n),
            _ => self.invalid("array expected"),
        }
    }

    pub fn read_map_len(&mut self) -> Result<usize> {
        match self.read()? {
            Value::Map(n) => Ok(n),
            _ => self.invalid("map expected"),
        }
    }

    /// Reads a str or bin value (clients disagree on which to use for tags,
    /// keys and packed entry streams).
    pub fn read_bytes(&mut self) -> Result<&'a [u8]> {
        match self.read()? {
            Value::Str(s) | Value::Bin(s) => Ok(s),
            _ => self.invalid("string expected"),
        }
    }
}

#[inline]
fn bin_or_str(marker: u8, s: &[u8]) -> Value<'_> {
    if matches!(marker, 0xc4..=0xc6) {
        Value::Bin(s)
    } else {
        Value::Str(s)
    }
}

/// Appends msgpack encodings to a byte buffer.
pub mod write {
    pub fn array_len(out: &mut Vec<u8>, n: usize) {
        container_len(out, n, 0x90, 0xdc, 0xdd);
    }

    pub fn map_len(out: &mut Vec<u8>, n: usize) {
        container_len(out, n, 0x80, 0xde, 0xdf);
    }

    fn container_len(out: &mut Vec<u8>, n: usize, fix: u8, m16: u8, m32: u8) {
        if n < 16 {
            out.push(fix | n as u8);
        } else if n <= 0xffff {
            out.push(m16);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            out.push(m32);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }

    pub fn str(out: &mut Vec<u8>, s: &[u8]) {
        let n = s.len();
        if n < 32 {
            out.push(0xa0 | n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xd9, n as u8]);
        } else if n <= 0xffff {
            out.push(0xda);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            out.push(0xdb);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        out.extend_from_slice(s);
    }

    pub fn bin_header(out: &mut Vec<u8>, n: usize) {
        if n <= 0xff {
            out.extend_from_slice(&[0xc4, n as u8]);
        } else if n <= 0xffff {
            out.push(0xc5);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            out.push(0xc6);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }

    pub fn uint(out: &mut Vec<u8>, v: u64) {
        if v < 128 {
            out.push(v as u8);
        } else if v <= 0xff {
            out.extend_from_slice(&[0xcc, v as u8]);
        } else if v <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(v as u16).to_be_bytes());
        } else if v <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(v as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// A signed integer in its shortest form.
    pub fn int(out: &mut Vec<u8>, i: i64) {
        if i >= 0 {
            uint(out, i as u64);
        } else if i >= -32 {
            out.push(i as i8 as u8);
        } else if i >= i64::from(i8::MIN) {
            out.extend_from_slice(&[0xd0, i as i8 as u8]);
        } else if i >= i64::from(i16::MIN) {
            out.push(0xd1);
            out.extend_from_slice(&(i as i16).to_be_bytes());
        } else if i >= i64::from(i32::MIN) {
            out.push(0xd2);
            out.extend_from_slice(&(i as i32).to_be_bytes());
        } else {
            out.push(0xd3);
            out.extend_from_slice(&i.to_be_bytes());
        }
    }

    /// The Fluentd EventTime: ext type 0, big-endian u32 seconds + u32 nanoseconds.
    pub fn event_time(out: &mut Vec<u8>, secs: u32, nanos: u32) {
        out.extend_from_slice(&[0xd7, 0x00]);
        out.extend_from_slice(&secs.to_be_bytes());
        out.extend_from_slice(&nanos.to_be_bytes());
    }
}

/// A msgpack value as JSON, for tests to compare records with `json!`:
/// binaries as `{"bin": [bytes]}`, extensions as `{"ext": type, "data":
/// [bytes]}`, map keys that are not strings written out.
#[cfg(test)]
pub(crate) fn to_json(r: &mut Reader<'_>) -> serde_json::Value {
    use serde_json::{json, Value as Json};
    match r.read().expect("valid msgpack") {
        Value::Nil => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!(i),
        Value::UInt(u) => json!(u),
        Value::Float(f) => json!(f),
        Value::Float32(f) => json!(f),
        Value::Str(s) => json!(String::from_utf8_lossy(s)),
        Value::Bin(b) => json!({ "bin": b }),
        Value::Array(n) => Json::Array((0..n).map(|_| to_json(r)).collect()),
        Value::Map(n) => Json::Object(
            (0..n)
                .map(|_| {
                    let k = to_json(r);
                    let k = k.as_str().map(str::to_string).unwrap_or(k.to_string());
                    (k, to_json(r))
                })
                .collect(),
        ),
        Value::Ext(t, b) => json!({"ext": t, "data": b}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_are_read_and_anything_else_is_left_to_read() {
        let mut buf = Vec::new();
        write::str(&mut buf, b"key");
        write::str(&mut buf, &[b'x'; 200]);
        write::str(&mut buf, &[b'y'; 300]);
        write::uint(&mut buf, 7);
        let mut r = Reader::new(&buf);
        assert_eq!(r.read_short_str(), Some(&b"key"[..]));
        assert_eq!(r.read_short_str(), Some(&[b'x'; 200][..]));
        // str 16, then an integer: not read here
        let at = r.pos();
        assert_eq!(r.read_short_str(), None);
        assert_eq!(r.pos(), at);
        assert_eq!(r.read().unwrap(), Value::Str(&[b'y'; 300]));
        assert_eq!(r.read_short_str(), None);
        assert_eq!(r.read().unwrap(), Value::UInt(7));
        assert_eq!(r.read_short_str(), None);
        // cut short: nothing read, and `read` says why
        for cut in [&[0xa3, b'a'][..], &[0xd9][..], &[0xd9, 5, b'a'][..]] {
            let mut r = Reader::new(cut);
            assert_eq!(r.read_short_str(), None);
            assert_eq!(r.pos(), 0);
            assert!(r.read().is_err());
        }
    }

    #[test]
    fn signed_integers_take_their_shortest_form_and_read_back() {
        let cases: [(i64, usize); 12] = [
            (0, 1),
            (127, 1),
            (-1, 1),
            (-32, 1),
            (-33, 2),
            (-128, 2),
            (-129, 3),
            (-32_768, 3),
            (-32_769, 5),
            (i64::from(i32::MIN), 5),
            (i64::from(i32::MIN) - 1, 9),
            (i64::MIN, 9),
        ];
        for (i, len) in cases {
            let mut v = Vec::new();
            write::int(&mut v, i);
            assert_eq!(v.len(), len, "{i}");
            let read = Reader::new(&v).read().unwrap();
            let back = match read {
                Value::Int(n) => n,
                Value::UInt(n) => n as i64,
                other => panic!("{i} read back as {other:?}"),
            };
            assert_eq!(back, i);
        }
    }

    #[test]
    fn skip_reports_how_many_bytes_are_needed() {
        // bin8 of length 10 with only 3 payload bytes present
        let buf = [0xc4, 10, 1, 2, 3];
        assert_eq!(skip(&buf, 0), Err(Error::Incomplete { needed: 12 }));
        // a map that promises two pairs but holds one
        let buf = [0x82, 0xa1, b'a', 0x01];
        assert!(matches!(skip(&buf, 0), Err(Error::Incomplete { .. })));
    }

    #[test]
    fn skip_walks_nested_containers_without_recursion() {
        // 100_000 nested single-item arrays around nil: would overflow a
        // recursive skipper's stack
        let mut buf = vec![0x91; 100_000];
        buf.push(0xc0);
        assert_eq!(skip(&buf, 0), Ok(buf.len()));
    }

    #[test]
    fn resumed_skips_agree_with_whole_ones() {
        let mut v = Vec::new();
        write::array_len(&mut v, 3);
        write::str(&mut v, &[b'a'; 300]);
        write::map_len(&mut v, 1);
        write::str(&mut v, b"k");
        write::array_len(&mut v, 2);
        write::uint(&mut v, 70_000);
        v.push(0xc0);
        write::uint(&mut v, 5);
        for step in [1, 2, 7, 64] {
            let mut cursor = Cursor::default();
            let mut len = 0;
            let end = loop {
                len = (len + step).min(v.len());
                match skip_from(&v[..len], &mut cursor) {
                    Ok(end) => break end,
                    Err(Error::Incomplete { needed }) => assert!(needed > len),
                    Err(e) => panic!("{e}"),
                }
            };
            assert_eq!(end, v.len(), "step {step}");
        }
    }

    #[test]
    fn skip_rejects_the_unused_marker() {
        assert!(matches!(
            skip(&[0x91, 0xc1], 0),
            Err(Error::Invalid { offset: 1, .. })
        ));
    }

    #[test]
    fn huge_declared_lengths_do_not_allocate_or_panic() {
        let buf = [0xdd, 0xff, 0xff, 0xff, 0xff];
        assert!(matches!(skip(&buf, 0), Err(Error::Incomplete { .. })));
        let buf = [0xc6, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(
            skip(&buf, 0),
            Err(Error::Incomplete {
                needed: 5 + 0xffff_ffff
            })
        );
        let mut r = Reader::new(&buf);
        assert!(matches!(r.read(), Err(Error::Invalid { .. })));
    }

    #[test]
    fn writer_and_reader_agree() {
        let mut out = Vec::new();
        write::array_len(&mut out, 3);
        write::str(&mut out, b"hello");
        write::uint(&mut out, 70_000);
        write::map_len(&mut out, 20);
        let mut r = Reader::new(&out);
        assert_eq!(r.read(), Ok(Value::Array(3)));
        assert_eq!(r.read(), Ok(Value::Str(b"hello")));
        assert_eq!(r.read(), Ok(Value::UInt(70_000)));
        assert_eq!(r.read(), Ok(Value::Map(20)));
        for n in [0usize, 31, 32, 255, 256, 65_535, 65_536] {
            let s = vec![b'x'; n];
            let mut out = Vec::new();
            write::str(&mut out, &s);
            assert_eq!(skip(&out, 0), Ok(out.len()), "length {n}");
            assert_eq!(Reader::new(&out).read(), Ok(Value::Str(&s[..])));
        }
    }

    #[test]
    fn negative_and_ext_values() {
        let buf = [0xff, 0xd0, 0x80, 0xd7, 0x00, 0, 0, 0, 1, 0, 0, 0, 2];
        let mut r = Reader::new(&buf);
        assert_eq!(r.read(), Ok(Value::Int(-1)));
        assert_eq!(r.read(), Ok(Value::Int(-128)));
        assert_eq!(r.read(), Ok(Value::Ext(0, &[0, 0, 0, 1, 0, 0, 0, 2][..])));
        assert!(r.is_empty());
    }
}
