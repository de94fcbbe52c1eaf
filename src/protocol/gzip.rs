//! gzip members written by a compressor each thread keeps.
//!
//! A deflate compressor holds a few hundred KiB of tables, which a new
//! one allocates and clears: at everyday rates, where a forward chunk or
//! a request holds a handful of records, that cost more than compressing
//! them. [`compress`] resets the thread's compressor instead, which
//! clears only its hash table (128 KiB), and stores payloads shorter than
//! [`STORE_BELOW`] uncompressed inside the gzip member, as a record or
//! two would not come out smaller. A thread that has compressed keeps its
//! compressor, about 300 KiB: the runtime's workers and each sink thread
//! that sends gzip.

use std::cell::RefCell;

use flate2::{Compress, Compression, Crc, FlushCompress, Status};

use super::GZIP_LEVEL;

/// The gzip header flate2's encoder writes: deflate, no name or time,
/// operating system unknown.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];

thread_local! {
    static DEFLATE: RefCell<Option<Compress>> = const { RefCell::new(None) };
}

/// Payloads shorter than this go into a stored deflate block: a single
/// log record of this size gains a few bytes from deflate, at the cost of
/// clearing the compressor's tables for it.
pub const STORE_BELOW: usize = 256;

/// One gzip member holding `parts`, one after the other, at [`GZIP_LEVEL`]
/// (stored, if shorter than [`STORE_BELOW`] in all).
pub fn compress<P: AsRef<[u8]>>(parts: &[P]) -> Vec<u8> {
    let len: usize = parts.iter().map(|p| p.as_ref().len()).sum();
    if len < STORE_BELOW {
        return stored(parts, len);
    }
    DEFLATE.with(|cell| {
        // a compressor in use higher up this thread's stack (never, as
        // compressing calls nothing that compresses) would get a new one
        let mut slot = cell.try_borrow_mut().ok();
        let mut owned = None;
        let z = match slot.as_deref_mut() {
            Some(Some(z)) => {
                z.reset();
                z
            }
            Some(empty) => empty.insert(raw_deflate()),
            None => owned.insert(raw_deflate()),
        };
        match member(z, parts, len) {
            Some(out) => out,
            None => {
                // a compressor that failed is not used again; the bytes go
                // stored, whole and readable
                if let Some(slot) = slot.as_deref_mut() {
                    *slot = None;
                }
                stored(parts, len)
            }
        }
    })
}

/// Largest stored block.
const STORED_BLOCK: usize = 0xffff;

/// A gzip member of stored blocks.
fn stored<P: AsRef<[u8]>>(parts: &[P], len: usize) -> Vec<u8> {
    let mut body = Vec::with_capacity(len);
    for p in parts {
        body.extend_from_slice(p.as_ref());
    }
    let mut out = Vec::with_capacity(HEADER.len() + 5 * (len / STORED_BLOCK + 1) + len + 8);
    out.extend_from_slice(&HEADER);
    let mut blocks = body.chunks(STORED_BLOCK).peekable();
    if body.is_empty() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(block) = blocks.next() {
        // BFINAL on the last, BTYPE = 00 (stored), LEN and its complement
        out.push(u8::from(blocks.peek().is_none()));
        let n = block.len() as u16;
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&(!n).to_le_bytes());
        out.extend_from_slice(block);
    }
    let mut crc = Crc::new();
    crc.update(&body);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&crc.amount().to_le_bytes());
    out
}

fn raw_deflate() -> Compress {
    Compress::new(Compression::new(GZIP_LEVEL), false)
}

/// A deflated gzip member; `None` if the compressor failed.
fn member<P: AsRef<[u8]>>(z: &mut Compress, parts: &[P], len: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(HEADER.len() + len / 4 + 64);
    out.extend_from_slice(&HEADER);
    let mut crc = Crc::new();
    for part in parts {
        crc.update(part.as_ref());
        deflate(z, part.as_ref(), &mut out, FlushCompress::None)?;
    }
    deflate(z, &[], &mut out, FlushCompress::Finish)?;
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&crc.amount().to_le_bytes());
    Some(out)
}

