//! Splitting a TCP byte stream into messages: newline-delimited lines, or
//! RFC 6587 octet counting (`LEN SP MSG`).
//!
//! The framer works on the bytes a connection has buffered and says how
//! many it consumed; "not enough bytes yet" is [`Step::NeedMore`], not an
//! error. It never holds more than one message: a message longer than
//! `max_line_bytes` is skipped as it streams in (to its newline, or for its
//! announced length), so a peer that never sends a newline costs at most
//! `max_line_bytes` of memory.

use super::config::Framing;

/// One framing decision over the start of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A message at `start..end`; `consumed` bytes (message and delimiters)
    /// leave the buffer.
    Message {
        consumed: usize,
        start: usize,
        end: usize,
    },
    /// `consumed` bytes carry no message (an empty line, a stray newline
    /// between octet-counted frames, the rest of an over-long message).
    Skip { consumed: usize },
    /// A message longer than `max_line_bytes` (`len` bytes, or at least
    /// that many if its end has not arrived yet); `consumed` bytes are
    /// dropped and the rest of it will be.
    TooLong { consumed: usize, len: usize },
    /// No complete message in the buffer.
    NeedMore,
}

/// The framing state of one connection.
#[derive(Debug, Clone)]
pub struct Framer {
    framing: Framing,
    max: usize,
    skipping: Skipping,
}

/// What is left of an over-long message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skipping {
    Nothing,
    ToNewline,
    Bytes(usize),
}

/// Most digits of an octet count (up to 9,999,999,999 bytes, far above
/// any `max_line_bytes`).
const MAX_LEN_DIGITS: usize = 10;

impl Framer {
    pub fn new(framing: Framing, max_line_bytes: usize) -> Self {
        Framer {
            framing,
            max: max_line_bytes,
            skipping: Skipping::Nothing,
        }
    }

    /// The next step over `buf`, which starts where the last step ended.
    pub fn step(&mut self, buf: &[u8]) -> Step {
        if buf.is_empty() {
            return Step::NeedMore;
        }
        match self.skipping {
            Skipping::Nothing => {}
            Skipping::Bytes(n) => {
                let consumed = n.min(buf.len());
                self.skipping = if consumed == n {
                    Skipping::Nothing
                } else {
                    Skipping::Bytes(n - consumed)
                };
                return Step::Skip { consumed };
            }
            Skipping::ToNewline => {
                return match memchr::memchr(b'\n', buf) {
                    Some(i) => {
                        self.skipping = Skipping::Nothing;
                        Step::Skip { consumed: i + 1 }
                    }
                    None => Step::Skip {
                        consumed: buf.len(),
                    },
                };
            }
        }
        if self.framing == Framing::OctetCounting {
            if matches!(buf[0], b'\n' | b'\r') {
                // some senders end octet-counted frames with a newline too
                return Step::Skip { consumed: 1 };
            }
            if let Some(step) = self.octet_counted(buf) {
                return step;
            }
        }
        self.line(buf)
    }

    /// `LEN SP MSG` at the start of `buf`; `None` if it does not start
    /// like one (the message is then read as a line).
    fn octet_counted(&mut self, buf: &[u8]) -> Option<Step> {
        if !matches!(buf[0], b'1'..=b'9') {
            return None;
        }
        let digits = buf
            .iter()
            .take(MAX_LEN_DIGITS + 1)
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits > MAX_LEN_DIGITS {
            return None;
        }
        match buf.get(digits) {
            None => return Some(Step::NeedMore),
            Some(b' ') => {}
            Some(_) => return None,
        }
        let len: usize = std::str::from_utf8(&buf[..digits])
            .ok()
            .and_then(|d| d.parse().ok())?;
        let start = digits + 1;
        if len > self.max {
            let available = (buf.len() - start).min(len);
            if available < len {
                self.skipping = Skipping::Bytes(len - available);
            }
            return Some(Step::TooLong {
                consumed: start + available,
                len,
            });
        }
        if buf.len() < start + len {
            return Some(Step::NeedMore);
        }
        Some(Step::Message {
            consumed: start + len,
            start,
            end: start + len,
        })
    }

    fn line(&mut self, buf: &[u8]) -> Step {
        match memchr::memchr(b'\n', buf) {
            Some(i) => {
                let end = if i > 0 && buf[i - 1] == b'\r' {
                    i - 1
                } else {
                    i
                };
                if end == 0 {
                    Step::Skip { consumed: i + 1 }
                } else if end > self.max {
                    Step::TooLong {
                        consumed: i + 1,
                        len: end,
                    }
                } else {
                    Step::Message {
                        consumed: i + 1,
                        start: 0,
                        end,
                    }
                }
            }
            // one byte of slack for a `\r` before the newline
            None if buf.len() > self.max + 1 => {
                self.skipping = Skipping::ToNewline;
                Step::TooLong {
                    consumed: buf.len(),
                    len: buf.len(),
                }
            }
            None => Step::NeedMore,
        }
    }

