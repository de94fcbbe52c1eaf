//! Clients that stall the forward source: in the handshake, or by never
//! reading their acks. Each is disconnected within its source's
//! `idle_timeout` and counted; everyone else keeps being served.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::*;

/// One record asking for an ack with id `chunk`.
fn frame(tag: &str, record: &str, chunk: &[u8]) -> Vec<u8> {
    let mut entries = Vec::new();
    logferry::protocol::forward::write_message_entry(&mut entries, 1, 0, record.as_bytes());
    let mut f = Vec::new();
    logferry::protocol::forward::write_packed_forward(&mut f, tag, &entries, 1, Some(chunk));
    f
}

#[test]
fn a_stalled_handshake_is_closed_after_idle_timeout() {
    let mut lf = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\nshared_key = \"k\"\nidle_timeout = \"1s\"\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n",
    );
    let addr = lf.forward_addr("in");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let started = Instant::now();
    // read the HELO, then say nothing
    let mut buf = [0u8; 512];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(6),
        "idle_timeout is 1s, the handshake was allowed {took:?}"
    );
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter(
            "logferry_forward_connection_errors_total{component=\"in\",kind=\"auth\"}"
        ),
        1
    );
}

/// A connection to `addr` whose receive buffer is tiny, so acks it does not
/// read soon fill the server's socket.
fn small_window(addr: SocketAddr) -> TcpStream {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.set_recv_buffer_size(4096).unwrap();
    s.connect(&addr.into()).unwrap();
    s.into()
}

#[test]
fn a_client_that_never_reads_its_acks_is_disconnected_and_frees_its_slot() {
    let mut lf = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\nidle_timeout = \"2s\"\nmax_connections = 1\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n",
    );
    let addr = lf.forward_addr("in");
    let deaf = small_window(addr);
    let mut w = deaf.try_clone().unwrap();
    // ~8 MB of acks it will never read (1000-byte chunk ids)
    let writer = std::thread::spawn(move || {
        for i in 0..8000 {
            let id = format!("{i:01000}");
            if w.write_all(&frame("t", "x", id.as_bytes())).is_err() {
                return;
            }
        }
    });
    // the only slot is taken until the deaf client is disconnected
    let started = Instant::now();
    let served = loop {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no other client served within 20 s:\n{}",
            lf.log_text()
        );
        let Ok(mut s) = TcpStream::connect(addr) else {
            continue;
        };
        if s.write_all(&frame("t", "y", b"other")).is_err() {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buf = [0u8; 64];
        match s.read(&mut buf) {
            Ok(n) if n > 0 => break String::from_utf8_lossy(&buf[..n]).into_owned(),
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    };
    assert!(served.contains("other"), "{served:?}");
    drop(deaf);
    let _ = writer.join();
    assert!(lf.stop().success());
    assert!(
        lf.final_counter(
            "logferry_forward_connection_errors_total{component=\"in\",kind=\"ack_write_timeout\"}"
        ) >= 1,
        "{}",
        lf.log_text()
    );
}
