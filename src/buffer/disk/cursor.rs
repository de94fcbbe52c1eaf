//! The delivered cursor: the `ack` file in the buffer directory.
//!
//! Every frame before the cursor has been delivered; a restart replays
//! from it. Layout (28 bytes, little-endian, rewritten in place):
//!
//! | offset | size | field                                   |
//! |--------|------|-----------------------------------------|
//! | 0      | 4    | magic `LFAK`                            |
//! | 4      | 1    | version, 1                              |
//! | 5      | 3    | reserved, zero                          |
//! | 8      | 8    | segment id (u64)                        |
//! | 16     | 8    | offset of the first undelivered frame   |
//! | 24     | 4    | CRC32C of bytes 0..24                   |
//!
//! A missing or damaged cursor replays every segment on disk: duplicates,
//! never a loss.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// A position in the buffer: segment id, byte offset in that segment.
pub type Pos = (u64, u64);

const MAGIC: &[u8; 4] = b"LFAK";
pub const LEN: usize = 28;

pub fn encode(pos: Pos) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    b[..4].copy_from_slice(MAGIC);
    b[4] = 1;
    b[8..16].copy_from_slice(&pos.0.to_le_bytes());
    b[16..24].copy_from_slice(&pos.1.to_le_bytes());
    let crc = crc32c::crc32c(&b[..24]);
    b[24..].copy_from_slice(&crc.to_le_bytes());
    b
}

pub fn decode(b: &[u8]) -> Option<Pos> {
    if b.len() < LEN || &b[..4] != MAGIC || b[4] != 1 {
        return None;
    }
    let crc = u32::from_le_bytes(b[24..28].try_into().ok()?);
    if crc32c::crc32c(&b[..24]) != crc {
        return None;
    }
    Some((
        u64::from_le_bytes(b[8..16].try_into().ok()?),
        u64::from_le_bytes(b[16..24].try_into().ok()?),
    ))
}

/// Reads the cursor of `dir`; `Ok(None)` if there is none or it is damaged.
pub fn load(dir: &Path) -> Option<Pos> {
    std::fs::read(dir.join("ack")).ok().and_then(|b| decode(&b))
}

/// Opens (creating) the cursor file of `dir` for rewriting.
pub fn open(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join("ack"))
}

/// Rewrites the cursor in place: one small write at offset 0.
pub fn store(f: &File, pos: Pos) -> io::Result<()> {
    f.write_all_at(&encode(pos), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_damage() {
        let b = encode((7, 1234));
        assert_eq!(decode(&b), Some((7, 1234)));
        let mut bad = b;
        bad[10] ^= 1;
        assert_eq!(decode(&bad), None);
        assert_eq!(decode(&b[..20]), None);
    }
}
