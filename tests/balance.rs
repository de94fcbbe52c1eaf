//! Load balancing of the forward sink over several real receivers.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;

/// A receiver writing `tag message` lines.
fn receiver() -> (Logferry, SocketAddr) {
    let mut r = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/received.log\"\nformat = { type = \"template\", template = \"{tag} {message}\" }\n",
    );
    let a = r.forward_addr("in");
    (r, a)
}

fn servers(list: &[(SocketAddr, u32, bool)]) -> String {
    let items: Vec<String> = list
        .iter()
        .map(|(a, w, s)| format!("{{ address = \"{a}\", weight = {w}, standby = {s} }}"))
        .collect();
    format!("servers = [{}]", items.join(", "))
}

/// An agent with one generator per tag, `per_tag` records each.
fn agent(tags: &[&str], per_tag: usize, rate: u64, sink: &str) -> Logferry {
    let mut cfg = String::new();
    for t in tags {
        cfg.push_str(&format!(
            "[sources.{t}]\ntype = \"generator\"\ntag = \"{t}\"\ncount = {per_tag}\nsize = 24\nrate = {rate}\nbatch_records = 500\n\n"
        ));
    }
    cfg.push_str(&format!(
        "[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nbatch_records = 500\nreconnect_min = \"50ms\"\nreconnect_max = \"500ms\"\nack_timeout = \"5s\"\n{sink}\n"
    ));
    Logferry::start(&cfg)
}

fn finish(agent: &mut Logferry, receivers: &mut [Logferry]) -> Vec<Vec<String>> {
    assert!(
        agent.wait(Duration::from_secs(120)).success(),
        "{}",
        agent.log_text()
    );
    receivers
        .iter_mut()
        .map(|r| {
            assert!(r.stop().success());
            read_lines(&r.path("received.log"))
        })
        .collect()
}

/// A port with nothing listening.
fn dead_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

#[test]
fn round_robin_spreads_evenly() {
    let n = 300_000;
    let mut rs: Vec<(Logferry, SocketAddr)> = (0..3).map(|_| receiver()).collect();
    let list: Vec<_> = rs.iter().map(|(_, a)| (*a, 1, false)).collect();
    let mut a = agent(
        &["rr"],
        n,
        0,
        &format!(
            "mode = \"round_robin\"\nrequire_ack = true\n{}",
            servers(&list)
        ),
    );
    let mut recv: Vec<Logferry> = rs.drain(..).map(|(r, _)| r).collect();
    let files = finish(&mut a, &mut recv);
    let total: usize = files.iter().map(Vec::len).sum();
    assert_eq!(total, n);
    for f in &files {
        let share = f.len() as f64 / n as f64;
        assert!(
            (share - 1.0 / 3.0).abs() <= 0.05 / 3.0,
            "shares {:?}",
            files.iter().map(Vec::len).collect::<Vec<_>>()
        );
    }
}

#[test]
fn weights_are_respected() {
    let n = 200_000;
    let (r1, a1) = receiver();
    let (r3, a3) = receiver();
    let mut a = agent(
        &["w"],
        n,
        0,
        &format!(
            "mode = \"weighted\"\nrequire_ack = true\n{}",
            servers(&[(a1, 1, false), (a3, 3, false)])
        ),
    );
    let files = finish(&mut a, &mut [r1, r3]);
    let (one, three) = (files[0].len() as f64, files[1].len() as f64);
    assert_eq!((one + three) as usize, n);
    assert!(
        (one / n as f64 - 0.25).abs() <= 0.05 * 0.25 + 0.005,
        "1:3 weights gave {one} : {three}"
    );
}

#[test]
fn failover_uses_the_standby_only_when_primaries_are_down() {
    // all up: everything to the first primary
    let (p1, a1) = receiver();
    let (p2, a2) = receiver();
    let (sb, a3) = receiver();
    let mut a = agent(
        &["f"],
        50_000,
        0,
        &format!(
            "mode = \"failover\"\n{}",
            servers(&[(a1, 1, false), (a2, 1, false), (a3, 1, true)])
        ),
    );
    let files = finish(&mut a, &mut [p1, p2, sb]);
    assert_eq!(
        files.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![50_000, 0, 0]
    );

    // both primaries down: the standby takes everything
    let (sb, a3) = receiver();
    let mut a = agent(
        &["f"],
        50_000,
        0,
        &format!(
            "mode = \"failover\"\nrequire_ack = true\n{}",
            servers(&[
                (dead_port(), 1, false),
                (dead_port(), 1, false),
                (a3, 1, true)
            ])
        ),
    );
    let files = finish(&mut a, &mut [sb]);
    assert_eq!(files[0].len(), 50_000);
    assert!(
        a.log_text().contains("server connection failed"),
        "the dead primaries are reported"
    );
}

