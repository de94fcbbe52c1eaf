//! When a reader that nobody waits on reads next.
//!
//! A tail reader or a TCP connection has no client waiting for an
//! acknowledgement, so it need not hand over each line the moment it
//! arrives: once it has caught up with what was written, it lets the next
//! lines gather for its `linger`, and hands them over as one batch. A
//! reader behind its input (a backlog, full speed) reads on at once. A
//! source whose client waits (an HTTP request, a forward chunk with an ack,
//! a FUSE `fsync`) has no linger at all.
//!
//! A reader that is often the second hop (a forward connection, whose
//! client may be an agent that lingered already) lingers only for a
//! client that writes more often than twice a period ([`Linger::woken`]):
//! a client sending a chunk a second, or one that lingers as long itself,
//! is read the moment each chunk arrives, and the path lingers once.

//!
//! A connection's reader lingers with its client's data in the socket
//! ([`Linger::gather_in_socket`]): the socket's receive low-water mark is
//! raised meanwhile, so the kernel wakes no thread for each packet, and a
//! client sending a bulk's worth within the linger (or closing) ends it at
//! once, so a bulk sender is never held to what the kernel's buffers take
//! per linger.

use std::future::Future;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;

use crate::net::ReceiveQueue;

/// Bytes a client sends within one linger that show it sends in bulk:
/// they end the linger at once.
pub const BULK_BYTES: usize = 1024 * 1024;

/// At a stop, how long reading what gathered during a linger may take.
pub const STOP_READ_GRACE: Duration = Duration::from_secs(1);

/// A socket source's `linger` setting (`forward`, `tcp`). Set, it is
/// kept. Unset, it is the source's default, but 0 while some sink keeps
/// its records in a `disk` buffer: a chunk read is then on disk at once,
/// while one lingering in the socket is lost to a kill -9, so such a
/// pipeline reads data as it arrives and the linger never widens what a
/// crash can lose. (With memory buffers a kill -9 loses what was read as
/// it loses what was not.) A reload can add or remove a disk buffer under
/// open connections, so each asks again when it would begin to linger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketLinger {
    set: Option<Duration>,
    default: Duration,
}

impl SocketLinger {
    pub fn new(set: Option<Duration>, default: Duration) -> Self {
        SocketLinger { set, default }
    }

    /// The linger now; `disk_buffered`: whether a sink keeps a disk
    /// buffer (`crate::router::Router::disk_buffered`).
    pub fn period(&self, disk_buffered: bool) -> Duration {
        match self.set {
            Some(set) => set,
            None if disk_buffered => Duration::ZERO,
            None => self.default,
        }
    }
}

/// What ended a linger spent with the client's data in the socket.
#[derive(Debug)]
pub enum Woke {
    /// The linger's end, or the stop: what gathered is queued in the
    /// socket ([`ReceiveQueue::queued`] says how much).
    Ended,
    /// The client: a bulk's worth is queued, it closed (`Ok(0)`), or the
    /// socket failed. The byte read to learn it is in the buffer.
    Client(std::io::Result<usize>),
}

/// The linger state of one reader.
#[derive(Debug, Clone)]
pub struct Linger {
    /// How long lines gather once the reader has caught up; zero: never.
    period: Duration,
    /// Until when the reader lets lines gather.
    quiet_until: Option<Instant>,
    /// When its client last woke the reader ([`Linger::woken`]).
    last_woken: Option<Instant>,
    /// When the run of wakes, each close to the one before, that the last
    /// wake belongs to began.
    run_since: Option<Instant>,
}

/// A client writes often when it wakes the reader within this of the wake
/// before, for a quarter of a linger on end (at least twice this:
/// [`Linger::woken`]), and a connection goes on lingering while each
/// linger gathers a chunk per this much of it ([`Linger::goes_on`]): more
/// than 40 writes a second, each record its own chunk (a logging library, Docker's `fluentd` log
/// driver). An upstream that lingers itself for this long or longer (an
/// agent with `linger = "100ms"`) writes less often, what it gathered as
/// one chunk or a few at once, and is read as it arrives, so its path
/// lingers once: the latency its linger was chosen for.
pub const FREQUENT_GAP: Duration = Duration::from_millis(25);

