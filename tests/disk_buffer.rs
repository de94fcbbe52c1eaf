//! Sinks behind a disk buffer: acknowledged records survive `kill -9` and a
//! downstream outage, damaged segment files are quarantined (the rest is
//! delivered), a full file system is backpressure that heals by itself,
//! and `logferry buffer inspect|check` read a buffer.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use logferry::buffer::disk::{cursor, format, segment};
use logferry::event::{Batch, EventTime, Records};
use logferry::protocol::forward::{write_message_entry, write_packed_forward};

/// One PackedForward chunk of records `<prefix>-<i>` (each `pad` bytes
/// longer), asking for an ack `id`.
fn chunk(prefix: &str, range: std::ops::Range<usize>, pad: usize, id: &str) -> Vec<u8> {
    let mut entries = Vec::new();
    let n = range.len();
    for i in range {
        let msg = format!("{prefix}-{i}{}", " ".repeat(pad));
        write_message_entry(&mut entries, 1_700_000_000, 0, msg.as_bytes());
    }
    let mut out = Vec::new();
    write_packed_forward(&mut out, "t", &entries, n, Some(id.as_bytes()));
    out
}

fn buffer_cmd(what: &str, dir: &Path) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["buffer", what])
        .arg(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn acked_records_survive_kill_9_and_a_receiver_outage() {
    const CHUNKS: usize = 100;
    const PER: usize = 10;
    let buffer = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = format!(
        r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.out]
type = "forward"
match = "**"
require_ack = true
servers = [{{ address = "127.0.0.1:{port}" }}]
buffer = {{ type = "disk", dir = "{}", max_bytes = "64MiB" }}
"#,
        buffer.path().display()
    );
    let mut sender = Logferry::start(&config);
    let mut s = TcpStream::connect(sender.forward_addr("in")).unwrap();
    // the disk buffer acknowledges while the receiver is down
    send_acked_chunks(&mut s, CHUNKS, PER, Duration::ZERO);
    sender.kill(); // SIGKILL
    drop(s);

    let mut receiver = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:{port}\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/received.log\"\n"
    ));
    receiver.forward_addr("in");
    let mut sender = Logferry::start(&config);
    sender.wait_for_log("delivering them first", Duration::from_secs(10));
    let n = CHUNKS * PER;
    let lines = wait_for_lines(&receiver.path("received.log"), n, Duration::from_secs(30));
    let got = numbers(&lines, "rec");
    let mut distinct = got.clone();
    distinct.dedup();
    assert_eq!(
        distinct,
        (0..n).collect::<Vec<_>>(),
        "every acknowledged record arrived"
    );
    eprintln!("duplicates: {}", got.len() - distinct.len());
    sender.stop();
    receiver.stop();
}

/// Sends `chunks` chunks of `per` records `rec-<i>`, numbered on, each
/// acknowledged (on disk) before the next, `pause` between them.
fn send_acked_chunks(s: &mut TcpStream, chunks: usize, per: usize, pause: Duration) {
    for k in 0..chunks {
        let id = format!("c{k}");
        s.write_all(&chunk("rec", k * per..(k + 1) * per, 0, &id))
            .unwrap();
        assert_eq!(
            read_ack(s, Duration::from_secs(10)).as_deref(),
            Some(id.as_str()),
            "chunk {k} acknowledged"
        );
        std::thread::sleep(pause);
    }
}

/// Lines `rec-<i>` for `range`, one frame per record.
fn frames(range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    range
        .map(|i| {
            let b = Batch::new(
                "t".into(),
                Records::Lines {
                    data: Bytes::from(format!("rec-{i}\n")),
                    time: EventTime::new(1_700_000_000, 0),
                },
                1,
            );
            format::encode(&b, EventTime::new(1_700_000_001, 0)).unwrap()
        })
        .collect()
}

fn write_segment(dir: &Path, id: u64, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut s = format::segment_header(id).to_vec();
    for f in frames {
        s.extend_from_slice(f);
    }
    std::fs::write(dir.join(segment::file_name(id)), &s).unwrap();
    s
}