/// Feeds all of `input` to `z`, growing `out` as it needs; with `Finish`,
/// until the stream has ended. `None` if the compressor failed.
fn deflate(
    z: &mut Compress,
    mut input: &[u8],
    out: &mut Vec<u8>,
    flush: FlushCompress,
) -> Option<()> {
    loop {
        if out.capacity() - out.len() < 64 {
            out.reserve(out.capacity().max(256));
        }
        let before = z.total_in();
        let status = z.compress_vec(input, out, flush);
        input = &input[(z.total_in() - before) as usize..];
        match status {
            Ok(Status::StreamEnd) => return Some(()),
            // room left over: all taken, nothing held back for lack of room
            Ok(_)
                if flush != FlushCompress::Finish
                    && input.is_empty()
                    && out.len() < out.capacity() =>
            {
                return Some(())
            }
            Ok(_) => {}
            // a raw deflate stream fed bytes in order does not fail
            Err(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gunzip(z: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(z)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    /// Bytes that compress poorly (a xorshift stream) and well (lines).
    fn sample(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|i| {
                if i % 3 == 0 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                } else {
                    b"log line "[i % 9]
                }
            })
            .collect()
    }

    #[test]
    fn members_in_a_row_each_hold_exactly_their_parts() {
        // one thread's compressor, reset between members of every size,
        // from none to several times its window
        for (k, n) in [0, 1, 100, 70_000, 3, 300_000, 0, 255, 256, 5]
            .into_iter()
            .enumerate()
        {
            let whole = sample(n, k as u64 + 1);
            let (a, b) = whole.split_at(n / 3);
            let z = compress(&[a, &[][..], b]);
            assert_eq!(gunzip(&z), whole, "member {k} of {n} bytes");
        }
    }

    #[test]
    fn the_trailer_holds_the_crc_and_length_a_decoder_checks() {
        let data = sample(10_000, 7);
        let mut z = compress(&[&data[..]]);
        assert_eq!(&z[..3], &[0x1f, 0x8b, 8]);
        let mut crc = Crc::new();
        crc.update(&data);
        assert_eq!(z[z.len() - 8..z.len() - 4], crc.sum().to_le_bytes());
        assert_eq!(z[z.len() - 4..], (data.len() as u32).to_le_bytes());
        // a flipped crc is refused
        let at = z.len() - 8;
        z[at] ^= 1;
        let mut out = Vec::new();
        assert!(flate2::read::GzDecoder::new(&z[..])
            .read_to_end(&mut out)
            .is_err());
    }

    #[test]
    fn short_payloads_are_stored_and_longer_ones_deflated() {
        let short = sample(STORE_BELOW - 1, 3);
        let z = compress(&[&short[..10], &short[10..]]);
        // header, one final stored block of exactly the payload, trailer
        assert_eq!(z.len(), 10 + 5 + short.len() + 8);
        assert_eq!(z[10], 1);
        assert_eq!(&z[15..15 + short.len()], &short[..]);
        assert_eq!(gunzip(&z), short);
        // log lines at the threshold come out smaller than they went in
        let lines = b"GET /index.html 200\n".repeat(STORE_BELOW / 20 + 1);
        let z = compress(&[&lines[..]]);
        assert!(z.len() < lines.len(), "{} of {}", z.len(), lines.len());
        assert_eq!(gunzip(&z), lines);
    }

    #[test]
    fn stored_members_of_any_length_read_back() {
        for n in [0, 1, STORED_BLOCK, STORED_BLOCK + 1, 3 * STORED_BLOCK + 7] {
            let data = sample(n, 11);
            let (a, b) = data.split_at(n / 2);
            let z = stored(&[a, b], n);
            assert_eq!(gunzip(&z), data, "{n} bytes");
            assert_eq!(z.len(), 10 + 5 * n.div_ceil(STORED_BLOCK).max(1) + n + 8);
        }
    }

    #[test]
    fn threads_compress_at_once_each_with_its_own() {
        let all: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let data = sample(1_000 + 977 * i, t * 100 + i as u64);
                        assert_eq!(gunzip(&compress(&[&data[..]])), data);
                    }
                })
            })
            .collect();
        for t in all {
            t.join().unwrap();
        }
    }
}
