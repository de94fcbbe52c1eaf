//! What an operator sees: `/metrics` counts exactly what went through,
//! `/ready` follows a sink's downstream, `/config` hides secrets, and
//! `logferry top` shows live rates (in a real terminal, under tmux).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use logferry::protocol::forward::{write_message_entry, write_packed_forward};

const FORWARD_TO_FILE_WITH_API: &str = r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.out]
type = "file"
match = "**"
path = "{dir}/out.log"

[api]
address = "127.0.0.1:0"
"#;

/// Sends `prefix-{from}` … `prefix-{to - 1}` in acked chunks of up to 500.
fn send_numbered(s: &mut TcpStream, prefix: &str, from: usize, to: usize) {
    send_tagged(s, "app", prefix, from, to)
}

/// [`send_numbered`] with tag `tag`.
fn send_tagged(s: &mut TcpStream, tag: &str, prefix: &str, from: usize, to: usize) {
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut k = from;
    while k < to {
        let end = (k + 500).min(to);
        let mut e = Vec::new();
        for i in k..end {
            write_message_entry(&mut e, 1_700_000_000, 0, format!("{prefix}-{i}").as_bytes());
        }
        let mut frame = Vec::new();
        let id = format!("c{k}");
        write_packed_forward(&mut frame, tag, &e, end - k, Some(id.as_bytes()));
        s.write_all(&frame).unwrap();
        let mut ack = vec![0u8; 1 + 4 + 1 + id.len()];
        s.read_exact(&mut ack).expect("an ack for every chunk");
        k = end;
    }
}

fn metrics(api: SocketAddr) -> String {
    api_get(api, "/metrics")
}

