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
    /// An octet count RFC 6587 does not allow (`header` bytes: its digits
    /// and the space): zero, a leading zero, or more digits than any
    /// length could have. Where the frame ends is unknown, so nothing
    /// after it can be framed: the connection must close. Every later
    /// step says the same.
    Invalid { header: usize },
    /// No complete message in the buffer.
    NeedMore,
}

/// The framing state of one connection.
#[derive(Debug, Clone)]
pub struct Framer {
    framing: Framing,
    max: usize,
    skipping: Skipping,
    /// An invalid octet count was met (see [`Step::Invalid`]).
    broken: Option<usize>,
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
            broken: None,
        }
    }

    /// The next step over `buf`, which starts where the last step ended.
    pub fn step(&mut self, buf: &[u8]) -> Step {
        if let Some(header) = self.broken {
            return Step::Invalid { header };
        }
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
    /// like one (the message is then read as a line). `LEN` is 1 to
    /// 9,999,999,999 without a leading zero (RFC 6587 3.4.1); other digits
    /// followed by a space are [`Step::Invalid`].
    fn octet_counted(&mut self, buf: &[u8]) -> Option<Step> {
        if !buf[0].is_ascii_digit() {
            return None;
        }
        let digits = buf
            .iter()
            .take(MAX_LEN_DIGITS + 1)
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits > MAX_LEN_DIGITS {
            // no length has that many digits: followed by a space, it was
            // meant as one all the same. Only runs a line could hold are
            // judged so, so that read boundaries never change the outcome
            // (a longer run is an over-long line either way).
            let run = buf.iter().take_while(|c| c.is_ascii_digit()).count();
            return (buf.get(run) == Some(&b' ') && run <= self.max + 1)
                .then(|| self.invalid(run + 1));
        }
        match buf.get(digits) {
            None => return Some(Step::NeedMore),
            Some(b' ') => {}
            Some(_) => return None,
        }
        if buf[0] == b'0' {
            // zero, or a leading zero
            return Some(self.invalid(digits + 1));
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

    fn invalid(&mut self, header: usize) -> Step {
        self.broken = Some(header);
        Step::Invalid { header }
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
        if buf.is_empty() || self.skipping != Skipping::Nothing || self.broken.is_some() {
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
                    Step::Invalid { .. } => {
                        // the connection closes: a mark, and nothing more
                        out.push(b"<invalid>".to_vec());
                        return (out, long);
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
    fn zero_leading_zero_and_overflowing_lengths_are_invalid() {
        for (input, header) in [
            (&b"5 hello0 x"[..], 2),
            (b"5 hello00 hello", 3),
            (b"5 hello05 hello", 3),
            (b"5 hello12345678901 hello", 12),
            (b"5 hello99999999999999999999 x", 21),
        ] {
            for chunk in [1, 2, 3, 100] {
                let (m, long) = frame_all(Framing::OctetCounting, 100, input, chunk);
                assert_eq!(
                    (strs(&m), long),
                    (vec!["hello", "<invalid>"], 0),
                    "{:?} chunk {chunk}",
                    String::from_utf8_lossy(input)
                );
            }
            let mut f = Framer::new(Framing::OctetCounting, 100);
            assert!(matches!(f.step(input), Step::Message { consumed: 7, .. }));
            assert_eq!(f.step(&input[7..]), Step::Invalid { header });
            // and it stays so: the rest cannot be framed
            assert_eq!(f.step(b"5 hello"), Step::Invalid { header });
            assert_eq!(f.last_line(b"x"), None);
        }
        // the largest length is still one (and over max_line_bytes here)
        let (m, long) = frame_all(Framing::OctetCounting, 100, b"9999999999 x", 100);
        assert_eq!((m.len(), long), (0, 1));
        // digits that are not followed by a space are a line, as before
        let (m, _) = frame_all(
            Framing::OctetCounting,
            100,
            b"0123abc
123456789012,x
",
            1,
        );
        assert_eq!(strs(&m), ["0123abc", "123456789012,x"]);
        // with newline framing, nothing is a length
        let (m, _) = frame_all(
            Framing::Newline,
            100,
            b"0 x
12345678901 y
",
            1,
        );
        assert_eq!(strs(&m), ["0 x", "12345678901 y"]);
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
                assert!(whole.0.iter().all(|m| m.len() <= max || m == b"<invalid>"));
            }
        }
    }
}