#[test]
fn damaged_segments_are_quarantined_and_the_rest_delivered() {
    let buffer = tempfile::tempdir().unwrap();
    let dir = buffer.path();
    let first = frames(0..10);
    let flen = first[0].len();
    let mut seg1 = write_segment(dir, 1, &first);
    // a bad CRC in frame 4
    let bad = format::SEGMENT_HEADER + 4 * flen;
    seg1[bad + flen - 2] ^= 0x5a;
    std::fs::write(dir.join(segment::file_name(1)), &seg1).unwrap();
    // a torn tail: the last frame of segment 2 cut short
    let seg2 = write_segment(dir, 2, &frames(10..20));
    std::fs::write(dir.join(segment::file_name(2)), &seg2[..seg2.len() - 7]).unwrap();

    let (code, out) = buffer_cmd("check", dir);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("00000000000000000001.seg: damage at offset {bad}")),
        "{out}"
    );
    assert!(
        out.contains("00000000000000000002.seg: damage at offset"),
        "{out}"
    );

    let mut lf = Logferry::start(&format!(
        "{FORWARD_TO_FILE}buffer = {{ type = \"disk\", dir = \"{}\" }}\n",
        dir.display()
    ));
    lf.wait_for_log("damaged disk buffer bytes skipped", Duration::from_secs(10));
    let lines = wait_for_lines(&lf.path("unified.log"), 18, Duration::from_secs(20));
    let want: Vec<usize> = (0..19).filter(|i| *i != 4).collect();
    assert_eq!(numbers(&lines, "rec"), want);
    lf.stop();
    assert_eq!(
        lf.final_counter("logferry_buffer_quarantined_frames_total{component=\"unified\"}"),
        2
    );
    assert!(lf.final_counter("logferry_buffer_quarantined_bytes_total{component=\"unified\"}") > 0);
    assert!(dir
        .join("quarantine")
        .join("00000000000000000001.seg.damaged")
        .exists());
    let (code, out) = buffer_cmd("check", dir);
    assert_eq!(code, 0, "clean after quarantining: {out}");
}

#[test]
fn every_recovery_problem_is_logged_and_counted_by_kind() {
    let buffer = tempfile::tempdir().unwrap();
    let dir = buffer.path();
    // segment 1: a bad CRC in one frame
    let first = frames(0..5);
    let flen = first[0].len();
    let mut seg1 = write_segment(dir, 1, &first);
    seg1[format::SEGMENT_HEADER + 2 * flen + flen - 2] ^= 0x5a;
    std::fs::write(dir.join(segment::file_name(1)), &seg1).unwrap();
    // segment 2 cannot be read (a directory under a segment's name)
    std::fs::create_dir(dir.join(segment::file_name(2))).unwrap();
    // the delivered cursor is garbage
    std::fs::write(dir.join("ack"), b"not a cursor").unwrap();

    let mut lf = Logferry::start(&format!(
        "{FORWARD_TO_FILE}buffer = {{ type = \"disk\", dir = \"{}\" }}\n",
        dir.display()
    ));
    lf.wait_for_log(
        "delivered cursor (ack file) is damaged",
        Duration::from_secs(10),
    );
    lf.wait_for_log("cannot read a disk buffer segment", Duration::from_secs(10));
    lf.wait_for_log("damaged disk buffer bytes skipped", Duration::from_secs(10));
    wait_for_lines(&lf.path("unified.log"), 4, Duration::from_secs(20));
    lf.stop();
    for kind in ["damaged_cursor", "unreadable_segment", "damaged_frames"] {
        assert_eq!(
            lf.final_counter(&format!(
                "logferry_buffer_disk_errors_total{{component=\"unified\",kind=\"{kind}\"}}"
            )),
            1,
            "{kind}: {}",
            lf.log_text()
        );
    }
}

