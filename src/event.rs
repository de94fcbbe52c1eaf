//! The data model: event times, records kept in their arrival encoding, and
//! batches that share their bytes between every sink they are routed to.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use crate::ack::AckHandle;
use crate::protocol::msgpack::{self, Reader, Value};

/// A point in time with nanosecond precision, as Fluentd's EventTime
/// (msgpack ext type 0) carries it: 1970-01-01T00:00:00Z to
/// 2106-02-07T06:28:15.999999999Z. [`EventTime::read`] rejects times
/// outside that range and nanoseconds of 10^9 or more, so every time read
/// from outside can be printed and sent on unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct EventTime {
    pub secs: u32,
    pub nanos: u32,
}

impl EventTime {
    pub fn new(secs: u32, nanos: u32) -> Self {
        EventTime { secs, nanos }
    }

    pub fn now() -> Self {
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        EventTime {
            secs: d.as_secs() as u32,
            nanos: d.subsec_nanos(),
        }
    }

    /// Reads an entry's time slot: an integer, a float, an EventTime ext, or
    /// Fluent Bit's `[EventTime, {metadata}]` array (one level only: a time
    /// nested deeper is invalid, so hostile nesting costs no stack).
    ///
    /// A time outside the range of [`EventTime`] (negative, past 2106, NaN
    /// or infinite, nanoseconds of 10^9 or more) is an error naming why:
    /// it is never wrapped or clamped into another time.
    pub fn read(r: &mut Reader<'_>) -> msgpack::Result<EventTime> {
        // the usual slot, an EventTime ext (fixext 8, type 0), read without
        // the general decoder: this runs for every forward record, twice
        // on the way to Kafka (check, then encode)
        let (buf, at) = (r.buffer(), r.pos());
        if let Some([0xd7, 0x00, b @ ..]) = at.checked_add(10).and_then(|end| buf.get(at..end)) {
            let secs = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            let nanos = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
            if nanos < NANOS_PER_SEC {
                *r = Reader::at(buf, at + 10);
                return Ok(EventTime::new(secs, nanos));
            }
        }
        match r.read()? {
            Value::Array(n) if n >= 1 => {
                let t = Self::scalar(r.pos(), r.read()?)?;
                for _ in 1..n {
                    r.skip()?;
                }
                Ok(t)
            }
            v => Self::scalar(r.pos(), v),
        }
    }

    fn scalar(at: usize, v: Value<'_>) -> msgpack::Result<EventTime> {
        let invalid = |reason| msgpack::Error::Invalid { offset: at, reason };
        match v {
            Value::UInt(s) => u32::try_from(s)
                .map(|s| EventTime::new(s, 0))
                .map_err(|_| invalid(PAST_2106)),
            Value::Int(s) if s < 0 => Err(invalid(BEFORE_1970)),
            Value::Int(s) => u32::try_from(s)
                .map(|s| EventTime::new(s, 0))
                .map_err(|_| invalid(PAST_2106)),
            Value::Float32(f) => Self::from_float(f64::from(f)).map_err(invalid),
            Value::Float(f) => Self::from_float(f).map_err(invalid),
            Value::Ext(0, b) if b.len() == 8 => {
                let secs = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                let nanos = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                if nanos >= NANOS_PER_SEC {
                    return Err(invalid(
                        "EventTime nanoseconds must be below 1000000000 (fix the sender's encoder)",
                    ));
                }
                Ok(EventTime::new(secs, nanos))
            }
            _ => Err(invalid("entry time must be an integer, float or EventTime")),
        }
    }

    /// Seconds as a float; the fraction is truncated to nanoseconds.
    fn from_float(f: f64) -> Result<EventTime, &'static str> {
        if f.is_nan() || f.is_infinite() {
            Err("entry time is not a finite number")
        } else if f < 0.0 {
            Err(BEFORE_1970)
        } else if f >= 4_294_967_296.0 {
            Err(PAST_2106)
        } else {
            let nanos = ((f.fract() * 1e9) as u32).min(NANOS_PER_SEC - 1);
            Ok(EventTime::new(f.trunc() as u32, nanos))
        }
    }

    /// Seconds since the epoch as a float, for JSON output.
    pub fn as_f64(self) -> f64 {
        f64::from(self.secs) + f64::from(self.nanos) / 1e9
    }
}

