//! Chunks: the unit the forward sink sends, acks and resends. One chunk is
//! one PackedForward frame of one tag, made of whole batches.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use std::sync::atomic::AtomicUsize;

use bytes::Bytes;

use super::config::Compress;
use crate::buffer::Delivery;
use crate::event::{Records, Tag};
use crate::protocol::gzip;
use crate::protocol::msgpack::write;

pub struct Chunk {
    pub tag: Tag,
    pub count: usize,
    /// Bytes of entries (estimated for lines until they are encoded).
    pub bytes: usize,
    /// The batches in this chunk, settled when the chunk is, and sent back
    /// to back as entry streams (`[time, record]` msgpack): batches that
    /// arrived as forward entries as they are, lines encoded only when the
    /// frame is made, so chunks waiting for a server hold no second copy.
    deliveries: Vec<Part>,
    pub started: Instant,
    /// Ack id, unique in this process.
    pub id: String,
    /// The frame, encoded once and reused on resend.
    frame: Option<Frame>,
    /// Failed attempts charged to this chunk (see `ServerTask::session`).
    pub attempts: u32,
    /// Held while the chunk exists, so the dispatcher can tell when every
    /// chunk has been settled and how many records they hold.
    unsettled: Arc<Unsettled>,
}

/// What the chunks of one sink hold until they are settled: the number of
/// chunks is the `Arc`'s strong count (minus the dispatcher's own).
#[derive(Default)]
pub struct Unsettled {
    /// Records in chunks that exist and are not settled.
    pub records: AtomicUsize,
}

impl Drop for Chunk {
    fn drop(&mut self) {
        self.unsettled
            .records
            .fetch_sub(self.count, Ordering::AcqRel);
    }
}

use crate::sinks::settle::LINE_ENTRY_OVERHEAD;

/// Bytes of entries `b` will take in a chunk (estimated for lines).
pub fn entry_bytes(b: &crate::event::Batch) -> usize {
    match &b.records {
        Records::Lines { data, .. } => data.len() + LINE_ENTRY_OVERHEAD * b.count,
        Records::Entries(e) => e.len(),
    }
}

/// The entries of `b`: forward entries as they are, lines encoded.
fn entries_of(b: &crate::event::Batch) -> Bytes {
    crate::sinks::settle::batch_entries(b)
}

/// An encoded frame: a small head, the payload parts, a small tail.
#[derive(Clone)]
pub struct Frame {
    pub head: Vec<u8>,
    pub parts: Vec<Bytes>,
    pub tail: Vec<u8>,
}

impl Frame {
    pub fn len(&self) -> usize {
        self.head.len() + self.parts.iter().map(Bytes::len).sum::<usize>() + self.tail.len()
    }
}

fn next_id() -> String {
    static PREFIX: OnceLock<String> = OnceLock::new();
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let prefix = PREFIX.get_or_init(|| {
        crate::protocol::forward::handshake::random_bytes(8)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    });
    format!("{prefix}-{}", SEQ.fetch_add(1, Ordering::Relaxed))
}

impl Chunk {
    pub fn new(tag: Tag, unsettled: Arc<Unsettled>) -> Self {
        Chunk {
            tag,
            count: 0,
            bytes: 0,
            deliveries: Vec::new(),
            started: Instant::now(),
            id: next_id(),
            frame: None,
            attempts: 0,
            unsettled,
        }
    }

    /// Adds a whole batch.
    pub fn push(&mut self, d: Delivery) {
        let b = d.batch();
        self.add_records(b.count);
        self.bytes += entry_bytes(b);
        self.deliveries.push(Part::Whole(d));
    }

    /// Adds one piece of a batch split over several chunks.
    pub fn push_piece(&mut self, entries: Bytes, count: usize, piece: Piece) {
        self.add_records(count);
        self.bytes += entries.len();
        self.deliveries.push(Part::Piece(entries, piece));
    }

    /// The entry streams of every batch or piece, in order.
    fn parts(&self) -> Vec<Bytes> {
        self.deliveries
            .iter()
            .map(|d| match d {
                Part::Whole(d) => entries_of(d.batch()),
                Part::Piece(entries, _) => entries.clone(),
            })
            .collect()
    }

