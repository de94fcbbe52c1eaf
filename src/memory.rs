//! The process-wide memory budget (`[limits] memory`): connection read
//! buffers and the batches cut from them, until every sink has settled
//! them. A source asks for budget before it allocates a read buffer (or
//! hands on a batch); when there is none it stops reading (TCP pushes back
//! on the sender) until sinks have written enough to release some.
//!
//! A [`MemoryCharge`] is what a holder owns; dropping it returns the bytes.
//! A forward connection charges each read buffer when it allocates it and
//! shares that charge ([`SharedCharge`]) with every frame cut from the
//! buffer: frames are slices of it, so the allocation lives, and stays
//! charged, until the connection has moved on to a new buffer and every
//! [`crate::event::Batch`] holding one of its frames has been dropped by
//! every sink (written, or settled from a memory queue).
//!
//! Waiting is FIFO (a [`Semaphore`] of bytes), so a large request is not
//! starved by small ones, and a request larger than the whole budget goes
//! alone once everything else is returned.
//!
//! A filter that makes records larger (a parser adding fields, a modify
//! setting them) charges the growth to the budget its batch is charged
//! to ([`SharedCharge::grown`]). A filter cannot wait, so it takes what
//! room there is and goes over the budget by the rest; sources then wait
//! until the grown batches are settled. A filter that keeps copies of
//! lines after their batch has gone (the `multiline` filter's records
//! being joined) charges them apart ([`SharedCharge::charge_apart`]) for
//! as long as it holds them.
//!
//! One case would otherwise wait for ever: every charged byte belongs to a
//! connection that holds part of a frame and waits, either for budget to
//! read the rest or for the client to send it (a client that writes to
//! many connections from one thread waits on the one logferry does not
//! read). Nobody can release anything then. [`MemoryBudget::acquire`] sees
//! that moment (the bytes held by waiters equal the bytes in use) and lets
//! one waiter go over the budget; what it reads becomes batches that are
//! returned once written. Memory then exceeds the budget by at most the
//! partial frames that idle connections hold (each at most one read
//! buffer), which `idle_timeout` ends. `logferry_memory_overdrafts_total`
//! counts these.

pub mod code;

use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, Semaphore};

use crate::metrics::{Counter, Gauge, Registry};
use crate::telemetry::RateLimitedLog;

/// The budget when `[limits] memory` is not set.
pub const DEFAULT_MEMORY_BYTES: usize = 256 * 1024 * 1024;

/// Smallest budget accepted: below it a few busy connections would take
/// turns instead of reading side by side.
pub const MIN_MEMORY_BYTES: usize = 1024 * 1024;

/// Shared handle to the budget; clones share it.
#[derive(Clone)]
pub struct MemoryBudget {
    inner: Arc<Inner>,
}

struct Inner {
    limit: usize,
    /// One permit per byte of the budget not charged (FIFO waiters).
    permits: Semaphore,
    state: Mutex<State>,
    /// Woken when every charged byte may be held by waiters (see the
    /// module docs).
    stuck: Notify,
    used_gauge: Gauge,
    waits: Counter,
    overdrafts: Counter,
    warnings: RateLimitedLog,
}

#[derive(Default)]
struct State {
    /// Bytes charged, overdrafts included.
    used: usize,
    /// Bytes charged to holders that are now waiting for more.
    waiting_held: usize,
}

/// Largest number of permits one `acquire_many` can take.
const MAX_ACQUIRE: usize = u32::MAX as usize;

impl MemoryBudget {
    /// A budget of `limit` bytes, reporting on `registry`.
    pub fn new(limit: usize, registry: &Registry) -> Self {
        let limit = limit.clamp(1, Semaphore::MAX_PERMITS);
        registry
            .gauge(
                "logferry_memory_budget_bytes",
                "The memory budget ([limits] memory) shared by connection read buffers and batches not yet settled.",
                &[],
            )
            .set(limit as u64);
        MemoryBudget {
            inner: Arc::new(Inner {
                limit,
                permits: Semaphore::new(limit),
                state: Mutex::new(State::default()),
                stuck: Notify::new(),
                used_gauge: registry.gauge(
                    "logferry_memory_used_bytes",
                    "Bytes of the memory budget in use: read and not yet handed on, or in batches not yet settled by every sink.",
                    &[],
                ),
                waits: registry.counter(
                    "logferry_memory_waits_total",
                    "Times a source stopped reading because the memory budget was used up.",
                    &[],
                ),
                overdrafts: registry.counter(
                    "logferry_memory_overdrafts_total",
                    "Times one reader went over the memory budget to finish a frame because every other byte was held by readers waiting for budget.",
                    &[],
                ),
                warnings: RateLimitedLog::default(),
            }),
        }
    }

