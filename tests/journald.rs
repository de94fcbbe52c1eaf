//! The journald source against real journal files: Debian's
//! systemd-journal-remote writes them from the journal export format while
//! logferry reads, journald-style rotations and vacuums happen mid-read,
//! and journalctl is the reference reader the records are compared with.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{json_records, read_lines, skipped, wait_for_lines, wait_until, Logferry};
use serde_json::Value;

const JOURNAL_REMOTE: &str = "/lib/systemd/systemd-journal-remote";

/// Entries' wall-clock times start here, a millisecond apart.
const BASE_USEC: u64 = 1_780_000_000_000_000;
const BOOT_ID: &str = "4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e";

fn tools_present() -> bool {
    let present = Path::new(JOURNAL_REMOTE).exists()
        && Command::new("journalctl").arg("--version").output().is_ok();
    if !present {
        skipped(
            "systemd-journal-remote or journalctl missing (scripts/test-deps.sh installs them)",
        );
    }
    present
}

/// Entry `i` in the journal export format: numbered (`SEQ`, and in the
/// message), with a unit, a priority, a field stored twice in every 100th
/// and a message of two lines (a binary field in the export format) in
/// every 7th.
fn export_entry(out: &mut Vec<u8>, i: u64) {
    let mut text = |k: &str, v: String| {
        writeln!(out, "{k}={v}").unwrap();
    };
    text("__REALTIME_TIMESTAMP", (BASE_USEC + i * 1000).to_string());
    text("__MONOTONIC_TIMESTAMP", (1_000_000 + i * 1000).to_string());
    text("_BOOT_ID", BOOT_ID.into());
    text("SEQ", i.to_string());
    text("PRIORITY", (i % 8).to_string());
    text("_SYSTEMD_UNIT", format!("unit{}.service", i % 5));
    text("SYSLOG_IDENTIFIER", format!("app{}", i % 5));
    text("_PID", (1000 + i % 5).to_string());
    text("_HOSTNAME", "node-a".into());
    if i.is_multiple_of(100) {
        text("TAGGED", "first".into());
        text("TAGGED", "second".into());
    }
    if i.is_multiple_of(7) {
        let msg = format!("entry {i} line one\n  line two of entry {i}");
        out.extend_from_slice(b"MESSAGE\n");
        out.extend_from_slice(&(msg.len() as u64).to_le_bytes());
        out.extend_from_slice(msg.as_bytes());
        out.push(b'\n');
    } else {
        writeln!(out, "MESSAGE=entry {i} of the journald test").unwrap();
    }
    out.push(b'\n');
}

/// Writes entries `range` into the journal file `file` with
/// systemd-journal-remote, a chunk at a time (logferry reads meanwhile).
fn write_journal(file: &Path, range: std::ops::Range<u64>) {
    let mut child = Command::new(JOURNAL_REMOTE)
        .arg("-o")
        .arg(file)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start systemd-journal-remote");
    let mut stdin = child.stdin.take().unwrap();
    let mut chunk = Vec::new();
    for i in range {
        export_entry(&mut chunk, i);
        if i % 2000 == 1999 {
            stdin.write_all(&chunk).unwrap();
            chunk.clear();
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    stdin.write_all(&chunk).unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "systemd-journal-remote: {status}");
}

/// What journald does at a rotation: the active file is archived under a
/// name with `@`, and the next entries go to a new `system.journal`.
fn rotate(dir: &Path, n: u32) -> PathBuf {
    let archived = dir.join(format!(
        "system@{:032x}-{:016x}-{:016x}.journal",
        n + 1,
        n + 1,
        BASE_USEC
    ));
    std::fs::rename(dir.join("system.journal"), &archived).unwrap();
    archived
}

/// A directory for a test: an empty `journal/` and the output's path.
fn workdir() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let work = tempfile::tempdir().unwrap();
    let journal = work.path().join("journal");
    std::fs::create_dir(&journal).unwrap();
    let out = work.path().join("out.json");
    (work, journal, out)
}

fn config(journal: &Path, out: &Path, state: &Path) -> String {
    format!(
        r#"
[sources.journal]
type = "journald"
directory = "{journal}"
tag = "journal.*"
checkpoint_dir = "{state}"
checkpoint_interval = "100ms"

[sinks.out]
type = "file"
match = "journal.**"
path = "{out}"
format = "json"
"#,
        journal = journal.display(),
        out = out.display(),
        state = state.display(),
    )
}