    fn add_records(&mut self, n: usize) {
        self.count += n;
        self.unsettled.records.fetch_add(n, Ordering::AcqRel);
    }

    /// The PackedForward (or CompressedPackedForward) frame of this chunk.
    pub fn frame(&mut self, compress: Compress, with_ack: bool) -> Frame {
        if let Some(f) = &self.frame {
            return f.clone();
        }
        let parts = self.parts();
        let parts = match compress {
            Compress::None => parts,
            Compress::Gzip => vec![Bytes::from(gzip::compress(&parts))],
        };
        let payload: usize = parts.iter().map(Bytes::len).sum();
        let mut head = Vec::with_capacity(self.tag.len() + 16);
        write::array_len(&mut head, 3);
        write::str(&mut head, self.tag.as_bytes());
        write::bin_header(&mut head, payload);
        let mut tail = Vec::with_capacity(64);
        let options = 1 + usize::from(with_ack) + usize::from(compress == Compress::Gzip);
        write::map_len(&mut tail, options);
        write::str(&mut tail, b"size");
        write::uint(&mut tail, self.count as u64);
        if with_ack {
            write::str(&mut tail, b"chunk");
            write::str(&mut tail, self.id.as_bytes());
        }
        if compress == Compress::Gzip {
            write::str(&mut tail, b"compressed");
            write::str(&mut tail, b"gzip");
        }
        let frame = Frame { head, parts, tail };
        self.frame = Some(frame.clone());
        frame
    }

    /// Every batch in the chunk was delivered.
    pub fn accept(mut self) {
        for d in std::mem::take(&mut self.deliveries) {
            match d {
                Part::Whole(d) => d.accept(),
                Part::Piece(_, mut p) => p.settled = true,
            }
        }
    }
}

impl crate::sinks::settle::Settle for Chunk {
    fn tag(&self) -> &str {
        &self.tag
    }
    fn records(&self) -> usize {
        self.count
    }
    fn entries(&self) -> Vec<Bytes> {
        self.parts()
    }
    fn accept(self) {
        Chunk::accept(self)
    }
    fn reject(self) {
        // pieces dropped unsettled and whole deliveries dropped unaccepted
        // reject their batches
        drop(self)
    }
    fn refuse(mut self, refusal: crate::ack::Refusal) {
        for d in std::mem::take(&mut self.deliveries) {
            match d {
                Part::Whole(d) => crate::sinks::settle::Settle::refuse(d, refusal.clone()),
                Part::Piece(_, mut p) => {
                    let split = p.shared.delivery.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(d) = split.as_ref() {
                        d.batch().ack.refuse(refusal.clone());
                    }
                    drop(split);
                    p.settled = true;
                }
            }
        }
    }
}

/// What a chunk settles: whole batches, or pieces of a batch too large for
/// one chunk.
enum Part {
    Whole(Delivery),
    /// The piece's entries, and the piece.
    Piece(Bytes, Piece),
}

/// One piece of a split batch. The batch is accepted when its last piece
/// is dropped, unless a piece was dropped unsettled (its chunk failed).
pub struct Piece {
    shared: Arc<Split>,
    settled: bool,
}

struct Split {
    delivery: std::sync::Mutex<Option<Delivery>>,
    failed: std::sync::atomic::AtomicBool,
}

impl Drop for Piece {
    fn drop(&mut self) {
        if !self.settled {
            self.shared.failed.store(true, Ordering::Release);
        }
    }
}

impl Drop for Split {
    fn drop(&mut self) {
        let d = self.delivery.get_mut().ok().and_then(Option::take);
        if let Some(d) = d {
            if self.failed.load(Ordering::Acquire) {
                d.reject();
            } else {
                d.accept();
            }
        }
    }
}

/// Pieces of a split batch: entries, their count, and the settlement share.
pub type Pieces = Vec<(Bytes, usize, Piece)>;

/// A batch as the forward sink takes it: whole, or in pieces.
pub enum Taken {
    /// It fits in one chunk.
    Whole(Delivery),
    /// Its tag and pieces.
    Pieces(Tag, Pieces),
}

