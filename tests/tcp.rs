//! The `tcp` source against real bytes and real clients: lines over several
//! connections arrive exactly once, JSON and syslog become fields, bad and
//! silent clients are counted without hurting the others, TLS works, and a
//! stop hands over everything read.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

const WAIT: Duration = Duration::from_secs(30);

/// A tcp source `in` with `extra` settings, and a file sink in `format`.
fn receiver(extra: &str, format: &str) -> (Logferry, SocketAddr) {
    let mut r = Logferry::start(&format!(
        "[sources.in]\ntype = \"tcp\"\naddress = \"127.0.0.1:0\"\n{extra}\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/received.log\"\nformat = \"{format}\"\n"
    ));
    let a = r.address("tcp source listening source=in ");
    (r, a)
}

fn counter(r: &Logferry, name: &str, kind: &str) -> u64 {
    r.final_counter(&format!("{name}{{component=\"in\",kind=\"{kind}\"}}"))
}

fn json_lines(r: &Logferry, n: usize) -> Vec<serde_json::Value> {
    wait_for_lines(&r.path("received.log"), n, WAIT)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn numbered_lines_over_several_connections_arrive_exactly_once() {
    const CONNS: usize = 4;
    const PER: usize = 25_000;
    let (mut r, addr) = receiver("", "raw");
    let senders: Vec<_> = (0..CONNS)
        .map(|c| {
            std::thread::spawn(move || {
                let mut text = Vec::new();
                for i in c * PER..(c + 1) * PER {
                    // one connection ends its lines with CRLF
                    let eol = if c == 1 { "\r\n" } else { "\n" };
                    write!(text, "line-{i}{eol}").unwrap();
                }
                let mut s = TcpStream::connect(addr).unwrap();
                // uneven writes, so lines straddle reads
                for piece in text.chunks(777 + c * 101) {
                    s.write_all(piece).unwrap();
                }
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    let lines = wait_for_lines(&r.path("received.log"), CONNS * PER, WAIT);
    assert_exactly(&lines, "line", CONNS * PER);
    assert!(r.stop().success());
    assert_eq!(
        r.final_counter("logferry_source_records_total{component=\"in\"}"),
        (CONNS * PER) as u64
    );
    assert_eq!(
        r.final_counter("logferry_tcp_connections_total{component=\"in\"}"),
        CONNS as u64
    );
}

#[test]
fn json_lines_become_records_and_bad_ones_are_kept_as_messages() {
    let (mut r, addr) = receiver("format = \"json\"\ntag = \"app.json\"", "json");
    let mut s = send(
        addr,
        b"{\"level\":\"info\",\"n\":1,\"nested\":{\"a\":[1,2]}}\r\nnot json\n{\"n\":2}\n[1,2]\n",
    );
    s.flush().unwrap();
    drop(s);
    let recs = json_lines(&r, 4);
    assert_eq!(recs[0]["tag"], "app.json");
    assert_eq!(
        recs[0]["record"],
        serde_json::json!({"level": "info", "n": 1, "nested": {"a": [1, 2]}})
    );
    assert_eq!(
        recs[1]["record"],
        serde_json::json!({"message": "not json"})
    );
    assert_eq!(recs[2]["record"], serde_json::json!({"n": 2}));
    assert_eq!(recs[3]["record"], serde_json::json!({"message": "[1,2]"}));
    assert!(r.stop().success());
    assert_eq!(
        counter(&r, "logferry_tcp_message_errors_total", "invalid_json"),
        2
    );
    assert!(
        r.log_text().contains("not a JSON object"),
        "{}",
        r.log_text()
    );
}

#[test]
fn octet_counted_syslog_from_util_linux_logger() {
    let logger = which("logger");
    let (mut r, addr) = receiver("framing = \"octet_counting\"\nparser = \"syslog\"", "json");
    const N: usize = 20;
    for i in 0..N {
        let status = Command::new(&logger)
            .args(["--tcp", "--octet-count", "--server", "127.0.0.1", "--port"])
            .arg(addr.port().to_string())
            .args(["-i", "-t", "myapp", "-p", "local3.warning", "--msgid", "M1"])
            .args(["--sd-id", "test@32473", "--sd-param", "seq=\"x\\\"y\""])
            .arg(format!("hello {i}\nsecond line"))
            .status()
            .unwrap();
        assert!(status.success());
    }
    let recs = json_lines(&r, N);
    let mut seen: Vec<String> = Vec::new();
    for rec in &recs {
        let f = &rec["record"];
        assert_eq!(f["facility"], "local3", "{rec}");
        assert_eq!(f["severity"], "warning", "{rec}");
        assert_eq!(f["app_name"], "myapp", "{rec}");
        assert_eq!(f["msgid"], "M1", "{rec}");
        assert_eq!(f["version"], 1, "{rec}");
        assert_eq!(f["structured_data"]["test@32473"]["seq"], "x\"y", "{rec}");
        assert!(f["hostname"].is_string(), "{rec}");
        assert!(f["procid"].is_string(), "{rec}");
        // the record's time is the message's: within a minute of now
        let t = chrono::DateTime::parse_from_rfc3339(rec["time"].as_str().unwrap()).unwrap();
        assert!(
            (chrono::Utc::now().timestamp() - t.timestamp()).abs() < 60,
            "{rec}"
        );
        seen.push(f["message"].as_str().unwrap().to_string());
    }
    seen.sort();
    let mut want: Vec<String> = (0..N).map(|i| format!("hello {i}\nsecond line")).collect();
    want.sort();
    assert_eq!(seen, want);
    assert!(r.stop().success());
    assert_eq!(
        counter(&r, "logferry_tcp_message_errors_total", "invalid_syslog"),
        0
    );
}

#[test]
fn rfc3164_from_python_syslog_handler() {
    let (mut r, addr) = receiver("parser = \"syslog\"", "json");
    let script = format!(
        r#"
import logging, logging.handlers, socket
h = logging.handlers.SysLogHandler(address=("127.0.0.1", {port}), socktype=socket.SOCK_STREAM,
    facility=logging.handlers.SysLogHandler.LOG_DAEMON)
h.append_nul = False
h.setFormatter(logging.Formatter("pyapp[%(process)d]: %(message)s\n"))
log = logging.getLogger("t")
log.addHandler(h)
log.setLevel(logging.DEBUG)
for i in range(10):
    log.error("disk %d full", i)
h.close()
"#,
        port = addr.port()
    );
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = json_lines(&r, 10);
    for (i, rec) in recs.iter().enumerate() {
        let f = &rec["record"];
        assert_eq!(f["facility"], "daemon", "{rec}");
        assert_eq!(f["severity"], "err", "{rec}");
        assert_eq!(f["app_name"], "pyapp", "{rec}");
        assert!(
            f["procid"].as_str().unwrap().parse::<u32>().is_ok(),
            "{rec}"
        );
        assert_eq!(f["message"], format!("disk {i} full"), "{rec}");
    }
    assert!(r.stop().success());
}

#[test]
fn over_long_lines_garbage_and_silent_clients_are_counted_and_others_unaffected() {
    let (mut r, addr) = receiver("max_line_bytes = 100\nidle_timeout = \"1s\"", "raw");
    // an over-long line, then a good one on the same connection
    let mut long = vec![b'x'; 1000];
    long.extend_from_slice(b"\nline-0\n");
    let _a = send(addr, &long);
    // binary garbage that never ends its line, kept open until idle
    let garbage: Vec<u8> = (0..50_000u32)
        .map(|i| (i * 7 % 251) as u8 + 1)
        .filter(|b| *b != b'\n')
        .collect();
    let _b = send(addr, &garbage);
    // a client that connects and says nothing
    let mut silent = TcpStream::connect(addr).unwrap();
    // a good client meanwhile
    let mut good = String::new();
    for i in 1..1000 {
        good.push_str(&format!("line-{i}\n"));
    }
    drop(send(addr, good.as_bytes()));
    let lines = wait_for_lines(&r.path("received.log"), 1000, WAIT);
    assert_exactly(&lines, "line", 1000);
    // the silent client is closed after idle_timeout
    silent
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(silent.read(&mut [0; 16]).unwrap_or(0), 0);
    r.wait_for_log("no data for", WAIT);
    // and so is the garbage's, up to a linger (1 s) later; the warning
    // is rate-limited, the counter below is not
    std::thread::sleep(Duration::from_millis(1600));
    assert!(r.stop().success());
    assert_eq!(
        counter(&r, "logferry_tcp_message_errors_total", "too_long"),
        2
    );
    assert!(counter(&r, "logferry_tcp_connection_errors_total", "idle_timeout") >= 2);
    assert_eq!(
        read_lines(&r.path("received.log")).len(),
        1000,
        "nothing of the garbage"
    );
}

#[test]
fn over_max_connections_the_idlest_is_closed_unless_none_is_idle() {
    let (mut r, addr) = receiver("max_connections = 2", "raw");
    let out = r.path("received.log");
    let mut a = send(addr, b"line-0\n");
    wait_for_lines(&out, 1, WAIT);
    let mut b = send(addr, b"line-1\n");
    wait_for_lines(&out, 2, WAIT);
    // a connection sent something within its linger (1 s) is not idle:
    // lines may wait unread in its socket
    std::thread::sleep(Duration::from_millis(1300));
    // both idle: a new sender closes the one idle the longest (a)
    let mut c = send(addr, b"line-2\n");
    wait_for_lines(&out, 3, WAIT);
    a.set_read_timeout(Some(WAIT)).unwrap();
    assert_eq!(a.read(&mut [0; 16]).unwrap_or(0), 0, "a is closed");
    // b and c each hold a begun message: neither is idle, so a new
    // connection is refused (closed at once: EOF or a reset)
    b.write_all(b"line-").unwrap();
    c.write_all(b"line-").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut refused = TcpStream::connect(addr).unwrap();
    refused.set_read_timeout(Some(WAIT)).unwrap();
    let _ = refused.write_all(b"line-99\n");
    assert_eq!(refused.read(&mut [0; 16]).unwrap_or(0), 0);
    b.write_all(b"3\n").unwrap();
    c.write_all(b"4\n").unwrap();
    drop((b, c));
    let lines = wait_for_lines(&out, 5, WAIT);
    assert!(r.stop().success());
    assert_exactly(&lines, "line", 5);
    assert_eq!(
        r.final_counter("logferry_tcp_connections_rejected_total{component=\"in\"}"),
        1
    );
    assert_eq!(
        r.final_counter("logferry_source_connections_evicted_total{component=\"in\"}"),
        1
    );
    let log = r.log_text();
    assert!(
        log.contains("max_connections reached and no connection is idle"),
        "{log}"
    );
    assert!(
        log.contains("closed the connection idle the longest"),
        "{log}"
    );
}

#[test]
fn a_stop_hands_over_what_was_read_from_open_connections() {
    let (mut r, addr) = receiver("", "raw");
    let mut text = String::new();
    for i in 0..999 {
        text.push_str(&format!("line-{i}\n"));
    }
    // the last line has no newline yet
    text.push_str("line-999");
    let _open = send(addr, text.as_bytes());
    // wait until it has been read (the first lines are written)
    wait_for_lines(&r.path("received.log"), 999, WAIT);
    assert!(r.stop().success());
    assert_exactly(&read_lines(&r.path("received.log")), "line", 1000);
}

#[test]
fn a_client_sending_in_bursts_is_read_as_it_sends_not_a_linger_at_a_time() {
    // between its bursts the reader catches up and lets the next lines
    // gather: a bulk's worth (1 MiB) ends the linger at once. Held to what
    // the kernel's buffers take per linger (at first a few hundred KB),
    // these 30 MB would wait out 20 s lingers for many minutes
    let (mut r, addr) = receiver("linger = \"20s\"", "raw");
    const LINES: usize = 2_000_000;
    let mut text = Vec::with_capacity(LINES * 16);
    for i in 0..LINES {
        writeln!(text, "burst-{i}").unwrap();
    }
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    for (k, piece) in text.chunks(64 * 1024).enumerate() {
        s.write_all(piece).unwrap();
        if k % 16 == 15 {
            // a pause after each MiB: the reader catches up
            std::thread::sleep(Duration::from_millis(3));
        }
    }
    drop(s);
    let lines = wait_for_lines(&r.path("received.log"), LINES, Duration::from_secs(90));
    assert_exactly(&lines, "burst", LINES);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}: the client waited for a linger",
        started.elapsed()
    );
    assert!(r.stop().success());
}

#[test]
fn a_stop_while_lines_gather_delivers_every_line_sent() {
    let (mut r, addr) = receiver("linger = \"30s\"", "raw");
    let out = r.path("received.log");
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"gather-0\n").unwrap();
    wait_for_lines(&out, 1, WAIT);
    // the next lines come while the reader lingers: they gather unread
    for i in 1..201 {
        s.write_all(format!("gather-{i}\n").as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(300));
    let stopping = Instant::now();
    // the client stays connected through the stop
    assert!(r.stop().success());
    // the stop ends the linger; it does not wait it out
    assert!(
        stopping.elapsed() < Duration::from_secs(20),
        "{:?}",
        stopping.elapsed()
    );
    assert_exactly(&read_lines(&out), "gather", 201);
    drop(s);
}

#[test]
fn a_client_that_closes_while_its_lines_gather_loses_none() {
    let (mut r, addr) = receiver("linger = \"2s\"", "raw");
    let out = r.path("received.log");
    for round in 0..3 {
        let mut s = TcpStream::connect(addr).unwrap();
        for i in 0..100 {
            s.write_all(format!("closed{round}-{i}\n").as_bytes())
                .unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(s);
    }
    let lines = wait_for_lines(&out, 300, WAIT);
    for round in 0..3 {
        assert_exactly(&lines, &format!("closed{round}"), 100);
    }
    assert!(r.stop().success());
    assert_eq!(read_lines(&out).len(), 300);
}

#[test]
fn with_a_disk_buffer_lines_are_read_at_once_and_survive_kill_9() {
    // the defaults, but the sink keeps a disk buffer: a line read is on
    // disk at once, so none may wait out a linger unread in the socket,
    // where a kill -9 would lose it
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[sources.in]\ntype = \"tcp\"\naddress = \"127.0.0.1:0\"\n\n\
         [sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{d}/received.log\"\nformat = \"raw\"\n\
         buffer = {{ type = \"disk\", dir = \"{d}/buffer\" }}\n",
        d = dir.path().display()
    );
    let out = dir.path().join("received.log");
    let mut r = Logferry::start(&config);
    let addr = r.address("tcp source listening source=in ");
    let mut s = TcpStream::connect(addr).unwrap();
    for i in 0..200 {
        s.write_all(format!("disk-{i}\n").as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    // time to read the last line and write it to the buffer, well under
    // the 1 s linger the source has without a disk buffer
    std::thread::sleep(Duration::from_millis(150));
    r.kill(); // SIGKILL
    drop(s);
    let mut r = Logferry::start(&config);
    r.address("tcp source listening source=in ");
    wait_until("every line", WAIT, || {
        numbers(&read_lines(&out), "disk").len() >= 200
    });
    // the buffer may send again what the file had before the kill
    let mut got = numbers(&read_lines(&out), "disk");
    got.dedup();
    assert_eq!(got, (0..200).collect::<Vec<_>>(), "lines lost to kill -9");
    assert!(r.stop().success());
}

#[test]
fn tls_clients_deliver_and_plain_clients_on_the_tls_port_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let (mut r, addr) = receiver(
        &format!(
            "tls = {{ cert_file = {:?}, key_file = {:?} }}",
            pki.server_cert.display().to_string(),
            pki.server_key.display().to_string()
        ),
        "raw",
    );
    // a plain client first: refused, counted
    let mut plain = send(addr, b"line-plain\n");
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = plain.read(&mut [0; 64]);
    // then a TLS client
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(&pki.ca).unwrap();
    for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, TcpStream::connect(addr).unwrap());
    for i in 0..500 {
        writeln!(tls, "line-{i}").unwrap();
    }
    tls.flush().unwrap();
    tls.conn.send_close_notify();
    tls.flush().unwrap();
    let lines = wait_for_lines(&r.path("received.log"), 500, WAIT);
    assert_exactly(&lines, "line", 500);
    assert!(r.stop().success());
    assert_eq!(
        counter(&r, "logferry_tcp_connection_errors_total", "tls"),
        1
    );
}

#[test]
fn with_verify_client_only_clients_with_a_valid_certificate_deliver() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let (mut r, addr) = receiver(
        &format!(
            "tls = {{ cert_file = {:?}, key_file = {:?}, ca_file = {:?}, verify_client = true }}",
            pki.server_cert, pki.server_key, pki.ca
        ),
        "raw",
    );
    // no certificate, then one the CA signed but that has expired
    let expired = Some((pki.expired_cert.as_path(), pki.expired_key.as_path()));
    for (i, cert) in [None, expired].into_iter().enumerate() {
        let mut s = tls_connect(addr, &pki.ca, cert);
        let _ = writeln!(s, "refused-{i}");
        let _ = s.flush();
        // the server's alert ends the connection
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    }
    let client = Some((pki.client_cert.as_path(), pki.client_key.as_path()));
    let mut tls = tls_connect(addr, &pki.ca, client);
    for i in 0..500 {
        writeln!(tls, "line-{i}").unwrap();
    }
    tls.flush().unwrap();
    tls.conn.send_close_notify();
    tls.flush().unwrap();
    let lines = wait_for_lines(&r.path("received.log"), 500, WAIT);
    assert!(r.stop().success());
    let lines_now = read_lines(&r.path("received.log"));
    assert_exactly(&lines, "line", 500);
    assert!(
        !lines_now.iter().any(|l| l.starts_with("refused")),
        "{lines_now:?}"
    );
    assert_eq!(
        counter(&r, "logferry_tcp_connection_errors_total", "tls"),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_stops_reading_the_socket() {
    use logferry::buffer::{queue, BufferConfig, WhenFull};
    use logferry::component::{shutdown_channel, SourceContext};
    use logferry::metrics::{Counter, Registry};
    use logferry::router::{Route, Router, TagPattern};
    use logferry::sources::tcp::{TcpSource, TcpSourceConfig};

    const QUEUE_BYTES: usize = 1 << 20;
    let registry = Registry::new();
    let config = BufferConfig {
        max_bytes: QUEUE_BYTES,
        when_full: WhenFull::Block,
        ..BufferConfig::default()
    };
    let (tx, mut rx) = queue("stalled", config, &registry);
    let route = Route {
        sink: "stalled".into(),
        pattern: TagPattern::new("**").unwrap(),
        queue: tx.clone(),
    };
    let (trigger, shutdown) = shutdown_channel();
    let cx = SourceContext {
        name: "in".into(),
        router: Router::new(vec![route], Counter::detached()),
        shutdown,
        metrics: registry.clone(),
        memory: logferry::memory::MemoryBudget::unlimited(),
    };
    let source_config: TcpSourceConfig = toml::from_str("address = \"127.0.0.1:0\"").unwrap();
    let source = TcpSource::bind(source_config, cx).await.unwrap();
    let addr = source.local_addr().unwrap();
    let running = tokio::spawn(source.run());

    // 100 KB of 100-byte lines per write; try to push 400 MB into a sink
    // that takes nothing
    let block: Vec<u8> = (0..1000)
        .flat_map(|i| format!("{i:099}\n").into_bytes())
        .collect();
    let blocks_wanted = 400_000_000 / block.len();
    let sender = write_until_blocked(addr, block, blocks_wanted);
    let (sent_while_stalled, blocked) = tokio::task::spawn_blocking(move || sender.join().unwrap())
        .await
        .unwrap();
    assert!(
        blocked,
        "the sender was never blocked: backpressure did not reach it"
    );
    assert!(
        sent_while_stalled < blocks_wanted / 10,
        "{sent_while_stalled} blocks accepted with a stalled sink"
    );
    assert!(
        tx.queued_bytes() <= QUEUE_BYTES,
        "queue over its limit: {}",
        tx.queued_bytes()
    );

    // the sink resumes: every whole line the sender wrote arrives
    let mut records = 0;
    while records < sent_while_stalled * 1000 {
        let d = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("records keep coming once the sink takes them")
            .unwrap();
        records += d.batch().count;
        d.accept();
    }
    drop(tx);
    trigger.trigger();
    // the stop hands over the rest of what was read: part of the block
    // whose write blocked, no more
    while let Some(d) = tokio::time::timeout(WAIT, rx.recv()).await.unwrap() {
        records += d.batch().count;
        d.accept();
    }
    assert!(
        records <= (sent_while_stalled + 1) * 1000,
        "{records} records from {sent_while_stalled} blocks and a part"
    );
    running.await.unwrap();
}

#[test]
fn out_of_descriptors_backs_off_and_recovers() {
    use std::os::unix::process::CommandExt;
    const NOFILE: u64 = 64;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logferry.toml");
    std::fs::write(
        &path,
        format!(
            "[sources.in]\ntype = \"tcp\"\naddress = \"127.0.0.1:0\"\nmax_connections = 1000\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{}/received.log\"\n",
            dir.path().display()
        ),
    )
    .unwrap();
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
    let mut r = Logferry::spawn(&mut cmd, dir);
    let addr = r.address("tcp source listening source=in ");
    let idle: Vec<TcpStream> = (0..2 * NOFILE)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    let warning = r.wait_for_log("accept failed", WAIT);
    assert!(warning.contains("out of file descriptors"), "{warning}");
    let cpu = |pid: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let f: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
        let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
        // SAFETY: sysconf only reads a constant.
        ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
    };
    let before = cpu(r.pid());
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu(r.pid()) - before;
    assert!(
        used < 0.5,
        "{used:.2} s of CPU in 2 s out of descriptors: the accept loop spins"
    );
    drop(idle);
    drop(send(addr, b"line-0\n"));
    let lines = wait_for_lines(&r.path("received.log"), 1, WAIT);
    assert_exactly(&lines, "line", 1);
    assert!(r.stop().success());
    assert!(counter(&r, "logferry_accept_errors_total", "emfile") >= 1);
}

/// The path of a program the test needs, or a failure that says how to
/// install it.
fn which(program: &str) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .output()
        .unwrap();
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        !path.is_empty(),
        "{program} is not installed: run scripts/test-deps.sh (apt-get install -y bsdutils)"
    );
    path
}

#[test]
fn idle_connections_over_max_connections_do_not_shut_out_a_sender() {
    const LIMIT: usize = 16;
    const IDLE: usize = 64;
    let (mut r, addr) = receiver(&format!("max_connections = {LIMIT}"), "raw");
    // idle peers: they connect and never send a byte
    let mut idle = Vec::new();
    for _ in 0..IDLE {
        idle.push(TcpStream::connect(addr).unwrap());
        std::thread::sleep(Duration::from_millis(5));
    }
    // a sender among them is admitted, and every line it sends arrives
    let mut text = String::new();
    for i in 0..200 {
        text.push_str(&format!("line-{i}\n"));
    }
    drop(send(addr, text.as_bytes()));
    let lines = wait_for_lines(&r.path("received.log"), 200, WAIT);
    assert_exactly(&lines, "line", 200);
    // the longest idle were closed to make room: the oldest first
    let mut oldest = idle.remove(0);
    oldest.set_read_timeout(Some(WAIT)).unwrap();
    assert_eq!(
        oldest.read(&mut [0u8; 1]).unwrap_or(0),
        0,
        "the oldest idle peer is closed"
    );
    drop(idle);
    assert!(r.stop().success());
    let evicted = r.final_counter("logferry_source_connections_evicted_total{component=\"in\"}");
    let refused = r.final_counter("logferry_tcp_connections_rejected_total{component=\"in\"}");
    assert_eq!(
        evicted + refused,
        (IDLE + 1 - LIMIT) as u64,
        "each connection over the limit evicted one or was refused"
    );
    assert!(
        evicted >= (IDLE - LIMIT) as u64 / 2,
        "{evicted} evicted, {refused} refused"
    );
    let log = r.log_text();
    let warnings = log
        .matches("closed the connection idle the longest")
        .count();
    assert!(
        (1..=10).contains(&warnings),
        "{warnings} warnings (rate-limited)\n{log}"
    );
}

#[test]
fn an_invalid_octet_count_closes_the_connection_and_is_counted() {
    let (mut r, addr) = receiver("framing = \"octet_counting\"", "raw");
    let mut zero = send(addr, b"6 zero-06 zero-10 6 zero-2");
    let mut overflow = send(addr, b"10 overflow-012345678901 overflow-1\n");
    for s in [&mut zero, &mut overflow] {
        s.set_read_timeout(Some(WAIT)).unwrap();
        assert_eq!(
            s.read(&mut [0u8; 1]).unwrap_or(0),
            0,
            "the connection is closed"
        );
    }
    // everyone else goes on
    drop(send(addr, b"6 good-06 good-1"));
    let lines = wait_for_lines(&r.path("received.log"), 5, WAIT);
    assert!(r.stop().success());
    let mut lines = lines;
    lines.sort();
    assert_eq!(
        lines,
        ["good-0", "good-1", "overflow-0", "zero-0", "zero-1"]
    );
    assert_eq!(
        counter(&r, "logferry_tcp_connection_errors_total", "framing"),
        2
    );
    let log = r.log_text();
    // warnings are rate-limited per kind: the first one is logged
    assert!(
        log.contains("octet count \\\"0\\\" is not a frame length")
            || log.contains("octet count \\\"12345678901\\\" is not a frame length"),
        "{log}"
    );
}

#[test]
fn peers_that_never_finish_a_tls_handshake_do_not_shut_out_a_sender() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let (mut r, addr) = receiver(
        &format!(
            "max_connections = 4\ntls = {{ cert_file = {:?}, key_file = {:?} }}",
            pki.server_cert.display().to_string(),
            pki.server_key.display().to_string()
        ),
        "raw",
    );
    // connected, silent: each waits in its TLS handshake
    let silent: Vec<TcpStream> = (0..16)
        .map(|_| {
            let s = TcpStream::connect(addr).unwrap();
            std::thread::sleep(Duration::from_millis(5));
            s
        })
        .collect();
    let mut tls = tls_connect(addr, &pki.ca, None);
    for i in 0..200 {
        writeln!(tls, "line-{i}").unwrap();
    }
    tls.flush().unwrap();
    let lines = wait_for_lines(&r.path("received.log"), 200, WAIT);
    assert_exactly(&lines, "line", 200);
    drop((tls, silent));
    assert!(r.stop().success());
    assert!(r.final_counter("logferry_source_connections_evicted_total{component=\"in\"}") >= 1);
}