impl Linger {
    pub fn new(period: Duration) -> Self {
        Linger {
            period,
            quiet_until: None,
            last_woken: None,
            run_since: None,
        }
    }

    /// Changes the period from the next gathering on; 0 ends the one under
    /// way.
    pub fn set_period(&mut self, period: Duration) {
        self.period = period;
        if period.is_zero() {
            self.quiet_until = None;
        }
    }

    /// The reader's client woke it with data after it had read all there
    /// was: if this wake and those before it came each within
    /// [`FREQUENT_GAP`] of the one before, for a quarter of a period on
    /// end (at least twice that), the client writes often, and its next
    /// writes gather (as [`Linger::caught_up`]). Returns whether they do.
    /// A few chunks at once (an upstream's linger sent in pieces) are no
    /// such run: they come within a millisecond or so. An agent with a
    /// shorter linger than this reader's, forwarding a frequent client
    /// chunk by chunk until it sees it as frequent itself, is seen so
    /// sooner than here, and its chunks then come a linger apart.
    pub fn woken(&mut self) -> bool {
        if self.period.is_zero() {
            return false;
        }
        let now = Instant::now();
        let close = self
            .last_woken
            .is_some_and(|t| now.duration_since(t) < FREQUENT_GAP);
        self.last_woken = Some(now);
        if !close {
            self.run_since = Some(now);
        }
        let frequent = close
            && self
                .run_since
                .is_some_and(|t| now.duration_since(t) >= (self.period / 4).max(2 * FREQUENT_GAP));
        if frequent {
            self.caught_up();
        }
        frequent
    }

    /// Whether a linger that gathered `frames` chunks saved enough
    /// wake-ups to go on: a chunk per [`FREQUENT_GAP`] of it (at least
    /// two). An upstream that lingers itself sends a chunk or a few each
    /// of its lingers.
    pub fn goes_on(&self, frames: usize) -> bool {
        let often = self.period.as_nanos() / FREQUENT_GAP.as_nanos();
        frames as u128 >= often.max(2)
    }

    /// The reader read something and took all there was: the next lines
    /// gather for the period.
    pub fn caught_up(&mut self) {
        if !self.period.is_zero() {
            self.quiet_until = Some(Instant::now() + self.period);
        }
    }

    /// Something may be lost unless the reader reads at once (a file is
    /// being rotated), or a linger saved nothing: the gathering ends now,
    /// and only a new run of frequent wakes begins another.
    pub fn stop(&mut self) {
        self.quiet_until = None;
        self.run_since = Some(Instant::now());
    }

    /// Whether the reader lets lines gather now.
    pub fn is_quiet(&self) -> bool {
        self.quiet_until.is_some_and(|t| Instant::now() < t)
    }

    /// When the gathering ends, while it lasts.
    pub fn until(&self) -> Option<Instant> {
        self.quiet_until.filter(|_| self.is_quiet())
    }

    /// Waits for the gathering to end (at once if it is not on), waking
    /// its thread once (`crate::timer`).
    pub async fn wait(&mut self) {
        if let Some(t) = self.quiet_until.take() {
            crate::timer::Deadline::new()
                .sleep_until(t.into_std())
                .await;
        }
    }

