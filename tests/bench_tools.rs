//! The standalone load tools of `logferry bench` against real processes:
//! the round writers (tail, TCP) against a running logferry, the line
//! generator, and the forward and HTTP writers (the monitor is in
//! bench_monitor.rs).
//! Counts are exact; no assertion depends on how fast anything is, except
//! the generator's rate, which is its promise (±20 % over 3 s). Every
//! writer stamps its lines with their write time (`t=` and 19 digits of
//! Unix nanoseconds) where they have room.

mod common;

use std::process::{Command, Output};
use std::time::Duration;

use common::*;

const WAIT: Duration = Duration::from_secs(60);

/// Nanoseconds since the Unix epoch.
fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// Checks that every line carries one write-time stamp (` t=` and 19
/// digits) taken between `from` and `to`.
fn stamped_between(lines: &[String], from: u64, to: u64) {
    assert!(!lines.is_empty());
    for l in lines {
        let at = l.find("t=").unwrap_or_else(|| panic!("no stamp in {l}"));
        let digits = &l[at + 2..at + 21];
        let t: u64 = digits.parse().unwrap_or_else(|_| panic!("{l}"));
        assert!(from <= t && t <= to, "stamp {t} not in [{from}, {to}]: {l}");
        assert!(
            !l[at + 21..].starts_with(|c: char| c.is_ascii_digit()),
            "{l}"
        );
    }
}

/// Runs `logferry bench ARGS` to its end; asserts it succeeded.
fn bench(args: &[&str]) -> String {
    let out = bench_output(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "bench {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn bench_output(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("bench")
        .args(args)
        .env("LOGFERRY_LOG", "warn")
        .output()
        .unwrap()
}

/// The round writers' table: header, then one row per round.
fn round_rows(out: &str) -> Vec<&str> {
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("records | write (b) | write | secs || % cpu | user (ms) | sys (ms) | Mem (bytes) | Mem"),
        "{out}"
    );
    lines.take_while(|l| !l.is_empty()).collect()
}

fn assert_round_rows(out: &str, rounds: usize, records: usize, size: usize, pid: u32) {
    let rows = round_rows(out);
    assert_eq!(rows.len(), rounds, "{out}");
    for row in rows {
        let (left, right) = row.split_once(" || ").unwrap_or_else(|| panic!("{row}"));
        let l: Vec<&str> = left.split(" | ").collect();
        assert_eq!(l[0], records.to_string(), "{row}");
        assert_eq!(l[1], (records * (size + 1)).to_string(), "{row}");
        let r: Vec<&str> = right.split(" | ").collect();
        assert_eq!(r.len(), 5, "{row}");
        assert!(r[3].parse::<u64>().unwrap() > 0, "RSS in {row}");
    }
    assert!(
        out.contains(&format!("- process: logferry (PID {pid})"))
            && out.contains("- elapsed: ")
            && out.contains("- average memory: ")
            && out.contains("- average CPU: ")
            && out.contains("- average rate: "),
        "{out}"
    );
}

#[test]
fn tail_writer_rounds_reach_a_tailing_logferry_and_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.log");
    std::fs::write(&input, "").unwrap();
    let r = Logferry::start(&format!(
        "[sources.tail]\ntype = \"tail\"\npaths = [{:?}]\ntag = \"app\"\nread_from_head = true\n\n[sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/out.log\"\n",
        input.display().to_string()
    ));
    let (rounds, records, size) = (3, 400, 60);
    let from = now_nanos();
    let out = bench(&[
        "tail-writer",
        "--file",
        input.to_str().unwrap(),
        "--records",
        &records.to_string(),
        "--size",
        &size.to_string(),
        "--rounds",
        &rounds.to_string(),
        "--round-interval",
        "300ms",
        "--pid",
        &r.pid().to_string(),
        "--idle",
        "1",
        "--idle-cpu",
        "50",
    ]);
    let to = now_nanos();
    assert_round_rows(&out, rounds, records, size, r.pid());
    let lines = wait_for_lines(&r.path("out.log"), rounds * records, WAIT);
    assert_eq!(lines.len(), rounds * records);
    assert!(lines.iter().all(|l| l.len() == size));
    assert_eq!(distinct(lines.iter().cloned()).len(), rounds * records);
    stamped_between(&lines, from, to);
}

