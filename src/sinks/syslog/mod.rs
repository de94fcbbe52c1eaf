//! `type = "syslog"`: each record as one syslog message (RFC 5424 or 3164)
//! to a syslog receiver over TCP with octet counting (RFC 6587), TLS (RFC
//! 5425) or UDP (RFC 5426).
//!
//! - `config.rs`: the settings;
//! - `encode.rs`: records into messages, header fields from templates;
//! - this file: the connection (plain or TLS, RFC 5425), writes, and the
//!   verdict of each write.
//!
//! A syslog receiver acknowledges nothing: a batch is delivered once its
//! messages are written to the socket (TCP: handed to the kernel, which
//! may still lose them if the connection breaks right after). A failed
//! write or connection retries the batch on a new connection with the
//! sink's `retry` settings, holding everything behind it, so a batch
//! whose write broke off part-way is sent again whole (at least once).

pub mod config;
mod encode;

use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};

use super::settle::{Parked, Settler};
use super::verdict::{Rejection, Verdict};
use super::{Sink, SinkMetrics};
use crate::buffer::Delivery;
use crate::metrics::Counter;

use config::Mode;
pub use config::SyslogSinkConfig;
use encode::Encoder;

/// A datagram's largest payload (IPv4); a longer message is cut there.
const MAX_DATAGRAM: usize = 65_507;

/// The open connection (or bound socket for UDP).
enum Conn {
    Tcp(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
    Udp(UdpSocket),
}

pub struct SyslogSink {
    /// The sink's table.
    config: SyslogSinkConfig,
    encoder: Encoder,
    /// Messages of the held deliveries: TCP frames back to back, or UDP
    /// messages whose ends are in `ends`.
    out: Vec<u8>,
    /// UDP: where each message in `out` ends.
    ends: Vec<usize>,
    /// Deliveries whose messages are in `out`.
    held: Vec<Delivery>,
    /// Open between writes; dropped on an error.
    conn: Option<Conn>,
    /// The TLS client settings and the name the server must have, with `tls`.
    tls: Option<(
        std::sync::Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
    metrics: SinkMetrics,
    /// Facilities or severities that named none, sent as the default.
    unnamed: Counter,
    settler: Settler,
    /// Deliveries waiting for a retry, and everything behind them.
    parked: Parked,
}

impl SyslogSink {
    pub fn new(
        name: &str,
        config: SyslogSinkConfig,
        settler: Settler,
        metrics: SinkMetrics,
        registry: &crate::metrics::Registry,
    ) -> Result<Self, String> {
        let tls = match &config.tls {
            Some(t) => Some((
                t.connector()?.config().clone(),
                t.server_name(&config.address)?,
            )),
            None => None,
        };
        Ok(SyslogSink {
            encoder: Encoder::new(&config)?,
            tls,
            config,
            out: Vec::with_capacity(64 * 1024),
            ends: Vec::new(),
            held: Vec::new(),
            conn: None,
            metrics,
            unnamed: registry.counter(
                "logferry_syslog_unnamed_total",
                "Messages whose facility or severity template named none, sent as user or notice.",
                &[("component", name)],
            ),
            settler,
            parked: Parked::default(),
        })
    }

    fn encode(&mut self, d: Delivery) {
        let before = (self.out.len(), self.ends.len());
        let mut msg = Vec::new();
        let tcp = self.config.mode == Mode::Tcp;
        let (out, ends, encoder, unnamed) = (
            &mut self.out,
            &mut self.ends,
            &mut self.encoder,
            &self.unnamed,
        );
        let tag = d.batch().tag.clone();
        let result = d.batch().for_each_record(|time, rec| {
            msg.clear();
            let u = encoder.message(&mut msg, &tag, time, rec);
            if u.facility || u.severity {
                unnamed.inc();
            }
            if tcp {
                out.extend_from_slice(format!("{} ", msg.len()).as_bytes());
                out.extend_from_slice(&msg);
            } else {
                out.extend_from_slice(&msg[..msg.len().min(MAX_DATAGRAM)]);
                ends.push(out.len());
            }
        });
        if let Err(e) = result {
            self.out.truncate(before.0);
            self.ends.truncate(before.1);
            let reason = Rejection {
                kind: "bad_record",
                message: format!("cannot read batch: {e}"),
            };
            self.settler
                .settle(vec![d], 1, Verdict::Rejected { reason });
            return;
        }
        self.held.push(d);
    }

