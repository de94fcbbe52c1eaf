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
//! client that writes more often than once a period ([`Linger::woken`]):
//! a client sending a chunk a second is read the moment each arrives, and
//! the path lingers once.

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
}

impl Linger {
    pub fn new(period: Duration) -> Self {
        Linger {
            period,
            quiet_until: None,
            last_woken: None,
        }
    }

    /// The reader's client woke it with data after it had read all there
    /// was: if the client wrote within a period of its last such wake, it
    /// writes more often than once a period, and its next writes gather
    /// (as [`Linger::caught_up`]). Returns whether they do.
    pub fn woken(&mut self) -> bool {
        if self.period.is_zero() {
            return false;
        }
        let now = Instant::now();
        let frequent = self
            .last_woken
            .is_some_and(|t| now.duration_since(t) < self.period);
        self.last_woken = Some(now);
        if frequent {
            self.caught_up();
        }
        frequent
    }

    /// The reader read something and took all there was: the next lines
    /// gather for the period.
    pub fn caught_up(&mut self) {
        if !self.period.is_zero() {
            self.quiet_until = Some(Instant::now() + self.period);
        }
    }

    /// Something may be lost unless the reader reads at once (a file is
    /// being rotated): the gathering ends now.
    pub fn stop(&mut self) {
        self.quiet_until = None;
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

    #[tokio::test]
    async fn only_a_client_waking_the_reader_within_a_period_lets_writes_gather() {
        tokio::time::pause();
        let period = Duration::from_millis(100);
        let mut l = Linger::new(period);
        // the first wake: nothing to compare with
        assert!(!l.woken());
        assert!(!l.is_quiet());
        // a client writing once a period or less often never gathers
        tokio::time::advance(period).await;
        assert!(!l.woken());
        tokio::time::advance(Duration::from_secs(3)).await;
        assert!(!l.woken());
        // within a period of the last wake: the next writes gather
        tokio::time::advance(Duration::from_millis(10)).await;
        let woken = Instant::now();
        assert!(l.woken());
        assert_eq!(l.until(), Some(woken + period));
        // stopped (an ack asked for): read at once
        l.stop();
        assert!(!l.is_quiet());
        // no period: never
        let mut none = Linger::new(Duration::ZERO);
        assert!(!none.woken() && !none.woken());
        assert!(!none.is_quiet());
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
