//! How much a forward connection reads next, and into what buffer.
//!
//! Frames leave the read buffer as shared slices, so a buffer lives (and
//! stays charged to the memory budget) until every frame cut from it has
//! been written by every sink, and until the connection has moved on from
//! it. Two things follow:
//! - a large frame gets a buffer of its own size and is read no further
//!   than its end (plus [`FRAME_TAIL`] for its options map and the head of
//!   the next frame), so the next frame starts in a fresh buffer instead of
//!   being copied out of this one;
//! - a connection that waits (for budget, or for its client) with only the
//!   small head of a frame in a buffer its earlier frames share copies that
//!   head out first ([`unpin_head`]): it then holds about a kilobyte, not
//!   the whole buffer, and the buffer goes as soon as the sinks have written
//!   its frames. With hundreds of busy connections this is what keeps the
//!   bytes held while waiting from adding up to the budget.

use bytes::BytesMut;

/// Bytes requested from the socket per read: starts small (idle and slow
/// connections hold little), doubles while reads fill the buffer, up to
/// the largest size.
pub(super) const READ_CHUNK_MIN: usize = 16 * 1024;
pub(super) const READ_CHUNK_MAX: usize = 1024 * 1024;

/// Frames (or the known rest of one) at least this large are read into a
/// buffer of their own size, to their end.
pub(super) const LARGE_FRAME: usize = 64 * 1024;

/// Read past the end of a large frame's known part: its options map and
/// the head of the next frame, which tells that frame's size. Also the
/// most a connection copies out of a shared buffer before it waits.
pub(super) const FRAME_TAIL: usize = 1024;

/// What the next read needs: a new buffer with room for `grow` more bytes
/// (allocated once the budget allows it), and how many bytes the read may
/// take (`limit`).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ReadPlan {
    pub grow: Option<usize>,
    pub limit: usize,
}

/// Plans room in `buf` for the next read. `hint` is the buffer length the
/// frame begun needs at least (`Scan::needed`), `typical_frame` the size of
/// the last frame, `read_chunk` the current read size.
///
/// - The known rest of a large frame gets room for all of it at once (and
///   [`FRAME_TAIL`]), and is read no further.
/// - The rest of a smaller frame gets room for one read, growing
///   geometrically: a frame whose size is learned a little at a time
///   (Forward mode's many small entries) must not be copied once per read.
/// - A new frame after large ones: its head is read first, into a small
///   buffer, so that the frame gets a buffer of its own size.
/// - A new frame after small ones: room for one read, or for a whole frame
///   as large as the last one; so too for the first bytes of one, read
///   into the few uncharged bytes an idle connection waits with.
pub(super) fn plan_read(
    buf: &BytesMut,
    hint: usize,
    typical_frame: usize,
    read_chunk: usize,
) -> ReadPlan {
    let spare = buf.capacity() - buf.len();
    let mut plan = ReadPlan {
        grow: None,
        limit: usize::MAX,
    };
    if hint > buf.len() {
        let rest = hint - buf.len();
        if rest >= LARGE_FRAME {
            if spare < rest {
                plan.grow = Some(rest.max(buf.len() / 2) + FRAME_TAIL);
            }
            plan.limit = rest + FRAME_TAIL;
        } else if spare < rest || (buf.capacity() < FRAME_TAIL && typical_frame < LARGE_FRAME) {
            // (the first bytes of a frame, read into the few uncharged
            // bytes an idle connection waits with: the frame's read buffer
            // now, so that one read takes the rest of a small frame)
            plan.grow = Some(rest.max(read_chunk).max(buf.len() / 2));
        }
    } else if typical_frame >= LARGE_FRAME {
        if spare < FRAME_TAIL / 2 {
            plan.grow = Some(FRAME_TAIL);
        }
        plan.limit = FRAME_TAIL;
    } else if spare < read_chunk / 2 {
        // a little slack, so a frame slightly larger than the last still fits
        plan.grow = Some(read_chunk.max(typical_frame + typical_frame / 16));
    }
    plan
}