#[test]
fn tcp_writer_rounds_reach_a_tcp_source() {
    let mut r = Logferry::start(
        "[sources.in]\ntype = \"tcp\"\naddress = \"127.0.0.1:0\"\n\n[sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/out.log\"\n",
    );
    let addr = r.address("tcp source listening source=in ");
    let (rounds, records, size) = (4, 500, 30);
    let out = bench(&[
        "tcp-writer",
        "--address",
        &addr.to_string(),
        "--records",
        &records.to_string(),
        "--size",
        &size.to_string(),
        "--rounds",
        &rounds.to_string(),
        "--round-interval",
        "250ms",
        "--pid",
        &r.pid().to_string(),
        "--idle",
        "1",
        "--idle-cpu",
        "50",
    ]);
    assert_round_rows(&out, rounds, records, size, r.pid());
    let lines = wait_for_lines(&r.path("out.log"), rounds * records, WAIT);
    assert_eq!(lines.len(), rounds * records);
    assert_eq!(distinct(lines.iter().cloned()).len(), rounds * records);
}

#[test]
fn a_writer_without_pid_only_writes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.log");
    let out = bench(&[
        "tail-writer",
        "--file",
        file.to_str().unwrap(),
        "--records",
        "10",
        "--rounds",
        "2",
        "--round-interval",
        "100ms",
    ]);
    assert_eq!(round_rows(&out).len(), 2, "{out}");
    assert!(
        round_rows(&out)
            .iter()
            .all(|r| r.ends_with("|| - | - | - | - | -")),
        "{out}"
    );
    assert_eq!(read_lines(&file).len(), 20);
}

#[test]
fn gen_writes_exactly_count_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gen.log");
    let from = now_nanos();
    let out = bench(&[
        "gen",
        "--file",
        file.to_str().unwrap(),
        "--count",
        "12345",
        "--rate",
        "0",
        "--size",
        "40",
    ]);
    let lines = read_lines(&file);
    assert_eq!(lines.len(), 12345, "{out}");
    assert!(lines.iter().all(|l| l.len() == 40));
    assert_eq!(distinct(lines.iter().cloned()).len(), 12345);
    assert!(out.contains("wrote 12345 lines, 506145 bytes"), "{out}");
    stamped_between(&lines, from, now_nanos());
    assert!(lines[7].starts_with("000000000007 t="), "{}", lines[7]);

    let ltsv = dir.path().join("ltsv.log");
    bench(&[
        "gen",
        "--file",
        ltsv.to_str().unwrap(),
        "--count",
        "500",
        "--rate",
        "0",
        "--template",
        "ltsv",
        "--seed",
        "42",
    ]);
    let lines = read_lines(&ltsv);
    assert_eq!(lines.len(), 500);
    for l in &lines {
        let keys: Vec<&str> = l
            .split('\t')
            .map(|f| f.split_once(':').unwrap().0)
            .collect();
        assert_eq!(
            keys,
            [
                "time", "level", "method", "uri", "status", "reqtime", "size", "host", "ua",
                "stamp"
            ],
            "{l}"
        );
    }
    stamped_between(&lines, from, now_nanos());
}

#[test]
fn gen_holds_its_rate_over_three_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gen.log");
    let out = bench(&[
        "gen",
        "--file",
        file.to_str().unwrap(),
        "--rate",
        "2000",
        "--duration",
        "3s",
        "--size",
        "20",
    ]);
    let n = read_lines(&file).len();
    assert!(
        (4800..=7200).contains(&n),
        "{n} lines at 2000/s over 3 s:\n{out}"
    );
}

