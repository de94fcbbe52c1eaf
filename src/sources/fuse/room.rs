//! What the FUSE source holds besides the batches it ships, and its bounds.
//!
//! - **Unfinished lines** (the bytes after a descriptor's last newline,
//!   kept until the newline or the close) are charged to the process
//!   memory budget, and all of them together take at most half of it
//!   ([`LineRoom`]): the other half stays for complete lines, so other
//!   writers keep shipping while thousands of descriptors hold long
//!   unfinished lines. A write that would need more waits for room, then
//!   fails with EIO after `write_timeout`.
//! - **Waiting writes**: a request that has to wait (for that room, the
//!   budget, a sink queue, its descriptor, or acknowledgements) is handed
//!   to a task, so the few request threads go on serving other writers.
//!   Such a task holds its write's bytes (the records cut from it, its new
//!   unfinished line) outside the budget, which is what lets the request
//!   thread take the next request; [`WaitingRequests`] bounds them to
//!   [`WAITING_BYTES`] in all. Past it a request thread waits itself (no
//!   more requests are read from the kernel, whose queue holds the
//!   writers), for at most `write_timeout`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::memory::{MemoryBudget, MemoryCharge};

/// Most bytes that requests waiting in tasks hold outside the budget (at
/// least what one write can hold).
pub const WAITING_BYTES: usize = 16 << 20;

/// What a waiting request is counted as at least: the task, its reply and
/// the descriptor it refers to.
const MIN_WAITING: usize = 1024;

/// Largest number of permits one `acquire_many` can take.
const MAX_ACQUIRE: usize = u32::MAX as usize;

/// Room for unfinished lines: half the memory budget, each byte also
/// charged to the budget.
pub struct LineRoom {
    /// One permit per byte unfinished lines may still take.
    permits: Semaphore,
    /// Bytes unfinished lines may take in all.
    limit: usize,
    memory: MemoryBudget,
    /// Bytes held now (gauge `logferry_fuse_unfinished_line_bytes`).
    held: Arc<AtomicUsize>,
    /// The source, for the budget's warning.
    source: Arc<str>,
}

impl LineRoom {
    /// Room for half of `memory`, reporting what is held in `held`.
    pub fn new(memory: MemoryBudget, source: Arc<str>, held: Arc<AtomicUsize>) -> Arc<Self> {
        let limit = (memory.limit() / 2).clamp(1, Semaphore::MAX_PERMITS);
        Arc::new(LineRoom {
            permits: Semaphore::new(limit),
            limit,
            memory,
            held,
            source,
        })
    }

    /// Bytes unfinished lines may take in all.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Takes room for `n` more bytes if there is some now.
    pub fn try_take(self: &Arc<Self>, n: usize) -> Option<LineCharge> {
        let permits = n.min(self.limit).min(MAX_ACQUIRE);
        let p = self.permits.try_acquire_many(permits as u32).ok()?;
        p.forget();
        let mut charge = LineCharge {
            room: Some(self.clone()),
            bytes: 0,
            permits,
            memory: MemoryCharge::none(),
        };
        charge.memory = self.memory.try_acquire(n)?;
        charge.bytes = n;
        self.held.fetch_add(n, Ordering::Relaxed);
        Some(charge)
    }

    /// Takes room for `n` more bytes, waiting (first in, first served)
    /// until unfinished lines leave enough and then until the budget has
    /// it. Cancelling the wait gives back what was taken.
    pub async fn take(self: &Arc<Self>, n: usize) -> LineCharge {
        let permits = n.min(self.limit).min(MAX_ACQUIRE);
        let p = self
            .permits
            .acquire_many(permits as u32)
            .await
            .expect("the room's semaphore is never closed");
        p.forget();
        // from here on, dropping the charge returns the permits
        let mut charge = LineCharge {
            room: Some(self.clone()),
            bytes: 0,
            permits,
            memory: MemoryCharge::none(),
        };
        charge.memory = self.memory.acquire(0, n, &self.source).await;
        charge.bytes = n;
        self.held.fetch_add(n, Ordering::Relaxed);
        charge
    }
}

/// Room taken by one descriptor's unfinished line (its buffer's
/// capacity), given back when dropped.
#[derive(Default)]
pub struct LineCharge {
    room: Option<Arc<LineRoom>>,
    /// Bytes charged.
    bytes: usize,
    /// Permits of the room held (fewer than `bytes` only for a line
    /// longer than the whole room).
    permits: usize,
    /// The same bytes in the memory budget.
    memory: MemoryCharge,
}

impl std::fmt::Debug for LineCharge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LineCharge({} bytes)", self.bytes)
    }
}

impl LineCharge {
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Adds `other` to this charge.
    pub fn merge(&mut self, mut other: LineCharge) {
        if self.room.is_none() {
            self.room = other.room.take();
        }
        self.bytes += std::mem::take(&mut other.bytes);
        self.permits += std::mem::take(&mut other.permits);
        self.memory.merge(std::mem::take(&mut other.memory));
    }