#[test]
fn hash_tag_keeps_each_tag_on_one_receiver() {
    let tags = ["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"];
    let mut rs: Vec<(Logferry, SocketAddr)> = (0..3).map(|_| receiver()).collect();
    let list: Vec<_> = rs.iter().map(|(_, a)| (*a, 1, false)).collect();
    let mut a = agent(
        &tags,
        20_000,
        0,
        &format!(
            "mode = \"hash_tag\"\nrequire_ack = true\n{}",
            servers(&list)
        ),
    );
    let mut recv: Vec<Logferry> = rs.drain(..).map(|(r, _)| r).collect();
    let files = finish(&mut a, &mut recv);
    let mut used = std::collections::HashSet::new();
    for t in tags {
        let holders: Vec<usize> = (0..3)
            .filter(|&i| files[i].iter().any(|l| l.starts_with(&format!("{t} "))))
            .collect();
        assert_eq!(holders.len(), 1, "tag {t} on receivers {holders:?}");
        let n = files[holders[0]]
            .iter()
            .filter(|l| l.starts_with(&format!("{t} ")))
            .count();
        assert_eq!(n, 20_000, "tag {t}");
        used.insert(holders[0]);
    }
    assert!(used.len() >= 2, "eight tags all hashed to one receiver");
}

#[test]
fn killing_a_receiver_mid_run_loses_nothing() {
    let n = 300_000;
    let mut rs: Vec<(Logferry, SocketAddr)> = (0..3).map(|_| receiver()).collect();
    let list: Vec<_> = rs.iter().map(|(_, a)| (*a, 1, false)).collect();
    // ~3 s of traffic at 100k records/s
    let mut a = agent(
        &["k"],
        n,
        100_000,
        &format!(
            "mode = \"round_robin\"\nrequire_ack = true\n{}",
            servers(&list)
        ),
    );
    let mut recv: Vec<Logferry> = rs.drain(..).map(|(r, _)| r).collect();
    wait_for_lines(
        &recv[1].path("received.log"),
        10_000,
        Duration::from_secs(30),
    );
    recv[1].kill();
    assert!(
        a.wait(Duration::from_secs(120)).success(),
        "{}",
        a.log_text()
    );
    let mut all = Vec::new();
    for (i, r) in recv.iter_mut().enumerate() {
        if i != 1 {
            assert!(r.stop().success());
        }
        all.extend(read_lines(&r.path("received.log")));
    }
    let counts = distinct(all);
    let missing: Vec<usize> = (0..n)
        .filter(|i| !counts.contains_key(&format!("k {i:020}xxxx")))
        .collect();
    assert!(
        missing.is_empty(),
        "{} records lost, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    assert!(
        a.log_text().contains("server connection failed"),
        "the dead receiver is reported"
    );
}

#[test]
fn a_server_that_comes_back_is_used_again() {
    // reserve a port for a receiver that starts late
    let late_addr = dead_port();
    let (early, early_addr) = receiver();
    let mut a = agent(
        &["b"],
        200_000,
        50_000,
        &format!(
            "mode = \"round_robin\"\nrequire_ack = true\n{}",
            servers(&[(early_addr, 1, false), (late_addr, 1, false)])
        ),
    );
    wait_for_lines(&early.path("received.log"), 20_000, Duration::from_secs(30));
    let mut late = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"{late_addr}\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/received.log\"\nformat = {{ type = \"template\", template = \"{{tag}} {{message}}\" }}\n"
    ));
    late.forward_addr("in");
    let files = finish(&mut a, &mut [early, late]);
    assert_eq!(files[0].len() + files[1].len(), 200_000);
    assert!(
        files[1].len() > 10_000,
        "the late server got {} records",
        files[1].len()
    );
}

/// Forwards every connection to `to`, but only after `delay`: a server that
/// is up but slow to answer its first handshake.
fn slow_proxy(to: SocketAddr, delay: Duration) -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(client) = c else { return };
            std::thread::spawn(move || {
                std::thread::sleep(delay);
                let Ok(server) = std::net::TcpStream::connect(to) else {
                    return;
                };
                let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c2, &mut s2);
                    let _ = s2.shutdown(std::net::Shutdown::Write);
                });
                let (mut c, mut s) = (client, server);
                let _ = std::io::copy(&mut s, &mut c);
                let _ = c.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    addr
}

/// A standby that connects before the primary gets nothing: standbys wait
/// until every primary has tried to connect.
#[test]
fn a_standby_that_connects_first_gets_nothing() {
    let key = "shared_key = \"k\"\n";
    let receiver_with_key = || {
        let mut r = Logferry::start(&format!(
            "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n{key}\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/received.log\"\n"
        ));
        let a = r.forward_addr("in");
        (r, a)
    };
    let (primary, primary_addr) = receiver_with_key();
    let (standby, standby_addr) = receiver_with_key();
    // the primary's handshake completes about a second after the standby's
    let slow = slow_proxy(primary_addr, Duration::from_millis(1200));
    let mut a = agent(
        &["s"],
        2000,
        0,
        &format!(
            "mode = \"failover\"\nrequire_ack = true\nconnect_timeout = \"5s\"\n{key}{}",
            servers(&[(slow, 1, false), (standby_addr, 1, true)])
        ),
    );
    let files = finish(&mut a, &mut [primary, standby]);
    assert_eq!(
        files.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![2000, 0],
        "everything to the primary"
    );
}