#[test]
fn gen_rotates_to_dot_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gen.log");
    let out = bench(&[
        "gen",
        "--file",
        file.to_str().unwrap(),
        "--count",
        "250",
        "--rate",
        "0",
        "--size",
        "99",
        "--rotate-bytes",
        "10000",
    ]);
    // 25,000 bytes in files of at most 10,000: two rotations, the last
    // full file in .1
    assert!(out.contains("2 rotation(s)"), "{out}");
    assert_eq!(read_lines(&file).len(), 50);
    assert_eq!(read_lines(&dir.path().join("gen.log.1")).len(), 100);
}

fn forward_writer(addr: std::net::SocketAddr, extra: &[&str]) -> String {
    let addr = addr.to_string();
    let mut args = vec![
        "forward-writer",
        "--address",
        &addr,
        "--records",
        "5000",
        "--chunk-records",
        "300",
        "--workers",
        "3",
        "--size",
        "40",
    ];
    args.extend_from_slice(extra);
    bench(&args)
}

#[test]
fn forward_writer_with_acks_and_gzip_delivers_every_record() {
    let mut r = Logferry::start(FORWARD_TO_FILE);
    let addr = r.forward_addr("in");
    let from = now_nanos();
    let out = forward_writer(addr, &["--ack", "--gzip"]);
    let to = now_nanos();
    assert!(
        out.contains("sent 5000 of 5000 records")
            && out.contains("17 of 17 chunks acknowledged (5000 records)")
            && out.contains("(gzip)")
            && out.contains("0 error(s)"),
        "{out}"
    );
    let lines = wait_for_lines(&r.path("unified.log"), 5000, WAIT);
    assert_eq!(lines.len(), 5000);
    assert_eq!(distinct(lines.iter().cloned()).len(), 5000);
    stamped_between(&lines, from, to);
}

#[test]
fn forward_writer_over_tls_at_a_rate() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let mut r = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\ntls = {{ cert_file = {:?}, key_file = {:?} }}\n\n[sinks.unified]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/unified.log\"\n",
        pki.server_cert.display().to_string(),
        pki.server_key.display().to_string()
    ));
    let addr = r.forward_addr("in");
    let ca = pki.ca.display().to_string();
    let out = forward_writer(addr, &["--ack", "--tls", "--ca", &ca, "--rate", "20000"]);
    assert!(
        out.contains("(TLS)") && out.contains("17 of 17 chunks acknowledged"),
        "{out}"
    );
    assert_eq!(
        wait_for_lines(&r.path("unified.log"), 5000, WAIT).len(),
        5000
    );
}

#[test]
fn forward_writer_reports_a_receiver_that_does_not_ack() {
    // a listener that reads and never answers: acks time out or the
    // connection ends; either way the run fails and says so
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let mut buf = [0u8; 4096];
            let _ = std::io::Read::read(&mut s, &mut buf);
        }
    });
    let out = bench_output(&[
        "forward-writer",
        "--address",
        &addr.to_string(),
        "--records",
        "10",
        "--ack",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ack of chunk 0"), "{stderr}");
}

#[test]
fn http_writer_delivers_every_line() {
    let mut r = Logferry::start(
        "[sources.in]\ntype = \"http\"\naddress = \"127.0.0.1:0\"\n\n[sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/out.log\"\n",
    );
    let addr = r.http_addr("in");
    let from = now_nanos();
    let out = bench(&[
        "http-writer",
        "--address",
        &addr.to_string(),
        "--records",
        "3000",
        "--lines-per-request",
        "50",
        "--connections",
        "3",
        "--size",
        "32",
        "--rate",
        "10000",
    ]);
    assert!(
        out.contains("sent 3000 of 3000 records")
            && out.contains("60 answered 200")
            && out.contains("0 error(s)"),
        "{out}"
    );
    let to = now_nanos();
    let lines = wait_for_lines(&r.path("out.log"), 3000, WAIT);
    assert_eq!(lines.len(), 3000);
    assert!(lines.iter().all(|l| l.len() == 32));
    stamped_between(&lines, from, to);
    // one stamp per request: 60 requests, each its own time
    let stamps: Vec<String> = lines.iter().map(|l| l[9..30].to_string()).collect();
    assert!(distinct(stamps.into_iter()).len() > 1);
}
