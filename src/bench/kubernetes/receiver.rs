//! The forward-protocol receiver both agents send to: every record's
//! `log` is read back as a numbered line ([`super::kubelet::parse_line`])
//! and counted once, and its `kubernetes.labels.index` checked against the
//! pod the line came from. Frames with a `chunk` are acknowledged, so a
//! sender that waits for acks is served too. A thread accepts, and one
//! per connection reads.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::BytesMut;

use super::kubelet::parse_line;
use crate::event::{map_field, map_field_raw, next_record};
use crate::protocol::forward::{ack_response, next_frame, Limits, Scan};
use crate::protocol::msgpack::{Reader, Value};

/// How often blocked reads and accepts look at the stop flag.
const WAKE: Duration = Duration::from_millis(100);

/// What arrived so far.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Records received, repeats included.
    pub records: u64,
    /// Distinct numbered lines received.
    pub distinct: u64,
    /// Numbered lines received more than once (each repeat counted).
    pub duplicates: u64,
    /// Records without `kubernetes.labels`, or whose `index` label is not
    /// the pod the line was written by.
    pub without_labels: u64,
    /// Records whose `log` is no numbered line of this run.
    pub foreign: u64,
}

/// The receiver; stops (and closes its connections) when dropped.
pub struct Receiver {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    stop: AtomicBool,
    state: Mutex<State>,
    /// Why a connection was closed by the receiver (a bad frame).
    error: Mutex<Option<String>>,
}

struct State {
    counts: Counts,
    /// One bit per line, by container.
    seen: Vec<Vec<u64>>,
}

impl Receiver {
    /// Listens on a free loopback port for `pods` containers writing up
    /// to `lines_per_pod` lines each.
    pub fn start(pods: usize, lines_per_pod: u64) -> Result<Receiver, String> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let words = lines_per_pod.div_ceil(64) as usize;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            state: Mutex::new(State {
                counts: Counts::default(),
                seen: vec![vec![0; words]; pods],
            }),
            error: Mutex::new(None),
        });
        let s = shared.clone();
        let thread = std::thread::spawn(move || accept(listener, s));
        Ok(Receiver {
            addr,
            shared,
            thread: Some(thread),
        })
    }

    pub fn counts(&self) -> Counts {
        lock(&self.shared.state).counts.clone()
    }

    /// Why a connection was refused, if one was.
    pub fn error(&self) -> Option<String> {
        lock(&self.shared.error).clone()
    }

    /// The lines among the first `lines` of every container that have
    /// not arrived, as `(container, first, last)` ranges; at most `max`.
    pub fn missing(&self, lines: u64, max: usize) -> Vec<(usize, u64, u64)> {
        let state = lock(&self.shared.state);
        let mut out = Vec::new();
        for (pod, bits) in state.seen.iter().enumerate() {
            let mut run: Option<u64> = None;
            for n in 0..=lines {
                let have = n == lines
                    || bits
                        .get((n / 64) as usize)
                        .is_some_and(|w| w & (1 << (n % 64)) != 0);
                match (have, run) {
                    (false, None) => run = Some(n),
                    (true, Some(first)) => {
                        if out.len() == max {
                            return out;
                        }
                        out.push((pod, first, n - 1));
                        run = None;
                    }
                    _ => {}
                }
            }
        }
        out
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn accept(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = Vec::new();
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                let s = shared.clone();
                connections.push(std::thread::spawn(move || {
                    if let Err(e) = serve(stream, &s) {
                        *lock(&s.error) = Some(e);
                    }
                }));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(WAKE),
            Err(_) => std::thread::sleep(WAKE),
        }
    }
    for c in connections {
        let _ = c.join();
    }
}

/// Reads frames until the sender closes or the receiver stops.
fn serve(mut stream: TcpStream, shared: &Shared) -> Result<(), String> {
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(WAKE))
        .map_err(|e| e.to_string())?;
    let limits = Limits::default();
    let mut buf = BytesMut::with_capacity(1 << 20);
    let mut scan = Scan::default();
    let mut chunk = vec![0u8; 1 << 20];
    while !shared.stop.load(Ordering::Relaxed) {
        let n = match stream.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return Ok(()),
        };
        buf.extend_from_slice(&chunk[..n]);
        while let Some(frame) =
            next_frame(&mut buf, &limits, &mut scan).map_err(|e| format!("forward frame: {e}"))?
        {
            let counted = count(&frame.entries)?;
            merge(shared, counted);
            if let Some(id) = &frame.options.chunk {
                // a sender that stopped listening for acks is its own affair
                let _ = stream.write_all(&ack_response(id));
            }
        }
    }
    Ok(())
}