#[test]
fn inspect_and_check_describe_a_known_buffer() {
    let buffer = tempfile::tempdir().unwrap();
    let dir = buffer.path();
    let f = frames(0..3);
    write_segment(dir, 7, &f);
    let delivered = format::SEGMENT_HEADER + f[0].len();
    std::fs::write(dir.join("ack"), cursor::encode((7, delivered as u64))).unwrap();
    let (code, out) = buffer_cmd("inspect", dir);
    assert_eq!(code, 0, "{out}");
    for want in [
        format!("delivered cursor: segment 00000000000000000007.seg offset {delivered}"),
        format!(
            "segment 00000000000000000007.seg: {} bytes, 3 frames (2 undelivered, 2 records), 0 damaged",
            format::SEGMENT_HEADER + 3 * f[0].len()
        ),
        format!("undelivered: 2 frames, 2 records, {} bytes", 2 * f[0].len()),
        "oldest undelivered record time: 2023-11-14T22:13:20.000000000Z".to_string(),
    ] {
        assert!(out.contains(&want), "missing {want:?} in:\n{out}");
    }
    let (code, out) = buffer_cmd("check", dir);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok"), "{out}");
}

/// Unmounts a tmpfs when dropped.
struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_holds_acks_back_and_recovers_when_space_returns() {
    let base = tempfile::tempdir().unwrap();
    let mnt = base.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
        .arg(&mnt)
        .status();
    if !matches!(mounted, Ok(s) if s.success()) {
        common::skipped("cannot mount a tmpfs (needs root): the full-disk test did not run");
        return;
    }
    let _guard = Mount(mnt.clone());
    let buffer = mnt.join("buffer");
    let mut lf = Logferry::start(&format!(
        "{FORWARD_TO_FILE}buffer = {{ type = \"disk\", dir = \"{}\", max_bytes = \"64MiB\" }}\n",
        buffer.display()
    ));
    let mut s = TcpStream::connect(lf.forward_addr("in")).unwrap();
    // one chunk goes through while there is space
    s.write_all(&chunk("rec", 0..10, 1000, "c0")).unwrap();
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(10)).as_deref(),
        Some("c0")
    );
    // fill the file system
    let filler = mnt.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let block = vec![0u8; 64 << 10];
    while f.write_all(&block).is_ok() {}
    let _ = f.write_all(&[0u8; 1]);
    drop(f);
    s.write_all(&chunk("rec", 10..20, 1000, "c1")).unwrap();
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(3)),
        None,
        "no ack while the buffer cannot be written"
    );
    lf.wait_for_log("disk buffer write failed", Duration::from_secs(10));
    std::fs::remove_file(&filler).unwrap();
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(15)).as_deref(),
        Some("c1")
    );
    let lines = wait_for_lines(&lf.path("unified.log"), 20, Duration::from_secs(15));
    assert_eq!(numbers(&lines, "rec"), (0..20).collect::<Vec<_>>());
    lf.stop();
    assert!(lf.final_counter("logferry_buffer_disk_write_errors_total{component=\"unified\"}") > 0);
}

#[test]
fn a_stop_keeps_what_the_sink_could_not_deliver_for_the_next_start() {
    let buffer = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = format!(
        r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.out]
type = "forward"
match = "**"
require_ack = true
drain_timeout = "1s"
servers = [{{ address = "127.0.0.1:{port}" }}]
buffer = {{ type = "disk", dir = "{}" }}
"#,
        buffer.path().display()
    );
    let mut sender = Logferry::start(&config);
    let mut s = TcpStream::connect(sender.forward_addr("in")).unwrap();
    s.write_all(&chunk("rec", 0..50, 0, "c0")).unwrap();
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(10)).as_deref(),
        Some("c0")
    );
    drop(s);
    assert!(sender.stop().success());
    assert_eq!(
        sender.final_counter("logferry_buffer_disk_kept_records_total{component=\"out\"}"),
        50,
        "{}",
        sender.log_text()
    );
    sender.wait_for_log("stay in the disk buffer", Duration::from_secs(1));

    let mut receiver = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:{port}\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/received.log\"\n"
    ));
    receiver.forward_addr("in");
    let mut sender = Logferry::start(&config);
    let lines = wait_for_lines(&receiver.path("received.log"), 50, Duration::from_secs(20));
    assert_eq!(numbers(&lines, "rec"), (0..50).collect::<Vec<_>>());
    sender.stop();
    receiver.stop();
}