const NANOS_PER_SEC: u32 = 1_000_000_000;

const BEFORE_1970: &str = "entry time is before 1970-01-01T00:00:00Z (negative); \
     times are seconds since the epoch, 0 to 4294967295";

const PAST_2106: &str = "entry time is past 2106-02-07T06:28:15Z, the last time an \
     EventTime can carry (4294967295 seconds); milliseconds sent as seconds?";

/// A tag such as `app.web.access`; cheap to clone.
pub type Tag = Arc<str>;

/// The records of a batch, in the encoding they arrived in.
#[derive(Debug, Clone)]
pub enum Records {
    /// Concatenated msgpack `[time, record]` entries: exactly the payload of
    /// a PackedForward frame, so a relay re-sends it untouched.
    Entries(Bytes),
    /// Newline-terminated lines that all share one time (a tailed file, a
    /// generator). Each line stands for the record `{"message": line}`.
    Lines { data: Bytes, time: EventTime },
}

impl Records {
    pub fn bytes(&self) -> &Bytes {
        match self {
            Records::Entries(b) => b,
            Records::Lines { data, .. } => data,
        }
    }
}

/// One tag and many records, plus the handle that tells the source when
/// every sink has accepted them. Cloning shares the payload (a reference
/// count increment) and the acknowledgement.
#[derive(Debug, Clone)]
pub struct Batch {
    pub tag: Tag,
    pub records: Records,
    /// Number of records, known from decoding the frame.
    pub count: usize,
    pub ack: AckHandle,
    /// The batch's share of the process memory budget, returned when the
    /// last copy (one per sink) is dropped: once every sink settled it.
    pub memory: crate::memory::SharedCharge,
}

impl Batch {
    /// A copy of the batch that acknowledges nothing (it shares the
    /// records and the memory charge). Nobody can wait for an
    /// acknowledgement it never gives: the copy is not waited on.
    pub fn without_ack(&self) -> Batch {
        Batch {
            ack: AckHandle::none(),
            ..self.clone()
        }
    }

    pub fn new(tag: Tag, records: Records, count: usize) -> Self {
        Batch {
            tag,
            records,
            count,
            ack: AckHandle::none(),
            memory: Default::default(),
        }
    }

    /// Charges the batch's bytes to the memory budget until every sink
    /// has settled it.
    pub fn with_memory(self, charge: crate::memory::MemoryCharge) -> Self {
        self.with_shared_memory(charge.shared())
    }

    /// Like [`Batch::with_memory`], for a charge shared with other batches
    /// (frames cut from one read buffer).
    pub fn with_shared_memory(mut self, charge: crate::memory::SharedCharge) -> Self {
        self.memory = charge;
        self
    }

    pub fn with_ack(mut self, ack: AckHandle) -> Self {
        self.ack = ack;
        self
    }

    /// Marks the batch as one a client waits for: its client's answer
    /// waits for this batch's acknowledgement (an HTTP request answered
    /// after the sinks, a forward chunk with an `ack` option, the last
    /// line of a FUSE close with `ack_on_close`), so sinks send it at
    /// once instead of lingering for a fuller request. Call it after
    /// [`Batch::with_ack`]: the mark is kept by the acknowledgement, so
    /// the router's copies (clones) share it, and a batch without one
    /// (what a disk buffer reads back: its source was answered when the
    /// batch was written) is waited on by nobody.
    pub fn waited_on(self) -> Self {
        debug_assert!(
            self.ack.is_tracked(),
            "nobody can wait for a batch without acknowledgement"
        );
        self.ack.mark_waited_on();
        self
    }

    /// Whether a client waits for this batch's acknowledgement (see
    /// [`Batch::waited_on`]).
    pub fn is_waited_on(&self) -> bool {
        self.ack.is_waited_on()
    }

    /// Payload size in bytes (what queue limits count).
    pub fn byte_len(&self) -> usize {
        self.records.bytes().len()
    }

