//! The file sink against an outside world that moves its files: an output
//! directory removed, an output renamed (by hand or by logrotate, with or
//! without SIGHUP), and tags that try to leave the output directory.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use logferry::protocol::forward::{write_message_entry, write_packed_forward};
use logferry::protocol::msgpack::{Reader, Value};

/// One PackedForward chunk of `n` records `<prefix>-<i>`, asking for an ack.
fn chunk(tag: &str, prefix: &str, range: std::ops::Range<usize>, id: &str) -> Vec<u8> {
    let mut entries = Vec::new();
    let n = range.len();
    for i in range {
        write_message_entry(
            &mut entries,
            1_700_000_000,
            0,
            format!("{prefix}-{i}").as_bytes(),
        );
    }
    let mut out = Vec::new();
    write_packed_forward(&mut out, tag, &entries, n, Some(id.as_bytes()));
    out
}

/// Reads one `{"ack": id}` response and checks its id.
fn expect_ack(s: &mut TcpStream, id: &str) {
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 256];
    loop {
        if let Ok(end) = logferry::protocol::msgpack::skip(&buf, 0) {
            let mut r = Reader::new(&buf[..end]);
            assert_eq!(r.read(), Ok(Value::Map(1)));
            assert_eq!(r.read(), Ok(Value::Str(b"ack")));
            assert_eq!(r.read(), Ok(Value::Str(id.as_bytes())), "ack for {id}");
            return;
        }
        let n = s.read(&mut byte).expect("ack within 20s");
        assert!(n > 0, "connection closed before the ack of {id}");
        buf.extend_from_slice(&byte[..n]);
    }
}

/// Sends chunks `first..last` of 10 records each, one at a time, each
/// waiting for its ack.
fn send_acked(s: &mut TcpStream, prefix: &str, chunks: std::ops::Range<usize>) {
    for k in chunks {
        let id = format!("{prefix}{k}");
        s.write_all(&chunk("t", prefix, k * 10..(k + 1) * 10, &id))
            .unwrap();
        expect_ack(s, &id);
    }
}

const OUT_DIR_CONFIG: &str = r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.out]
type = "file"
match = "**"
path = "{dir}/out/unified.log"
"#;

#[test]
fn a_removed_output_directory_is_recreated_and_nothing_acked_is_lost() {
    let mut lf = Logferry::start(OUT_DIR_CONFIG);
    let addr = lf.forward_addr("in");
    let out = lf.path("out/unified.log");
    let mut s = TcpStream::connect(addr).unwrap();
    send_acked(&mut s, "rm", 0..20);
    assert_eq!(
        numbers(&read_lines(&out), "rm"),
        (0..200).collect::<Vec<_>>()
    );

    std::fs::remove_dir_all(lf.path("out")).unwrap();
    send_acked(&mut s, "rm", 20..50);

    // every record acknowledged after the removal is in the file at the path
    assert_eq!(
        numbers(&read_lines(&out), "rm"),
        (200..500).collect::<Vec<_>>(),
        "records acknowledged after the directory was removed are missing"
    );
    assert!(lf.stop().success());
    assert!(
        lf.final_counter("logferry_file_reopened_total{component=\"out\",reason=\"missing\"}") >= 1
    );
    assert!(lf.log_text().contains("reopened"), "{}", lf.log_text());
}

#[test]
fn a_renamed_output_gets_a_new_file_and_the_two_hold_every_record() {
    let mut lf = Logferry::start(OUT_DIR_CONFIG);
    let addr = lf.forward_addr("in");
    let out = lf.path("out/unified.log");
    let moved = lf.path("out/unified.log.1");
    let mut s = TcpStream::connect(addr).unwrap();
    send_acked(&mut s, "mv", 0..20);
    std::fs::rename(&out, &moved).unwrap();
    send_acked(&mut s, "mv", 20..50);

    let old = numbers(&read_lines(&moved), "mv");
    let new = numbers(&read_lines(&out), "mv");
    assert_eq!(old, (0..200).collect::<Vec<_>>(), "the renamed file");
    assert_eq!(
        new,
        (200..500).collect::<Vec<_>>(),
        "records sent after the rename belong in a new file at the path"
    );
    assert!(lf.stop().success());
    assert!(
        lf.final_counter("logferry_file_reopened_total{component=\"out\",reason=\"replaced\"}")
            + lf.final_counter(
                "logferry_file_reopened_total{component=\"out\",reason=\"missing\"}"
            )
            >= 1
    );
}

#[test]
fn renames_while_records_flow_lose_nothing() {
    // a sender that does not wait for each ack keeps the sink busy while the
    // output is renamed away three times; the files a user would look at
    // (the renamed ones and the one at the path) hold every record
    let mut lf = Logferry::start(OUT_DIR_CONFIG);
    let addr = lf.forward_addr("in");
    let out = lf.path("out/unified.log");
    let sender = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        for k in 0..400 {
            let id = format!("flow{k}");
            s.write_all(&chunk("t", "flow", k * 50..(k + 1) * 50, &id))
                .unwrap();
            expect_ack(&mut s, &id);
        }
    });
    let mut renamed = Vec::new();
    for r in 0..3 {
        // wait for some records, then move the file away
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0) < 2000 {
            assert!(Instant::now() < deadline, "no records arrived");
            std::thread::sleep(Duration::from_millis(5));
        }
        let to = lf.path(&format!("out/unified.log.{r}"));
        std::fs::rename(&out, &to).unwrap();
        renamed.push(to);
    }
    sender.join().unwrap();
    let mut all = read_lines(&out);
    assert!(
        !all.is_empty(),
        "records after the last rename are at the path"
    );
    for p in &renamed {
        all.extend(read_lines(p));
    }
    let mut got = numbers(&all, "flow");
    got.dedup();
    assert_eq!(got, (0..20_000).collect::<Vec<_>>(), "records were lost");
    assert!(lf.stop().success());
}