/// The budget gauge, or a buffer's, from the API's `/metrics`.
fn gauge(api: std::net::SocketAddr, name_and_labels: &str) -> f64 {
    metric_value(&api_get(api, "/metrics"), name_and_labels)
}

#[test]
fn records_on_disk_hold_no_memory_budget_while_the_destination_is_down() {
    const CHUNKS: usize = 50;
    const PER: usize = 10;
    let buffer = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = format!(
        r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.out]
type = "forward"
match = "**"
require_ack = true
reconnect_min = "50ms"
reconnect_max = "200ms"
servers = [{{ address = "127.0.0.1:{port}" }}]
buffer = {{ type = "disk", dir = "{}", max_bytes = "64MiB" }}

[limits]
memory = "8MiB"

[api]
address = "127.0.0.1:0"
"#,
        buffer.path().display()
    );
    let mut sender = Logferry::start(&config);
    let api = sender.address("api listening");
    let mut s = TcpStream::connect(sender.forward_addr("in")).unwrap();
    for k in 0..CHUNKS {
        let id = format!("c{k}");
        s.write_all(&chunk("rec", k * PER..(k + 1) * PER, 1000, &id))
            .unwrap();
        assert_eq!(
            read_ack(&mut s, Duration::from_secs(10)).as_deref(),
            Some(id.as_str())
        );
    }
    drop(s);
    // the records are on disk, so the budget is free again, although the
    // sink has them in its cache and keeps trying to deliver them
    let on_disk = "logferry_buffer_bytes{component=\"out\"}";
    wait_until("the budget is given back", Duration::from_secs(10), || {
        gauge(api, "logferry_memory_used_bytes") == 0.0
    });
    assert!(gauge(api, on_disk) > (CHUNKS * PER * 1000) as f64);

    let mut receiver = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:{port}\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/received.log\"\n"
    ));
    receiver.forward_addr("in");
    let n = CHUNKS * PER;
    let lines = wait_for_lines(&receiver.path("received.log"), n, Duration::from_secs(30));
    let mut got = numbers(&lines, "rec");
    got.dedup();
    assert_eq!(got, (0..n).collect::<Vec<_>>(), "every record arrived");
    wait_until("the buffer is empty", Duration::from_secs(10), || {
        gauge(api, on_disk) == 0.0
    });
    assert!(sender.stop().success());
    receiver.stop();
}

/// Behind a disk buffer the forward source reads each chunk as it comes
/// (no linger: a kill -9 loses nothing); the `forward` sink gathers what
/// is on disk for its flush_interval (500 ms by default there) instead of
/// sending each chunk on, and every record still arrives.
#[test]
fn a_disk_buffered_forward_sink_gathers_chunks_its_source_read_at_once() {
    const CHUNKS: usize = 40;
    const PER: usize = 5;
    let buffer = tempfile::tempdir().unwrap();
    let mut receiver = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/received.log\"\n",
    );
    let to = receiver.forward_addr("in");
    let mut sender = Logferry::start(&format!(
        r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.out]
type = "forward"
match = "**"
servers = [{{ address = "{to}" }}]
buffer = {{ type = "disk", dir = "{}" }}

[api]
address = "127.0.0.1:0"
"#,
        buffer.path().display()
    ));
    let mut s = TcpStream::connect(sender.forward_addr("in")).unwrap();
    send_acked_chunks(&mut s, CHUNKS, PER, Duration::from_millis(10));
    let n = CHUNKS * PER;
    let lines = wait_for_lines(&receiver.path("received.log"), n, Duration::from_secs(30));
    assert_eq!(numbers(&lines, "rec"), (0..n).collect::<Vec<_>>());
    let api = sender.address("api");
    let sent = gauge(api, "logferry_forward_sink_chunks_total{component=\"out\"}");
    assert!(
        (1.0..=(CHUNKS / 4) as f64).contains(&sent),
        "{sent} chunks sent for {CHUNKS} read"
    );
    sender.stop();
    receiver.stop();
}