    /// A budget that never runs out (unit tests, tools).
    pub fn unlimited() -> Self {
        MemoryBudget::new(Semaphore::MAX_PERMITS, &Registry::new())
    }

    /// The budget in bytes.
    pub fn limit(&self) -> usize {
        self.inner.limit
    }

    /// Bytes charged now.
    pub fn used(&self) -> usize {
        self.inner.lock().used
    }

    /// Charges `n` bytes if the budget has room now.
    pub fn try_acquire(&self, n: usize) -> Option<MemoryCharge> {
        let permits = n.min(self.inner.limit).min(MAX_ACQUIRE);
        let p = self.inner.permits.try_acquire_many(permits as u32).ok()?;
        p.forget();
        Some(self.inner.charged(n, permits))
    }

    /// Charges `n` bytes, waiting while the budget has no room. `held` is
    /// what the caller already holds and cannot give back before it gets
    /// these bytes (the start of a frame it is reading): if every byte in
    /// use is held by waiters (here or in [`MemoryBudget::waiting_on_input`]),
    /// one of them gets its bytes over the budget, so readers can never
    /// wait on each other for ever. A request
    /// larger than the whole budget waits until nothing else is charged.
    /// `source` names who waits, for the (rate-limited) warning.
    pub async fn acquire(&self, held: usize, n: usize, source: &str) -> MemoryCharge {
        if let Some(c) = self.try_acquire(n) {
            return c;
        }
        let inner = &self.inner;
        inner.waits.inc();
        crate::warn_limited!(inner.warnings, "memory_budget", source, budget = inner.limit,
            used = self.used(),
            "memory budget reached: sources stop reading until sinks catch up (raise [limits] memory, or see why the sinks are slow)");
        let permits = n.min(inner.limit).min(MAX_ACQUIRE);
        let mut waiting = Waiting {
            inner,
            held: 0,
            registered: false,
        };
        let acquire = inner.permits.acquire_many(permits as u32);
        tokio::pin!(acquire);
        loop {
            let stuck = inner.stuck.notified();
            tokio::pin!(stuck);
            stuck.as_mut().enable();
            // bytes that just came back may already be ours
            tokio::select! {
                biased;
                p = &mut acquire => {
                    let p = p.expect("the budget's semaphore is never closed");
                    p.forget();
                    drop(waiting);
                    return inner.charged(n, permits);
                }
                _ = std::future::ready(()) => {}
            }
            {
                let mut s = inner.lock();
                if !waiting.registered {
                    s.waiting_held += held;
                    waiting.held = held;
                    waiting.registered = true;
                }
                if s.used <= s.waiting_held {
                    // every byte in use waits on more: go over the budget
                    s.waiting_held -= held;
                    waiting.registered = false;
                    s.used += n;
                    inner.used_gauge.set(s.used as u64);
                    drop(s);
                    inner.overdrafts.inc();
                    return MemoryCharge {
                        inner: Some(inner.clone()),
                        bytes: n,
                        permits: 0,
                        base: SharedCharge::default(),
                    };
                }
            }
            tokio::select! {
                p = &mut acquire => {
                    let p = p.expect("the budget's semaphore is never closed");
                    p.forget();
                    drop(waiting);
                    return inner.charged(n, permits);
                }
                _ = &mut stuck => {}
            }
        }
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Charges `n` bytes at once: the room there is, and over the budget
    /// by the rest (for a caller that cannot wait).
    fn charge_now(self: &Arc<Self>, n: usize) -> MemoryCharge {
        let free = self
            .permits
            .available_permits()
            .min(n)
            .min(self.limit)
            .min(MAX_ACQUIRE);
        // another taker may have come first: then it is all over budget
        let permits = match self.permits.try_acquire_many(free as u32) {
            Ok(p) if free > 0 => {
                p.forget();
                free
            }
            _ => 0,
        };
        self.charged(n, permits)
    }

    /// Records `bytes` charged, `permits` of them taken from the semaphore.
    fn charged(self: &Arc<Self>, bytes: usize, permits: usize) -> MemoryCharge {
        let mut s = self.lock();
        s.used += bytes;
        self.used_gauge.set(s.used as u64);
        MemoryCharge {
            inner: Some(self.clone()),
            bytes,
            permits,
            base: SharedCharge::default(),
        }
    }

    fn release(&self, bytes: usize, permits: usize) {
        if bytes == 0 && permits == 0 {
            return;
        }
        let wake = {
            let mut s = self.lock();
            s.used -= bytes;
            self.used_gauge.set(s.used as u64);
            s.waiting_held > 0 && s.used <= s.waiting_held
        };
        if permits > 0 {
            self.permits.add_permits(permits);
        }
        if wake {
            self.stuck.notify_one();
        }
    }
}

impl MemoryBudget {
    /// Marks `held` bytes as waiting for the client (a connection holding
    /// part of a frame, reading): like the bytes of a budget waiter, they
    /// come back only once more input arrives. Unmarked when the guard
    /// drops.
    pub fn waiting_on_input(&self, held: usize) -> impl Drop + '_ {
        let inner = &self.inner;
        let wake = {
            let mut s = inner.lock();
            s.waiting_held += held;
            s.used <= s.waiting_held
        };
        if wake && held > 0 {
            inner.stuck.notify_one();
        }
        Waiting {
            inner,
            held,
            registered: true,
        }
    }
}