#[test]
fn metrics_count_exactly_what_went_through() {
    const N: usize = 7_321;
    let mut lf = Logferry::start(FORWARD_TO_FILE_WITH_API);
    let addr = lf.forward_addr("in");
    let api = lf.address("api listening");
    let mut client = TcpStream::connect(addr).unwrap();
    send_numbered(&mut client, "rec", 0, N);
    let lines = wait_for_lines(&lf.path("out.log"), N, Duration::from_secs(30));
    assert_exactly(&lines, "rec", N);

    // one malformed frame on another connection: logged and counted
    drop(send(addr, &[0xc1, 0xc1, 0xc1, 0xc1]));
    lf.wait_for_log("frame", Duration::from_secs(10));

    let m = metrics(api);
    let v = |q: &str| metric_value(&m, q);
    assert_eq!(
        v(r#"logferry_source_records_total{component="in",component_type="forward"}"#),
        N as f64,
        "{m}"
    );
    assert_eq!(
        v(r#"logferry_sink_records_total{component="out",component_type="file"}"#),
        N as f64,
        "{m}"
    );
    let written = std::fs::metadata(lf.path("out.log")).unwrap().len();
    assert_eq!(
        v(r#"logferry_sink_bytes_total{component="out"}"#),
        written as f64
    );
    assert!(v(r#"logferry_source_bytes_total{component="in"}"#) > written as f64 / 2.0);
    // everything is delivered: nothing held, the buffer is empty
    assert_eq!(v(r#"logferry_buffer_records{component="out"}"#), 0.0, "{m}");
    assert_eq!(
        v(r#"logferry_buffer_fill_ratio{component="out"}"#),
        0.0,
        "{m}"
    );
    assert!(m.contains("# TYPE logferry_buffer_fill_ratio gauge"), "{m}");
    // the client is still connected; the bad one is gone (its task ends
    // just after it logs the frame error)
    let open = r#"logferry_open_connections{component="in",component_type="forward"}"#;
    wait_until(
        "the bad connection to be closed",
        Duration::from_secs(10),
        || metric_value(&metrics(api), open) == 1.0,
    );
    assert!(
        v(r#"logferry_forward_frame_errors_total{component="in",component_type="forward"}"#) >= 1.0,
        "{m}"
    );
    assert_eq!(v(r#"logferry_router_unrouted_records_total"#), 0.0, "{m}");
    assert!(m.ends_with("# EOF\n"), "OpenMetrics text ends with # EOF");
    drop(client);
    let deadline = Instant::now() + Duration::from_secs(10);
    while metric_value(
        &metrics(api),
        r#"logferry_open_connections{component="in"}"#,
    ) != 0.0
    {
        assert!(
            Instant::now() < deadline,
            "the closed connection is still counted as open"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter(r#"logferry_sink_records_total{component="out"}"#),
        N as u64
    );
}

#[test]
fn each_sink_counts_what_it_was_handed() {
    const ALL_ONLY: usize = 1_234;
    const BOTH: usize = 2_345;
    let mut lf = Logferry::start(
        r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.all]
type = "file"
match = "**"
path = "{dir}/all.log"

[sinks.some]
type = "file"
match = "app.some"
path = "{dir}/some.log"

[api]
address = "127.0.0.1:0"
"#,
    );
    let api = lf.address("api listening");
    let mut client = TcpStream::connect(lf.forward_addr("in")).unwrap();
    send_tagged(&mut client, "app.other", "o", 0, ALL_ONLY);
    send_tagged(&mut client, "app.some", "s", 0, BOTH);
    wait_for_lines(
        &lf.path("all.log"),
        ALL_ONLY + BOTH,
        Duration::from_secs(30),
    );
    wait_for_lines(&lf.path("some.log"), BOTH, Duration::from_secs(30));
    let m = metrics(api);
    let v = |q: &str| metric_value(&m, q);
    assert_eq!(
        v(r#"logferry_sink_received_records_total{component="all",component_type="file"}"#),
        (ALL_ONLY + BOTH) as f64,
        "{m}"
    );
    assert_eq!(
        v(r#"logferry_sink_received_records_total{component="some",component_type="file"}"#),
        BOTH as f64,
        "{m}"
    );
    // bytes as they arrived (msgpack entries), more for the sink given more
    let some = v(r#"logferry_sink_received_bytes_total{component="some"}"#);
    let all = v(r#"logferry_sink_received_bytes_total{component="all"}"#);
    assert!(some > 0.0 && all > some, "{m}");
    drop(client);
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter(r#"logferry_sink_received_records_total{component="some"}"#),
        BOTH as u64
    );
}

fn receiver(address: &str) -> Logferry {
    Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"{address}\"\n\n\
         [sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/received.log\"\n"
    ))
}

#[test]
fn ready_follows_a_forward_sinks_downstream() {
    let mut rx = receiver("127.0.0.1:0");
    let rx_addr = rx.forward_addr("in");
    let mut relay = Logferry::start(&format!(
        r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.local]
type = "file"
match = "**"
path = "{{dir}}/local.log"

[sinks.up]
type = "forward"
match = "**"
servers = [{{ address = "{rx_addr}" }}]
require_ack = true
reconnect_min = "50ms"
reconnect_max = "200ms"

[api]
address = "127.0.0.1:0"
"#
    ));
    let api = relay.address("api listening");
    let body = wait_ready(api, "200", Duration::from_secs(10));
    assert!(body.contains(r#""up":{"ready":true"#), "{body}");
    assert!(body.contains(r#""local":{"ready":true"#), "{body}");

    // records go through while connected; the ack round trip is measured
    let mut client = TcpStream::connect(relay.forward_addr("in")).unwrap();
    send_numbered(&mut client, "a", 0, 1000);
    wait_for_lines(&rx.path("received.log"), 1000, Duration::from_secs(20));
    let m = metrics(api);
    assert!(
        metric_value(
            &m,
            r#"logferry_forward_sink_ack_rtt_seconds_count{component="up",component_type="forward"}"#
        ) >= 1.0,
        "{m}"
    );
    assert_eq!(
        metric_value(&m, r#"logferry_sink_connected_servers{component="up"}"#),
        1.0
    );

    // the downstream dies: not ready, and the body says which sink and why
    rx.kill();
    let body = wait_ready(api, "503", Duration::from_secs(10));
    assert!(body.contains(r#""ready":false"#), "{body}");
    assert!(
        body.contains(r#""up":{"ready":false,"reason":"no server connected"#),
        "{body}"
    );
    assert!(body.contains(r#""local":{"ready":true"#), "{body}");
    // the refused connections are logged and counted
    relay.wait_for_log("server connection failed", Duration::from_secs(10));
    let deadline = Instant::now() + Duration::from_secs(10);
    while metric_value(
        &metrics(api),
        r#"logferry_forward_sink_connection_errors_total{component="up",kind="connect"}"#,
    ) < 1.0
    {
        assert!(Instant::now() < deadline, "{}", metrics(api));
        std::thread::sleep(Duration::from_millis(50));
    }

    // it comes back on the same address: ready again, records flow again
    let mut rx = receiver(&rx_addr.to_string());
    rx.forward_addr("in");
    wait_ready(api, "200", Duration::from_secs(10));
    send_numbered(&mut client, "b", 0, 100);
    wait_for_lines(&rx.path("received.log"), 100, Duration::from_secs(20));
    drop(client);
    assert!(relay.stop().success());
    assert!(rx.stop().success());
}

#[test]
fn config_shows_the_running_configuration_without_secrets() {
    let mut lf = Logferry::start(
        r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"
shared_key = "in-shared-key-secret"
users = [{ username = "alice", password = "alice-password-secret" }]

[sinks.up]
type = "forward"
match = "**"
servers = [{ address = "127.0.0.1:9" }]
shared_key = "up-shared-key-secret"
username = "bob"
password = "bob-password-secret"

[api]
address = "127.0.0.1:0"
"#,
    );
    let api = lf.address("api listening");
    let r = api_get(api, "/config");
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    for secret in [
        "in-shared-key-secret",
        "alice-password-secret",
        "up-shared-key-secret",
        "bob-password-secret",
    ] {
        assert!(!r.contains(secret), "{secret} shown:\n{r}");
    }
    let body = r.split_once("\r\n\r\n").unwrap().1;
    let config: toml::Table = toml::from_str(body).expect("/config is TOML");
    let up = &config["sinks"]["up"];
    assert_eq!(up["password"].as_str(), Some("***"));
    assert_eq!(up["shared_key"].as_str(), Some("***"));
    assert_eq!(up["username"].as_str(), Some("bob"));
    assert_eq!(
        config["sources"]["in"]["users"][0]["password"].as_str(),
        Some("***")
    );
    assert_eq!(
        config["sources"]["in"]["users"][0]["username"].as_str(),
        Some("alice")
    );
    assert_eq!(
        config["sources"]["in"]["address"].as_str(),
        Some("127.0.0.1:0")
    );
    assert!(api_get(api, "/health").ends_with("ok\n"));
    assert!(lf.stop().success());
}

/// Sends numbered records to `addr` until `stop` is set.
fn load(addr: SocketAddr, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            send_numbered(&mut s, "load", n, n + 200);
            n += 200;
            std::thread::sleep(Duration::from_millis(5));
        }
        n
    })
}

/// The records/s column of `component`'s row in a `logferry top` table.
fn rate(table: &str, component: &str) -> Option<f64> {
    let row = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(component))?;
    row.split_whitespace().nth(3)?.parse().ok()
}

#[test]
fn top_once_prints_rates_for_scripts() {
    let mut lf = Logferry::start(FORWARD_TO_FILE_WITH_API);
    let api = lf.address("api listening");
    let stop = Arc::new(AtomicBool::new(false));
    let sender = load(lf.forward_addr("in"), stop.clone());
    std::thread::sleep(Duration::from_millis(300));
    let out = Command::new(BIN)
        .args(["top", "--once", "--interval", "1s", "--api"])
        .arg(api.to_string())
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let sent = sender.join().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{table}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(table.starts_with("COMPONENT"), "{table}");
    assert!(
        !table.contains('\x1b'),
        "no escapes in --once output:\n{table}"
    );
    let row = table
        .lines()
        .find(|l| l.starts_with("in "))
        .expect("a row for `in`");
    assert!(row.contains("forward") && row.contains("source"), "{row}");
    assert!(rate(&table, "in").unwrap() > 0.0, "{table}");
    assert!(rate(&table, "out").unwrap() > 0.0, "{table}");
    assert!(sent > 0);

    // no API there: a clear error and a failure status
    let out = Command::new(BIN)
        .args(["top", "--once", "--api", "127.0.0.1:9"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot connect to the api at 127.0.0.1:9"),
        "{err}"
    );
    assert!(lf.stop().success());
}

/// A tmux server of this test's own, removed when dropped.
struct Tmux(String);

impl Tmux {
    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.0]);
        c
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

#[test]
fn top_shows_live_rates_in_a_terminal() {
    let mut lf = Logferry::start(FORWARD_TO_FILE_WITH_API);
    let api = lf.address("api listening");
    let stop = Arc::new(AtomicBool::new(false));
    let sender = load(lf.forward_addr("in"), stop.clone());

    let tmux = Tmux(format!("logferry-top-{}", std::process::id()));
    let started = tmux
        .cmd()
        .args(["new-session", "-d", "-s", "top", "-x", "140", "-y", "30"])
        .arg(format!("{BIN} top --interval 300ms --api {api}"))
        .status()
        .expect("tmux is installed (scripts/test-deps.sh)");
    assert!(started.success());

    let deadline = Instant::now() + Duration::from_secs(20);
    let pane = loop {
        let out = tmux
            .cmd()
            .args(["capture-pane", "-p", "-t", "top"])
            .output()
            .unwrap();
        let pane = String::from_utf8_lossy(&out.stdout).to_string();
        let live = |c| rate(&pane, c).is_some_and(|r| r > 0.0);
        if live("in") && live("out") {
            break pane;
        }
        assert!(
            Instant::now() < deadline,
            "no live rates in the pane:\n{pane}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(pane.contains("logferry top"), "{pane}");
    assert!(pane.contains("COMPONENT"), "{pane}");
    let out_row = pane.lines().find(|l| l.starts_with("out ")).unwrap();
    assert!(
        out_row.contains("file") && out_row.contains("sink"),
        "{pane}"
    );
    // BUFFER, then IN/S (what the sink was handed)
    let cols: Vec<&str> = out_row.split_whitespace().collect();
    assert!(cols[8].ends_with('%'), "buffer fill shown: {pane}");
    assert!(pane.contains("IN/S"), "{pane}");
    stop.store(true, Ordering::Relaxed);
    sender.join().unwrap();
    drop(tmux);
    assert!(lf.stop().success());
}

#[test]
fn tail_lag_shows_what_is_written_and_not_read_yet() {
    // the only sink cannot deliver and its small queue fills: reading stops
    let mut lf = Logferry::start(
        r#"
[sources.logs]
type = "tail"
paths = ["{dir}/logs/*.log"]
tag = "app"
read_from_head = true
refresh_interval = "100ms"
poll_interval = "50ms"
checkpoint_dir = "{dir}/state"
per_file_metrics = true

[sinks.up]
type = "forward"
match = "**"
servers = [{ address = "127.0.0.1:9" }]
buffer = { max_bytes = "64KiB" }
drain_timeout = "1s"

[api]
address = "127.0.0.1:0"
"#,
    );
    let api = lf.address("api listening");
    let logs = lf.dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let file = logs.join("app.log");
    let line = format!("{}\n", "x".repeat(99));
    std::fs::write(&file, line.repeat(20_000)).unwrap();
    let size = 20_000.0 * 100.0;

    let per_file = format!(
        "logferry_tail_file_lag_bytes{{component=\"logs\",path=\"{}\"}}",
        file.display()
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let m = metrics(api);
        let lag = metric_value(
            &m,
            r#"logferry_tail_lag_bytes{component="logs",component_type="tail"}"#,
        );
        let file_lag = metric_value(&m, &per_file);
        // blocked after reading at most the queue and a batch or two
        if lag > size / 2.0 && file_lag == lag {
            assert!(lag <= size, "{m}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "lag {lag}, file lag {file_lag}:\n{m}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(lf.stop().success());
}

#[test]
fn tail_lag_returns_to_zero_once_read() {
    let mut lf = Logferry::start(
        r#"
[sources.logs]
type = "tail"
paths = ["{dir}/logs/*.log"]
tag = "app"
read_from_head = true
refresh_interval = "100ms"
poll_interval = "50ms"
checkpoint_dir = "{dir}/state"

[sinks.out]
type = "file"
match = "**"
path = "{dir}/out.log"

[api]
address = "127.0.0.1:0"
"#,
    );
    let api = lf.address("api listening");
    let logs = lf.dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let body: String = (0..5000).map(|i| format!("line-{i}\n")).collect();
    std::fs::write(logs.join("app.log"), body).unwrap();
    let lines = wait_for_lines(&lf.path("out.log"), 5000, Duration::from_secs(20));
    assert_exactly(&lines, "line", 5000);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = metrics(api);
        let q = r#"logferry_tail_lag_bytes{component="logs"}"#;
        assert!(m.contains("logferry_tail_lag_bytes{"), "{m}");
        if metric_value(&m, q) == 0.0 {
            break;
        }
        assert!(Instant::now() < deadline, "{m}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        metric_value(
            &metrics(api),
            r#"logferry_source_records_total{component="logs"}"#
        ),
        5000.0
    );
    assert!(lf.stop().success());
}

/// One request to the API: `request` is `METHOD /path`, then `headers`
/// and `body`. Returns the status, the head and the body.
fn api_request(
    api: SocketAddr,
    request: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut s = TcpStream::connect(api).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut head = format!("{request} HTTP/1.1\r\nhost: {api}\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    s.write_all(head.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (status, head.to_string(), body.to_string())
}

/// `logferry_reloads_total{result="ok"}` now.
fn reloads_ok(api: SocketAddr) -> f64 {
    metric_value(&metrics(api), r#"logferry_reloads_total{result="ok"}"#)
}

fn refused(api: SocketAddr, reason: &str) -> f64 {
    metric_value(
        &metrics(api),
        &format!("logferry_api_refused_requests_total{{reason=\"{reason}\"}}"),
    )
}

#[test]
fn a_plain_post_reloads_and_what_a_web_page_can_send_is_refused() {
    let mut lf = Logferry::start(FORWARD_TO_FILE_WITH_API);
    let api = lf.address("api listening");
    // what the docs show: no token, no Origin, no content type
    let (status, _, body) = api_request(api, "POST /reload", &[], "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(reloads_ok(api), 1.0);
    // (headers, body, status, refusal reason)
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, u16, &'a str);
    let cross_site: [Case; 6] = [
        (&[("Origin", "http://evil.example")], "", 403, "origin"),
        (&[("Origin", "null")], "", 403, "origin"),
        (&[("Sec-Fetch-Site", "cross-site")], "", 403, "cross_site"),
        // a form on another site posting to us (Origin left out, as an
        // old browser or a privacy extension would)
        (
            &[("Content-Type", "text/plain")],
            "reload=1",
            415,
            "content_type",
        ),
        (
            &[("Content-Type", "application/x-www-form-urlencoded")],
            "reload=1",
            415,
            "content_type",
        ),
        (
            &[("Content-Type", "multipart/form-data; boundary=x")],
            "--x--",
            415,
            "content_type",
        ),
    ];
    for (headers, body, want, reason) in cross_site {
        let before = refused(api, reason);
        let (status, _, answer) = api_request(api, "POST /reload", headers, body);
        assert_eq!(status, want, "{headers:?}: {answer}");
        assert_eq!(refused(api, reason), before + 1.0, "{headers:?}");
    }
    // nothing of that reloaded
    assert_eq!(reloads_ok(api), 1.0);
    // the API's own origin, as its own page would send it
    let own = format!("http://{api}");
    let (status, _, body) = api_request(
        api,
        "POST /reload",
        &[
            ("Origin", &own),
            ("Sec-Fetch-Site", "same-origin"),
            ("Content-Type", "application/json"),
        ],
        "{}",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(reloads_ok(api), 2.0);
    // without a token, /config stays readable
    assert!(api_get(api, "/config").starts_with("HTTP/1.1 200"));
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert!(lf.log_text().contains("api request refused"));
}

/// The API of [`FORWARD_TO_FILE_WITH_API`] with `token` lines added.
fn with_token(token: &str) -> String {
    FORWARD_TO_FILE_WITH_API.replace(
        "[api]\naddress = \"127.0.0.1:0\"",
        &format!("[api]\naddress = \"127.0.0.1:0\"\n{token}"),
    )
}

/// The token rules, checked against a running logferry whose token is
/// `token`: reload and /config need it, monitoring does not.
fn token_is_required(lf: &mut Logferry, token: &str) {
    let api = lf.address("api listening");
    let right = format!("Bearer {token}");
    let wrong = format!("Bearer {token}x");
    let (status, head, _) = api_request(api, "POST /reload", &[], "");
    assert_eq!(status, 401, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{head}"
    );
    let (status, _, _) = api_request(api, "POST /reload", &[("Authorization", &wrong)], "");
    assert_eq!(status, 401);
    let (status, _, _) = api_request(api, "POST /reload", &[("Authorization", "Basic eDp5")], "");
    assert_eq!(status, 401);
    assert_eq!(refused(api, "no_token"), 2.0);
    assert_eq!(refused(api, "wrong_token"), 1.0);
    assert_eq!(reloads_ok(api), 0.0, "a refused request reloaded");
    let (status, _, body) = api_request(api, "POST /reload", &[("Authorization", &right)], "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(reloads_ok(api), 1.0);
    // the right token does not let another site in
    let (status, _, _) = api_request(
        api,
        "POST /reload",
        &[("Authorization", &right), ("Origin", "http://evil.example")],
        "",
    );
    assert_eq!(status, 403);
    assert_eq!(reloads_ok(api), 1.0);
    // /config shows the topology: the token guards it too
    let (status, _, body) = api_request(api, "GET /config", &[], "");
    assert_eq!(status, 401, "{body}");
    let (status, _, body) = api_request(api, "GET /config", &[("Authorization", &wrong)], "");
    assert_eq!(status, 401, "{body}");
    let (status, _, body) = api_request(api, "GET /config", &[("Authorization", &right)], "");
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains(token), "the token shown:\n{body}");
    toml::from_str::<toml::Table>(&body).expect("/config is TOML");
    // monitoring stays open
    for open in ["/metrics", "/health", "/ready"] {
        let (status, _, body) = api_request(api, &format!("GET {open}"), &[], "");
        assert!(status == 200 || status == 503, "{open}: {status} {body}");
    }
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert!(!lf.log_text().contains(token), "{}", lf.log_text());
}

#[test]
fn a_token_from_a_file_guards_reload_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("api-token");
    std::fs::write(&file, "file-token-4f9a2c\n").unwrap();
    let mut lf = Logferry::start(&with_token(&format!(
        "token_file = {:?}",
        file.display().to_string()
    )));
    token_is_required(&mut lf, "file-token-4f9a2c");
}

#[test]
fn a_token_from_the_environment_guards_reload_and_config() {
    for key in [
        "token_env = \"LF_TEST_API_TOKEN\"",
        "token = \"${LF_TEST_API_TOKEN}\"",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let config = with_token(key).replace("{dir}", &dir.path().display().to_string());
        let path = dir.path().join("logferry.toml");
        std::fs::write(&path, config).unwrap();
        let mut lf = Logferry::spawn(
            Command::new(common::BIN)
                .args(["run", "--config"])
                .arg(&path)
                .env("LF_TEST_API_TOKEN", "env-token-7d1e0b"),
            dir,
        );
        token_is_required(&mut lf, "env-token-7d1e0b");
    }
}

#[test]
fn a_missing_token_is_an_error_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    for key in [
        "token_file = \"/nonexistent/api-token\"",
        "token_env = \"LF_TEST_API_TOKEN_UNSET\"",
        "token = \"${LF_TEST_API_TOKEN_UNSET:-}\"",
    ] {
        std::fs::write(&path, with_token(key).replace("{dir}", "/tmp")).unwrap();
        let out = Command::new(common::BIN)
            .args(["run", "-c"])
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{key}: {stderr}");
        assert!(stderr.contains(":13: [api]: token"), "{key}: {stderr}");
    }
}

#[test]
fn an_api_beyond_loopback_without_a_token_is_warned_about_at_start() {
    let open = FORWARD_TO_FILE_WITH_API.replace(
        "[api]\naddress = \"127.0.0.1:0\"",
        "[api]\naddress = \"0.0.0.0:0\"",
    );
    let mut lf = Logferry::start(&open);
    let api = lf.address("api listening");
    let local: SocketAddr = format!("127.0.0.1:{}", api.port()).parse().unwrap();
    assert_eq!(
        metric_value(
            &metrics(local),
            r#"logferry_startup_warnings_total{kind="api_without_token"}"#
        ),
        1.0
    );
    assert!(lf.stop().success());
    let warned = lf
        .log_text()
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("is not a loopback address"))
        .count();
    assert_eq!(warned, 1, "{}", lf.log_text());

    let mut lf = Logferry::start(&with_token("token = \"a-token-value\"").replace(
        "[api]\naddress = \"127.0.0.1:0\"",
        "[api]\naddress = \"0.0.0.0:0\"",
    ));
    lf.address("api listening");
    assert!(lf.stop().success());
    assert!(
        !lf.log_text().contains("is not a loopback address"),
        "{}",
        lf.log_text()
    );
}