    /// Calls `f` once per record, with its time and its record view.
    pub fn for_each_record(
        &self,
        mut f: impl FnMut(EventTime, RecordRef<'_>),
    ) -> msgpack::Result<()> {
        match &self.records {
            Records::Entries(b) => {
                let mut r = Reader::new(b);
                while !r.is_empty() {
                    let time = read_entry_time(&mut r)?;
                    let start = r.pos();
                    r.skip()?;
                    f(time, RecordRef::Map(&b[start..r.pos()]));
                }
            }
            Records::Lines { data, time } => {
                for line in data.split_inclusive(|c| *c == b'\n') {
                    let line = line.strip_suffix(b"\n").unwrap_or(line);
                    f(*time, RecordRef::Line(line));
                }
            }
        }
        Ok(())
    }
}

/// Reads the head of a forward entry `[time, record]`: its array header
/// and its time, leaving `r` at the record.
pub fn read_entry_time(r: &mut Reader<'_>) -> msgpack::Result<EventTime> {
    if r.read_array_len()? < 2 {
        return Err(msgpack::Error::Invalid {
            offset: r.pos(),
            reason: "entry must be [time, record]",
        });
    }
    EventTime::read(r)
}

/// A borrowed view of one record.
#[derive(Debug, Clone, Copy)]
pub enum RecordRef<'a> {
    /// An encoded msgpack map.
    Map(&'a [u8]),
    /// A line of text, standing for `{"message": line}`.
    Line(&'a [u8]),
}

impl<'a> RecordRef<'a> {
    /// The value of a top-level field, if the record has one (for a
    /// container, only its header: see [`RecordRef::field_raw`]).
    pub fn field(&self, key: &[u8]) -> Option<Value<'a>> {
        match self {
            RecordRef::Line(l) => (key == b"message").then_some(Value::Str(l)),
            RecordRef::Map(m) => map_field(m, key),
        }
    }

    /// The encoded bytes of a top-level field of a map record.
    pub fn field_raw(&self, key: &[u8]) -> Option<&'a [u8]> {
        match self {
            RecordRef::Line(_) => None,
            RecordRef::Map(m) => map_field_raw(m, key),
        }
    }
}

/// Reads the next `[time, record]` entry of a packed stream without
/// decoding its time, and returns the record's encoded bytes.
#[inline]
pub fn next_record<'a>(r: &mut Reader<'a>) -> msgpack::Result<&'a [u8]> {
    r.read_array_len()?;
    r.skip()?; // time
    let start = r.pos();
    r.skip()?;
    Ok(&r.buffer()[start..r.pos()])
}

/// Looks up `key` in an encoded msgpack map without decoding other values.
pub fn map_field<'a>(map: &'a [u8], key: &[u8]) -> Option<Value<'a>> {
    Reader::new(map_field_raw(map, key)?).read().ok()
}

/// The encoded bytes of the value of `key` in an encoded msgpack map.
pub fn map_field_raw<'a>(map: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut r = Reader::new(map);
    let n = r.read_map_len().ok()?;
    for _ in 0..n {
        let k = r.read().ok()?;
        let found = matches!(k, Value::Str(k) | Value::Bin(k) if k == key);
        // a non-string key was only read as far as its header
        skip_rest(&mut r, k).ok()?;
        let start = r.pos();
        r.skip().ok()?;
        if found {
            return Some(&map[start..r.pos()]);
        }
    }
    None
}

