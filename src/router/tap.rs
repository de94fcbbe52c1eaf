//! Taps: live copies of the records leaving a component (a source, a
//! filter) or reaching a sink, for `GET /tap` (`logferry tap`) and for
//! `logferry test`.
//!
//! A tap never slows the pipeline. With none attached, offering a batch
//! costs one atomic load. An attached tap takes at most `rate` records per
//! second (the rest are counted as skipped), converts only those to JSON,
//! and hands them over through a bounded channel without waiting: when
//! the reader is behind and the channel is full, records are skipped. A
//! tap whose rate is spent for the current second counts a batch as
//! skipped without looking at its records.
//!
//! The records a tap of the API holds for its reader are charged to the
//! memory budget ([`Taps::attach_charged`]): all such taps together hold
//! at most [`BUDGET_SHARE`] of it, so taps nobody reads can never starve
//! the sources; past that, or when the budget has no room, records are
//! skipped.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::TagPattern;
use crate::event::{Batch, EventTime, RecordRef, Tag};
use crate::memory::{MemoryBudget, MemoryCharge};
use crate::metrics::Counter;
use crate::protocol::msgpack::Reader;

/// Records a tap takes per second unless asked otherwise.
pub const DEFAULT_RATE: u32 = 100;

/// Records waiting for a slow reader before more are skipped.
pub const DEFAULT_CAPACITY: usize = 1024;

/// The part of the memory budget (1/8) that the records held by every
/// charged tap may take together.
pub const BUDGET_SHARE: usize = 8;

/// Bytes charged for one tapped record besides its JSON: its tag, its
/// component and what the channel keeps of it.
const RECORD_OVERHEAD: usize = 128;

/// Every tap of a pipeline; shared by every router clone.
#[derive(Clone, Default)]
pub struct Taps(Arc<Registry>);

#[derive(Default)]
struct Registry {
    /// How many taps are attached: the one thing a router reads when
    /// nobody taps.
    attached: AtomicUsize,
    list: Mutex<Vec<Arc<Tap>>>,
    /// Bytes of the memory budget that the records of charged taps hold
    /// now (at most a [`BUDGET_SHARE`] of it).
    held: Arc<AtomicUsize>,
}

/// Why a tap was not attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachError {
    /// `max` taps are attached already.
    TooMany { max: usize },
}

/// What a tap is asked for.
#[derive(Debug, Clone)]
pub struct TapRequest {
    /// The source, filter or sink name.
    pub component: String,
    /// Only records with a tag this matches.
    pub tag: Option<TagPattern>,
    /// Records per second at most; `None` takes every record (for
    /// `logferry test`, which feeds a known, small input).
    pub rate: Option<u32>,
    /// Records held for the reader before more are skipped.
    pub capacity: usize,
    /// Counts the records it leaves out (a metric, or detached).
    pub skipped: Counter,
}

/// One record a tap took.
#[derive(Debug, Clone)]
pub struct TapRecord {
    /// The component it left (or, for a sink, reached).
    pub component: Arc<str>,
    pub tag: Tag,
    pub time: EventTime,
    /// The record as a JSON object (a line is `{"message": LINE}`).
    pub record: Vec<u8>,
    /// Its share of the memory budget, returned when the last copy is
    /// dropped.
    _charge: Option<Arc<TapCharge>>,
}

impl TapRecord {
    /// `{"component":…,"tag":…,"time":…,"record":{…}}` and a newline.
    pub fn ndjson(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.record.len() + 64);
        out.extend_from_slice(b"{\"component\":");
        crate::format::json::write_str(&mut out, self.component.as_bytes());
        out.extend_from_slice(b",\"tag\":");
        crate::format::json::write_str(&mut out, self.tag.as_bytes());
        out.extend_from_slice(b",\"time\":");
        crate::format::json::write_f64(&mut out, self.time.as_f64());
        out.extend_from_slice(b",\"record\":");
        out.extend_from_slice(&self.record);
        out.extend_from_slice(b"}\n");
        out
    }
}

