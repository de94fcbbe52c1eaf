//! The write-time stamp the load writers put into every line they write,
//! so that whatever reads the line at the far end of a pipeline can tell
//! how long it took: `t=` and the Unix time in nanoseconds, 19 digits
//! (`t=1764201600123456789`), 21 bytes in all.
//!
//! A numbered line keeps its number first and its size: `NUMBER t=STAMP`
//! and then `x` up to the size asked for. A line too short for both
//! (fewer than the number's digits + 22 bytes) carries its number alone,
//! and its latency is not measured.
//!
//! The stamp is text inside the line, so it survives any format a system
//! writes the line in (raw, a JSON `{"log": "…"}`, an LTSV field): [`find`]
//! looks for it anywhere in what arrives.

use std::time::{SystemTime, UNIX_EPOCH};

/// Bytes of a stamp: `t=` and 19 digits.
pub const WIDTH: usize = 21;

/// Digits of the nanosecond count (enough until the year 2286).
const DIGITS: usize = WIDTH - 2;

/// A rendered stamp, ready to be copied into lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp([u8; WIDTH]);

impl Stamp {
    /// The time now.
    pub fn now() -> Stamp {
        Stamp::at(now_nanos())
    }

    /// The stamp of `nanos` since the Unix epoch.
    pub fn at(nanos: u64) -> Stamp {
        let mut b = [b'0'; WIDTH];
        b[0] = b't';
        b[1] = b'=';
        let mut n = nanos;
        for d in b[2..].iter_mut().rev() {
            *d = b'0' + (n % 10) as u8;
            n /= 10;
        }
        Stamp(b)
    }

    pub fn as_bytes(&self) -> &[u8; WIDTH] {
        &self.0
    }
}

/// Nanoseconds since the Unix epoch, from the system clock (the clock the
/// stamps are compared with: writer and reader run on one machine).
pub fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(u64::MAX as u128) as u64)
}

/// Appends a line of `size` bytes plus a newline: the last digits of `id`
/// that fit, then ` ` and the stamp if there is room for both, then `x`.
pub fn numbered_line(out: &mut Vec<u8>, id: &[u8], size: usize, stamp: &Stamp) {
    let start = out.len();
    let k = id.len().min(size);
    out.extend_from_slice(&id[id.len() - k..]);
    if fits(id.len(), size) {
        out.push(b' ');
        out.extend_from_slice(stamp.as_bytes());
        if out.len() - start < size {
            out.push(b' ');
        }
    }
    out.resize(start + size, b'x');
    out.push(b'\n');
}

/// Whether a line of `size` bytes numbered with `id_len` digits has room
/// for a stamp.
pub fn fits(id_len: usize, size: usize) -> bool {
    size >= id_len + 1 + WIDTH
}

/// The stamp in `line` (nanoseconds since the Unix epoch): the first `t=`
/// that starts the line or follows a byte that is not a letter or a digit,
/// followed by exactly 19 digits.
pub fn find(line: &[u8]) -> Option<u64> {
    let mut from = 0;
    while let Some(i) = memchr::memmem::find(&line[from..], b"t=") {
        let at = from + i;
        from = at + 2;
        if at > 0 && line[at - 1].is_ascii_alphanumeric() {
            continue;
        }
        let digits = line.get(at + 2..at + 2 + DIGITS)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            continue;
        }
        if line.get(at + 2 + DIGITS).is_some_and(u8::is_ascii_digit) {
            continue;
        }
        return Some(
            digits
                .iter()
                .fold(0u64, |n, d| n.wrapping_mul(10) + u64::from(d - b'0')),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_renders_19_digits_and_is_found_anywhere() {
        let s = Stamp::at(1_764_201_600_123_456_789);
        assert_eq!(s.as_bytes(), b"t=1764201600123456789");
        assert_eq!(Stamp::at(5).as_bytes(), b"t=0000000000000000005");
        for line in [
            &b"t=1764201600123456789"[..],
            b"000000000042 t=1764201600123456789 xxxx",
            b"{\"log\":\"000000000042 t=1764201600123456789 xxxx\"}",
            b"time:26/Nov/2026\tstamp:t=1764201600123456789",
            // a `t=` that is not a stamp comes first
            b"host=a t=12 t=1764201600123456789",
        ] {
            assert_eq!(
                find(line),
                Some(1_764_201_600_123_456_789),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        for line in [
            &b"000000000042 xxxx"[..],
            b"at=1764201600123456789",
            b"t=176420160012345678",
            b"t=17642016001234567890",
            b"t=1764201600123456789"[..10].as_ref(),
        ] {
            assert_eq!(find(line), None, "{}", String::from_utf8_lossy(line));
        }
        let now = now_nanos();
        assert_eq!(find(Stamp::at(now).as_bytes()), Some(now));
    }

    #[test]
    fn numbered_lines_keep_their_size_with_or_without_a_stamp() {
        let s = Stamp::at(1_764_201_600_123_456_789);
        let mut out = Vec::new();
        numbered_line(&mut out, b"000000000042", 40, &s);
        assert_eq!(out, b"000000000042 t=1764201600123456789 xxxxx\n");
        // 12 digits + space + 21: exactly fits
        out.clear();
        numbered_line(&mut out, b"000000000042", 34, &s);
        assert_eq!(out, b"000000000042 t=1764201600123456789\n");
        // one byte short: the number alone
        out.clear();
        numbered_line(&mut out, b"000000000042", 33, &s);
        assert_eq!(out.len(), 34);
        assert!(out.starts_with(b"000000000042xxx") && find(&out).is_none());
        // shorter than the number: its last digits
        out.clear();
        numbered_line(&mut out, b"000000000042", 3, &s);
        assert_eq!(out, b"042\n");
    }
}