/// After `read()` returned a container header, skips its items.
pub fn skip_rest(r: &mut Reader<'_>, v: Value<'_>) -> msgpack::Result<()> {
    let items = match v {
        Value::Array(n) => n,
        Value::Map(n) => 2 * n,
        _ => 0,
    };
    for _ in 0..items {
        r.skip()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::msgpack::write;

    fn entry(out: &mut Vec<u8>, secs: u32, msg: &str) {
        write::array_len(out, 2);
        write::event_time(out, secs, 5);
        write::map_len(out, 2);
        write::str(out, b"level");
        write::str(out, b"info");
        write::str(out, b"message");
        write::str(out, msg.as_bytes());
    }

    #[test]
    fn iterates_entries_and_finds_fields() {
        let mut buf = Vec::new();
        entry(&mut buf, 10, "a");
        entry(&mut buf, 11, "b");
        let batch = Batch::new("t".into(), Records::Entries(buf.into()), 2);
        let mut seen = Vec::new();
        batch
            .for_each_record(|t, r| {
                let Some(Value::Str(m)) = r.field(b"message") else {
                    panic!("no message")
                };
                seen.push((t.secs, t.nanos, m.to_vec()));
            })
            .unwrap();
        assert_eq!(seen, vec![(10, 5, b"a".to_vec()), (11, 5, b"b".to_vec())]);
    }

    #[test]
    fn lines_stand_for_message_records() {
        let batch = Batch::new(
            "t".into(),
            Records::Lines {
                data: Bytes::from_static(b"one\ntwo\n"),
                time: EventTime::new(1, 0),
            },
            2,
        );
        let mut lines = Vec::new();
        batch
            .for_each_record(|_, r| {
                if let Some(Value::Str(m)) = r.field(b"message") {
                    lines.push(m.to_vec())
                }
            })
            .unwrap();
        assert_eq!(lines, vec![b"one".to_vec(), b"two".to_vec()]);
    }

    #[test]
    fn time_forms() {
        let cases: Vec<(Vec<u8>, EventTime)> = vec![
            (vec![0xce, 0, 0, 1, 0], EventTime::new(256, 0)),
            (vec![0xd7, 0, 0, 0, 0, 2, 0, 0, 0, 3], EventTime::new(2, 3)),
            (
                vec![0x92, 0xd7, 0, 0, 0, 0, 2, 0, 0, 0, 3, 0x80],
                EventTime::new(2, 3),
            ),
            (
                {
                    let mut v = vec![0xcb];
                    v.extend_from_slice(&1.5f64.to_bits().to_be_bytes());
                    v
                },
                EventTime::new(1, 500_000_000),
            ),
        ];
        for (bytes, want) in cases {
            let mut r = Reader::new(&bytes);
            assert_eq!(EventTime::read(&mut r), Ok(want), "{bytes:x?}");
            assert!(r.is_empty());
        }
        assert!(EventTime::read(&mut Reader::new(&[0xa1, b'x'])).is_err());
        // Fluent Bit's pair with extra metadata items
        let mut r = Reader::new(&[0x93, 0x05, 0x80, 0xc0]);
        assert_eq!(EventTime::read(&mut r), Ok(EventTime::new(5, 0)));
        assert!(r.is_empty());
        // a time nested in arrays deeper than Fluent Bit's pair is invalid
        let mut deep = vec![0x91; 100_000];
        deep.push(0x01);
        assert!(EventTime::read(&mut Reader::new(&deep)).is_err());
    }

    fn uint(v: u64) -> Vec<u8> {
        let mut b = vec![0xcf];
        b.extend_from_slice(&v.to_be_bytes());
        b
    }

    fn int(v: i64) -> Vec<u8> {
        let mut b = vec![0xd3];
        b.extend_from_slice(&v.to_be_bytes());
        b
    }

    fn float(v: f64) -> Vec<u8> {
        let mut b = vec![0xcb];
        b.extend_from_slice(&v.to_bits().to_be_bytes());
        b
    }

    fn float32(v: f32) -> Vec<u8> {
        let mut b = vec![0xca];
        b.extend_from_slice(&v.to_bits().to_be_bytes());
        b
    }

    fn ext(secs: u32, nanos: u32) -> Vec<u8> {
        let mut b = Vec::new();
        write::event_time(&mut b, secs, nanos);
        b
    }

    fn read(bytes: &[u8]) -> msgpack::Result<EventTime> {
        EventTime::read(&mut Reader::new(bytes))
    }

    fn reason(bytes: &[u8]) -> &'static str {
        match read(bytes) {
            Err(msgpack::Error::Invalid { reason, .. }) => reason,
            other => panic!("{bytes:x?} read as {other:?}"),
        }
    }

    #[test]
    fn an_ext_time_leaves_the_reader_after_it_and_bad_nanos_still_fail() {
        let mut b = ext(1_700_000_000, 5);
        b.push(0xc0); // the next value
        let mut r = Reader::new(&b);
        assert_eq!(
            EventTime::read(&mut r),
            Ok(EventTime::new(1_700_000_000, 5))
        );
        assert_eq!(r.pos(), 10);
        assert_eq!(r.read(), Ok(Value::Nil));
        // cut short: not read as a time
        assert!(read(&ext(1, 2)[..9]).is_err());
        assert!(reason(&ext(1, 1_000_000_000)).contains("nanoseconds"));
        // inside Fluent Bit's [time, metadata] form
        let mut b = vec![0x92];
        b.extend(ext(7, 8));
        b.push(0x80);
        let mut r = Reader::new(&b);
        assert_eq!(EventTime::read(&mut r), Ok(EventTime::new(7, 8)));
        assert!(r.is_empty());
    }

    #[test]
    fn times_at_the_edges_of_the_range() {
        let max = u32::MAX;
        let cases: Vec<(Vec<u8>, EventTime)> = vec![
            (uint(0), EventTime::new(0, 0)),
            (uint(u64::from(max)), EventTime::new(max, 0)),
            (int(0), EventTime::new(0, 0)),
            (int(i64::from(max)), EventTime::new(max, 0)),
            (float(-0.0), EventTime::new(0, 0)),
            (float(4_294_967_295.5), EventTime::new(max, 500_000_000)),
            (float32(1.5), EventTime::new(1, 500_000_000)),
            (ext(max, 999_999_999), EventTime::new(max, 999_999_999)),
        ];
        for (bytes, want) in cases {
            assert_eq!(read(&bytes), Ok(want), "{bytes:x?}");
        }
        // the fraction of a float just below a whole second never makes
        // 10^9 nanoseconds
        let t = read(&float(0.999_999_999_999_999_9)).unwrap();
        assert!(t.nanos < 1_000_000_000, "{t:?}");
    }

    #[test]
    fn out_of_range_times_are_errors_not_other_times() {
        let past = [
            uint(1_700_000_000_123), // milliseconds
            uint((1 << 32) + 5),
            uint(u64::MAX),
            int(1 << 32),
            int(i64::MAX),
            float(4_294_967_296.0),
            float(1.7e12),
            float(f64::MAX),
            float32(1e10),
        ];
        for bytes in past {
            assert!(reason(&bytes).contains("2106"), "{bytes:x?}");
            assert!(reason(&bytes).contains("milliseconds"), "{bytes:x?}");
        }
        let negative = [
            vec![0xff], // fixint -1
            int(-1_700_000_000),
            int(i64::MIN),
            float(-1.0),
            float(-1e-300),
            float32(-0.5),
        ];
        for bytes in negative {
            assert!(reason(&bytes).contains("before 1970"), "{bytes:x?}");
        }
        for bytes in [
            float(f64::NAN),
            float(f64::INFINITY),
            float(f64::NEG_INFINITY),
            float32(f32::NAN),
            float32(f32::INFINITY),
        ] {
            assert!(reason(&bytes).contains("finite"), "{bytes:x?}");
        }
        for nanos in [1_000_000_000, 2_000_000_000, u32::MAX] {
            assert!(
                reason(&ext(1_700_000_000, nanos)).contains("nanoseconds"),
                "{nanos}"
            );
            // also inside Fluent Bit's pair
            let mut pair = vec![0x92];
            pair.extend(ext(1_700_000_000, nanos));
            pair.push(0x80);
            assert!(read(&pair).is_err(), "{nanos}");
        }
        let mut pair = vec![0x92];
        pair.extend(uint((1 << 32) + 5));
        pair.push(0x80);
        assert!(read(&pair).is_err());
    }

    #[test]
    fn copies_of_a_waited_on_batch_are_waited_on_and_an_ackless_copy_is_not() {
        let batch = Batch::new("t".into(), Records::Entries(Bytes::new()), 0)
            .with_ack(AckHandle::new(|_| {}));
        assert!(
            !batch.is_waited_on(),
            "nobody waits unless a source says so"
        );
        let batch = batch.waited_on();
        assert!(batch.clone().is_waited_on(), "the router's copies keep it");
        assert!(
            !batch.without_ack().is_waited_on(),
            "nobody waits for no ack"
        );
    }

    #[tokio::test]
    async fn the_last_copy_of_a_batch_returns_its_bytes() {
        const KIB: usize = 1024;
        let b = crate::memory::MemoryBudget::new(100 * KIB, &crate::metrics::Registry::new());
        let batch = Batch::new("t".into(), Records::Entries(vec![0u8; 10].into()), 1)
            .with_memory(b.try_acquire(10 * KIB).unwrap());
        let for_other_sink = batch.clone();
        drop(batch);
        assert_eq!(b.used(), 10 * KIB);
        drop(for_other_sink);
        assert_eq!(b.used(), 0);
    }
}