/// One attached tap.
struct Tap {
    /// What it was asked for.
    request: TapRequest,
    /// The component name as the records carry it.
    component: Arc<str>,
    /// Where the records it takes go; never waited on.
    tx: mpsc::Sender<TapRecord>,
    /// The current one-second window: its start and how many records it
    /// took.
    window: Mutex<(Instant, u32)>,
    /// Records it did not take (over the rate, or the reader behind),
    /// since [`TapHandle::take_skipped`] last read it.
    skipped: AtomicU64,
    /// The budget its records are charged to while they wait for the
    /// reader (`None`: not charged, for `logferry test`'s known input).
    memory: Option<MemoryBudget>,
    /// What every charged tap holds of the budget (shared with [`Taps`]).
    held: Arc<AtomicUsize>,
    /// Records offered to it one by one, for tests to see that a spent
    /// tap looks at none.
    #[cfg(test)]
    walked: AtomicU64,
}

/// What a tapped record holds of the memory budget until its reader has
/// taken it (or it is skipped).
#[derive(Debug)]
struct TapCharge {
    _charge: MemoryCharge,
    bytes: usize,
    held: Arc<AtomicUsize>,
}

impl Drop for TapCharge {
    fn drop(&mut self) {
        self.held.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// An attached tap, for its reader. Dropping it detaches the tap.
pub struct TapHandle {
    taps: Taps,
    tap: Arc<Tap>,
    rx: mpsc::Receiver<TapRecord>,
}

impl Taps {
    /// Attaches a tap: from now on the records that leave
    /// `request.component` are offered to it. Its records are not charged
    /// to any budget, and any number may be attached: for a caller whose
    /// input is known and small (`logferry test`).
    pub fn attach(&self, request: TapRequest) -> TapHandle {
        self.attach_to(request, None, usize::MAX)
            .unwrap_or_else(|_| unreachable!("no limit on the number of taps"))
    }

    /// Attaches a tap whose waiting records are charged to `memory` (all
    /// such taps together to at most a [`BUDGET_SHARE`] of it), unless
    /// `max` taps are attached already.
    pub fn attach_charged(
        &self,
        request: TapRequest,
        memory: &MemoryBudget,
        max: usize,
    ) -> Result<TapHandle, AttachError> {
        self.attach_to(request, Some(memory.clone()), max)
    }

    fn attach_to(
        &self,
        request: TapRequest,
        memory: Option<MemoryBudget>,
        max: usize,
    ) -> Result<TapHandle, AttachError> {
        let mut list = self.0.list.lock().unwrap_or_else(|e| e.into_inner());
        if list.len() >= max {
            return Err(AttachError::TooMany { max });
        }
        let (tx, rx) = mpsc::channel(request.capacity.max(1));
        let tap = Arc::new(Tap {
            component: Arc::from(request.component.as_str()),
            request,
            tx,
            window: Mutex::new((Instant::now(), 0)),
            skipped: AtomicU64::new(0),
            memory,
            held: self.0.held.clone(),
            #[cfg(test)]
            walked: AtomicU64::new(0),
        });
        list.push(tap.clone());
        self.0.attached.store(list.len(), Ordering::Release);
        Ok(TapHandle {
            taps: self.clone(),
            tap,
            rx,
        })
    }

    /// How many taps are attached.
    pub fn count(&self) -> usize {
        self.0.attached.load(Ordering::Acquire)
    }

    /// Whether any tap is attached.
    #[inline]
    pub fn active(&self) -> bool {
        self.0.attached.load(Ordering::Acquire) > 0
    }

    /// Offers the records of `batch`, leaving `component`, to the taps on
    /// it. Never waits.
    #[inline]
    pub fn offer(&self, component: &str, batch: &Batch) {
        if self.active() {
            self.offer_attached(component, batch);
        }
    }

    #[cold]
    fn offer_attached(&self, component: &str, batch: &Batch) {
        let on: Vec<Arc<Tap>> = self
            .0
            .list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|t| &*t.component == component)
            .cloned()
            .collect();
        for tap in on {
            tap.offer(batch);
        }
    }
}

impl Tap {
    fn offer(&self, batch: &Batch) {
        if let Some(p) = &self.request.tag {
            if !p.matches(&batch.tag) {
                return;
            }
        }
        let mut allowed = self.allowance(batch.count);
        let mut skipped = (batch.count - allowed) as u64;
        // spent for this second (or a reader this far behind): the
        // batch's records are not looked at
        if allowed > 0 && self.tx.capacity() > 0 {
            // a payload that does not decode is offered as far as it does
            let _ = batch.for_each_record(|time, record| {
                #[cfg(test)]
                self.walked.fetch_add(1, Ordering::Relaxed);
                if allowed == 0 {
                    return;
                }
                allowed -= 1;
                if !self.take(batch, time, record) {
                    skipped += 1;
                }
            });
        } else {
            skipped += allowed as u64;
        }
        if skipped > 0 {
            self.skipped.fetch_add(skipped, Ordering::Relaxed);
            self.request.skipped.add(skipped);
        }
    }