/// One record as read: its line (container and number; `None` for a
/// foreign record), and whether its labels are its pod's.
type Seen = (Option<(usize, u64)>, bool);

/// What one frame's records are.
fn count(entries: &[u8]) -> Result<Vec<Seen>, String> {
    let mut r = Reader::new(entries);
    let mut out = Vec::new();
    while !r.is_empty() {
        let record = next_record(&mut r).map_err(|e| format!("entry: {e}"))?;
        let line = match map_field(record, b"log") {
            Some(Value::Str(t) | Value::Bin(t)) => parse_line(t),
            _ => None,
        };
        let labelled = match line {
            Some((pod, _)) => labels_index(record) == Some(pod),
            None => false,
        };
        out.push((line, labelled));
    }
    Ok(out)
}

/// `kubernetes.labels.index` of a record, as a number.
fn labels_index(record: &[u8]) -> Option<usize> {
    let kubernetes = map_field_raw(record, b"kubernetes")?;
    let labels = map_field_raw(kubernetes, b"labels")?;
    match map_field(labels, b"index")? {
        Value::Str(s) => std::str::from_utf8(s).ok()?.parse().ok(),
        _ => None,
    }
}

fn merge(shared: &Shared, records: Vec<Seen>) {
    let mut state = lock(&shared.state);
    let State { counts, seen } = &mut *state;
    for (line, labelled) in records {
        counts.records += 1;
        let Some((pod, n)) = line else {
            counts.foreign += 1;
            continue;
        };
        let Some(word) = seen.get_mut(pod).and_then(|b| b.get_mut((n / 64) as usize)) else {
            counts.foreign += 1;
            continue;
        };
        let bit = 1u64 << (n % 64);
        if *word & bit == 0 {
            *word |= bit;
            counts.distinct += 1;
        } else {
            counts.duplicates += 1;
        }
        if !labelled {
            counts.without_labels += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::kubernetes::kubelet::line_text;
    use crate::protocol::forward::write_packed_forward;
    use crate::protocol::msgpack::write;

    /// `[time, {"log": …, "kubernetes": {"labels": {"index": …}}}]`.
    fn entry(out: &mut Vec<u8>, text: &str, index: Option<&str>) {
        write::array_len(out, 2);
        write::event_time(out, 1_700_000_000, 0);
        write::map_len(out, if index.is_some() { 2 } else { 1 });
        write::str(out, b"log");
        write::str(out, text.as_bytes());
        if let Some(index) = index {
            write::str(out, b"kubernetes");
            write::map_len(out, 1);
            write::str(out, b"labels");
            write::map_len(out, 1);
            write::str(out, b"index");
            write::str(out, index.as_bytes());
        }
    }

    #[test]
    fn every_line_is_counted_once_and_its_labels_checked() {
        let rx = Receiver::start(2, 10).unwrap();
        let mut entries = Vec::new();
        entry(&mut entries, &line_text(0, 0), Some("0"));
        entry(&mut entries, &line_text(1, 9), Some("1"));
        entry(&mut entries, &line_text(1, 9), Some("1"));
        entry(&mut entries, &line_text(0, 1), Some("1"));
        entry(&mut entries, &line_text(0, 2), None);
        entry(&mut entries, "not ours", None);
        let mut frame = Vec::new();
        write_packed_forward(&mut frame, "kube.x", &entries, 6, Some(b"c1"));
        let mut s = TcpStream::connect(rx.addr).unwrap();
        s.write_all(&frame).unwrap();
        let mut ack = vec![0u8; 64];
        let n = s.read(&mut ack).unwrap();
        assert_eq!(
            crate::protocol::forward::parse_ack(&ack[..n]).as_deref(),
            Some("c1")
        );
        let c = rx.counts();
        assert_eq!(
            (
                c.records,
                c.distinct,
                c.duplicates,
                c.without_labels,
                c.foreign
            ),
            (6, 4, 1, 2, 1)
        );
        assert_eq!(rx.error(), None);
        assert_eq!(
            rx.missing(10, 10),
            vec![(0, 3, 9), (1, 0, 8)],
            "lines 0-2 of pod 0 and 9 of pod 1 arrived"
        );
        assert_eq!(rx.missing(10, 1), vec![(0, 3, 9)]);
    }
}