    /// Lets the client's data gather unread in its socket, if it gathers
    /// at all ([`Linger::caught_up`] with a period), until the gathering
    /// ends, `stop` resolves, or the client sends a bulk's worth or
    /// closes; then the low-water mark is back at 1, which signals what
    /// is queued. A byte read to learn of the client goes into `buf`.
    pub async fn gather_in_socket<R: AsyncRead + Unpin>(
        &mut self,
        queue: &mut ReceiveQueue,
        rd: &mut R,
        buf: &mut BytesMut,
        stop: impl Future<Output = ()>,
    ) -> Woke {
        if self.until().is_none() {
            // not gathering (`linger` 0): the socket is left as it is
            return Woke::Ended;
        }
        queue.set_low_water(BULK_BYTES);
        let mut byte = buf.limit(1);
        let woke = tokio::select! {
            biased;
            _ = stop => Woke::Ended,
            read = rd.read_buf(&mut byte) => Woke::Client(read),
            _ = self.wait() => Woke::Ended,
        };
        queue.set_low_water(1);
        woke
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reader_that_caught_up_waits_its_linger_one_behind_does_not() {
        tokio::time::pause();
        let mut l = Linger::new(Duration::from_millis(100));
        // behind its input (a full read): reads on at once
        assert!(!l.is_quiet());
        let started = Instant::now();
        l.wait().await;
        assert_eq!(started.elapsed(), Duration::ZERO);
        // caught up: the next lines gather for the linger
        l.caught_up();
        assert!(l.is_quiet());
        assert_eq!(l.until(), Some(started + Duration::from_millis(100)));
        l.wait().await;
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(100) && waited < Duration::from_millis(110),
            "{waited:?}"
        );
        assert!(!l.is_quiet() && l.until().is_none());
        // stopped: reads at once
        l.caught_up();
        l.stop();
        assert!(!l.is_quiet() && l.until().is_none());
    }