    fn connect(&self) -> std::io::Result<Conn> {
        let addr: SocketAddr = self
            .config
            .address
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| std::io::Error::other("the address resolves to nothing"))?;
        Ok(match self.config.mode {
            Mode::Tcp => {
                let s = TcpStream::connect_timeout(&addr, self.config.connect_timeout)?;
                if crate::net::reached_itself(&s) {
                    return Err(std::io::Error::other(crate::net::REACHED_ITSELF));
                }
                s.set_nodelay(true)?;
                s.set_write_timeout(Some(self.config.connect_timeout * 3))?;
                match &self.tls {
                    None => Conn::Tcp(s),
                    Some((config, name)) => {
                        let conn = rustls::ClientConnection::new(config.clone(), name.clone())
                            .map_err(std::io::Error::other)?;
                        let mut tls = rustls::StreamOwned::new(conn, s);
                        // the handshake now, so a refused certificate fails the connect
                        tls.sock
                            .set_read_timeout(Some(self.config.connect_timeout))?;
                        while tls.conn.is_handshaking() {
                            tls.conn.complete_io(&mut tls.sock)?;
                        }
                        Conn::Tls(Box::new(tls))
                    }
                }
            }
            Mode::Udp => {
                let local: SocketAddr = if addr.is_ipv6() {
                    "[::]:0".parse().expect("a valid address")
                } else {
                    "0.0.0.0:0".parse().expect("a valid address")
                };
                let s = UdpSocket::bind(local)?;
                s.connect(addr)?;
                Conn::Udp(s)
            }
        })
    }

    fn send(&mut self) -> std::io::Result<()> {
        if self.conn.is_none() {
            self.conn = Some(self.connect()?);
        }
        match self.conn.as_mut().expect("connected above") {
            Conn::Tcp(s) => s.write_all(&self.out).and_then(|()| s.flush()),
            Conn::Tls(s) => s.write_all(&self.out).and_then(|()| s.flush()),
            Conn::Udp(s) => {
                let mut start = 0;
                for &end in &self.ends {
                    s.send(&self.out[start..end])?;
                    start = end;
                }
                Ok(())
            }
        }
    }

    fn write(&mut self, force: bool) {
        if let Some(due) = self.parked.take_due(force) {
            for d in due {
                self.encode(d);
            }
        }
        if self.held.is_empty() {
            return;
        }
        let verdict = match self.send() {
            Ok(()) => {
                self.metrics.bytes.add(self.out.len() as u64);
                Verdict::Delivered
            }
            Err(e) => {
                self.conn = None;
                let attempt = self.parked.attempt + 1;
                self.metrics.errors.inc();
                tracing::error!(address = %self.config.address, error = %e,
                    "syslog sink: cannot send; the batch is retried on a new connection");
                Verdict::Retry {
                    after: self.settler.retry().after(attempt),
                }
            }
        };
        self.out.clear();
        self.ends.clear();
        let held = std::mem::take(&mut self.held);
        self.parked.settle_write(&self.settler, held, verdict);
    }
}

impl Sink for SyslogSink {
    fn take(&mut self, d: Delivery) {
        if !self.parked.is_empty() {
            return self.parked.push(d);
        }
        self.encode(d);
    }

    fn flush(&mut self) {
        self.write(false);
    }

    fn retry_at(&self) -> Option<std::time::Instant> {
        self.parked.retry_at()
    }

    fn flush_interval(&self, disk: bool) -> std::time::Duration {
        self.config.flush_interval(disk)
    }

    fn flush_threshold(&self) -> (usize, usize) {
        (usize::MAX, crate::sinks::GATHER_BYTES)
    }

    fn finish(&mut self) {
        self.write(false);
        if !self.parked.is_empty() {
            // one last try now, then give up on what still fails
            self.write(true);
        }
        let left = self.parked.take_all();
        self.settler.stopped(left);
    }
}
