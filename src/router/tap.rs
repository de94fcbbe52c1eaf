//! Taps: live copies of the records leaving a component (a source, a
//! filter) or reaching a sink, for `GET /tap` (`logferry tap`) and for
//! `logferry test`.
//!
//! A tap never slows the pipeline. With none attached, offering a batch
//! costs one atomic load. An attached tap takes at most `rate` records per
//! second (the rest are counted as skipped), converts only those to JSON,
//! and hands them over through a bounded channel without waiting: when
//! the reader is behind and the channel is full, records are skipped.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::TagPattern;
use crate::event::{Batch, EventTime, RecordRef, Tag};
use crate::metrics::Counter;
use crate::protocol::msgpack::Reader;

/// Records a tap takes per second unless asked otherwise.
pub const DEFAULT_RATE: u32 = 100;

/// Records waiting for a slow reader before more are skipped.
pub const DEFAULT_CAPACITY: usize = 1024;

/// Every tap of a pipeline; shared by every router clone.
#[derive(Clone, Default)]
pub struct Taps(Arc<Registry>);

#[derive(Default)]
struct Registry {
    /// How many taps are attached: the one thing a router reads when
    /// nobody taps.
    attached: AtomicUsize,
    list: Mutex<Vec<Arc<Tap>>>,
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
}

/// An attached tap, for its reader. Dropping it detaches the tap.
pub struct TapHandle {
    taps: Taps,
    tap: Arc<Tap>,
    rx: mpsc::Receiver<TapRecord>,
}

impl Taps {
    /// Attaches a tap: from now on the records that leave
    /// `request.component` are offered to it.
    pub fn attach(&self, request: TapRequest) -> TapHandle {
        let (tx, rx) = mpsc::channel(request.capacity.max(1));
        let tap = Arc::new(Tap {
            component: Arc::from(request.component.as_str()),
            request,
            tx,
            window: Mutex::new((Instant::now(), 0)),
            skipped: AtomicU64::new(0),
        });
        let mut list = self.0.list.lock().unwrap_or_else(|e| e.into_inner());
        list.push(tap.clone());
        self.0.attached.store(list.len(), Ordering::Release);
        TapHandle {
            taps: self.clone(),
            tap,
            rx,
        }
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
        // a payload that does not decode is offered as far as it does
        let _ = batch.for_each_record(|time, record| {
            if allowed == 0 {
                return;
            }
            allowed -= 1;
            let tapped = TapRecord {
                component: self.component.clone(),
                tag: batch.tag.clone(),
                time,
                record: record_json(record),
            };
            if self.tx.try_send(tapped).is_err() {
                // the reader is behind (or gone): skip, never wait
                skipped += 1;
            }
        });
        if skipped > 0 {
            self.skipped.fetch_add(skipped, Ordering::Relaxed);
            self.request.skipped.add(skipped);
        }
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
