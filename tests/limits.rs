//! Running out of file descriptors: the listeners back off instead of
//! spinning, say so once, count it, and serve again once descriptors are
//! free; a configuration that cannot fit the open-file limit is warned
//! about at start.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

use common::*;
use logferry::protocol::forward::{write_message_entry, write_packed_forward};
use logferry::protocol::msgpack::write;

/// The open-file limit (soft and hard) of the process under test.
const NOFILE: u64 = 64;

/// Starts logferry with `config` under an open-file limit of `NOFILE`.
fn start_limited(config: &str) -> Logferry {
    let dir = tempfile::tempdir().unwrap();
    let config = config.replace("{dir}", &dir.path().display().to_string());
    let path = dir.path().join("logferry.toml");
    std::fs::write(&path, config).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["run", "--config"]).arg(&path);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs here.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: NOFILE as libc::rlim_t,
                rlim_max: NOFILE as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Logferry::spawn(&mut cmd, dir)
}

/// CPU seconds (user + system) the process has used so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
    // utime and stime are fields 14 and 15; the split starts at field 3
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf only reads a constant.
    ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

fn frame(tag: &str, text: &str) -> Vec<u8> {
    let mut e = Vec::new();
    write_message_entry(&mut e, 1, 0, text.as_bytes());
    let mut f = Vec::new();
    write_packed_forward(&mut f, tag, &e, 1, None);
    f
}

fn http_get(mut s: TcpStream, path: &str) -> String {
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body
}

fn metric(text: &str, name_and_labels: &str) -> u64 {
    metric_value(text, name_and_labels) as u64
}

const CONFIG: &str = r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"
max_connections = 1000

[sinks.unified]
type = "file"
match = "**"
path = "{dir}/unified.log"

[api]
address = "127.0.0.1:0"
"#;

#[test]
fn out_of_descriptors_backs_off_warns_once_and_recovers() {
    let mut lf = start_limited(CONFIG);
    let addr: SocketAddr = lf.forward_addr("in");
    let api = lf.address("api listening");
    let pid = lf.pid();
    // the configuration cannot fit the limit: said at start
    let warning = lf.wait_for_log("open-file limit is lower", Duration::from_secs(10));
    assert!(warning.contains("limit=64"), "{warning}");

    // more idle connections than the process has descriptors
    let idle: Vec<TcpStream> = (0..2 * NOFILE)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    lf.wait_for_log("accept failed", Duration::from_secs(10));
    // one pending /metrics request, waiting in the API's backlog
    let pending = TcpStream::connect(api).unwrap();
    std::thread::sleep(Duration::from_millis(300));

    let before = cpu_seconds(pid);
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_seconds(pid) - before;
    // a spinning loop takes a whole core (1 s per second); a backing-off
    // one a few milliseconds
    assert!(
        used < 0.5,
        "{used:.2} s of CPU in 2 s while out of descriptors: the accept loops spin"
    );
    let warnings = lf
        .log_text()
        .lines()
        .filter(|l| l.contains("accept failed"))
        .count();
    assert!(
        (1..=4).contains(&warnings),
        "{warnings} accept warnings (one per listener expected):\n{}",
        lf.log_text()
    );
    let warning = lf.wait_for_log("accept failed", Duration::ZERO);
    assert!(
        warning.contains("out of file descriptors") && warning.contains("ulimit -n"),
        "{warning}"
    );

    // the idle clients leave: the backlog and new clients are served again
    drop(idle);
    let metrics = http_get(pending, "/metrics");
    assert!(
        metric(
            &metrics,
            "logferry_accept_errors_total{component=\"in\",kind=\"emfile\"}"
        ) >= 1,
        "{metrics}"
    );
    assert!(
        metric(
            &metrics,
            "logferry_accept_errors_total{component=\"api\",kind=\"emfile\"}"
        ) >= 1,
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, "logferry_startup_warnings_total{kind=\"nofile\"}"),
        1,
        "{metrics}"
    );
    drop(send(addr, &frame("late", "late-0")));
    let lines = wait_for_lines(&lf.path("unified.log"), 1, Duration::from_secs(20));
    assert_eq!(lines, ["late-0"]);
    assert!(lf.stop().success());
}

