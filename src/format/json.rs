//! msgpack → JSON text, streaming, without building a value tree.

use crate::protocol::msgpack::{self, Reader, Value};

/// Writes `s` as a JSON string. Invalid UTF-8 becomes U+FFFD, so the output
/// is always valid JSON.
pub fn write_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    let start = out.len();
    // one pass over ASCII text, escaping as it goes; text from its first
    // byte that is not ASCII on is checked for UTF-8 once, then escaped
    if let Err(at) = escape_into(out, s, true) {
        match std::str::from_utf8(&s[at..]) {
            Ok(_) => {
                let _ = escape_into(out, &s[at..], false);
            }
            Err(_) => {
                out.truncate(start);
                let _ = escape_into(out, String::from_utf8_lossy(s).as_bytes(), false);
            }
        }
    }
    out.push(b'"');
}

/// The second byte of a byte's two-byte escape (`\"`, `\\`, `\n`, `\r`,
/// `\t`); 0 for a byte written as it is or as `\u00XX`.
static ESCAPE: [u8; 256] = {
    let mut t = [0; 256];
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'\n' as usize] = b'n';
    t[b'\r' as usize] = b'r';
    t[b'\t' as usize] = b't';
    t
};

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// The high bit of each byte of `x` that is zero, exactly (no borrow
/// from one byte to the next).
fn zero_bytes(x: u64) -> u64 {
    !((x & LOW7).wrapping_add(LOW7) | x | LOW7)
}

/// The high bit of each byte of the word `x` (little-endian) that JSON
/// escapes: a control character, a quote or a backslash; and with
/// `high = HIGH`, each byte from 0x80 up.
fn to_escape(x: u64, high: u64) -> u64 {
    zero_bytes(x ^ (ONES * u64::from(b'"')))
        | zero_bytes(x ^ (ONES * u64::from(b'\\')))
        | zero_bytes(x & (ONES * 0xe0))
        | (x & high)
}

/// Appends `bytes` with what JSON strings escape escaped. `ascii_only`:
/// stops before the first byte from 0x80 up, having written what came
/// before it, and returns where it is (else every byte is taken as part
/// of valid UTF-8).
///
/// Eight bytes at a time: a word is stored whole into room reserved
/// beforehand, and when some of its bytes are to be escaped, the mask of
/// all of them is walked, each run of plain bytes again stored as a whole
/// word and the output moved on by the run only. Finding the next escape
/// never waits for the last one to be written, and no run is copied by a
/// call to `memcpy`: for OTLP bodies holding JSON (a quote every ten bytes
/// or so) this writes a string in 40 % of the time a scan from escape to
/// escape took.
fn escape_into(out: &mut Vec<u8>, bytes: &[u8], ascii_only: bool) -> Result<(), usize> {
    /// Input escaped per reservation, so that the room for the worst case
    /// (six bytes for one, `\u00XX`) stays small for a long string.
    const SEGMENT: usize = 4096;
    let n = bytes.len();
    let high = if ascii_only { HIGH } else { 0 };
    let word = |at: usize| {
        let mut w = [0; 8];
        w.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let mut i = 0;
    while i < n {
        let end = n.min(i + SEGMENT);
        // from the segment's start, the output is at most six bytes per
        // byte read, and a word stored there reaches eight bytes past it
        out.reserve((end - i) * 6 + 8);
        let start = out.len();
        let (base, room) = (out.as_mut_ptr(), out.capacity());
        let mut at = start;
        // SAFETY (each `put_*`): `at` stays within the room reserved
        // above, as the comments at each write show; every byte up to
        // `at` is written before `set_len` below.
        let put_word = |at: usize, w: u64| {
            debug_assert!(at + 8 <= room);
            unsafe { std::ptr::write_unaligned(base.add(at).cast::<[u8; 8]>(), w.to_le_bytes()) };
        };
        let put = |at: usize, b: &[u8]| {
            debug_assert!(at + b.len() <= room);
            unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), base.add(at), b.len()) };
        };
        let escape = |at: &mut usize, b: u8| match ESCAPE[usize::from(b)] {
            0 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let u = [
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 15)],
                ];
                put(*at, &u);
                *at += 6;
            }
            e => {
                put(*at, &[b'\\', e]);
                *at += 2;
            }
        };
        let mut stopped = None;
        'words: while i + 8 <= end {
            let x = word(i);
            // at most 6 bytes out per byte read before: within the room
            put_word(at, x);
            let mut m = to_escape(x, high);
            if m == 0 {
                i += 8;
                at += 8;
                continue;
            }
            // `done`: the bytes of this word written
            let mut done = 0;
            while m != 0 {
                let k = (m.trailing_zeros() / 8) as usize;
                m &= m - 1;
                if done > 0 {
                    // the plain bytes since the last escape: `done` ≤ 7
                    // more bytes read, so within the room
                    if i + done + 8 <= n {
                        put_word(at, word(i + done));
                    } else {
                        put(at, &bytes[i + done..i + k]);
                    }
                }
                at += k - done;
                let b = bytes[i + k];
                if b >= 0x80 {
                    // only flagged with `ascii_only`
                    i += k;
                    stopped = Some(i);
                    break 'words;
                }
                escape(&mut at, b);
                done = k + 1;
            }
            if i + done + 8 <= n {
                put_word(at, word(i + done));
            } else {
                put(at, &bytes[i + done..i + 8]);
            }
            at += 8 - done;
            i += 8;
        }
        if stopped.is_none() {
            while i < end {
                let b = bytes[i];
                if b >= 0x80 && ascii_only {
                    stopped = Some(i);
                    break;
                }
                if b < 0x20 || ESCAPE[usize::from(b)] != 0 {
                    escape(&mut at, b);
                } else {
                    put(at, &[b]);
                    at += 1;
                }
                i += 1;
            }
        }
        // SAFETY: every byte from `start` to `at` was written above, in
        // the room `reserve` made
        unsafe { out.set_len(at) };
        if let Some(at) = stopped {
            return Err(at);
        }
    }
    Ok(())
}

