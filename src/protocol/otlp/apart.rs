//! Decoding large OTLP requests away from the runtime: the runtime's
//! threads serve every source's connections (and the API), so an 8 MiB
//! request decoded on one of them would hold all of those up for as long
//! as it takes.
//!
//! A body larger than [`DECODED_IN_PLACE_BYTES`] goes to a pool of decode
//! threads: one fewer than the CPUs (at least one), so a CPU is left to
//! the runtime however many large requests come at once, each at a lower
//! CPU priority (nice 10) than the runtime's threads, so that on a busy
//! machine a connection waiting to be answered goes first. Requests past
//! the pool's threads wait their turn, holding no thread (their bodies are
//! already read, within the source's memory budget); one whose client went
//! away meanwhile is dropped unread when its turn comes.

use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use bytes::Bytes;

use super::{decode, DecodeError, Format, TagTemplate, Tagged};
use crate::event::EventTime;

/// Bodies up to this size are decoded on the task that read them; larger
/// ones on the pool ([`decode_apart`]). Handing a body to another thread
/// and back costs some tens of microseconds, a few percent of decoding
/// 32 KiB; and 32 KiB of the costliest protobuf (a distinct attribute key
/// every 7 bytes) holds a runtime thread for about 3 ms in a debug build
/// (a whole 8 MiB request of it was answered in 0.77 s on a 2-CPU
/// machine), far less in a release build.
pub const DECODED_IN_PLACE_BYTES: usize = 32 * 1024;

/// The nice value of the decode threads (the runtime's are at 0).
const DECODE_NICE: libc::c_int = 10;

/// A decode and where its result goes.
type Job = Box<dyn FnOnce() + Send>;

/// The queue of the decode threads, which are started with it.
fn pool() -> &'static Mutex<mpsc::Sender<Job>> {
    static POOL: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = std::sync::Arc::new(Mutex::new(rx));
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        for i in 0..cpus.saturating_sub(1).max(1) {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("otlp-decode-{i}"))
                .spawn(move || {
                    // this thread only (Linux: a thread's own nice value);
                    // failing leaves it at the runtime's priority
                    // SAFETY: setpriority takes no pointers
                    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, DECODE_NICE) };
                    loop {
                        let job = match rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "cannot start an OTLP decode thread");
            }
        }
        Mutex::new(tx)
    })
}

/// [`decode`], on the decode pool for a body larger than
/// [`DECODED_IN_PLACE_BYTES`].
pub async fn decode_apart(
    format: Format,
    body: Bytes,
    tag: &TagTemplate,
    now: EventTime,
    limit: usize,
) -> Result<Vec<Tagged>, DecodeError> {
    if body.len() <= DECODED_IN_PLACE_BYTES {
        return decode(format, &body, tag, now, limit);
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tag = tag.clone();
    let job: Job = Box::new(move || {
        // a request whose client went away while it waited for a thread
        // is not decoded for nobody
        if tx.is_closed() {
            return;
        }
        let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            decode(format, &body, &tag, now, limit)
        }));
        let _ = tx.send(decoded);
    });
    let queued = match pool().lock() {
        Ok(jobs) => jobs.send(job).is_ok(),
        Err(_) => false,
    };
    if !queued {
        return Err(DecodeError::Stopped);
    }
    match rx.await {
        Ok(Ok(decoded)) => decoded,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        // no decode thread could be started
        Err(_) => Err(DecodeError::Stopped),
    }
}
