//! The HTTP source over HTTP/2: many requests at once on one connection,
//! in plain text (prior knowledge) and over TLS (ALPN, with curl), each
//! answered on its own: its own status, its own `request_timeout`, and a
//! bad one among them disturbs none of the others.

mod common;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use common::*;

#[test]
fn two_hundred_streams_on_one_connection_each_answered_and_kept_once() {
    let mut lf = Logferry::start(&http_to_file(
        r#"
max_streams = 16
max_body_bytes = "1KiB""#,
    ));
    let addr = lf.http_addr("in");
    // more streams than max_streams allows at once (the client waits for
    // room), one too large and one malformed among them
    const TOO_LARGE: usize = 50;
    const MALFORMED: usize = 100;
    let requests = (0..200)
        .map(|i| match i {
            TOO_LARGE => ("/h2".into(), "text/plain", vec![b'x'; 2048]),
            MALFORMED => ("/h2".into(), "application/json", b"{not json".to_vec()),
            _ => ("/h2".into(), "text/plain", format!("h2-{i}\n").into_bytes()),
        })
        .collect();
    let answers = h2_posts(addr, requests);
    assert_eq!(answers.len(), 200, "{answers:?}");
    for (i, a) in answers.iter().enumerate() {
        let want = match i {
            TOO_LARGE => 413,
            MALFORMED => 400,
            _ => 200,
        };
        assert_eq!(a.as_ref().map(|a| a.0), Ok(want), "request {i}: {a:?}");
    }
    // each 200 was given after its records were written
    let kept: BTreeSet<usize> = numbers(&read_lines(&lf.path("unified.log")), "h2")
        .into_iter()
        .collect();
    let want: BTreeSet<usize> = (0..200)
        .filter(|i| ![TOO_LARGE, MALFORMED].contains(i))
        .collect();
    assert_eq!(kept, want);
    assert!(lf.stop().success());
    assert_exactly_counted(&lf, "logferry_http_connections_total{component=\"in\"}", 1);
    assert_exactly_counted(
        &lf,
        "logferry_http_errors_total{component=\"in\",kind=\"too_large\"}",
        1,
    );
    assert_exactly_counted(
        &lf,
        "logferry_http_errors_total{component=\"in\",kind=\"malformed\"}",
        1,
    );
    assert_eq!(
        numbers(&read_lines(&lf.path("unified.log")), "h2").len(),
        198
    );
}