const TAG_PATH_CONFIG: &str = r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.whole]
type = "file"
match = "**"
path = "{dir}/out/a/${tag}/${tag}/x.log"

[sinks.parts]
type = "file"
match = "**"
path = "{dir}/out/b/.${tag[1]}./${tag[2]}/y.log"
"#;

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn hostile_tags_stay_inside_the_output_directory() {
    let mut lf = Logferry::start(TAG_PATH_CONFIG);
    let addr = lf.forward_addr("in");
    let tags = ["..", "../..", "a/../../b", ".", "a..b", "x.", "ok.fine.tag"];
    let mut s = TcpStream::connect(addr).unwrap();
    for (k, tag) in tags.iter().enumerate() {
        let id = format!("tag{k}");
        s.write_all(&chunk(tag, "tag", k * 10..(k + 1) * 10, &id))
            .unwrap();
        expect_ack(&mut s, &id);
    }
    assert!(lf.stop().success());
    let out_dir = lf.path("out");
    let mut lines = Vec::new();
    for f in files_under(lf.dir.path()) {
        if f.file_name().is_some_and(|n| n == "logferry.toml") && f.parent() == Some(lf.dir.path())
        {
            continue;
        }
        assert!(
            f.starts_with(out_dir.join("a")) || f.starts_with(out_dir.join("b")),
            "a tag wrote outside its directory: {}",
            f.display()
        );
        if f.starts_with(out_dir.join("a")) {
            lines.extend(read_lines(&f));
        }
    }
    // every record once per sink, in a file of its own sink's tree
    assert_exactly(&lines, "tag", tags.len() * 10);
    assert!(lf.path("out/a/%2E%2E/%2E%2E/x.log").exists());
    assert!(lf.path("out/a/..%2F../..%2F../x.log").exists());
    assert!(lf.path("out/b/%2E%2E/b/y.log").exists(), "tag a..b");
    assert!(
        lf.path("out/b/%2E%2E/_/y.log").exists(),
        "tag x.: empty parts"
    );
    assert!(lf.path("out/b/.fine./tag/y.log").exists());
    assert!(
        lf.final_counter("logferry_file_escaped_paths_total{component=\"whole\"}") >= 4,
        "{}",
        lf.log_text()
    );
}

/// Waits until `/proc/<pid>/status` shows SIGHUP caught or ignored.
fn wait_for_hangup_handled(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let mask = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
                .unwrap_or(0)
        };
        if (mask("SigCgt:") | mask("SigIgn:")) & 1 != 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "SIGHUP is never caught or ignored: it would stop the process"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn hangup(lf: &Logferry) {
    // SAFETY: kill(2) on the pid of a child we own.
    unsafe { libc::kill(lf.pid() as i32, libc::SIGHUP) };
}

#[test]
fn sighup_during_and_after_start_up_keeps_serving() {
    let mut lf = Logferry::start(OUT_DIR_CONFIG);
    wait_for_hangup_handled(lf.pid());
    for _ in 0..5 {
        hangup(&lf);
    }
    let addr = lf.forward_addr("in");
    for _ in 0..5 {
        hangup(&lf);
        std::thread::sleep(Duration::from_millis(20));
    }
    lf.wait_for_log("reopening file outputs", Duration::from_secs(10));
    let mut s = TcpStream::connect(addr).unwrap();
    send_acked(&mut s, "hup", 0..5);
    assert_eq!(
        numbers(&read_lines(&lf.path("out/unified.log")), "hup"),
        (0..50).collect::<Vec<_>>()
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
}

#[test]
fn logrotate_rename_then_sighup_starts_a_new_file() {
    let mut lf = Logferry::start(OUT_DIR_CONFIG);
    let addr = lf.forward_addr("in");
    let out = lf.path("out/unified.log");
    let moved = lf.path("out/unified.log.1");
    let mut s = TcpStream::connect(addr).unwrap();
    send_acked(&mut s, "rot", 0..20);
    std::fs::rename(&out, &moved).unwrap();
    hangup(&lf);
    // postrotate: the new file is there before any new record
    let deadline = Instant::now() + Duration::from_secs(10);
    while !out.exists() {
        assert!(
            Instant::now() < deadline,
            "no new file after SIGHUP:\n{}",
            lf.log_text()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    lf.wait_for_log("output files reopened", Duration::from_secs(10));
    send_acked(&mut s, "rot", 20..40);
    assert_eq!(
        numbers(&read_lines(&moved), "rot"),
        (0..200).collect::<Vec<_>>()
    );
    assert_eq!(
        numbers(&read_lines(&out), "rot"),
        (200..400).collect::<Vec<_>>()
    );
    assert!(lf.stop().success());
    assert!(
        lf.final_counter("logferry_file_reopened_total{component=\"out\",reason=\"signal\"}") >= 1
    );
}