/// Behind a disk buffer the `file` sink gathers what its source read at
/// once for its flush_interval (500 ms by default there) and writes it
/// in a few writes, not one per chunk; a kill -9 while it gathers loses
/// nothing: the chunks are still on disk and written after the restart.
#[test]
fn a_disk_buffered_file_sink_gathers_and_loses_nothing_to_a_kill_9_meanwhile() {
    const CHUNKS: usize = 40;
    const PER: usize = 5;
    let n = CHUNKS * PER;
    let buffer = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let config = |file: &str, setting: &str| {
        format!(
            "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n\
             [sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{}\"\n{setting}\n\
             buffer = {{ type = \"disk\", dir = \"{}\" }}\n",
            out.path().join(file).display(),
            buffer.path().display()
        )
    };

    // the default: written every 500 ms at most
    let gathered = out.path().join("gathered.log");
    let mut p = Logferry::start(&config("gathered.log", ""));
    let mut s = TcpStream::connect(p.forward_addr("in")).unwrap();
    let (lines, sizes) = sizes_while(gathered.clone(), || {
        send_acked_chunks(&mut s, CHUNKS, PER, Duration::from_millis(10));
        wait_for_lines(&gathered, n, Duration::from_secs(30))
    });
    assert_eq!(numbers(&lines, "rec"), (0..n).collect::<Vec<_>>());
    // the first size seen is the empty file
    let writes = sizes.len() - 1;
    assert!(
        (1..=CHUNKS / 4).contains(&writes),
        "{writes} writes for {CHUNKS} chunks read: {sizes:?}"
    );
    drop(s);
    p.stop();

    // gathering for an hour, killed: nothing written, nothing lost
    let killed = out.path().join("killed.log");
    let mut p = Logferry::start(&config("killed.log", "flush_interval = \"1h\""));
    let mut s = TcpStream::connect(p.forward_addr("in")).unwrap();
    send_acked_chunks(&mut s, CHUNKS, PER, Duration::ZERO);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        std::fs::metadata(&killed).map_or(0, |m| m.len()),
        0,
        "written before its flush_interval"
    );
    p.kill();
    drop(s);
    let mut p = Logferry::start(&config("killed.log", ""));
    let lines = wait_for_lines(&killed, n, Duration::from_secs(30));
    assert_eq!(numbers(&lines, "rec"), (0..n).collect::<Vec<_>>());
    p.stop();
}

/// The `stdout` sink on a disk buffer gathers like the file sink: its
/// standard output, redirected to a file, sees a few writes for lines
/// read one at a time, not one write each, and every line once.
#[test]
fn a_disk_buffered_stdout_sink_gathers_what_its_source_read_at_once() {
    const N: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let buffer = tempfile::tempdir().unwrap();
    let out = dir.path().join("stdout.log");
    let config = dir.path().join("stdout.toml");
    std::fs::write(
        &config,
        format!(
            "[sources.in]\ntype = \"tcp\"\naddress = \"127.0.0.1:0\"\n\n\
             [sinks.out]\ntype = \"stdout\"\nmatch = \"**\"\nformat = \"raw\"\n\
             buffer = {{ type = \"disk\", dir = \"{}\" }}\n",
            buffer.path().display()
        ),
    )
    .unwrap();
    // the shell hands its pid to logferry (exec), whose output is the file
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("exec \"$0\" run --config \"$1\" > \"$2\"")
        .arg(BIN)
        .arg(&config)
        .arg(&out);
    let mut p = Logferry::spawn(&mut cmd, tempfile::tempdir().unwrap());
    let addr = p.address("tcp source listening source=in ");
    let mut s = TcpStream::connect(addr).unwrap();
    let (lines, sizes) = sizes_while(out.clone(), || {
        // one read, one write to the buffer each
        write_lines_apart(
            &mut s,
            (0..N).map(|i| format!("line-{i}")),
            Duration::from_millis(10),
        );
        wait_for_lines(&out, N, Duration::from_secs(30))
    });
    assert_eq!(numbers(&lines, "line"), (0..N).collect::<Vec<_>>());
    // the first size seen is the empty file
    let writes = sizes.len() - 1;
    assert!(
        (1..=N / 4).contains(&writes),
        "{writes} writes for {N} lines read: {sizes:?}"
    );
    assert!(p.stop().success(), "{}", p.log_text());
}