#[test]
fn a_stream_whose_headers_pass_max_header_bytes_is_refused_alone() {
    let mut lf = Logferry::start(&http_to_file(r#"max_header_bytes = "8KiB""#));
    let addr = lf.http_addr("in");
    // a tag of 12 KiB in the path: the header list is past the cap
    let long = format!("/{}", "a".repeat(12 * 1024));
    let requests = (0..20)
        .map(|i| {
            let path = if i == 10 { long.clone() } else { "/h2".into() };
            (path, "text/plain", format!("h2-{i}\n").into_bytes())
        })
        .collect();
    let answers = h2_posts(addr, requests);
    for (i, a) in answers.iter().enumerate() {
        let want = if i == 10 { 431 } else { 200 };
        assert_eq!(a.as_ref().map(|a| a.0), Ok(want), "request {i}: {a:?}");
    }
    assert!(lf.stop().success());
    let kept = numbers(&read_lines(&lf.path("unified.log")), "h2");
    assert_eq!(kept.len(), 19, "{kept:?}");
    assert!(!kept.contains(&10));
}

fn assert_exactly_counted(lf: &Logferry, counter: &str, n: u64) {
    assert_eq!(lf.final_counter(counter), n, "{counter}");
}

#[test]
fn streams_waiting_for_a_dead_sink_each_time_out_on_their_own() {
    // the sink never accepts: every stream is answered 503 at its own
    // request_timeout, none waits for another one's
    let mut lf = Logferry::start(&unreachable_sink("1s", "", "max_attempts = 0"));
    let addr = lf.http_addr("in");
    let requests = (0..5)
        .map(|i| {
            (
                "/t".into(),
                "text/plain",
                format!("never-{i}\n").into_bytes(),
            )
        })
        .collect();
    let start = std::time::Instant::now();
    let answers = h2_posts(addr, requests);
    let took = start.elapsed();
    for a in &answers {
        assert_eq!(a, &Ok((503, Some("1".to_string()))));
    }
    // a stream whose timer was lost would wait for the client's own
    // timeout, or for ever
    assert!(took < Duration::from_secs(20), "answered after {took:?}");
    assert!(lf.stop().success());
    assert_exactly_counted(
        &lf,
        "logferry_http_errors_total{component=\"in\",kind=\"ack_timeout\"}",
        5,
    );
}

/// `curl` with its arguments; stdout, failing on a non-zero exit.
fn curl(args: &[&str]) -> String {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "60"])
        .args(args)
        .output()
        .expect("curl (apt-get install curl)");
    assert!(
        out.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn curl_speaks_http2_over_tls_by_alpn_and_in_plain_text_by_prior_knowledge() {
    let certs = tempfile::tempdir().unwrap();
    let pki = pki(certs.path());
    let mut lf = Logferry::start(&format!(
        r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"
tls = {{ cert_file = {:?}, key_file = {:?} }}

[sources.plain]
type = "http"
address = "127.0.0.1:0"

[sinks.unified]
type = "file"
match = "**"
path = "{{dir}}/unified.log"
"#,
        pki.server_cert, pki.server_key
    ));
    let tls = lf.http_addr("in");
    let plain = lf.http_addr("plain");
    // 50 transfers multiplexed over one TLS connection that chose h2
    let resolve = format!("localhost:{}:127.0.0.1", tls.port());
    let ca = pki.ca.to_str().unwrap();
    let mut args: Vec<String> = vec!["--parallel".into(), "--parallel-max".into(), "20".into()];
    for i in 0..50 {
        args.extend(
            [
                "--resolve",
                &resolve,
                "--cacert",
                ca,
                "-H",
                "Content-Type: text/plain",
                "--data-binary",
                &format!("tls-{i}\n"),
                "-o",
                "/dev/null",
                "-w",
                "%{http_version} %{response_code}\\n",
                &format!("https://localhost:{}/secure", tls.port()),
            ]
            .map(String::from),
        );
        if i < 49 {
            args.push("--next".into());
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = curl(&args);
    assert_eq!(out.lines().filter(|l| *l == "2 200").count(), 50, "{out}");
    // plain text: HTTP/2 by prior knowledge, and HTTP/1.1 on the same port
    let url = format!("http://{plain}/plain");
    let fmt = "%{http_version} %{response_code}";
    let h2 = curl(&[
        "--http2-prior-knowledge",
        "-H",
        "Content-Type: text/plain",
        "--data-binary",
        "plain-0\n",
        "-w",
        fmt,
        &url,
    ]);
    assert_eq!(h2, "2 200");
    let h1 = curl(&[
        "-H",
        "Content-Type: text/plain",
        "--data-binary",
        "plain-1\n",
        "-w",
        fmt,
        &url,
    ]);
    assert_eq!(h1, "1.1 200");
    assert!(lf.stop().success());
    let lines = read_lines(&lf.path("unified.log"));
    assert_exactly(&lines, "tls", 50);
    assert_exactly(&lines, "plain", 2);
    assert_exactly_counted(&lf, "logferry_http_connections_total{component=\"in\"}", 1);
}

#[test]
fn with_http2_off_a_prior_knowledge_client_is_refused_and_http1_served() {
    let mut lf = Logferry::start(&http_to_file("http2 = false"));
    let addr = lf.http_addr("in");
    let answers = h2_posts(addr, vec![("/t".into(), "text/plain", b"h2-0\n".to_vec())]);
    assert!(answers[0].is_err(), "{answers:?}");
    let url = format!("http://{addr}/t");
    let h1 = curl(&[
        "-H",
        "Content-Type: text/plain",
        "--data-binary",
        "h1-0\n",
        "-w",
        "%{http_version} %{response_code}",
        &url,
    ]);
    assert_eq!(h1, "1.1 200");
    assert!(lf.stop().success());
    let lines = read_lines(&lf.path("unified.log"));
    assert_exactly(&lines, "h1", 1);
    assert_eq!(numbers(&lines, "h2"), Vec::<usize>::new());
    assert_exactly_counted(
        &lf,
        "logferry_http_errors_total{component=\"in\",kind=\"bad_request\"}",
        1,
    );
}

#[test]
fn streams_in_flight_at_stop_are_each_answered_and_the_process_exits() {
    let config = unreachable_sink("30s", "", "max_attempts = 0");
    let mut lf = Logferry::start(&format!("{config}\n[api]\naddress = \"127.0.0.1:0\"\n"));
    let addr = lf.http_addr("in");
    let api = lf.address("api listening");
    let requests = (0..5)
        .map(|i| {
            (
                "/t".into(),
                "text/plain",
                format!("in-flight-{i}\n").into_bytes(),
            )
        })
        .collect();
    let client = std::thread::spawn(move || h2_posts(addr, requests));
    // every stream's batch is routed (the sink holds them) before the stop
    let received = "logferry_source_records_total{component=\"in\"}";
    wait_until("five records read", Duration::from_secs(20), || {
        metric_value(&api_get(api, "/metrics"), received) == 5.0
    });
    let stopping = std::time::Instant::now();
    let status = lf.stop();
    let took = stopping.elapsed();
    assert!(status.success(), "{}", lf.log_text());
    // the sink gave the batches up at its drain: each stream is told to
    // send again, none is left without an answer
    for a in client.join().unwrap() {
        assert_eq!(a, Ok((503, Some("1".to_string()))));
    }
    // at the sink's drain_timeout (1 s), not the requests' request_timeout
    // (30 s)
    assert_exactly_counted(
        &lf,
        "logferry_http_errors_total{component=\"in\",kind=\"rejected\"}",
        5,
    );
    assert!(took < Duration::from_secs(20), "stopped after {took:?}");
}

#[test]
fn compressed_streams_are_decoded_and_a_bomb_among_them_is_refused() {
    use std::io::Write;
    let mut lf = Logferry::start(&http_to_file("max_body_bytes = \"1MiB\""));
    let addr = lf.http_addr("in");
    let gzip = |data: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    };
    const BOMB: usize = 20;
    const BROTLI: usize = 30;
    let requests = (0..60)
        .map(|i| {
            let lines: String = (0..10).map(|j| format!("h2z-{}\n", i * 10 + j)).collect();
            let (encoding, body) = match i {
                // 64 MiB of zeros in a few hundred kilobytes
                BOMB => ("gzip", gzip(&vec![0u8; 4 << 20]).repeat(16)),
                BROTLI => ("br", lines.into_bytes()),
                _ if i % 2 == 0 => ("gzip", gzip(lines.as_bytes())),
                _ => ("zstd", zstd::bulk::compress(lines.as_bytes(), 1).unwrap()),
            };
            let headers = vec![
                ("content-type", "text/plain"),
                ("content-encoding", encoding),
            ];
            ("/h2".to_string(), headers, body)
        })
        .collect();
    let answers = h2_posts_with_headers(addr, requests);
    for (i, a) in answers.iter().enumerate() {
        let want = match i {
            BOMB => 413,
            BROTLI => 415,
            _ => 200,
        };
        assert_eq!(a.as_ref().map(|a| a.0), Ok(want), "request {i}: {a:?}");
    }
    assert!(lf.stop().success());
    let kept: BTreeSet<usize> = numbers(&read_lines(&lf.path("unified.log")), "h2z")
        .into_iter()
        .collect();
    let want: BTreeSet<usize> = (0..600)
        .filter(|n| ![BOMB, BROTLI].contains(&(n / 10)))
        .collect();
    assert_eq!(kept, want);
    assert_exactly_counted(
        &lf,
        "logferry_http_errors_total{component=\"in\",kind=\"decoded_too_large\"}",
        1,
    );
    assert_exactly_counted(
        &lf,
        "logferry_http_errors_total{component=\"in\",kind=\"unsupported_encoding\"}",
        1,
    );
}