    /// At the end of the stream: the unterminated last line in `buf`, if
    /// it is one (an unfinished octet-counted frame is not a message).
    pub fn last_line(&self, buf: &[u8]) -> Option<(usize, usize)> {
        if buf.is_empty() || self.skipping != Skipping::Nothing {
            return None;
        }
        let digits = buf.iter().take_while(|c| c.is_ascii_digit()).count();
        if self.framing == Framing::OctetCounting && digits > 0 && buf.get(digits) == Some(&b' ') {
            return None;
        }
        let end = if buf.ends_with(b"\r") {
            buf.len() - 1
        } else {
            buf.len()
        };
        (end > 0 && end <= self.max).then_some((0, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the framer over `input` fed `chunk` bytes at a time; returns
    /// the messages and the number of over-long ones.
    pub(crate) fn frame_all(
        framing: Framing,
        max: usize,
        input: &[u8],
        chunk: usize,
    ) -> (Vec<Vec<u8>>, usize) {
        let mut f = Framer::new(framing, max);
        let mut buf = Vec::new();
        let (mut out, mut long) = (Vec::new(), 0);
        for piece in input.chunks(chunk.max(1)) {
            buf.extend_from_slice(piece);
            loop {
                match f.step(&buf) {
                    Step::Message {
                        consumed,
                        start,
                        end,
                    } => {
                        out.push(buf[start..end].to_vec());
                        buf.drain(..consumed);
                    }
                    Step::Skip { consumed } => {
                        buf.drain(..consumed);
                    }
                    Step::TooLong { consumed, .. } => {
                        long += 1;
                        buf.drain(..consumed);
                    }
                    Step::NeedMore => break,
                }
            }
        }
        if let Some((s, e)) = f.last_line(&buf) {
            out.push(buf[s..e].to_vec());
        }
        (out, long)
    }

    fn strs(v: &[Vec<u8>]) -> Vec<&str> {
        v.iter().map(|m| std::str::from_utf8(m).unwrap()).collect()
    }

    #[test]
    fn newline_lines_crlf_and_empty_lines_in_any_chunking() {
        let input = b"one\r\ntwo\n\n\r\nthree\nfour";
        for chunk in [1, 2, 3, 7, 100] {
            let (m, long) = frame_all(Framing::Newline, 100, input, chunk);
            assert_eq!(strs(&m), ["one", "two", "three", "four"], "chunk {chunk}");
            assert_eq!(long, 0);
        }
    }

    #[test]
    fn an_over_long_line_is_dropped_once_and_the_next_one_kept() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\nok\n");
        input.extend_from_slice(&[b'y'; 11]);
        input.extend_from_slice(b"\r\nfine\n");
        for chunk in [1, 4, 9, 1000] {
            let (m, long) = frame_all(Framing::Newline, 10, &input, chunk);
            assert_eq!(strs(&m), ["ok", "fine"], "chunk {chunk}");
            assert_eq!(long, 2, "chunk {chunk}");
        }
        // exactly max bytes, with or without \r, is kept
        let (m, long) = frame_all(Framing::Newline, 3, b"abc\r\nabc\n", 1);
        assert_eq!((strs(&m), long), (vec!["abc", "abc"], 0));
    }

    #[test]
    fn octet_counting_with_newline_fallback() {
        let input = b"5 hello11 hello\nworld\nplain line\n3 abc\n";
        for chunk in [1, 2, 5, 100] {
            let (m, long) = frame_all(Framing::OctetCounting, 100, input, chunk);
            assert_eq!(
                strs(&m),
                ["hello", "hello\nworld", "plain line", "abc"],
                "chunk {chunk}"
            );
            assert_eq!(long, 0);
        }
    }

    #[test]
    fn octet_counted_frame_over_the_limit_is_skipped_by_its_length() {
        let input = b"12 aaaaaaaaaaaa4 abcd";
        for chunk in [1, 3, 100] {
            let (m, long) = frame_all(Framing::OctetCounting, 10, input, chunk);
            assert_eq!((strs(&m), long), (vec!["abcd"], 1), "chunk {chunk}");
        }
        // an unfinished frame at the end is not a message
        let (m, _) = frame_all(Framing::OctetCounting, 10, b"4 ab", 100);
        assert!(m.is_empty());
    }

    #[test]
    fn read_boundaries_do_not_change_the_messages() {
        // the fuzz target's main property, over small random streams built
        // from the bytes framing cares about
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let alphabet = b"0123 \n\r\nab1";
        for round in 0..3000 {
            let len = (next() % 60) as usize;
            let input: Vec<u8> = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let max = (next() % 12) as usize + 1;
            for framing in [Framing::Newline, Framing::OctetCounting] {
                let whole = frame_all(framing, max, &input, input.len());
                for chunk in [1, 2, 5] {
                    assert_eq!(
                        frame_all(framing, max, &input, chunk),
                        whole,
                        "round {round} {framing:?} max {max} chunk {chunk}: {:?}",
                        String::from_utf8_lossy(&input)
                    );
                }
                assert!(whole.0.iter().all(|m| m.len() <= max));
            }
        }
    }
}