/// Splits a batch into pieces of at most `max` bytes of entries and
/// `max_records` records (at least one entry each), at entry boundaries;
/// gives the delivery back whole if it fits in one chunk. Lines are encoded
/// as entries first.
pub fn split(d: Delivery, max: usize, max_records: usize) -> Taken {
    let b = d.batch();
    if entry_bytes(b) <= max && b.count <= max_records {
        return Taken::Whole(d);
    }
    let entries = entries_of(b);
    let mut bounds = Vec::new();
    let (mut start, mut pos, mut count) = (0usize, 0usize, 0usize);
    while pos < entries.len() {
        let Ok(end) = crate::protocol::msgpack::skip(&entries, pos) else {
            // entries were validated when decoded; never split what we cannot walk
            return Taken::Whole(d);
        };
        if count > 0 && (end - start > max || count >= max_records) {
            bounds.push((start, pos, count));
            start = pos;
            count = 0;
        }
        pos = end;
        count += 1;
    }
    bounds.push((start, pos, count));
    let tag = d.batch().tag.clone();
    let shared = Arc::new(Split {
        delivery: std::sync::Mutex::new(Some(d)),
        failed: std::sync::atomic::AtomicBool::new(false),
    });
    let pieces = bounds
        .into_iter()
        .map(|(a, b, n)| {
            let piece = Piece {
                shared: shared.clone(),
                settled: false,
            };
            (entries.slice(a..b), n, piece)
        })
        .collect();
    Taken::Pieces(tag, pieces)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Batch, EventTime};
    use crate::protocol::forward::{decode_frame, write_message_entry, Limits, Mode};

    fn delivery(batch: Batch) -> Delivery {
        Delivery::standalone(batch)
    }

    fn flat(f: &Frame) -> Bytes {
        let mut v = f.head.clone();
        for p in &f.parts {
            v.extend_from_slice(p);
        }
        v.extend_from_slice(&f.tail);
        Bytes::from(v)
    }

    #[test]
    fn frames_decode_back_to_the_same_records() {
        let mut entries = Vec::new();
        write_message_entry(&mut entries, 1, 2, b"from-forward");
        for compress in [Compress::None, Compress::Gzip] {
            let mut c = Chunk::new("app".into(), Arc::default());
            c.push(delivery(Batch::new(
                "app".into(),
                Records::Entries(Bytes::from(entries.clone())),
                1,
            )));
            c.push(delivery(Batch::new(
                "app".into(),
                Records::Lines {
                    data: Bytes::from_static(b"l1\nl2\n"),
                    time: EventTime::new(5, 0),
                },
                2,
            )));
            let f = c.frame(compress, true);
            let decoded = decode_frame(flat(&f), &Limits::default()).unwrap();
            assert_eq!(decoded.count, 3);
            assert_eq!(decoded.tag, "app");
            assert_eq!(decoded.options.chunk.as_deref(), Some(c.id.as_bytes()));
            let want_mode = if compress == Compress::Gzip {
                Mode::CompressedPackedForward
            } else {
                Mode::PackedForward
            };
            assert_eq!(decoded.mode, want_mode);
            // encoded once, the same bytes on resend
            assert_eq!(flat(&c.frame(compress, true)), flat(&f));
        }
    }

    #[test]
    fn large_batches_split_and_settle_once_every_piece_is_delivered() {
        use crate::ack::{AckHandle, AckOutcome};
        let mut entries = Vec::new();
        for i in 0..10 {
            write_message_entry(&mut entries, 1, 0, format!("record-{i:04}").as_bytes());
        }
        let one = entries.len() / 10;
        for (fail, want) in [(false, AckOutcome::Accepted), (true, AckOutcome::Rejected)] {
            let (tx, rx) = std::sync::mpsc::channel();
            let batch = Batch::new(
                "t".into(),
                Records::Entries(Bytes::from(entries.clone())),
                10,
            )
            .with_ack(AckHandle::new(move |o| tx.send(o).unwrap()));
            let Taken::Pieces(tag, pieces) = split(delivery(batch), one * 3, usize::MAX) else {
                panic!("must split")
            };
            assert_eq!(&*tag, "t");
            assert_eq!(
                pieces.iter().map(|p| p.1).collect::<Vec<_>>(),
                vec![3, 3, 3, 1]
            );
            let mut chunks: Vec<Chunk> = pieces
                .into_iter()
                .map(|(e, n, p)| {
                    let mut c = Chunk::new("t".into(), Arc::default());
                    c.push_piece(e, n, p);
                    c
                })
                .collect();
            let last = chunks.pop().unwrap();
            for c in chunks {
                c.accept();
            }
            assert!(rx.try_recv().is_err(), "not settled before the last piece");
            if fail {
                drop(last);
            } else {
                last.accept();
            }
            assert_eq!(rx.try_recv(), Ok(want));
        }
        // a batch that fits comes back whole
        let small = Batch::new(
            "t".into(),
            Records::Entries(Bytes::from(entries.clone())),
            10,
        );
        assert!(matches!(
            split(delivery(small), entries.len(), 10),
            Taken::Whole(_)
        ));
    }

    #[test]
    fn batches_over_the_record_limit_split_at_entry_boundaries() {
        let mut entries = Vec::new();
        for i in 0..10 {
            write_message_entry(&mut entries, 1, 0, format!("r{i}").as_bytes());
        }
        let batch = Batch::new(
            "t".into(),
            Records::Entries(Bytes::from(entries.clone())),
            10,
        );
        let Taken::Pieces(_, pieces) = split(delivery(batch), usize::MAX, 4) else {
            panic!("10 records over a limit of 4 must split")
        };
        assert_eq!(
            pieces.iter().map(|p| p.1).collect::<Vec<_>>(),
            vec![4, 4, 2]
        );
        let joined: Vec<u8> = pieces.iter().flat_map(|p| p.0.to_vec()).collect();
        assert_eq!(
            joined, entries,
            "the pieces are the batch's entries, in order"
        );
        // lines are encoded, then split the same way
        let lines = Batch::new(
            "t".into(),
            Records::Lines {
                data: Bytes::from_static(b"a\nb\nc\n"),
                time: EventTime::new(1, 0),
            },
            3,
        );
        let Taken::Pieces(_, pieces) = split(delivery(lines), usize::MAX, 2) else {
            panic!("3 lines over a limit of 2 must split")
        };
        assert_eq!(pieces.iter().map(|p| p.1).collect::<Vec<_>>(), vec![2, 1]);
    }

    /// With the defaults on both sides, the largest frame a client may send
    /// a relay still fits the next hop once relayed.
    #[test]
    fn default_chunks_fit_a_default_receiver() {
        let sink: super::super::ForwardSinkConfig =
            toml::from_str("servers = [{ address = \"h:1\" }]").unwrap();
        let limit = crate::protocol::forward::DEFAULT_MAX_FRAME_BYTES;
        // a client frame of exactly the limit: small entries, a long tag
        let tag = "t".repeat(200);
        let mut entries = Vec::new();
        let mut count = 0;
        while entries.len() < limit - 300 {
            write_message_entry(&mut entries, 1, 0, b"0123456789abcdef");
            count += 1;
        }
        let batch = Batch::new(
            tag.as_str().into(),
            Records::Entries(Bytes::from(entries)),
            count,
        );
        let Taken::Pieces(_, pieces) = split(delivery(batch), sink.batch_bytes, sink.batch_records)
        else {
            panic!("must split")
        };
        for (e, n, p) in pieces {
            let mut c = Chunk::new(tag.as_str().into(), Arc::default());
            c.push_piece(e, n, p);
            // the longest id this process could give it
            c.id = format!("{}-{}", "f".repeat(16), u64::MAX);
            let f = c.frame(Compress::None, true);
            assert!(f.len() <= limit, "{} > {limit}", f.len());
            c.accept();
        }
    }

    #[test]
    fn ids_are_unique() {
        let a = Chunk::new("t".into(), Arc::default());
        let b = Chunk::new("t".into(), Arc::default());
        assert_ne!(a.id, b.id);
    }
}