    /// Gives back what exceeds `n` bytes.
    pub fn shrink_to(&mut self, n: usize) {
        if self.bytes <= n {
            return;
        }
        let Some(room) = &self.room else {
            return;
        };
        let freed = self.bytes - n;
        let keep_permits = self.permits.min(n);
        let freed_permits = self.permits - keep_permits;
        self.bytes = n;
        self.permits = keep_permits;
        self.memory.shrink_to(n);
        room.held.fetch_sub(freed, Ordering::Relaxed);
        room.permits.add_permits(freed_permits);
    }
}

impl Drop for LineCharge {
    fn drop(&mut self) {
        self.shrink_to(0);
        if let Some(room) = &self.room {
            // permits taken by a wait cancelled before the budget answered
            room.permits.add_permits(std::mem::take(&mut self.permits));
        }
    }
}

/// Bounds what requests waiting in tasks hold (see the module docs).
pub struct WaitingRequests {
    permits: Arc<Semaphore>,
    limit: usize,
}

impl WaitingRequests {
    /// Room for [`WAITING_BYTES`], or for one request holding `largest`.
    pub fn new(largest: usize) -> Self {
        let limit = WAITING_BYTES
            .max(largest)
            .min(Semaphore::MAX_PERMITS)
            .min(MAX_ACQUIRE);
        WaitingRequests {
            permits: Arc::new(Semaphore::new(limit)),
            limit,
        }
    }

    fn permits_for(&self, bytes: usize) -> u32 {
        bytes.max(MIN_WAITING).min(self.limit) as u32
    }

    /// Room for a request holding `bytes`, if there is some now.
    pub fn try_reserve(&self, bytes: usize) -> Option<OwnedSemaphorePermit> {
        self.permits
            .clone()
            .try_acquire_many_owned(self.permits_for(bytes))
            .ok()
    }

    /// Room for a request holding `bytes`, waiting for it.
    pub async fn reserve(&self, bytes: usize) -> OwnedSemaphorePermit {
        self.permits
            .clone()
            .acquire_many_owned(self.permits_for(bytes))
            .await
            .expect("never closed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Registry;
    use std::time::Duration;

    fn room(budget: usize) -> (Arc<LineRoom>, MemoryBudget, Arc<AtomicUsize>) {
        let memory = MemoryBudget::new(budget, &Registry::new());
        let held = Arc::new(AtomicUsize::new(0));
        (
            LineRoom::new(memory.clone(), "fs".into(), held.clone()),
            memory,
            held,
        )
    }

    #[tokio::test]
    async fn unfinished_lines_take_half_the_budget_and_wait_for_the_rest() {
        let (room, memory, held) = room(1000);
        assert_eq!(room.limit(), 500);
        let mut a = room.take(300).await;
        let b = room.take(200).await;
        assert_eq!((memory.used(), held.load(Ordering::Relaxed)), (500, 500));
        // the other half is for complete lines
        assert!(memory.try_acquire(500).is_some());
        let waiting = tokio::time::timeout(Duration::from_millis(50), room.take(1)).await;
        assert!(waiting.is_err(), "no room past half the budget");
        assert!(room.try_take(1).is_none());
        assert_eq!(memory.used(), 500, "a cancelled wait holds nothing");
        // a line that gets shorter gives room back; merging keeps it
        a.shrink_to(100);
        assert_eq!(held.load(Ordering::Relaxed), 300);
        let c = room.take(200).await;
        a.merge(c);
        assert_eq!(a.bytes(), 300);
        drop((a, b));
        assert_eq!((memory.used(), held.load(Ordering::Relaxed)), (0, 0));
        let whole = room.take(500).await;
        assert_eq!(whole.bytes(), 500, "all the room is there again");
    }

    #[tokio::test]
    async fn a_line_longer_than_the_room_waits_until_it_is_empty() {
        let (room, memory, _) = room(1000);
        let small = room.take(10).await;
        let big = {
            let room = room.clone();
            tokio::spawn(async move { room.take(800).await })
        };
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!big.is_finished());
        drop(small);
        let big = big.await.unwrap();
        assert_eq!((big.bytes(), memory.used()), (800, 800));
        drop(big);
        assert!(room.take(500).await.bytes() == 500);
    }

    #[test]
    fn waiting_requests_are_bounded_in_bytes() {
        let w = WaitingRequests::new(1 << 20);
        let a = w.try_reserve(WAITING_BYTES - 4096).unwrap();
        let _b = w.try_reserve(10).unwrap(); // counted as MIN_WAITING
        assert!(w.try_reserve(4096).is_none());
        drop(a);
        assert!(w.try_reserve(WAITING_BYTES / 2).is_some());
        // one request larger than the whole bound still gets through alone
        let w = WaitingRequests::new(1 << 20);
        assert!(w.try_reserve(usize::MAX).is_some());
    }
}
