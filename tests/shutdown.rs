//! Stopping is bounded: a dead downstream cannot hold a stop past the sinks'
//! `drain_timeout`, and a second signal stops at once.

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::*;

/// A downstream that accepts connections and never reads or answers.
fn blackhole() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming() {
            match c {
                Ok(c) => held.push(c),
                Err(_) => return,
            }
        }
    });
    addr
}

/// A relay whose forward sink goes to a blackhole, with clients waiting
/// for acks that cannot come.
fn relay_with_waiting_clients(drain_timeout: &str) -> (Logferry, Vec<TcpStream>) {
    let dead = blackhole();
    let mut lf = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{dead}\" }}]\nrequire_ack = true\ndrain_timeout = \"{drain_timeout}\"\n"
    ));
    let addr = lf.forward_addr("in");
    let clients: Vec<TcpStream> = (0..3)
        .map(|c| {
            let mut s = TcpStream::connect(addr).unwrap();
            for i in 0..5 {
                let mut entries = Vec::new();
                logferry::protocol::forward::write_message_entry(
                    &mut entries,
                    1,
                    0,
                    format!("c{c}-{i}").as_bytes(),
                );
                let mut f = Vec::new();
                logferry::protocol::forward::write_packed_forward(
                    &mut f,
                    "t",
                    &entries,
                    1,
                    Some(format!("c{c}-{i}").as_bytes()),
                );
                s.write_all(&f).unwrap();
            }
            s
        })
        .collect();
    // the chunks reach the sink and are sent into the blackhole
    std::thread::sleep(Duration::from_millis(800));
    (lf, clients)
}

#[test]
fn sigterm_with_a_dead_downstream_stops_within_drain_timeout() {
    let (mut lf, _clients) = relay_with_waiting_clients("2s");
    let started = Instant::now();
    lf.signal(libc::SIGTERM);
    let status = lf.wait(Duration::from_secs(60));
    let took = started.elapsed();
    assert!(status.success(), "{}", lf.log_text());
    assert!(
        took < Duration::from_secs(8),
        "drain_timeout is 2s, the stop took {took:?}\n{}",
        lf.log_text()
    );
    assert!(lf.log_text().contains("drain_timeout passed"));
    assert_eq!(
        lf.final_counter("logferry_sink_rejected_records_total{component=\"out\"}"),
        15,
        "every unacknowledged record is counted"
    );
}

#[test]
fn a_second_signal_stops_at_once() {
    let (mut lf, _clients) = relay_with_waiting_clients("120s");
    lf.signal(libc::SIGTERM);
    lf.wait_for_log("shutting down", Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    lf.signal(libc::SIGINT);
    let status = lf.wait(Duration::from_secs(60));
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "took {took:?}\n{}",
        lf.log_text()
    );
    assert!(!status.success(), "a forced stop does not report success");
    let line = lf.wait_for_log("second stop signal", Duration::from_secs(1));
    assert!(
        line.contains("unacknowledged_records=15 ") && line.contains("per_sink=out=15/"),
        "the log says what was left: {line}"
    );
}

/// A finite run whose records could not be delivered does not exit 0.
#[test]
fn a_finite_generator_that_could_not_deliver_exits_non_zero() {
    let (_held, dead) = refused_address();
    let mut lf = Logferry::start(&format!(
        "[sources.gen]\ntype = \"generator\"\ncount = 1000\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{dead}\" }}]\ndrain_timeout = \"1s\"\n"
    ));
    let status = lf.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(1), "{}", lf.log_text());
    assert!(
        lf.log_text()
            .contains("generated records were not delivered"),
        "{}",
        lf.log_text()
    );
    assert_eq!(
        lf.final_counter("logferry_generator_undelivered_records_total{component=\"gen\"}"),
        1000
    );
}