    /// Hands one record to the reader; `false` if it is skipped (the
    /// reader behind or gone, or no room in the budget).
    fn take(&self, batch: &Batch, time: EventTime, record: RecordRef<'_>) -> bool {
        let Ok(slot) = self.tx.try_reserve() else {
            // the reader is behind (or gone): skip, never wait
            return false;
        };
        let json = record_json(record);
        let charge = match &self.memory {
            None => None,
            Some(memory) => match self.charge(memory, json.len() + RECORD_OVERHEAD) {
                Some(c) => Some(Arc::new(c)),
                None => return false,
            },
        };
        slot.send(TapRecord {
            component: self.component.clone(),
            tag: batch.tag.clone(),
            time,
            record: json,
            _charge: charge,
        });
        true
    }

    /// Charges `bytes` to `memory` if the taps' share of it and the
    /// budget itself have room now; never waits.
    fn charge(&self, memory: &MemoryBudget, bytes: usize) -> Option<TapCharge> {
        let share = memory.limit() / BUDGET_SHARE;
        let before = self.held.fetch_add(bytes, Ordering::Relaxed);
        let taken = (before + bytes <= share)
            .then(|| memory.try_acquire(bytes))
            .flatten();
        let Some(taken) = taken else {
            self.held.fetch_sub(bytes, Ordering::Relaxed);
            return None;
        };
        Some(TapCharge {
            _charge: taken,
            bytes,
            held: self.held.clone(),
        })
    }

    /// How many of `n` records the rate lets this tap take now.
    fn allowance(&self, n: usize) -> usize {
        let Some(rate) = self.request.rate else {
            return n;
        };
        let mut window = self.window.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if now.duration_since(window.0) >= Duration::from_secs(1) {
            *window = (now, 0);
        }
        let take = (rate.saturating_sub(window.1) as usize).min(n);
        window.1 += take as u32;
        take
    }
}

impl TapHandle {
    /// The next record taken; `None` once the taps are gone.
    pub async fn recv(&mut self) -> Option<TapRecord> {
        self.rx.recv().await
    }

