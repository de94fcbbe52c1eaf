//! The tail checkpoint reader (`sources::tail::checkpoint::parse`): the file
//! is written by logferry, but a crash on a filesystem without ordered
//! writes, a bad sector or a hand edit can leave any bytes in it, and the
//! tail source must still start.
//!
//! The whole input is the checkpoint file (version 1 or 2, by its first
//! line). Checked:
//! * nothing panics, whatever the bytes;
//! * every entry has a head of at most `HEAD_BYTES` (the head length is how
//!   much is read and compared at start-up);
//! * version 1 entries have no birth time and a size equal to their offset;
//! * every line is a comment, blank, an entry or reported malformed, and
//!   every malformed line number is a line of the file;
//! * the entries, written back as logferry saves them (`render`), read back
//!   as exactly the same entries with no malformed line.

#![no_main]

use libfuzzer_sys::fuzz_target;
use logferry::sources::tail::checkpoint::{self, HEAD_BYTES};

mod common;

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

fn check(data: &[u8]) {
    let parsed = checkpoint::parse(data);
    let lines = data.split(|&b| b == b'\n').count();
    let v1 = data.starts_with(b"# logferry tail checkpoint v1");
    for e in parsed.entries.values() {
        assert!(e.head.len as usize <= HEAD_BYTES, "{e:?}");
        if v1 {
            assert_eq!((e.id.born, e.size), (0, e.offset), "{e:?}");
        }
    }
    assert!(parsed.entries.len() + parsed.malformed.len() <= lines);
    assert!(parsed.malformed.windows(2).all(|w| w[0] < w[1]));
    assert!(parsed.malformed.iter().all(|&n| n >= 1 && n <= lines));
    let text = checkpoint::render(parsed.entries.values());
    let again = checkpoint::parse(text.as_bytes());
    assert_eq!(again.malformed, Vec::<usize>::new(), "{text:?}");
    assert_eq!(again.entries, parsed.entries, "{text:?}");
}
