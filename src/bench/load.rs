//! Load writers.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};

use crate::protocol::forward::{write_message_entry, write_packed_forward};

/// One PackedForward frame of `records` entries, each
/// `[time, {"message": <size bytes>}]`.
pub fn packed_frame(tag: &str, records: usize, size: usize) -> Vec<u8> {
    let mut entries = Vec::with_capacity(records * (size + 24));
    let mut message = vec![b'x'; size];
    for i in 0..records {
        // a distinct prefix per record, so lines are not all identical
        let digits = format!("{i:08}");
        let n = digits.len().min(size);
        message[..n].copy_from_slice(&digits.as_bytes()[digits.len() - n..]);
        write_message_entry(&mut entries, 1_700_000_000, i as u32, &message);
    }
    let mut frame = Vec::with_capacity(entries.len() + 64);
    write_packed_forward(&mut frame, tag, &entries, records, None);
    frame
}

/// Connects to `addr` and writes `frame` `times` times.
pub fn send_frames(addr: SocketAddr, frame: &[u8], times: usize) -> std::io::Result<()> {
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    for _ in 0..times {
        s.write_all(frame)?;
    }
    s.flush()
}