/// A log reader that went away (`logferry run 2>&1 | head`, a restarted
/// log collector) must not take any part of logferry with it: the lines are
/// lost, the records and the stop are not.
#[test]
fn a_closed_log_pipe_loses_no_record_and_no_stop() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("logferry.toml");
    std::fs::write(
        &config,
        FORWARD_TO_FILE.replace("{dir}", &dir.path().display().to_string()),
    )
    .unwrap();
    // killed when the test ends, however it ends
    struct Child(std::process::Child);
    impl Drop for Child {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Child(
        Command::new(BIN)
            .args(["run", "--config"])
            .arg(&config)
            .env("LOGFERRY_LOG", "debug")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let child = &mut child.0;
    let mut log = BufReader::new(child.stderr.take().unwrap());
    let addr: SocketAddr = loop {
        let mut line = String::new();
        assert!(log.read_line(&mut line).unwrap() > 0, "logferry exited");
        if let Some(a) = line
            .contains("forward source listening")
            .then(|| {
                line.split_whitespace()
                    .find_map(|w| w.strip_prefix("address="))
            })
            .flatten()
        {
            break a.parse().unwrap();
        }
    };
    drop(log);
    // every one of these is logged into the closed pipe
    for _ in 0..3 {
        let mut bad = TcpStream::connect(addr).unwrap();
        bad.write_all(b"\xc1\xc1\xc1").unwrap();
    }
    // SAFETY: kill(2) on the pid of a child we own.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let mut entries = Vec::new();
    for i in 0..200 {
        logferry::protocol::forward::write_message_entry(
            &mut entries,
            1,
            0,
            format!("r-{i}").as_bytes(),
        );
    }
    let mut frame = Vec::new();
    logferry::protocol::forward::write_packed_forward(&mut frame, "t", &entries, 200, Some(b"c"));
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&frame).unwrap();
    assert!(
        read_ack(&mut s, Duration::from_secs(20)).is_some(),
        "no ack"
    );
    let lines = wait_for_lines(
        &dir.path().join("unified.log"),
        200,
        Duration::from_secs(20),
    );
    assert_exactly(&lines, "r", 200);
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("logferry did not stop on SIGTERM with its log pipe closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
}

/// A tail and a TCP source into a forward sink whose destination refuses
/// connections, with many small chunks pending (more than the sink keeps
/// ready, 64).
fn many_pending_chunks(drain_timeout: &str) -> (Logferry, socket2::Socket) {
    let (held, closed) = refused_address();
    let mut lf = Logferry::start(&format!(
        "[sources.app]\ntype = \"tail\"\npaths = [\"{{dir}}/app.log\"]\nread_from_head = true\ntag = \"app\"\n\n\
         [sources.lines]\ntype = \"tcp\"\naddress = \"127.0.0.1:0\"\n\n\
         [sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{closed}\" }}]\n\
         batch_records = 10\nreconnect_min = \"50ms\"\nreconnect_max = \"200ms\"\ndrain_timeout = \"{drain_timeout}\"\n\n\
         [api]\naddress = \"127.0.0.1:0\"\n"
    ));
    let api = lf.address("api listening");
    let tcp = lf.address("tcp source listening source=lines ");
    let mut file = std::fs::File::create(lf.path("app.log")).unwrap();
    let mut conn = TcpStream::connect(tcp).unwrap();
    for i in 0..1000 {
        file.write_all(format!("t-{i}\n").as_bytes()).unwrap();
        conn.write_all(format!("n-{i}\n").as_bytes()).unwrap();
    }
    drop(conn);
    wait_until(
        "records pending in the sink",
        Duration::from_secs(30),
        || {
            metric_value(
                &api_get(api, "/metrics"),
                "logferry_buffer_records{component=\"out\"}",
            ) >= 1500.0
        },
    );
    (lf, held)
}

#[test]
fn a_stop_with_more_pending_chunks_than_kept_ready_ends_within_drain_timeout() {
    let (mut lf, _held) = many_pending_chunks("3s");
    let started = Instant::now();
    lf.signal(libc::SIGTERM);
    lf.wait(Duration::from_secs(60));
    let took = started.elapsed();
    // drain_timeout (3 s) plus a few seconds: not the sources' own waits on top
    assert!(
        took < Duration::from_secs(9),
        "stopped after {took:?}\n{}",
        lf.log_text()
    );
    let line = lf.wait_for_log("drain_timeout passed", Duration::from_secs(1));
    assert!(line.contains("records="), "{line}");
}