/// Writes a scalar (containers are handled by [`write_value`]).
pub fn write_scalar(out: &mut Vec<u8>, v: Value<'_>) {
    use std::io::Write;
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(i) => {
            if i < 0 {
                out.push(b'-');
            }
            write_u64(out, i.unsigned_abs());
        }
        Value::UInt(u) => write_u64(out, u),
        Value::Float(f) => write_f64(out, f),
        Value::Float32(f) => write_f32(out, f),
        Value::Str(s) | Value::Bin(s) => write_str(out, s),
        Value::Ext(0, b) if b.len() == 8 => {
            let secs = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            let nanos = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
            if nanos < 1_000_000_000 {
                let _ = write!(out, "{secs}.{nanos:09}");
            } else {
                // not a time: as for any other value JSON cannot carry
                out.extend_from_slice(b"null");
            }
        }
        Value::Ext(..) | Value::Array(_) | Value::Map(_) => out.extend_from_slice(b"null"),
    }
}

/// Writes `v` in decimal: integers are in most records, and `write!`
/// costs several times as much.
fn write_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    // a call to copy a few bytes costs more than pushing them
    out.reserve(digits.len() - at);
    for &d in &digits[at..] {
        out.push(d);
    }
}

/// Writes a float as serde_json does: the shortest text that reads back as
/// the same float and still reads as a float (`2.0`, `1e16`, `-0.0`,
/// `5e-324`). NaN and the infinities are not JSON numbers: they become
/// `null`.
pub fn write_f64(out: &mut Vec<u8>, f: f64) {
    write_float(out, f.is_finite(), f);
}

/// Like [`write_f64`], with the shortest text of the float 32 itself
/// (`0.1`, not `0.10000000149011612`).
pub fn write_f32(out: &mut Vec<u8>, f: f32) {
    write_float(out, f.is_finite(), f);
}

fn write_float(out: &mut Vec<u8>, finite: bool, f: impl ryu::Float) {
    if finite {
        out.extend_from_slice(ryu::Buffer::new().format_finite(f).as_bytes());
    } else {
        out.extend_from_slice(b"null");
    }
}