#[test]
fn a_configuration_that_fits_is_not_warned_about() {
    let mut lf = start_limited(&CONFIG.replace("max_connections = 1000", "max_connections = 10"));
    lf.forward_addr("in");
    lf.wait_for_log("open-file limit", Duration::from_secs(10));
    assert!(lf.stop().success());
    assert!(
        !lf.log_text().contains("open-file limit is lower"),
        "{}",
        lf.log_text()
    );
}

#[test]
fn the_soft_open_file_limit_is_raised_to_the_hard_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(
        &path,
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\nmax_connections = 10\n\n[sinks.o]\ntype = \"null\"\nmatch = \"**\"\n",
    )
    .unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["run", "--config"]).arg(&path);
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 100,
                rlim_max: 200,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            Ok(())
        });
    }
    let mut lf = Logferry::spawn(&mut cmd, dir);
    let line = lf.wait_for_log("open-file limit", Duration::from_secs(10));
    assert!(
        line.contains("soft=200") && line.contains("hard=200") && line.contains("was=100"),
        "{line}"
    );
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", lf.pid())).unwrap();
    let open = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .split_whitespace()
        .skip(3)
        .take(2)
        .collect::<Vec<_>>();
    assert_eq!(open, ["200", "200"], "{limits}");
    assert!(lf.stop().success());
}

#[test]
fn a_flood_of_invalid_frames_is_counted_but_logged_a_few_times() {
    const FRAMES: usize = 20_000;
    let mut lf = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.unified]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/unified.log\"\n",
    );
    let addr = lf.forward_addr("in");
    // a well-formed msgpack value that is not a forward frame: rejected,
    // the connection continues
    let mut bytes = Vec::new();
    for _ in 0..FRAMES {
        write::array_len(&mut bytes, 2);
        write::uint(&mut bytes, 7);
        write::uint(&mut bytes, 8);
    }
    bytes.extend_from_slice(&frame("after", "after-0"));
    let s = send(addr, &bytes);
    wait_for_lines(&lf.path("unified.log"), 1, Duration::from_secs(30));
    // and clients over max_connections: one warning per kind, not per client
    drop(s);
    assert!(lf.stop().success());
    let log = lf.log_text();
    let lines = log.lines().filter(|l| l.contains("frame rejected")).count();
    assert!((1..50).contains(&lines), "{lines} warnings:\n{log}");
    assert_eq!(
        lf.final_counter(
            "logferry_forward_frame_errors_total{component=\"in\",kind=\"invalid_frame\"}"
        ),
        FRAMES as u64
    );
}

#[test]
fn clients_reconnecting_over_the_limit_are_logged_a_few_times() {
    const CLIENTS: usize = 2_000;
    let mut lf = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\nmax_connections = 1\n\n[sinks.o]\ntype = \"null\"\nmatch = \"**\"\n",
    );
    let addr = lf.forward_addr("in");
    let held = TcpStream::connect(addr).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    for _ in 0..CLIENTS {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // closed at once by the server
        let _ = s.read(&mut [0u8; 1]);
    }
    drop(held);
    assert!(lf.stop().success());
    let log = lf.log_text();
    let lines = log
        .lines()
        .filter(|l| l.contains("max_connections reached"))
        .count();
    assert!((1..50).contains(&lines), "{lines} warnings:\n{log}");
    assert_eq!(
        lf.final_counter("logferry_forward_connections_rejected_total{component=\"in\"}"),
        CLIENTS as u64
    );
}

#[test]
fn a_forward_sink_that_skips_certificate_checks_is_warned_about_and_counted() {
    let mut lf = Logferry::start(
        r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.up]
type = "forward"
match = "**"
servers = [{ address = "127.0.0.1:1" }]
tls = { insecure_skip_verify = true }
"#,
    );
    lf.wait_for_log("tls.insecure_skip_verify is set", Duration::from_secs(10));
    lf.stop();
    assert_eq!(
        lf.final_counter(r#"logferry_startup_warnings_total{kind="insecure_skip_verify"}"#),
        1,
        "{}",
        lf.log_text()
    );
}
