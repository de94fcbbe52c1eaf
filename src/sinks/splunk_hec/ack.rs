//! Indexer acknowledgement: every request carries the sink's channel
//! (`X-Splunk-Request-Channel`, a random UUID per sink), the collector
//! answers each with an `ackId`, and one poller asks
//! `/services/collector/ack?channel=…` about every pending id each
//! `ack_poll_interval`. A request's batches are acknowledged to their
//! sources once its id is; an id not acknowledged within `ack_timeout`
//! has its events sent again.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use tokio::sync::{oneshot, Notify};

use super::encode::{ack_query, acked_ids};
use crate::metrics::{Counter, Registry};
use crate::sinks::http::Requests;
use crate::telemetry::{RateLimitedLog, WARN_INTERVAL};
use crate::warn_limited;

/// A random version-4 UUID, the sink's channel.
pub fn new_channel() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        // no system randomness: the clock still tells sinks apart
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        b = (now ^ u128::from(std::process::id())).to_be_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Whether an `ackId` was acknowledged in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckWait {
    Indexed,
    TimedOut,
}

/// The pending `ackId`s of one sink's channel.
pub struct IndexerAcks {
    /// `/services/collector/ack?channel=…` under the endpoint's path.
    path: String,
    poll_interval: Duration,
    timeout: Duration,
    /// Each pending id and who waits for it.
    pending: RefCell<HashMap<u64, oneshot::Sender<()>>>,
    /// Wakes the poller when the first id comes.
    added: Notify,
    indexed: Counter,
    timed_out: Counter,
    /// Failed polls logged, at most one a [`WARN_INTERVAL`] per kind.
    errors_log: RateLimitedLog,
}

impl IndexerAcks {
    pub fn new(
        path: String,
        poll_interval: Duration,
        timeout: Duration,
        registry: &Registry,
        name: &str,
    ) -> IndexerAcks {
        let acks = |result: &str| {
            registry.counter(
                "logferry_splunk_hec_acks_total",
                "Indexer acknowledgement ids, by result: indexed, timed_out (events sent again).",
                &[("component", name), ("result", result)],
            )
        };
        IndexerAcks {
            path,
            poll_interval,
            timeout,
            pending: RefCell::new(HashMap::new()),
            added: Notify::new(),
            indexed: acks("indexed"),
            timed_out: acks("timed_out"),
            errors_log: RateLimitedLog::new(WARN_INTERVAL),
        }
    }

    /// Waits until `id` is acknowledged, or `ack_timeout`.
    pub async fn wait(&self, id: u64) -> AckWait {
        let (tx, rx) = oneshot::channel();
        self.pending.borrow_mut().insert(id, tx);
        self.added.notify_one();
        match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(())) => {
                self.indexed.inc();
                AckWait::Indexed
            }
            _ => {
                self.pending.borrow_mut().remove(&id);
                self.timed_out.inc();
                AckWait::TimedOut
            }
        }
    }

    /// Asks about the pending ids every `ack_poll_interval`, forever.
    pub async fn poll(&self, requests: &Requests) {
        loop {
            if self.pending.borrow().is_empty() {
                self.added.notified().await;
            }
            tokio::time::sleep(self.poll_interval).await;
            let mut ids: Vec<u64> = self.pending.borrow().keys().copied().collect();
            if ids.is_empty() {
                continue;
            }
            ids.sort_unstable();
            let body = Bytes::from(ack_query(&ids));
            let answer = match requests.send(Method::POST, &self.path, body).await {
                Ok(a) if a.status.is_success() => a,
                Ok(a) => {
                    warn_limited!(self.errors_log, "refused", status = %a.status,
                        answer = %crate::sinks::http::shown(&a),
                        "the indexer acknowledgement query was refused; asking again");
                    continue;
                }
                Err(_) => continue,
            };
            match acked_ids(&answer.body) {
                Ok(done) => {
                    let mut pending = self.pending.borrow_mut();
                    for id in done {
                        if let Some(tx) = pending.remove(&id) {
                            let _ = tx.send(());
                        }
                    }
                }
                Err(e) => {
                    warn_limited!(self.errors_log, "unreadable", error = %e,
                        "cannot read the indexer acknowledgement answer");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_are_uuids() {
        let (a, b) = (new_channel(), new_channel());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(a.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
    }
}