/// The next read size after a read of `n` bytes into `room` bytes of room.
/// A read that filled the buffer means more is waiting: read more at once
/// next time. A read cut short by the plan's limit (not by the buffer)
/// says nothing about that.
pub(super) fn next_read_chunk(read_chunk: usize, n: usize, room: usize, limited: bool) -> usize {
    if limited {
        read_chunk
    } else if n >= room {
        (read_chunk * 2).min(READ_CHUNK_MAX)
    } else if n < read_chunk / 8 {
        (read_chunk / 2).max(READ_CHUNK_MIN)
    } else {
        read_chunk
    }
}

/// If `buf` holds only the head of a frame (at most [`FRAME_TAIL`] bytes)
/// in an allocation charged for much more (`charged` bytes, shared with
/// the frames cut from it), moves the head into an allocation of its own
/// and returns true: the caller then drops its share of the old charge,
/// so that a wait does not hold the whole buffer. The head's copy is not
/// charged (at most a kilobyte per connection).
pub(super) fn unpin_head(buf: &mut BytesMut, charged: usize) -> bool {
    if buf.is_empty() || buf.len() > FRAME_TAIL || charged < LARGE_FRAME {
        return false;
    }
    *buf = BytesMut::from(&buf[..]);
    true
}

#[cfg(test)]
mod tests {
    use bytes::BufMut;

    use super::*;

    fn buf(len: usize, capacity: usize) -> BytesMut {
        let mut b = BytesMut::with_capacity(capacity);
        b.put_bytes(b'x', len);
        b
    }

    #[test]
    fn the_byte_an_idle_connection_woke_with_gets_a_read_buffer_for_the_rest_of_a_small_frame() {
        // the first byte of a PackedForward chunk of 1 KiB, in the 64 bytes
        // a read of one byte into an empty buffer allocates
        let b = buf(1, 64);
        let plan = plan_read(&b, 2, 1017, READ_CHUNK_MIN);
        assert_eq!(plan.grow, Some(READ_CHUNK_MIN));
        // after large frames its head is still read first, on its own
        let plan = plan_read(&b, 2, 200_000, READ_CHUNK_MIN);
        assert_eq!(plan.grow, None);
        // a frame begun in a read buffer reads on into it
        let b = buf(100, READ_CHUNK_MIN);
        assert_eq!(plan_read(&b, 300, 1017, READ_CHUNK_MIN).grow, None);
    }

    #[test]
    fn the_known_rest_of_a_large_frame_gets_a_buffer_of_its_size_read_to_its_end() {
        // the head of a 122 KiB PackedForward frame, its size known
        let b = buf(40, 40);
        let plan = plan_read(&b, 122_000, 122_000, READ_CHUNK_MAX);
        assert_eq!(plan.grow, Some(122_000 - 40 + FRAME_TAIL));
        assert_eq!(plan.limit, 122_000 - 40 + FRAME_TAIL);
        // room already there: no new buffer, still read to the end
        let b = buf(40, 130_000);
        let plan = plan_read(&b, 122_000, 122_000, READ_CHUNK_MAX);
        assert_eq!(plan.grow, None);
        assert_eq!(plan.limit, 122_000 - 40 + FRAME_TAIL);
        // a 4 MiB frame, half read: the rest at once, not a read chunk
        let b = buf(2 << 20, 2 << 20);
        let plan = plan_read(&b, 4 << 20, 4 << 20, READ_CHUNK_MIN);
        assert_eq!(plan.grow, Some((2 << 20) + FRAME_TAIL));
        assert_eq!(plan.limit, (2 << 20) + FRAME_TAIL);
    }