    #[test]
    fn an_unset_socket_linger_is_zero_while_a_sink_keeps_a_disk_buffer() {
        let default = Duration::from_millis(500);
        let unset = SocketLinger::new(None, default);
        assert_eq!(unset.period(false), default);
        assert_eq!(unset.period(true), Duration::ZERO);
        // what is set is kept either way
        let set = SocketLinger::new(Some(Duration::from_secs(2)), default);
        assert_eq!(set.period(true), Duration::from_secs(2));
        let zero = SocketLinger::new(Some(Duration::ZERO), default);
        assert_eq!(zero.period(false), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_period_set_to_zero_ends_the_gathering_under_way() {
        tokio::time::pause();
        let mut l = Linger::new(Duration::from_millis(100));
        l.caught_up();
        assert!(l.is_quiet());
        l.set_period(Duration::ZERO);
        assert!(!l.is_quiet() && l.until().is_none());
        assert!(!l.woken() && !l.woken());
        // and a period set again lets the next writes gather
        l.set_period(Duration::from_millis(100));
        let woken = wakes(&mut l, Duration::from_millis(10), 6).await;
        assert_eq!(woken.iter().filter(|w| **w).count(), 1, "{woken:?}");
        assert!(woken[5] && l.is_quiet(), "{woken:?}");
    }

    /// `n` wakes of `l`, `gap` apart (the first after none): whether each
    /// let the next writes gather.
    async fn wakes(l: &mut Linger, gap: Duration, n: usize) -> Vec<bool> {
        let mut woken = Vec::new();
        for i in 0..n {
            if i > 0 {
                tokio::time::advance(gap).await;
            }
            woken.push(l.woken());
        }
        woken
    }

    #[tokio::test]
    async fn only_a_client_waking_the_reader_often_lets_writes_gather() {
        tokio::time::pause();
        let period = Duration::from_millis(100);
        let mut l = Linger::new(period);
        // the first wake: nothing to compare with
        assert!(!l.woken());
        assert!(!l.is_quiet());
        // a client writing once a period or less often never gathers, nor
        // one a little more often (an upstream lingering as long, woken a
        // little early), nor one lingering a third as long
        for gap in [
            period,
            Duration::from_secs(3),
            period * 9 / 10,
            period / 2,
            period / 3,
            period / 3,
            period / 3,
        ] {
            tokio::time::advance(gap).await;
            assert!(!l.woken());
        }
        // nor one that sends what it gathered as many chunks at once
        for _ in 0..5 {
            tokio::time::advance(period / 3).await;
            let burst = wakes(&mut l, Duration::from_micros(100), 40).await;
            assert!(burst.iter().all(|w| !w), "{burst:?}");
        }
        // wakes within FREQUENT_GAP of each other for a quarter of the
        // period (here less than twice FREQUENT_GAP): the next writes
        // gather
        tokio::time::advance(period).await;
        let run = wakes(&mut l, Duration::from_millis(10), 6).await;
        assert_eq!(run, [false, false, false, false, false, true]);
        let woken = Instant::now();
        assert_eq!(l.until(), Some(woken + period));
        // stopped (an ack asked for): read at once
        l.stop();
        assert!(!l.is_quiet());
        // no period: never
        let mut none = Linger::new(Duration::ZERO);
        assert!(!none.woken() && !none.woken());
        assert!(!none.is_quiet());
    }

    #[test]
    fn a_linger_goes_on_while_it_gathers_a_chunk_per_frequent_gap() {
        let l = Linger::new(Duration::from_millis(500));
        assert!(!l.goes_on(19) && l.goes_on(20));
        // an upstream lingering 100 ms sends about 5 in 500 ms
        assert!(!l.goes_on(5));
        let short = Linger::new(Duration::from_millis(100));
        assert!(!short.goes_on(3) && short.goes_on(4));
        let shorter = Linger::new(Duration::from_millis(10));
        assert!(!shorter.goes_on(1) && shorter.goes_on(2));
    }

    #[tokio::test]
    async fn no_linger_never_waits() {
        tokio::time::pause();
        let mut l = Linger::new(Duration::ZERO);
        l.caught_up();
        assert!(!l.is_quiet());
        let started = Instant::now();
        l.wait().await;
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    /// The socket's receive low-water mark.
    fn low_water(s: &tokio::net::TcpStream) -> i32 {
        use std::os::fd::AsRawFd;
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: a live socket; `v` and `len` outlive the call
        let r = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(r, 0);
        v
    }

    #[tokio::test]
    async fn a_socket_is_left_as_it_is_without_a_linger_and_set_back_after_one() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let mut queue = ReceiveQueue::of(&server);
        let mut buf = BytesMut::new();

        // no linger: at once, nothing read, the mark untouched
        let mut l = Linger::new(Duration::ZERO);
        l.caught_up();
        client.write_all(b"line\n").await.unwrap();
        let woke = l
            .gather_in_socket(&mut queue, &mut server, &mut buf, std::future::pending())
            .await;
        assert!(matches!(woke, Woke::Ended), "{woke:?}");
        assert!(buf.is_empty());
        assert_eq!(low_water(&server), 1);

        // a stop ends a linger at once and sets the mark back
        let mut l = Linger::new(Duration::from_secs(60));
        l.caught_up();
        let started = std::time::Instant::now();
        let woke = l
            .gather_in_socket(&mut queue, &mut server, &mut buf, std::future::ready(()))
            .await;
        assert!(matches!(woke, Woke::Ended), "{woke:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(low_water(&server), 1);
        assert_eq!(queue.queued(), 5, "what gathered is left to read");

        // a bulk's worth ends it: the byte read to learn it is in the buffer
        l.caught_up();
        let bulk = vec![b'x'; 2 * BULK_BYTES];
        let writer = tokio::spawn(async move {
            client.write_all(&bulk).await.unwrap();
            client
        });
        let woke = tokio::time::timeout(
            Duration::from_secs(30),
            l.gather_in_socket(&mut queue, &mut server, &mut buf, std::future::pending()),
        )
        .await
        .expect("a bulk ends the linger");
        assert!(matches!(woke, Woke::Client(Ok(1))), "{woke:?}");
        assert_eq!(&buf[..], b"l");
        assert_eq!(low_water(&server), 1);
        drop(server);
        let _ = writer.await;
    }
}