/// Unregisters a waiter's held bytes when its wait ends or is cancelled.
struct Waiting<'a> {
    inner: &'a Arc<Inner>,
    held: usize,
    registered: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.registered {
            self.inner.lock().waiting_held -= self.held;
        }
    }
}

/// Bytes charged to the budget, returned when dropped.
#[derive(Default)]
pub struct MemoryCharge {
    inner: Option<Arc<Inner>>,
    /// Bytes charged.
    bytes: usize,
    /// How many of them hold a permit (the rest are an overdraft, or the
    /// part of a request larger than the whole budget).
    permits: usize,
    /// The charge this one adds to (a batch's, which a filter made
    /// larger), held as long as this one is.
    base: SharedCharge,
}

impl std::fmt::Debug for MemoryCharge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MemoryCharge({} bytes)", self.bytes)
    }
}

impl MemoryCharge {
    /// A charge of nothing.
    pub fn none() -> Self {
        MemoryCharge::default()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Adds `other` to this charge.
    pub fn merge(&mut self, mut other: MemoryCharge) {
        if self.inner.is_none() {
            self.inner = other.inner.take();
        }
        self.bytes += std::mem::take(&mut other.bytes);
        self.permits += std::mem::take(&mut other.permits);
    }

    /// Moves `n` bytes (at most all) of this charge into a new one.
    pub fn split(&mut self, n: usize) -> MemoryCharge {
        let n = n.min(self.bytes);
        // overdraft bytes go first, so what stays behind keeps its permits
        let unbacked = self.bytes - self.permits;
        let permits = n.saturating_sub(unbacked);
        self.bytes -= n;
        self.permits -= permits;
        MemoryCharge {
            inner: self.inner.clone(),
            bytes: n,
            permits,
            base: SharedCharge::default(),
        }
    }

    /// Returns what exceeds `n` bytes to the budget.
    pub fn shrink_to(&mut self, n: usize) {
        if self.bytes > n {
            drop(self.split(self.bytes - n));
        }
    }

    /// Shares this charge between copies of one batch: returned when the
    /// last copy is dropped.
    pub fn shared(self) -> SharedCharge {
        if self.bytes == 0 {
            SharedCharge(None)
        } else {
            SharedCharge(Some(Arc::new(self)))
        }
    }
}

impl Drop for MemoryCharge {
    fn drop(&mut self) {
        if let Some(inner) = &self.inner {
            inner.release(self.bytes, self.permits);
        }
    }
}

/// A charge shared by the copies of a batch (one per sink).
#[derive(Debug, Clone, Default)]
pub struct SharedCharge(Option<Arc<MemoryCharge>>);

impl SharedCharge {
    /// Bytes charged (with the charges this one adds to).
    pub fn bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |c| c.bytes + c.base.bytes())
    }

    /// `n` bytes more from the budget this charge is on, charged at once
    /// (over the budget if it has no room) and held apart from it: for a
    /// filter that keeps copies of records after their batch has gone (a
    /// multiline record being joined). Nothing for a batch charged to no
    /// budget.
    pub fn charge_apart(&self, n: usize) -> MemoryCharge {
        match self.0.as_ref().and_then(|c| c.inner.as_ref()) {
            Some(inner) if n > 0 => inner.charge_now(n),
            _ => MemoryCharge::none(),
        }
    }

    /// This charge and `extra` bytes more, from the same budget, charged
    /// at once (over the budget if it has no room: see the module docs).
    /// A batch charged to no budget stays so.
    pub fn grown(&self, extra: usize) -> SharedCharge {
        let Some(inner) = self.0.as_ref().and_then(|c| c.inner.as_ref()) else {
            return self.clone();
        };
        if extra == 0 {
            return self.clone();
        }
        let mut charge = inner.charge_now(extra);
        charge.base = self.clone();
        SharedCharge(Some(Arc::new(charge)))
    }
}

#[cfg(test)]
mod tests;