/// Every entry as journalctl reads it, by `SEQ`: its fields without the
/// `__` ones, and its `__REALTIME_TIMESTAMP`.
fn journalctl(dir: &Path) -> HashMap<u64, (BTreeMap<String, Value>, u64)> {
    let out = Command::new("journalctl")
        .args(["--directory"])
        .arg(dir)
        .args(["-o", "json", "--all", "--no-pager"])
        .output()
        .expect("run journalctl");
    assert!(out.status.success(), "journalctl: {:?}", out);
    let mut entries = HashMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: BTreeMap<String, Value> = serde_json::from_str(line).unwrap();
        let seq: u64 = v["SEQ"].as_str().unwrap().parse().unwrap();
        let time: u64 = v["__REALTIME_TIMESTAMP"].as_str().unwrap().parse().unwrap();
        let fields = v
            .into_iter()
            .filter(|(k, _)| !k.starts_with("__"))
            .collect();
        assert!(
            entries.insert(seq, (fields, time)).is_none(),
            "SEQ {seq} twice in journalctl"
        );
    }
    entries
}

/// The records logferry wrote, by `SEQ`, with the journal's field names
/// (`message` back to `MESSAGE`), their time in microseconds and tag.
/// A record as written: its fields, time (µs) and tag.
type Written = (BTreeMap<String, Value>, u64, String);

fn written(out: &Path) -> HashMap<u64, Vec<Written>> {
    let times: Vec<u64> = read_lines(out)
        .iter()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let t = chrono::DateTime::parse_from_rfc3339(v["time"].as_str().unwrap()).unwrap();
            t.timestamp_micros() as u64
        })
        .collect();
    let mut by_seq: HashMap<u64, Vec<_>> = HashMap::new();
    for ((tag, record), time) in json_records(out).into_iter().zip(times) {
        let mut fields: BTreeMap<String, Value> = serde_json::from_value(record).unwrap();
        let message = fields.remove("message").expect("a message");
        fields.insert("MESSAGE".into(), message);
        let seq: u64 = fields["SEQ"].as_str().unwrap().parse().unwrap();
        by_seq.entry(seq).or_default().push((fields, time, tag));
    }
    by_seq
}

#[test]
fn every_entry_matches_journalctl_across_a_rotation_and_a_vacuum() {
    if !tools_present() {
        return;
    }
    const N: u64 = 100_000;
    let (work, journal, out) = workdir();
    let mut lf = Logferry::start(&config(&journal, &out, &work.path().join("state")));
    lf.wait_for_log("journald source reading", Duration::from_secs(30));

    // the first half into system.journal, read as it is written
    write_journal(&journal.join("system.journal"), 0..N / 2);
    let archived = rotate(&journal, 0);
    // the second half into a new system.journal; the archived file is
    // vacuumed once logferry has read it, while the new one is written
    let writer = {
        let file = journal.join("system.journal");
        std::thread::spawn(move || write_journal(&file, N / 2..N))
    };
    wait_for_lines(&out, (N / 2) as usize, Duration::from_secs(120));
    let reference_first = journalctl(&journal);
    let vacuum = Command::new("journalctl")
        .arg("--directory")
        .arg(&journal)
        .arg("--vacuum-files=1")
        .output()
        .unwrap();
    assert!(vacuum.status.success(), "{vacuum:?}");
    assert!(!archived.exists(), "the vacuum removed the archived file");
    writer.join().unwrap();
    let reference_second = journalctl(&journal);
    assert_eq!(
        reference_second.len() as u64,
        N / 2,
        "journalctl reads the new file only"
    );

    wait_for_lines(&out, N as usize, Duration::from_secs(120));
    // nothing more arrives
    std::thread::sleep(Duration::from_millis(500));
    lf.stop();
    let got = written(&out);
    let mut reference = reference_first;
    reference.extend(reference_second);
    assert_eq!(
        reference.len() as u64,
        N,
        "journalctl saw every entry before the vacuum"
    );
    let mut mismatches = Vec::new();
    for seq in 0..N {
        let records = got.get(&seq).map(Vec::as_slice).unwrap_or_default();
        assert_eq!(
            records.len(),
            1,
            "entry {seq} arrived {} times",
            records.len()
        );
        let (fields, time, tag) = &records[0];
        let (want, want_time) = &reference[&seq];
        if fields != want || time != want_time {
            mismatches.push(format!(
                "{seq}: {fields:?} at {time} vs journalctl {want:?} at {want_time}"
            ));
        }
        assert_eq!(tag, &format!("journal.unit{}.service", seq % 5));
    }
    assert!(
        mismatches.is_empty(),
        "{} differ, first: {}",
        mismatches.len(),
        mismatches[0]
    );
    assert_eq!(got.len() as u64, N);
    // the multi-line messages and the repeated field came through as stored
    assert_eq!(
        got[&7][0].0["MESSAGE"],
        "entry 7 line one\n  line two of entry 7"
    );
    assert_eq!(
        got[&100][0].0["TAGGED"],
        serde_json::json!(["first", "second"])
    );
}