/// An open array or map: items still to write, and items written so far
/// (a map counts keys and values as separate items).
struct Open {
    is_map: bool,
    left: usize,
    done: usize,
}

/// The containers inside records written lately, as msgpack and as JSON.
/// Records of one source often repeat one (an OTLP resource, a pod's
/// Kubernetes metadata): comparing its bytes and copying its JSON is
/// cheaper than writing it again.
#[derive(Default)]
struct Recent {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// The entry the next new container replaces.
    next: usize,
}

impl Recent {
    const fn new() -> Recent {
        Recent {
            entries: Vec::new(),
            next: 0,
        }
    }

    const ENTRIES: usize = 4;
    /// The largest container kept (msgpack bytes).
    const MAX_BYTES: usize = 4096;

    fn get(&self, msgpack: &[u8]) -> Option<&[u8]> {
        self.entries
            .iter()
            .find(|(m, _)| m.as_slice() == msgpack)
            .map(|(_, json)| json.as_slice())
    }

    fn put(&mut self, msgpack: &[u8], json: &[u8]) {
        if msgpack.len() > Self::MAX_BYTES {
            return;
        }
        if self.entries.len() < Self::ENTRIES {
            self.entries.push((msgpack.to_vec(), json.to_vec()));
            return;
        }
        let (m, j) = &mut self.entries[self.next];
        m.clear();
        m.extend_from_slice(msgpack);
        j.clear();
        j.extend_from_slice(json);
        self.next = (self.next + 1) % Self::ENTRIES;
    }
}

/// What [`write_value`] keeps between calls, so that converting a record
/// allocates nothing.
#[derive(Default)]
struct Scratch {
    /// The open containers.
    stack: Vec<Open>,
    recent: Recent,
}

thread_local! {
    static SCRATCH: std::cell::Cell<Scratch> = const {
        std::cell::Cell::new(Scratch {
            stack: Vec::new(),
            recent: Recent::new(),
        })
    };
}

/// Converts the next complete value of `r` to JSON. Iterative, so nesting
/// depth costs no stack.
pub fn write_value(out: &mut Vec<u8>, r: &mut Reader<'_>) -> msgpack::Result<()> {
    let mut scratch = SCRATCH.take();
    let at = r.pos();
    let written = match r.read() {
        // the usual record, a map, is written pair by pair; only the
        // containers inside it take the stack
        Ok(Value::Map(n)) => write_map(out, r, n, &mut scratch),
        _ => {
            *r = Reader::at(r.buffer(), at);
            scratch.stack.clear();
            write_value_with(out, r, &mut scratch.stack)
        }
    };
    SCRATCH.set(scratch);
    written
}

/// Writes the `n` pairs of a map whose header `r` has just read.
fn write_map(
    out: &mut Vec<u8>,
    r: &mut Reader<'_>,
    n: usize,
    scratch: &mut Scratch,
) -> msgpack::Result<()> {
    out.push(b'{');
    for i in 0..n {
        if i > 0 {
            out.push(b',');
        }
        // JSON object keys must be strings
        if let Some(k) = r.read_short_str() {
            write_str(out, k);
        } else {
            match r.read()? {
                Value::Str(k) | Value::Bin(k) => write_str(out, k),
                key @ (Value::Array(_) | Value::Map(_)) => {
                    crate::event::skip_rest(r, key)?;
                    out.extend_from_slice(b"\"null\"");
                }
                key => {
                    let mut tmp = Vec::new();
                    write_scalar(&mut tmp, key);
                    write_str(out, &tmp);
                }
            }
        }
        out.push(b':');
        if let Some(v) = r.read_short_str() {
            write_str(out, v);
            continue;
        }
        let at = r.pos();
        match r.read()? {
            Value::Array(_) | Value::Map(_) => {
                let end = msgpack::skip(r.buffer(), at)?;
                let container = &r.buffer()[at..end];
                match scratch.recent.get(container) {
                    Some(json) => out.extend_from_slice(json),
                    None => {
                        let start = out.len();
                        scratch.stack.clear();
                        write_value_with(out, &mut Reader::at(r.buffer(), at), &mut scratch.stack)?;
                        scratch.recent.put(container, &out[start..]);
                    }
                }
                *r = Reader::at(r.buffer(), end);
            }
            v => write_scalar(out, v),
        }
    }
    out.push(b'}');
    Ok(())
}