    #[test]
    fn a_frame_learned_a_little_at_a_time_grows_geometrically() {
        // Forward mode: the next entry's end is known, the frame's is not
        let b = buf(200_000, 200_000);
        let plan = plan_read(&b, 200_100, 200_000, READ_CHUNK_MIN);
        assert_eq!(plan.grow, Some(100_000));
        assert_eq!(plan.limit, usize::MAX);
        // small frames: one read chunk
        let b = buf(100, 100);
        let plan = plan_read(&b, 3_000, 2_000, READ_CHUNK_MIN);
        assert_eq!(plan.grow, Some(READ_CHUNK_MIN));
        assert_eq!(plan.limit, usize::MAX);
    }

    #[test]
    fn after_large_frames_the_next_head_is_read_alone_into_a_small_buffer() {
        let b = BytesMut::new();
        let plan = plan_read(&b, 0, 122_000, READ_CHUNK_MAX);
        assert_eq!(plan.grow, Some(FRAME_TAIL));
        assert_eq!(plan.limit, FRAME_TAIL);
        // a head too short to tell the size, room left for more of it
        let b = buf(3, FRAME_TAIL);
        let plan = plan_read(&b, 0, 122_000, READ_CHUNK_MAX);
        assert_eq!(plan.grow, None);
        assert_eq!(plan.limit, FRAME_TAIL);
    }

    #[test]
    fn after_small_frames_a_new_buffer_fits_one_read_or_one_frame() {
        let b = BytesMut::new();
        assert_eq!(
            plan_read(&b, 0, 0, READ_CHUNK_MIN),
            ReadPlan {
                grow: Some(READ_CHUNK_MIN),
                limit: usize::MAX
            }
        );
        let plan = plan_read(&b, 0, 32_000, READ_CHUNK_MIN);
        assert_eq!(plan.grow, Some(34_000));
        // room enough left: no new buffer
        let b = buf(0, READ_CHUNK_MIN);
        assert_eq!(plan_read(&b, 0, 1_000, READ_CHUNK_MIN).grow, None);
    }

    #[test]
    fn reads_cut_short_by_the_plan_do_not_grow_the_read_size() {
        assert_eq!(
            next_read_chunk(READ_CHUNK_MIN, 1024, 1024, true),
            READ_CHUNK_MIN
        );
        assert_eq!(
            next_read_chunk(READ_CHUNK_MIN, READ_CHUNK_MIN, READ_CHUNK_MIN, false),
            2 * READ_CHUNK_MIN
        );
        assert_eq!(
            next_read_chunk(READ_CHUNK_MAX, READ_CHUNK_MAX, READ_CHUNK_MAX, false),
            READ_CHUNK_MAX
        );
        // short reads shrink it back
        assert_eq!(
            next_read_chunk(8 * READ_CHUNK_MIN, 10, 8 * READ_CHUNK_MIN, false),
            4 * READ_CHUNK_MIN
        );
        assert_eq!(
            next_read_chunk(READ_CHUNK_MIN, 10, READ_CHUNK_MIN, false),
            READ_CHUNK_MIN
        );
    }

    #[test]
    fn only_a_small_head_in_a_large_buffer_is_copied_out() {
        let mut big = BytesMut::with_capacity(200_000);
        big.put_bytes(b'f', 150_000);
        let frame = big.split_to(149_500).freeze();
        assert_eq!(big.len(), 500);
        assert!(unpin_head(&mut big, 200_000));
        assert_eq!(&big[..], &[b'f'; 500][..]);
        assert_eq!(big.capacity(), 500);
        // the frame cut earlier still reads the same
        assert_eq!(frame.len(), 149_500);
        // a larger partial frame stays where it is
        let mut b = buf(FRAME_TAIL + 1, 200_000);
        assert!(!unpin_head(&mut b, 200_000));
        // a small buffer is not worth copying
        let mut b = buf(100, 4096);
        assert!(!unpin_head(&mut b, 4096));
        // nor is an empty one
        let mut b = BytesMut::with_capacity(200_000);
        assert!(!unpin_head(&mut b, 200_000));
    }
}