#[test]
fn a_kill_mid_read_and_a_restart_lose_nothing() {
    if !tools_present() {
        return;
    }
    const N: u64 = 100_000;
    let (work, journal, out) = workdir();
    let state = work.path().join("state");
    let config = config(&journal, &out, &state);
    let writer = {
        let journal = journal.clone();
        std::thread::spawn(move || {
            write_journal(&journal.join("system.journal"), 0..N / 2);
            rotate(&journal, 0);
            write_journal(&journal.join("system.journal"), N / 2..N);
        })
    };
    // killed three times with a part read and the rest still being written
    let mut before = Vec::new();
    for at in [20_000, 50_000, 80_000] {
        let mut lf = Logferry::start(&config);
        wait_for_lines(&out, at, Duration::from_secs(120));
        lf.kill();
        before.push(read_lines(&out).len());
        assert!(
            state.join("journal.cursor").exists(),
            "a cursor was saved before the kill"
        );
    }
    let mut lf = Logferry::start(&config);
    writer.join().unwrap();
    wait_until("every entry arrived", Duration::from_secs(120), || {
        written(&out).len() as u64 == N
    });
    lf.stop();
    let got = written(&out);
    let lines = read_lines(&out).len();
    for seq in 0..N {
        assert!(got.contains_key(&seq), "entry {seq} was lost");
    }
    // what was resent is what was not acknowledged at each kill: the
    // records of at most a few reads
    let resent = lines - N as usize;
    assert!(
        resent < 3 * 20_000,
        "{resent} records were sent twice (lines at the kills: {before:?})"
    );
    eprintln!("lines at the kills: {before:?}; resent after them: {resent}");
}

