//! Shared by the benchmarks.

use logferry::event::{Batch, Records};
use logferry::protocol::forward::write_message_entry;

/// Records per batch, as a forward sender's chunk of 1000.
pub const RECORDS: usize = 1000;

/// A batch of [`RECORDS`] `{"message": …}` records of `size` bytes, as a
/// forward source passes one on.
pub fn batch(size: usize) -> Batch {
    let msg = vec![b'x'; size];
    let mut e = Vec::new();
    for i in 0..RECORDS {
        write_message_entry(&mut e, 1_700_000_000, i as u32, &msg);
    }
    Batch::new("bench".into(), Records::Entries(e.into()), RECORDS)
}