    /// The next record taken, for a hand-written future or body.
    pub fn poll_recv(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<TapRecord>> {
        self.rx.poll_recv(cx)
    }

    /// A record already taken, if any.
    pub fn try_recv(&mut self) -> Option<TapRecord> {
        self.rx.try_recv().ok()
    }

    /// Records skipped since the last call.
    pub fn take_skipped(&self) -> u64 {
        self.tap.skipped.swap(0, Ordering::Relaxed)
    }
}

impl Drop for TapHandle {
    fn drop(&mut self) {
        let mut list = self.taps.0.list.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|t| !Arc::ptr_eq(t, &self.tap));
        self.taps.0.attached.store(list.len(), Ordering::Release);
    }
}

/// A record as a JSON object: a map as it is, a line as
/// `{"message": LINE}`.
pub fn record_json(record: RecordRef<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    match record {
        RecordRef::Line(line) => {
            out.extend_from_slice(b"{\"message\":");
            crate::format::json::write_str(&mut out, line);
            out.push(b'}');
        }
        RecordRef::Map(map) => {
            if crate::format::json::write_value(&mut out, &mut Reader::new(map)).is_err() {
                out.clear();
                out.extend_from_slice(b"null");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Records;

    fn lines(tag: &str, n: usize) -> Batch {
        let data: String = (0..n).map(|i| format!("line-{i}\n")).collect();
        Batch::new(
            tag.into(),
            Records::Lines {
                data: bytes::Bytes::from(data),
                time: EventTime::new(1, 0),
            },
            n,
        )
    }

    fn request(component: &str, rate: Option<u32>, capacity: usize) -> TapRequest {
        TapRequest {
            component: component.into(),
            tag: None,
            rate,
            capacity,
            skipped: Counter::detached(),
        }
    }

    #[test]
    fn nothing_attached_nothing_taken_and_a_dropped_handle_detaches() {
        let taps = Taps::default();
        assert!(!taps.active());
        let mut h = taps.attach(request("a", None, 10));
        assert!(taps.active());
        taps.offer("b", &lines("t", 3));
        assert!(h.try_recv().is_none(), "another component's records");
        taps.offer("a", &lines("t", 2));
        let first = h.try_recv().unwrap();
        assert_eq!(first.record, br#"{"message":"line-0"}"#);
        assert_eq!(
            String::from_utf8(first.ndjson()).unwrap(),
            "{\"component\":\"a\",\"tag\":\"t\",\"time\":1.0,\"record\":{\"message\":\"line-0\"}}\n"
        );
        drop(h);
        assert!(!taps.active());
    }

    #[test]
    fn the_rate_and_a_full_channel_skip_and_count_never_wait() {
        let taps = Taps::default();
        let mut h = taps.attach(request("a", Some(5), 3));
        taps.offer("a", &lines("t", 10));
        // 5 allowed by the rate, 3 fit the channel: 7 skipped
        assert_eq!(h.take_skipped(), 7);
        let mut got = 0;
        while h.try_recv().is_some() {
            got += 1;
        }
        assert_eq!(got, 3);
        // the window's 5 are spent
        taps.offer("a", &lines("t", 4));
        assert!(h.try_recv().is_none());
        assert_eq!(h.take_skipped(), 4);
    }

    #[test]
    fn a_spent_tap_does_not_look_at_the_records() {
        let taps = Taps::default();
        let mut h = taps.attach(request("a", Some(5), 100));
        taps.offer("a", &lines("t", 1000));
        let walked = || h.tap.walked.load(Ordering::Relaxed);
        assert_eq!(walked(), 1000, "the window's first batch is looked at");
        for _ in 0..100 {
            taps.offer("a", &lines("t", 1000));
        }
        assert_eq!(walked(), 1000, "a spent tap looked at records");
        assert_eq!(h.take_skipped(), 995 + 100 * 1000);
        // a reader so far behind that the channel is full: the same
        let full = taps.attach(request("a", None, 2));
        taps.offer("a", &lines("t", 2));
        let before = full.tap.walked.load(Ordering::Relaxed);
        taps.offer("a", &lines("t", 1000));
        assert_eq!(full.tap.walked.load(Ordering::Relaxed), before);
        assert_eq!(full.take_skipped(), 1000);
        while h.try_recv().is_some() {}
    }

    #[test]
    fn charged_taps_hold_a_share_of_the_budget_and_are_capped() {
        let budget = MemoryBudget::new(8 << 20, &crate::metrics::Registry::new());
        let taps = Taps::default();
        let big = |n: usize| {
            let line = "x".repeat(64 * 1024);
            let data: String = (0..n).map(|_| format!("{line}\n")).collect();
            Batch::new(
                "t".into(),
                Records::Lines {
                    data: bytes::Bytes::from(data),
                    time: EventTime::new(1, 0),
                },
                n,
            )
        };
        let mut one = taps
            .attach_charged(request("a", None, 10_000), &budget, 2)
            .unwrap();
        let two = taps
            .attach_charged(request("a", None, 10_000), &budget, 2)
            .unwrap();
        assert_eq!(
            taps.attach_charged(request("a", None, 1), &budget, 2).err(),
            Some(AttachError::TooMany { max: 2 })
        );
        taps.offer("a", &big(100));
        // both together within 1/8 of the 8 MiB budget
        let share = budget.limit() / BUDGET_SHARE;
        assert!(budget.used() <= share, "{} > {share}", budget.used());
        assert!(budget.used() > share / 2, "{}", budget.used());
        let skipped = one.take_skipped() + two.take_skipped();
        let mut taken = 0;
        while one.try_recv().is_some() {
            taken += 1;
        }
        assert!(
            taken > 0 && skipped > 100,
            "{taken} taken, {skipped} skipped"
        );
        drop(two);
        assert_eq!(budget.used(), 0, "read or detached, every byte is back");
        // not charged: logferry test's taps
        let _free = taps.attach(request("a", None, 10));
        assert_eq!(taps.count(), 2);
    }

    #[test]
    fn only_matching_tags_are_taken() {
        let taps = Taps::default();
        let mut req = request("a", None, 10);
        req.tag = Some(TagPattern::new("app.*").unwrap());
        let mut h = taps.attach(req);
        taps.offer("a", &lines("other", 1));
        taps.offer("a", &lines("app.x", 1));
        assert_eq!(&*h.try_recv().unwrap().tag, "app.x");
        assert!(h.try_recv().is_none());
    }
}