#[test]
fn units_and_matches_select_entries_and_read_from_tail_skips_the_past() {
    if !tools_present() {
        return;
    }
    let (work, journal, out) = workdir();
    write_journal(&journal.join("system.journal"), 0..1000);
    let other = work.path().join("other");
    std::fs::create_dir(&other).unwrap();
    write_journal(&other.join("system.journal"), 0..100);
    let tail_out = work.path().join("tail.json");
    let text = format!(
        r#"
[sources.some]
type = "journald"
directory = "{journal}"
tag = "some"
units = ["unit1", "unit3.service"]
matches = {{ PRIORITY = ["2", "3", "5"] }}
lowercase = true
strip_underscores = true

[sources.new]
type = "journald"
files = ["{other}/system.journal"]
tag = "new"
read_from = "tail"

[sinks.out]
type = "file"
match = "some"
path = "{out}"
format = "json"

[sinks.tail]
type = "file"
match = "new"
path = "{tail_out}"
format = "json"
"#,
        journal = journal.display(),
        other = other.display(),
        out = out.display(),
        tail_out = tail_out.display(),
    );
    let mut lf = Logferry::start(&text);
    lf.wait_for_log("journald source reading", Duration::from_secs(30));
    lf.wait_for_log(
        "journald source reading source=new",
        Duration::from_secs(30),
    );
    // units 1 and 3 with priorities 2, 3 or 5: i % 5 in {1, 3} and i % 8 in {2, 3, 5}
    let want: Vec<u64> = (0..1000)
        .filter(|i| [1, 3].contains(&(i % 5)) && [2, 3, 5].contains(&(i % 8)))
        .collect();
    wait_for_lines(&out, want.len(), Duration::from_secs(60));
    // entries written after the start are what read_from = tail reads
    write_journal(&other.join("system.journal"), 100..110);
    wait_for_lines(&tail_out, 10, Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(500));
    lf.stop();
    let records = json_records(&out);
    let seqs: Vec<u64> = records
        .iter()
        .map(|(_, r)| r["seq"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(seqs, want);
    let first = &records[0].1;
    assert_eq!(
        first["systemd_unit"],
        format!("unit{}.service", want[0] % 5)
    );
    assert_eq!(first["syslog_identifier"], format!("app{}", want[0] % 5));
    assert!(first.get("_SYSTEMD_UNIT").is_none() && first.get("message").is_some());
    let new: Vec<u64> = json_records(&tail_out)
        .iter()
        .map(|(_, r)| r["SEQ"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        new,
        (100..110).collect::<Vec<_>>(),
        "read_from = tail reads no past entry"
    );
}

#[test]
fn a_stop_while_a_read_waits_for_memory_loses_nothing() {
    if !tools_present() {
        return;
    }
    const N: u64 = 20_000;
    let (work, journal, out) = workdir();
    let state = work.path().join("state");
    // an HTTP source fills the memory budget with records for a sink that
    // never delivers; the journal's first read then waits for memory when
    // the stop comes
    let squeezed = format!(
        r#"
[limits]
memory = "2MiB"

[sources.journal]
type = "journald"
directory = "{journal}"
tag = "journal"
checkpoint_dir = "{state}"
checkpoint_interval = "100ms"

[sources.http]
type = "http"
address = "127.0.0.1:0"

[sinks.out]
type = "file"
match = "journal"
path = "{out}"
format = "json"
{dead}"#,
        dead = common::dead_forward_sink("dead", "flood", "buffer = { max_bytes = \"64MiB\" }"),
        journal = journal.display(),
        state = state.display(),
        out = out.display(),
    );
    let mut lf = Logferry::start(&squeezed);
    let http = lf.http_addr("http");
    let line = format!("{{\"msg\":\"{}\"}}\n", "x".repeat(200));
    let body = line.repeat(2500);
    // posts go on until the stop, so memory freed anywhere is taken again
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flood = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut open = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && open.len() < 400 {
                let request = format!(
                    "POST /flood HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                // the answer never comes (the sink never delivers); the
                // connection is kept open
                if let Ok(mut s) = std::net::TcpStream::connect(http) {
                    let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
                    let _ = s.write_all(request.as_bytes());
                    open.push(s);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            open
        })
    };
    wait_until(
        "the memory budget is reached",
        Duration::from_secs(60),
        || lf.log_text().contains("memory budget reached"),
    );
    write_journal(&journal.join("system.journal"), 0..N);
    std::thread::sleep(Duration::from_secs(1));
    let status = lf.stop();
    assert!(status.success(), "{status}: {}", lf.log_text());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    drop(flood.join());
    let first_log = lf.log_text();
    let before = read_lines(&out).len();

    // the same journal alone: every entry arrives
    let cursor = std::fs::read_to_string(state.join("journal.cursor")).unwrap_or_default();
    let mut lf = Logferry::start(&config(&journal, &out, &state));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while written(&out).len() as u64 != N && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let got = written(&out);
    let missing: Vec<u64> = (0..N).filter(|s| !got.contains_key(s)).collect();
    assert!(missing.is_empty(), "{} missing, first {:?} last {:?}; {before} before the stop; cursor {cursor}; log {first_log}", missing.len(), missing.first(), missing.last());
    lf.stop();
    eprintln!(
        "{before} entries before the stop, {} lines in all",
        read_lines(&out).len()
    );
}

#[test]
fn a_stop_while_the_sink_is_down_and_the_memory_budget_full_loses_nothing() {
    if !tools_present() {
        return;
    }
    const N: u64 = 20_000;
    let (work, journal, out) = workdir();
    let state = work.path().join("state");
    write_journal(&journal.join("system.journal"), 0..N);
    // a forward server that never answers, a one-batch queue and a memory
    // budget far below the journal: the source stops with reads waiting
    // for memory, for queue room and for verdicts that never come
    let down = format!(
        r#"
[limits]
memory = "2MiB"

[sources.journal]
type = "journald"
directory = "{journal}"
checkpoint_dir = "{state}"
checkpoint_interval = "100ms"
{dead}"#,
        dead = common::dead_forward_sink("out", "**", "buffer = { max_bytes = \"64KiB\" }"),
        journal = journal.display(),
        state = state.display(),
    );
    let mut lf = Logferry::start(&down);
    lf.wait_for_log("journald source reading", Duration::from_secs(30));
    wait_until(
        "the memory budget is reached",
        Duration::from_secs(60),
        || lf.log_text().contains("memory budget reached"),
    );
    let status = lf.stop();
    assert!(status.success(), "{status}: {}", lf.log_text());
    assert!(lf.log_text().contains("journald source stopped"));

    // the same journal, now into a file: every entry arrives
    let mut lf = Logferry::start(&config(&journal, &out, &state));
    wait_for_lines(&out, N as usize, Duration::from_secs(120));
    std::thread::sleep(Duration::from_millis(500));
    lf.stop();
    let got = written(&out);
    for seq in 0..N {
        assert!(got.contains_key(&seq), "entry {seq} was lost");
    }
    assert_eq!(
        read_lines(&out).len() as u64,
        N,
        "nothing was acknowledged by the dead sink, nothing is sent twice"
    );
}