/// Writes the next value of `r`, whole at any depth: the open containers
/// are on `stack`, not the call stack, and the text grows with the input
/// (a record that was let in is never cut short on its way out).
fn write_value_with(
    out: &mut Vec<u8>,
    r: &mut Reader<'_>,
    stack: &mut Vec<Open>,
) -> msgpack::Result<()> {
    loop {
        let mut is_key = false;
        if let Some(top) = stack.last_mut() {
            if top.left == 0 {
                out.push(if top.is_map { b'}' } else { b']' });
                stack.pop();
                if stack.is_empty() {
                    return Ok(());
                }
                continue;
            }
            if top.is_map && top.done % 2 == 1 {
                out.push(b':');
            } else if top.done > 0 {
                out.push(b',');
            }
            is_key = top.is_map && top.done % 2 == 0;
            top.done += 1;
            top.left -= 1;
        }
        let v = r.read()?;
        match v {
            // JSON object keys must be strings
            Value::Array(_) | Value::Map(_) if is_key => {
                crate::event::skip_rest(r, v)?;
                out.extend_from_slice(if is_key { b"\"null\"" } else { b"null" });
            }
            Value::Array(n) => {
                out.push(b'[');
                stack.push(Open {
                    is_map: false,
                    left: n,
                    done: 0,
                });
                continue;
            }
            Value::Map(n) => {
                out.push(b'{');
                stack.push(Open {
                    is_map: true,
                    left: n.saturating_mul(2),
                    done: 0,
                });
                continue;
            }
            // JSON object keys must be strings
            Value::Str(_) | Value::Bin(_) => write_scalar(out, v),
            other if is_key => {
                let mut tmp = Vec::new();
                write_scalar(&mut tmp, other);
                write_str(out, &tmp);
            }
            other => write_scalar(out, other),
        }
        if stack.is_empty() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::msgpack::write;

    fn json_of(bytes: &[u8]) -> String {
        let mut out = Vec::new();
        write_value(&mut out, &mut Reader::new(bytes)).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn nested_values_become_valid_json() {
        let mut m = Vec::new();
        write::map_len(&mut m, 4);
        write::str(&mut m, b"a");
        write::array_len(&mut m, 3);
        write::uint(&mut m, 1);
        write::map_len(&mut m, 0);
        write::array_len(&mut m, 0);
        write::str(&mut m, b"q\"uote\n");
        m.push(0xc3);
        m.push(0x05); // integer key
        m.push(0xc0);
        write::str(&mut m, b"bad");
        write::str(&mut m, b"\xff\x01");
        let text = json_of(&m);
        assert_eq!(
            text,
            "{\"a\":[1,{},[]],\"q\\\"uote\\n\":true,\"5\":null,\"bad\":\"\u{fffd}\\u0001\"}"
        );
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["a"][0], 1);
    }

    fn f64_bytes(f: f64) -> Vec<u8> {
        let mut b = vec![0xcb];
        b.extend_from_slice(&f.to_bits().to_be_bytes());
        b
    }

    fn f32_bytes(f: f32) -> Vec<u8> {
        let mut b = vec![0xca];
        b.extend_from_slice(&f.to_bits().to_be_bytes());
        b
    }

    #[test]
    fn floats_are_written_in_their_shortest_form_and_stay_floats() {
        let cases: [(f64, &str); 11] = [
            (2.0, "2.0"),
            (1e16, "1e16"),
            (-0.0, "-0.0"),
            (1.79e308, "1.79e308"),
            (f64::MAX, "1.7976931348623157e308"),
            (5e-324, "5e-324"),
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (-1.5, "-1.5"),
            (1700000000.25, "1700000000.25"),
            (123456789.0, "123456789.0"),
        ];
        for (f, want) in cases {
            let text = json_of(&f64_bytes(f));
            assert_eq!(text, want);
            assert_eq!(
                text.parse::<f64>().unwrap().to_bits(),
                f.to_bits(),
                "{text}"
            );
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert!(v.is_f64(), "{text} reads back as {v:?}");
        }
    }

    #[test]
    fn float32_is_written_as_the_shortest_f32() {
        let cases: [(f32, &str); 8] = [
            (0.1, "0.1"),
            (2.0, "2.0"),
            (-0.0, "-0.0"),
            (1e16, "1e16"),
            (f32::MAX, "3.4028235e38"),
            (1e-45, "1e-45"),
            (16777217.0, "16777216.0"),
            (2.71, "2.71"),
        ];
        for (f, want) in cases {
            let text = json_of(&f32_bytes(f));
            assert_eq!(text, want);
            assert_eq!(
                text.parse::<f32>().unwrap().to_bits(),
                f.to_bits(),
                "{text}"
            );
            assert!(serde_json::from_str::<serde_json::Value>(&text)
                .unwrap()
                .is_f64());
        }
    }

    #[test]
    fn integers_are_written_in_decimal_at_their_limits() {
        for i in [0, 1, -1, 9, 10, -10, 99, 100, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            write_scalar(&mut out, Value::Int(i));
            assert_eq!(out, i.to_string().as_bytes());
        }
        for u in [0, 7, 10, 1_000_000, u64::MAX] {
            let mut out = Vec::new();
            write_scalar(&mut out, Value::UInt(u));
            assert_eq!(out, u.to_string().as_bytes());
        }
    }

    #[test]
    fn nan_and_infinities_are_null() {
        for f in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(json_of(&f64_bytes(f)), "null", "{f}");
        }
        for f in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            assert_eq!(json_of(&f32_bytes(f)), "null", "{f}");
        }
        // inside a record, as a value and as a key
        let mut m = Vec::new();
        write::map_len(&mut m, 3);
        write::str(&mut m, b"a");
        m.extend(f64_bytes(f64::NAN));
        write::str(&mut m, b"b");
        m.extend(f64_bytes(2.0));
        m.extend(f64_bytes(1e16));
        m.extend(f32_bytes(0.1));
        let text = json_of(&m);
        assert_eq!(text, r#"{"a":null,"b":2.0,"1e16":0.1}"#);
        serde_json::from_str::<serde_json::Value>(&text).unwrap();
    }

    #[test]
    fn event_times_inside_records() {
        let mut t = Vec::new();
        write::event_time(&mut t, 1_700_000_000, 5);
        assert_eq!(json_of(&t), "1700000000.000000005");
        // nanoseconds past a second are not a time
        for nanos in [1_000_000_000, 2_000_000_000, u32::MAX] {
            let mut t = Vec::new();
            write::event_time(&mut t, 1_700_000_000, nanos);
            assert_eq!(json_of(&t), "null", "{nanos}");
        }
    }

    #[test]
    fn every_byte_anywhere_reads_back_as_its_text_or_u_fffd() {
        for b in 0..=255u8 {
            for len in [1, 7, 8, 9, 16, 17] {
                for at in 0..len {
                    let mut s: Vec<u8> =
                        b"a\"b\\cdefgh".iter().copied().cycle().take(len).collect();
                    s[at] = b;
                    let mut out = Vec::new();
                    write_str(&mut out, &s);
                    let back: String = serde_json::from_slice(&out)
                        .unwrap_or_else(|e| panic!("byte {b:#x} at {at} of {len}: {e}"));
                    assert_eq!(
                        back,
                        String::from_utf8_lossy(&s),
                        "byte {b:#x} at {at} of {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn escaped_text_reads_back_the_same_with_the_byte_to_escape_anywhere() {
        let chars: Vec<char> = (0u8..0x80)
            .map(char::from)
            .chain(['é', '€', '😀'])
            .collect();
        for c in chars {
            for len in [1, 7, 8, 9, 16, 17, 40] {
                for at in 0..len {
                    let mut s: Vec<char> = "ab\"cdefg".chars().cycle().take(len).collect();
                    s[at] = c;
                    let s: String = s.into_iter().collect();
                    let mut out = Vec::new();
                    write_str(&mut out, s.as_bytes());
                    let back: String = serde_json::from_slice(&out)
                        .unwrap_or_else(|e| panic!("{c:?} at {at} of {len}: {e}"));
                    assert_eq!(back, s, "{c:?} at {at} of {len}");
                }
            }
        }
    }

    #[test]
    fn long_text_reads_back_the_same_across_the_reserved_segments() {
        // escapes, and text that is not ASCII, on and around the 4,096-byte
        // segments' edges; and text that is all escapes (six bytes each)
        for c in ['"', '\u{1}', 'é', '😀', 'x'] {
            for len in [4095, 4096, 4097, 8200] {
                for at in [0, 4088, 4093, 4094, 4095, 4096, 4097, len - 1] {
                    if at >= len {
                        continue;
                    }
                    let mut s: Vec<char> = "ab\"cdefg".chars().cycle().take(len).collect();
                    s[at] = c;
                    let s: String = s.into_iter().collect();
                    let mut out = b"[".to_vec();
                    write_str(&mut out, s.as_bytes());
                    let back: String = serde_json::from_slice(&out[1..])
                        .unwrap_or_else(|e| panic!("{c:?} at {at} of {len}: {e}"));
                    assert_eq!(back, s, "{c:?} at {at} of {len}");
                }
            }
        }
        let controls: Vec<u8> = (0..10_000).map(|i| (i % 0x20) as u8).collect();
        let mut out = Vec::new();
        write_str(&mut out, &controls);
        assert_eq!(out.len(), 2 + 10_000 * 6 - 10_000 / 32 * 3 * 4 - 3 * 4);
        let back: String = serde_json::from_slice(&out).unwrap();
        assert_eq!(back.as_bytes(), controls);
    }

    #[test]
    fn a_container_repeated_from_record_to_record_is_written_the_same() {
        // records whose nested maps repeat, differ in a byte, are of the
        // same length but other, and more than the few kept at once
        let record = |resource: &str, n: u64| {
            let mut m = Vec::new();
            write::map_len(&mut m, 3);
            write::str(&mut m, b"message");
            write::str(&mut m, b"x\"y");
            write::str(&mut m, b"resource");
            write::map_len(&mut m, 2);
            write::str(&mut m, b"service.name");
            write::str(&mut m, resource.as_bytes());
            write::str(&mut m, b"list");
            write::array_len(&mut m, 2);
            write::uint(&mut m, n);
            write::str(&mut m, b"\n");
            write::str(&mut m, b"n");
            write::uint(&mut m, n);
            m
        };
        let names = ["a", "b", "c", "d", "e", "f", "a", "a", "\"", "ab", "a"];
        let big = "x".repeat(5000);
        for (i, name) in names
            .iter()
            .copied()
            .chain([big.as_str(), big.as_str()])
            .enumerate()
        {
            for n in [1, 1, 2] {
                let text = json_of(&record(name, n));
                let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(
                    parsed,
                    serde_json::json!({"message": "x\"y",
                        "resource": {"service.name": name, "list": [n, "\n"]}, "n": n}),
                    "record {i}"
                );
            }
        }
    }

    #[test]
    fn deep_nesting_is_written_whole() {
        // {"a": [[[…1…]]]}, 200 levels, and 100,000 bare arrays: no level
        // becomes null, and no stack is used for them
        let mut m = vec![0x81, 0xa1, b'a'];
        m.extend(vec![0x91; 200]);
        m.push(0x01);
        let text = json_of(&m);
        assert_eq!(
            text,
            format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200))
        );
        let mut m = vec![0x91; 100_000];
        m.push(0x01);
        let text = json_of(&m);
        assert_eq!(
            text,
            format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000))
        );
    }
}
