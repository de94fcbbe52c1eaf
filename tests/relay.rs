//! agent (generator → forward) → relay (forward → forward) → receiver
//! (forward → file): N records in, exactly N out, with every combination of
//! acks, gzip, shared key and TLS on every hop.

mod common;

use std::time::Duration;

use common::*;

const N: usize = 200_000;

/// Options applied to every hop.
#[derive(Clone, Copy, Debug)]
struct Hop {
    ack: bool,
    gzip: bool,
    shared_key: bool,
    tls: bool,
}

fn source_extra(h: Hop, pki: &Pki) -> String {
    let mut s = String::new();
    if h.shared_key {
        s.push_str("shared_key = \"s3cret\"\n");
    }
    if h.tls {
        s.push_str(&format!(
            "tls = {{ cert_file = {:?}, key_file = {:?} }}\n",
            pki.server_cert.display().to_string(),
            pki.server_key.display().to_string()
        ));
    }
    s
}

fn sink_extra(h: Hop, pki: &Pki) -> String {
    let mut s = format!("require_ack = {}\n", h.ack);
    if h.gzip {
        s.push_str("compress = \"gzip\"\n");
    }
    if h.shared_key {
        s.push_str("shared_key = \"s3cret\"\n");
    }
    if h.tls {
        s.push_str(&format!(
            "tls = {{ ca_file = {:?} }}\n",
            pki.ca.display().to_string()
        ));
    }
    s
}

fn receiver(h: Hop, pki: &Pki) -> Logferry {
    Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n{}\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/received.log\"\n",
        source_extra(h, pki)
    ))
}

fn relay(h: Hop, pki: &Pki, to: std::net::SocketAddr) -> Logferry {
    Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n{}\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{to}\" }}]\n{}",
        source_extra(h, pki),
        sink_extra(h, pki)
    ))
}

fn agent(h: Hop, pki: &Pki, to: std::net::SocketAddr, n: usize) -> Logferry {
    Logferry::start(&format!(
        "[sources.gen]\ntype = \"generator\"\ncount = {n}\nsize = 30\ntag = \"app.agent\"\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{to}\" }}]\n{}",
        sink_extra(h, pki)
    ))
}

fn chain(h: Hop, n: usize) {
    eprintln!("chain {h:?}, {n} records");
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let mut rx = receiver(h, &pki);
    let rx_addr = rx.forward_addr("in");
    let mut relay = relay(h, &pki, rx_addr);
    let relay_addr = relay.forward_addr("in");
    let mut agent = agent(h, &pki, relay_addr, n);
    // the agent exits by itself once every record is delivered
    assert!(
        agent.wait(Duration::from_secs(120)).success(),
        "{h:?}\n{}",
        agent.log_text()
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while read_lines(&rx.path("received.log")).len() < n {
        if std::time::Instant::now() > deadline {
            panic!(
                "{h:?}: the receiver holds {} of {n} lines\n--- agent\n{}\n--- relay\n{}\n--- receiver\n{}",
                read_lines(&rx.path("received.log")).len(),
                agent.log_text(),
                relay.log_text(),
                rx.log_text()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(relay.stop().success());
    assert!(rx.stop().success());
    // everything is written by now: read the final file
    let lines = read_lines(&rx.path("received.log"));
    let counts = distinct(lines.iter().cloned());
    assert_eq!(counts.len(), n, "{h:?}: distinct records");
    assert_eq!(lines.len(), n, "{h:?}: no duplicates on a healthy chain");
    for i in (0..n).step_by(997) {
        assert!(
            counts.contains_key(&format!("{i:020}xxxxxxxxxx")),
            "{h:?}: record {i}"
        );
    }
    if h.ack {
        assert!(rx.final_counter("logferry_forward_acks_sent_total{component=\"in\"}") > 0);
        assert!(relay.final_counter("logferry_forward_acks_sent_total{component=\"in\"}") > 0);
    }
}

#[test]
fn plain() {
    chain(
        Hop {
            ack: false,
            gzip: false,
            shared_key: false,
            tls: false,
        },
        N,
    );
}

#[test]
fn everything_on_every_hop() {
    chain(
        Hop {
            ack: true,
            gzip: true,
            shared_key: true,
            tls: true,
        },
        N,
    );
}

/// Every combination of the four options, with fewer records each.
#[test]
fn every_option_combination() {
    for bits in 0..16u8 {
        let h = Hop {
            ack: bits & 1 != 0,
            gzip: bits & 2 != 0,
            shared_key: bits & 4 != 0,
            tls: bits & 8 != 0,
        };
        chain(h, 20_000);
    }
}

/// A frame larger than the next hop accepts is relayed in pieces that fit.
#[test]
fn frames_larger_than_the_receivers_limit_are_split() {
    let mut rx = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\nmax_frame_bytes = \"1MiB\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/received.log\"\n",
    );
    let rx_addr = rx.forward_addr("in");
    let mut relay = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{rx_addr}\" }}]\nrequire_ack = true\nbatch_bytes = \"256KiB\"\n"
    ));
    let relay_addr = relay.forward_addr("in");
    // one 4 MB frame of 1000 records, acked by the relay only when all is in
    let mut entries = Vec::new();
    for i in 0..1000 {
        let msg = format!("big-{i}-{}", "y".repeat(4000));
        logferry::protocol::forward::write_message_entry(&mut entries, 1, 0, msg.as_bytes());
    }
    let mut frame = Vec::new();
    logferry::protocol::forward::write_packed_forward(
        &mut frame,
        "big",
        &entries,
        1000,
        Some(b"c-big"),
    );
    let mut s = std::net::TcpStream::connect(relay_addr).unwrap();
    std::io::Write::write_all(&mut s, &frame).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut ack = [0u8; 32];
    let n = std::io::Read::read(&mut s, &mut ack).unwrap();
    assert!(
        ack[..n].ends_with(b"c-big"),
        "the relay acks once every piece is acked"
    );
    let lines = read_lines(&rx.path("received.log"));
    let got: Vec<String> = lines
        .iter()
        .map(|l| l.split('-').take(2).collect::<Vec<_>>().join("-"))
        .collect();
    assert_exactly(&got, "big", 1000);
    assert!(relay.stop().success());
    assert!(rx.stop().success());
    assert_eq!(
        rx.final_counter(
            "logferry_forward_frame_errors_total{component=\"in\",kind=\"too_large\"}"
        ),
        0
    );
}
