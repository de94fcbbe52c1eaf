//! Filters end to end, against the built binary: `[filters.NAME]` tables
//! apply in the order of the file, records a filter drops are acknowledged
//! with their batch (a source moves past them and never sends them again),
//! and every record a filter keeps arrives exactly once.

mod common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::tail::*;
use common::*;

/// One plain-text POST to `path` (the tag); the answer's status line.
fn post(addr: SocketAddr, path: &str, body: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.lines().next().unwrap_or_default().to_string()
}

/// Two grep filters whose names sort against their order in the file: the
/// second in the file sees only what the first kept. A request whose every
/// record is filtered out is answered 200 at once (settled as filtered,
/// not left waiting), and a tag no filter matches passes untouched.
#[test]
fn grep_filters_apply_in_file_order_and_keep_each_record_once() {
    let mut lf = Logferry::start(
        r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"

[filters.z_first]
type = "grep"
match = "app.**"
exclude = { message = "^noise-" }

[filters.a_second]
type = "grep"
match = "app.**"
include = { message = "^keep-" }

[sinks.unified]
type = "file"
match = "**"
path = "{dir}/unified.log"
"#,
    );
    let addr = lf.http_addr("in");
    let requests = 20;
    let per = 50;
    for r in 0..requests {
        let mut body = String::new();
        for i in r * per..(r + 1) * per {
            body.push_str(&format!("keep-{i}\nnoise-{i}\nother-{i}\n"));
        }
        let status = post(addr, "/app.web", &body);
        assert!(status.contains(" 200"), "request {r}: {status}");
    }
    // nothing left after the filters: still answered, and at once
    let status = post(addr, "/app.web", "noise-x\nother-x\n");
    assert!(status.contains(" 200"), "all filtered out: {status}");
    // no filter matches this tag
    let status = post(addr, "/sys", "noise-0\nnoise-1\n");
    assert!(status.contains(" 200"), "{status}");
    assert!(lf.stop().success(), "{}", lf.log_text());
    let lines = read_lines(&lf.path("unified.log"));
    let app: Vec<String> = lines
        .iter()
        .filter(|l| l.starts_with("keep-") || l.starts_with("other-"))
        .cloned()
        .collect();
    assert!(
        app.iter().all(|l| l.starts_with("keep-")),
        "a record the second filter drops arrived"
    );
    assert_exactly(&app, "keep", requests * per);
    assert_eq!(
        numbers(&lines, "noise"),
        [0, 1],
        "only the unfiltered tag's"
    );
    let total = (requests * per * 3 + 2) as u64;
    let seen = |f: &str| {
        lf.final_counter(&format!(
            "logferry_filter_records_total{{component=\"{f}\",component_type=\"grep\"}}"
        ))
    };
    let dropped = |f: &str| {
        lf.final_counter(&format!(
            "logferry_filter_dropped_records_total{{component=\"{f}\",component_type=\"grep\"}}"
        ))
    };
    assert_eq!(seen("z_first"), total, "{}", lf.log_text());
    assert_eq!(dropped("z_first"), (requests * per + 1) as u64);
    assert_eq!(seen("a_second"), total - dropped("z_first"), "file order");
    assert_eq!(dropped("a_second"), (requests * per + 1) as u64);
}

fn tail_config(dir: &Path) -> String {
    format!(
        r#"
[sources.tail]
type = "tail"
paths = ["{d}/logs/*.log"]
tag = "app.*"
read_from_head = true
refresh_interval = "100ms"
poll_interval = "50ms"
checkpoint_dir = "{d}/state"

[filters.quiet]
type = "grep"
match = "app.**"
exclude = {{ message = "^noise-" }}

[sinks.out]
type = "file"
match = "**"
path = "{d}/out.log"
"#,
        d = dir.display()
    )
}

/// A tailed file whose last lines are all filtered out: the checkpoint
/// moves past them (their batches are acknowledged as filtered), so a
/// restart reads neither them nor the kept lines again; after a kill -9,
/// every kept line still arrives at least once and no dropped one ever.
#[test]
fn a_tail_source_moves_past_filtered_lines_and_loses_no_kept_one_at_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    let out = dir.path().join("out.log");
    let cfg = tail_config(dir.path());
    let mut lf = Logferry::start(&cfg);
    // kept and dropped lines interleaved, then a run of dropped ones
    let mut text = String::new();
    for i in 0..2000 {
        text.push_str(&format!("keep-{i}\nnoise-{i}\n"));
    }
    text.push_str(&numbered("noise", 2000..12_000));
    append(&live, text.as_bytes());
    wait_for_lines(&out, 2000, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(1500)); // a checkpoint interval passes
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert_exactly(&read_lines(&out), "keep", 2000);
    assert_eq!(
        lf.final_counter(
            "logferry_filter_dropped_records_total{component=\"quiet\",component_type=\"grep\"}"
        ),
        12_000
    );

    // a restart reads nothing again, not even the dropped lines
    let mut idle = Logferry::start(&cfg);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(idle.stop().success(), "{}", idle.log_text());
    assert_eq!(
        idle.final_counter(
            "logferry_filter_records_total{component=\"quiet\",component_type=\"grep\"}"
        ),
        0,
        "lines read again after a restart"
    );

    // new lines, then a kill -9 mid-run
    let mut again = Logferry::start(&cfg);
    let mut more = String::new();
    for i in 2000..40_000 {
        more.push_str(&format!("keep-{i}\nnoise-{i}\n"));
    }
    append(&live, &more.as_bytes()[..more.len() / 2]);
    wait_for_lines(&out, 5000, Duration::from_secs(30));
    again.kill();
    append(&live, &more.as_bytes()[more.len() / 2..]);
    let mut last = Logferry::start(&cfg);
    wait_until("every kept line", Duration::from_secs(60), || {
        distinct(read_lines(&out)).len() >= 40_000
    });
    assert!(last.stop().success(), "{}", last.log_text());
    let lines = read_lines(&out);
    assert!(
        lines.iter().all(|l| l.starts_with("keep-")),
        "a filtered line arrived"
    );
    let kept = distinct(lines.iter().cloned());
    assert_exactly(&kept.into_keys().collect::<Vec<_>>(), "keep", 40_000);
    // the first 2,000 were acknowledged before the restart: none again
    let first: Vec<usize> = numbers(&lines, "keep")
        .into_iter()
        .filter(|n| *n < 2000)
        .collect();
    assert_eq!(
        first,
        (0..2000).collect::<Vec<_>>(),
        "read again after a restart"
    );
}

fn reload_config(dropped: &str) -> String {
    format!(
        r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"

[filters.drop]
type = "grep"
match = "**"
exclude = {{ message = "^{dropped}-" }}

[sinks.unified]
type = "file"
match = "**"
path = "{{dir}}/unified.log"
"#
    )
}

/// Waits until the log has `n` lines containing `needle`; returns the last.
fn wait_for_nth_log(lf: &Logferry, needle: &str, n: usize) -> String {
    wait_until(needle, Duration::from_secs(30), || {
        lf.log_text().matches(needle).count() >= n
    });
    let text = lf.log_text();
    text.lines()
        .filter(|l| l.contains(needle))
        .nth(n - 1)
        .unwrap()
        .to_string()
}

/// A reload (SIGHUP) that changes a filter puts the new one in place for
/// the running sources (the HTTP source is kept, not restarted); one that
/// changes nothing is a no-op.
#[test]
fn a_reload_replaces_the_filters_of_running_sources() {
    let mut lf = Logferry::start(&reload_config("a"));
    let addr = lf.http_addr("in");
    let lines = |range: std::ops::Range<usize>| -> String {
        range.map(|i| format!("a-{i}\nb-{i}\n")).collect()
    };
    assert!(post(addr, "/app", &lines(0..100)).contains(" 200"));
    lf.rewrite_config(&reload_config("b"));
    lf.signal(libc::SIGHUP);
    let summary = wait_for_nth_log(&lf, "configuration reloaded", 1);
    assert!(summary.contains("filters: 1 in place"), "{summary}");
    assert!(post(addr, "/app", &lines(100..200)).contains(" 200"));
    // the same again: nothing to do
    lf.signal(libc::SIGHUP);
    let summary = wait_for_nth_log(&lf, "configuration reloaded", 2);
    assert!(summary.contains("nothing changed"), "{summary}");
    assert!(post(addr, "/app", &lines(200..300)).contains(" 200"));
    assert!(lf.stop().success(), "{}", lf.log_text());
    let out = read_lines(&lf.path("unified.log"));
    assert_eq!(numbers(&out, "a"), (100..300).collect::<Vec<_>>());
    assert_eq!(numbers(&out, "b"), (0..100).collect::<Vec<_>>());
}

/// grep then modify, from a tailed file to a JSON file: every kept line
/// arrives once as a record with the fields the modify filter gave it,
/// and none the grep filter dropped.
#[test]
fn grep_then_modify_writes_each_kept_line_once_with_its_new_fields() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let out = dir.path().join("out.log");
    let cfg = format!(
        r#"
[sources.tail]
type = "tail"
paths = ["{d}/logs/*.log"]
tag = "app.web"
read_from_head = true
refresh_interval = "100ms"
poll_interval = "50ms"
checkpoint_dir = "{d}/state"

[filters.quiet]
type = "grep"
match = "app.**"
exclude = {{ message = "^noise-" }}

[filters.enrich]
type = "modify"
match = "app.**"
rename = {{ message = "msg" }}
set = {{ service = "${{tag[1]}}", host = "${{hostname}}" }}

[sinks.out]
type = "file"
match = "**"
path = "{d}/out.log"
format = "json"
"#,
        d = dir.path().display()
    );
    let mut lf = Logferry::start(&cfg);
    let mut text = String::new();
    for i in 0..3000 {
        text.push_str(&format!("keep-{i}\nnoise-{i}\n"));
    }
    append(&logs.join("app.log"), text.as_bytes());
    wait_for_lines(&out, 3000, Duration::from_secs(30));
    assert!(lf.stop().success(), "{}", lf.log_text());
    let lines = read_lines(&out);
    let mut got = Vec::new();
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["tag"], "app.web", "{line}");
        let v = &v["record"];
        assert_eq!(v["service"], "web", "{line}");
        assert!(v["host"].as_str().is_some_and(|h| !h.is_empty()), "{line}");
        assert!(v.get("message").is_none(), "renamed: {line}");
        got.push(v["msg"].as_str().unwrap().to_string());
    }
    assert_exactly(&got, "keep", 3000);
    assert_eq!(
        lf.final_counter(
            "logferry_filter_records_total{component=\"enrich\",component_type=\"modify\"}"
        ),
        3000,
        "only what the grep filter kept reaches the next filter"
    );
}

/// rewrite_tag sends errors to a sink of their own under a new tag; a
/// filter on the new tag placed before it in the file never sees them, a
/// filter after it does; with `keep`, a copy also goes on under the old
/// tag. Every HTTP request is answered once all its copies are written,
/// and every record arrives exactly once per copy.
#[test]
fn rewrite_tag_routes_records_by_content_and_keeps_acknowledgements() {
    let mut lf = Logferry::start(
        r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"

[filters.before]
type = "grep"
match = "alert.**"
exclude = { message = "." }

[filters.alerts]
type = "rewrite_tag"
match = "app.**"
rules = [{ field = "message", regex = "^(error|fatal)-", tag = "alert.$1.${tag[1]}" }]

[filters.audit]
type = "rewrite_tag"
match = "app.**"
keep = true
rules = [{ field = "message", regex = "^audit-", tag = "audit" }]

[filters.after]
type = "modify"
match = "alert.**"
set = { seen = "yes" }

[sinks.alerts]
type = "file"
match = "alert.**"
path = "{dir}/alerts.log"
format = "json"

[sinks.app]
type = "file"
match = "app.**"
path = "{dir}/app.log"

[sinks.audit]
type = "file"
match = "audit"
path = "{dir}/audit.log"
"#,
    );
    let addr = lf.http_addr("in");
    let n = 600;
    for r in 0..n / 100 {
        let mut body = String::new();
        for i in r * 100..(r + 1) * 100 {
            let kind = ["error", "fatal", "info", "audit"][i % 4];
            body.push_str(&format!("{kind}-{i}\n"));
        }
        let status = post(addr, "/app.web", &body);
        assert!(status.contains(" 200"), "request {r}: {status}");
    }
    assert!(lf.stop().success(), "{}", lf.log_text());
    let mut alerts = Vec::new();
    for line in read_lines(&lf.path("alerts.log")) {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let message = v["record"]["message"].as_str().unwrap().to_string();
        let kind = message.split('-').next().unwrap().to_string();
        assert_eq!(v["tag"], format!("alert.{kind}.web"), "{line}");
        assert_eq!(v["record"]["seen"], "yes", "the filter after: {line}");
        alerts.push(message);
    }
    let every =
        |kinds: &[usize]| -> Vec<usize> { (0..n).filter(|i| kinds.contains(&(i % 4))).collect() };
    let mut got = numbers(&alerts, "error");
    got.extend(numbers(&alerts, "fatal"));
    got.sort_unstable();
    assert_eq!(
        got,
        every(&[0, 1]),
        "each error and fatal once, in alerts only"
    );
    let app = read_lines(&lf.path("app.log"));
    let mut got = numbers(&app, "info");
    got.extend(numbers(&app, "audit"));
    got.sort_unstable();
    assert_eq!(got, every(&[2, 3]), "info, and audit kept under its tag");
    assert!(numbers(&app, "error").is_empty() && numbers(&app, "fatal").is_empty());
    assert_eq!(
        numbers(&read_lines(&lf.path("audit.log")), "audit"),
        every(&[3])
    );
    assert_eq!(
        lf.final_counter(
            "logferry_filter_records_total{component=\"before\",component_type=\"grep\"}"
        ),
        0,
        "a filter before the rewrite saw the new tag"
    );
    assert_eq!(
        lf.final_counter("logferry_filter_retagged_records_total{component=\"alerts\",component_type=\"rewrite_tag\"}"),
        (n / 2) as u64
    );
}

/// Runs `logferry validate -c` on `config`; the exit code and stderr.
fn validate(config: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = config.replace("{dir}", &dir.path().display().to_string());
    let path = dir.path().join("c.toml");
    std::fs::write(&path, config).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["validate", "-c"])
        .arg(&path)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A sink that takes only tags a rewrite_tag filter gives is not "a sink
/// that would never receive a record", and a source whose every record may
/// be retagged needs no sink for its own tag; without such a filter both
/// are still errors. A bad filter is an error naming its line and key.
#[test]
fn validate_knows_the_tags_filters_give() {
    let generator = r#"
[sources.gen]
type = "generator"
tag = "app.web"
count = 1
"#;
    let retag = r#"
[filters.alerts]
type = "rewrite_tag"
match = "app.**"
rules = [{ field = "message", regex = ".", tag = "alert" }]
"#;
    let sink = "\n[sinks.alerts]\ntype = \"null\"\nmatch = \"alert\"\n";
    let (code, err) = validate(&format!("{generator}{retag}{sink}"));
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = validate(&format!("{generator}{sink}"));
    assert_ne!(code, Some(0));
    assert!(err.contains("never receive a record"), "{err}");
    // a parser's failed_tag is a tag records may take
    let parser = "\n[filters.p]\ntype = \"parser\"\nmatch = \"app.**\"\nformat = \"json\"\nfailed_tag = \"alert\"\n";
    let (code, err) = validate(&format!("{generator}{parser}{sink}"));
    assert_eq!(code, Some(0), "{err}");
    let bad = "\n[filters.g]\ntype = \"grep\"\nmatch = \"**\"\ninclude = { message = \"(\" }\n";
    let (code, err) = validate(&format!("{generator}{bad}{sink}"));
    assert_ne!(code, Some(0));
    assert!(
        err.contains("[filters.g]") && err.contains("include.message"),
        "{err}"
    );
    let unknown = "\n[filters.x]\ntype = \"lua\"\nmatch = \"**\"\n";
    let (_, err) = validate(&format!("{generator}{unknown}{sink}"));
    for known in [
        "grep",
        "modify",
        "multiline",
        "parser",
        "remap",
        "rewrite_tag",
        "sample",
        "throttle",
    ] {
        assert!(err.contains(known), "{known}: {err}");
    }
}

/// An nginx access log written by the test, tailed, parsed with the
/// built-in `nginx` format, the 5xx kept by a grep on the parsed `code`:
/// with a kill -9 mid-run and a restart, every 5xx request arrives at
/// least once as parsed fields, and no other request ever.
#[test]
fn nginx_access_lines_are_parsed_and_filtered_through_a_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let out = dir.path().join("out.log");
    let cfg = format!(
        r#"
[sources.tail]
type = "tail"
paths = ["{d}/logs/*.log"]
tag = "nginx.access"
read_from_head = true
refresh_interval = "100ms"
poll_interval = "50ms"
checkpoint_dir = "{d}/state"

[filters.access]
type = "parser"
match = "nginx.**"
format = "nginx"

[filters.errors]
type = "grep"
match = "nginx.**"
include = {{ code = "^5" }}

[sinks.out]
type = "file"
match = "**"
path = "{d}/out.log"
format = "json"
"#,
        d = dir.path().display()
    );
    let total = 40_000;
    let text: String = (0..total)
        .map(|i| {
            let code = if i % 2 == 0 { 503 } else { 200 };
            format!(
                "10.0.{}.{} - - [27/Nov/2026:10:00:00 +0000] \"GET /r/{i} HTTP/1.1\" {code} {} \"-\" \"bench/1.0\"\n",
                i / 256 % 256,
                i % 256,
                100 + i % 900
            )
        })
        .collect();
    let live = logs.join("access.log");
    let mut lf = Logferry::start(&cfg);
    append(&live, &text.as_bytes()[..text.len() / 2]);
    wait_for_lines(&out, 2000, Duration::from_secs(30));
    lf.kill();
    append(&live, &text.as_bytes()[text.len() / 2..]);
    let mut again = Logferry::start(&cfg);
    let paths = |lines: &[String]| -> std::collections::BTreeSet<usize> {
        lines
            .iter()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let r = &v["record"];
                assert_eq!(r["code"], "503", "{l}");
                assert_eq!(r["method"], "GET", "{l}");
                assert_eq!(r["agent"], "bench/1.0", "{l}");
                r["path"].as_str().unwrap()[3..].parse().unwrap()
            })
            .collect()
    };
    wait_until("every 5xx request", Duration::from_secs(60), || {
        paths(&read_lines(&out)).len() >= total / 2
    });
    assert!(again.stop().success(), "{}", again.log_text());
    let got = paths(&read_lines(&out));
    assert_eq!(
        got.into_iter().collect::<Vec<_>>(),
        (0..total).step_by(2).collect::<Vec<_>>()
    );
}

/// An Apache access log and a JSON application log written by the test,
/// each tailed by its own source and parsed by its own filter (`apache2`,
/// which takes the record time from the line; `json` then `modify`): with
/// a kill -9 mid-run and a restart, every line arrives at least once as
/// parsed fields, with its time.
#[test]
fn apache_and_json_application_lines_are_parsed_through_a_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let out = dir.path().join("out.log");
    let cfg = format!(
        r#"
[sources.web]
type = "tail"
paths = ["{d}/logs/access.log"]
tag = "web.access"
read_from_head = true
refresh_interval = "100ms"
poll_interval = "50ms"
checkpoint_dir = "{d}/state-web"

[sources.app]
type = "tail"
paths = ["{d}/logs/app.log"]
tag = "app.api"
read_from_head = true
refresh_interval = "100ms"
poll_interval = "50ms"
checkpoint_dir = "{d}/state-app"

[filters.access]
type = "parser"
match = "web.**"
format = "apache2"

[filters.app]
type = "parser"
match = "app.**"
format = "json"

[filters.enrich]
type = "modify"
match = "app.**"
set = {{ service = "${{tag[1]}}" }}
rename = {{ msg = "message" }}

[sinks.out]
type = "file"
match = "**"
path = "{d}/out.log"
format = "json"
"#,
        d = dir.path().display()
    );
    let total = 20_000;
    // 2026-11-27T10:00:00Z plus a second per hundred lines
    let base = 1_795_773_600u64;
    let access: String = (0..total)
        .map(|i| {
            let t = i / 100;
            format!(
                "192.168.{}.{} - - [27/Nov/2026:10:{:02}:{:02} +0000] \"GET /item/{i}?q=a%20b HTTP/1.1\" 200 {} \"https://example.com/\" \"Mozilla/5.0 (X11; Linux x86_64)\"\n",
                i / 256 % 256,
                i % 256,
                t / 60,
                t % 60,
                100 + i % 900
            )
        })
        .collect();
    let app: String = (0..total)
        .map(|i| {
            format!(
                "{{\"level\":\"info\",\"n\":{i},\"msg\":\"order {i} \\\"placed\\\"\",\"user\":{{\"id\":{}}}}}\n",
                i % 97
            )
        })
        .collect();
    let (web_log, app_log) = (logs.join("access.log"), logs.join("app.log"));
    let mut lf = Logferry::start(&cfg);
    append(&web_log, &access.as_bytes()[..access.len() / 2]);
    append(&app_log, &app.as_bytes()[..app.len() / 2]);
    wait_for_lines(&out, 2000, Duration::from_secs(30));
    lf.kill();
    append(&web_log, &access.as_bytes()[access.len() / 2..]);
    append(&app_log, &app.as_bytes()[app.len() / 2..]);
    let mut again = Logferry::start(&cfg);
    let seen = |lines: &[String]| {
        let (mut web, mut api) = (
            std::collections::BTreeSet::new(),
            std::collections::BTreeSet::new(),
        );
        for l in lines {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let r = &v["record"];
            match v["tag"].as_str().unwrap() {
                "web.access" => {
                    let path = r["path"].as_str().unwrap();
                    let i: u64 = path["/item/".len()..path.find('?').unwrap()]
                        .parse()
                        .unwrap();
                    assert_eq!(r["code"], "200", "{l}");
                    assert_eq!(r["agent"], "Mozilla/5.0 (X11; Linux x86_64)", "{l}");
                    assert!(r.get("time").is_none(), "the time became the record's: {l}");
                    let at =
                        chrono::DateTime::parse_from_rfc3339(v["time"].as_str().unwrap()).unwrap();
                    assert_eq!(at.timestamp() as u64, base + i / 100, "{l}");
                    web.insert(i);
                }
                "app.api" => {
                    let n = r["n"].as_u64().unwrap();
                    assert_eq!(r["message"], format!("order {n} \"placed\""), "{l}");
                    assert_eq!(r["service"], "api", "{l}");
                    assert_eq!(r["user"]["id"], n % 97, "{l}");
                    assert!(r.get("msg").is_none(), "{l}");
                    api.insert(n);
                }
                other => panic!("tag {other}: {l}"),
            }
        }
        (web, api)
    };
    wait_until("every line of both logs", Duration::from_secs(60), || {
        let (web, api) = seen(&read_lines(&out));
        web.len() as u64 >= total && api.len() as u64 >= total
    });
    assert!(again.stop().success(), "{}", again.log_text());
    let (web, api) = seen(&read_lines(&out));
    let all: Vec<u64> = (0..total).collect();
    assert_eq!(web.into_iter().collect::<Vec<_>>(), all);
    assert_eq!(api.into_iter().collect::<Vec<_>>(), all);
}

/// sample and throttle: what they keep arrives exactly once, what they
/// drop is counted, the two add up to what was sent, and every request
/// is answered (its dropped records settled with it).
#[test]
fn sample_and_throttle_keep_and_count_every_record_once() {
    let mut lf = Logferry::start(
        r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"

[filters.some]
type = "sample"
match = "sampled"
rate = 3
key = "message"

[filters.slow]
type = "throttle"
match = "throttled"
rate = 250
window = "1h"

[sinks.unified]
type = "file"
match = "**"
path = "{dir}/unified.log"
"#,
    );
    let addr = lf.http_addr("in");
    for r in 0..10 {
        for tag in ["sampled", "throttled"] {
            let body: String = (r * 100..(r + 1) * 100)
                .map(|i| format!("{tag}-{i}\n"))
                .collect();
            let status = post(addr, &format!("/{tag}"), &body);
            assert!(status.contains(" 200"), "{tag} {r}: {status}");
        }
    }
    assert!(lf.stop().success(), "{}", lf.log_text());
    let lines = read_lines(&lf.path("unified.log"));
    let sampled = numbers(&lines, "sampled");
    let throttled = numbers(&lines, "throttled");
    assert_eq!(
        throttled,
        (0..250).collect::<Vec<_>>(),
        "the first 250, once each"
    );
    let mut distinct = sampled.clone();
    distinct.dedup();
    assert_eq!(distinct.len(), sampled.len(), "a sampled record twice");
    assert!(
        (200..480).contains(&sampled.len()),
        "{} of 1000 sampled",
        sampled.len()
    );
    let dropped = |f: &str, kind: &str| {
        lf.final_counter(&format!(
            "logferry_filter_dropped_records_total{{component=\"{f}\",component_type=\"{kind}\"}}"
        ))
    };
    assert_eq!(sampled.len() as u64 + dropped("some", "sample"), 1000);
    assert_eq!(dropped("slow", "throttle"), 750);
}

/// rewrite_tag with `keep`, then modify on the new tag, from a tailed
/// file into two sinks, through a kill -9 and a restart: every line
/// arrives at least once in the sink of its original tag, every matching
/// line at least once, with its new field, in the sink of its new tag,
/// and nothing anywhere else.
#[test]
fn retagged_copies_survive_a_kill_9_at_least_once() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let cfg = format!(
        r#"
[sources.tail]
type = "tail"
paths = ["{d}/logs/*.log"]
tag = "app.web"
read_from_head = true
refresh_interval = "100ms"
poll_interval = "50ms"
checkpoint_dir = "{d}/state"

[filters.copy_errors]
type = "rewrite_tag"
match = "app.**"
keep = true
rules = [{{ field = "message", regex = "^error-", tag = "alert" }}]

[filters.mark]
type = "modify"
match = "alert"
set = {{ alerted = "yes" }}

[sinks.all]
type = "file"
match = "app.**"
path = "{d}/all.log"

[sinks.alerts]
type = "file"
match = "alert"
path = "{d}/alerts.log"
format = "json"
"#,
        d = dir.path().display()
    );
    let total = 40_000;
    let text: String = (0..total)
        .map(|i| {
            let kind = if i % 5 == 0 { "error" } else { "info" };
            format!("{kind}-{i}\n")
        })
        .collect();
    let live = logs.join("app.log");
    let all = dir.path().join("all.log");
    let alerts = dir.path().join("alerts.log");
    let mut lf = Logferry::start(&cfg);
    append(&live, &text.as_bytes()[..text.len() / 2]);
    wait_for_lines(&all, 3000, Duration::from_secs(30));
    lf.kill();
    append(&live, &text.as_bytes()[text.len() / 2..]);
    let mut again = Logferry::start(&cfg);
    let alerted = |lines: &[String]| -> std::collections::BTreeSet<usize> {
        lines
            .iter()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                assert_eq!(v["tag"], "alert", "{l}");
                assert_eq!(v["record"]["alerted"], "yes", "{l}");
                let m = v["record"]["message"].as_str().unwrap();
                m.strip_prefix("error-").unwrap().parse().unwrap()
            })
            .collect()
    };
    let whole = |lines: &[String]| -> std::collections::BTreeSet<usize> {
        lines
            .iter()
            .map(|l| l.split_once('-').unwrap().1.parse().unwrap())
            .collect()
    };
    wait_until("every line in both sinks", Duration::from_secs(60), || {
        whole(&read_lines(&all)).len() >= total && alerted(&read_lines(&alerts)).len() >= total / 5
    });
    assert!(again.stop().success(), "{}", again.log_text());
    assert_eq!(whole(&read_lines(&all)), (0..total).collect());
    assert_eq!(
        alerted(&read_lines(&alerts)),
        (0..total).step_by(5).collect()
    );
}

/// A tailed `app.log` through `filter` (a TOML table matching `app`) to
/// `out.log`; the line `end`, written last, is given the tag `end` before
/// the filter, so it passes it untouched: once it has arrived, every line
/// before it has been through the filter and what it let through was
/// written.
fn tail_through(dir: &Path, filter: &str) -> String {
    format!(
        r#"
[sources.tail]
type = "tail"
paths = ["{d}/logs/app.log"]
tag = "app"
read_from_head = true
refresh_interval = "100ms"
poll_interval = "50ms"
checkpoint_dir = "{d}/state"

[filters.last]
type = "rewrite_tag"
match = "app"
rules = [{{ field = "message", regex = "^end$", tag = "end" }}]

{filter}

[sinks.out]
type = "file"
match = "**"
path = "{d}/out.log"
"#,
        d = dir.display()
    )
}

/// Writes half of `rec-0..total` to a tailed file, kills logferry -9 once
/// `first` lines arrived and a checkpoint interval passed, writes the
/// rest and `end`, and runs it again until `end` arrives. Returns the
/// lines that arrived (`end` left out) and the stopped second run.
fn kill_mid_run(dir: &Path, filter: &str, total: usize, first: usize) -> (Vec<String>, Logferry) {
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    let out = dir.join("out.log");
    let cfg = tail_through(dir, filter);
    let text = numbered("rec", 0..total);
    let mut lf = Logferry::start(&cfg);
    append(&live, &text.as_bytes()[..text.len() / 2]);
    wait_for_lines(&out, first, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(1500)); // a checkpoint interval
    lf.kill();
    append(&live, &text.as_bytes()[text.len() / 2..]);
    append(&live, b"end\n");
    let mut again = Logferry::start(&cfg);
    wait_until("the last line", Duration::from_secs(60), || {
        read_lines(&out).iter().any(|l| l == "end")
    });
    assert!(again.stop().success(), "{}", again.log_text());
    let lines: Vec<String> = read_lines(&out)
        .into_iter()
        .filter(|l| l != "end")
        .collect();
    assert!(lines.iter().all(|l| l.starts_with("rec-")), "{lines:?}");
    (lines, again)
}

/// Fails with the first few numbers `got` lacks and has too many.
fn assert_same_numbers(got: &[usize], want: &[usize], what: &str) {
    let got: std::collections::BTreeSet<usize> = got.iter().copied().collect();
    let want: std::collections::BTreeSet<usize> = want.iter().copied().collect();
    let missing: Vec<_> = want.difference(&got).take(10).collect();
    let extra: Vec<_> = got.difference(&want).take(10).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what}: missing {missing:?}…, not expected {extra:?}… ({} arrived, {} expected)",
        got.len(),
        want.len()
    );
}

fn filter_counter(lf: &Logferry, metric: &str, name: &str, kind: &str) -> usize {
    lf.final_counter(&format!(
        "{metric}{{component=\"{name}\",component_type=\"{kind}\"}}"
    )) as usize
}

/// sample by key through a kill -9: the choice follows the value's
/// FNV-1a hash, so the restarted process keeps exactly what the first
/// one would have. Every kept line arrives (at least once: only lines
/// the restart read again come twice), no dropped line ever, and the
/// restarted process's counts add up: what it read is what it let
/// through plus what it dropped.
#[test]
fn sample_keeps_the_same_records_through_a_kill_9_and_loses_none() {
    let dir = tempfile::tempdir().unwrap();
    let total = 30_000;
    let (lines, again) = kill_mid_run(
        dir.path(),
        "[filters.some]\ntype = \"sample\"\nmatch = \"app\"\nrate = 3\nkey = \"message\"",
        total,
        1000,
    );
    let fnv1a = |b: &[u8]| {
        b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, c| {
            (h ^ u64::from(*c)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    let kept: Vec<usize> = (0..total)
        .filter(|i| fnv1a(format!("rec-{i}").as_bytes()) % 3 == 0)
        .collect();
    assert!((9000..11_000).contains(&kept.len()), "{}", kept.len());
    let got = numbers(&lines, "rec");
    assert_same_numbers(&got, &kept, "every kept line, and no dropped one");
    // the second run read the lines from its checkpoint to the end
    let read = filter_counter(&again, "logferry_filter_records_total", "some", "sample");
    let dropped = filter_counter(
        &again,
        "logferry_filter_dropped_records_total",
        "some",
        "sample",
    );
    assert!(read > 0 && read <= total, "{read}");
    let from = total - read;
    let kept_again = kept.iter().filter(|i| **i >= from).count();
    assert_eq!(read - dropped, kept_again, "read = let through + dropped");
    // only lines read again come twice
    let twice: Vec<usize> = got
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    assert!(twice.iter().all(|i| *i >= from), "{twice:?} before {from}");
}

/// throttle (per tag, a window longer than the test) through a kill -9:
/// the first process lets the first `rate` lines through, the restarted
/// one the first `rate` of what it reads again from its checkpoint.
/// Exactly those arrive (at least once), no other line ever, and the
/// restarted process's counts add up.
#[test]
fn throttle_loses_nothing_it_let_through_at_a_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let (total, rate) = (40_000, 5000);
    let (lines, again) = kill_mid_run(
        dir.path(),
        "[filters.slow]\ntype = \"throttle\"\nmatch = \"app\"\nrate = 5000\nwindow = \"1h\"",
        total,
        rate,
    );
    let read = filter_counter(&again, "logferry_filter_records_total", "slow", "throttle");
    let dropped = filter_counter(
        &again,
        "logferry_filter_dropped_records_total",
        "slow",
        "throttle",
    );
    assert!(read > 0 && read <= total, "{read}");
    let from = total - read;
    assert_eq!(
        read - dropped,
        rate.min(read),
        "read = let through + dropped"
    );
    let mut want: Vec<usize> = (0..rate.min(from)).collect();
    want.extend(from..(from + rate).min(total));
    let got = numbers(&lines, "rec");
    assert_same_numbers(&got, &want, &format!("read again from {from}"));
    let twice: Vec<usize> = got
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    assert!(
        twice.iter().all(|i| *i >= from && *i < rate),
        "{twice:?} not read again"
    );
}

/// Syslog lines of both RFCs, and lines that are not syslog, posted over
/// HTTP through a `format = "syslog"` parser with `types` and
/// `failed_tag`: each parsed record arrives once, with Fluent Bit's field
/// names, its time and `pri` as a number; each other line arrives once,
/// unchanged, in the sink of the failure tag; the failures are counted.
#[test]
fn syslog_lines_are_parsed_and_the_rest_go_on_under_failed_tag() {
    let mut lf = Logferry::start(
        r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"

[filters.syslog]
type = "parser"
match = "syslog"
format = "syslog"
types = { pri = "int" }
failed_tag = "unparsed.${tag}"

[sinks.parsed]
type = "file"
match = "syslog"
path = "{dir}/parsed.log"
format = "json"

[sinks.unparsed]
type = "file"
match = "unparsed.**"
path = "{dir}/unparsed.log"
"#,
    );
    let addr = lf.http_addr("in");
    let total = 600;
    for r in 0..6 {
        let body: String = (r * 100..(r + 1) * 100)
            .map(|i| match i % 3 {
                0 => format!("<165>1 2026-11-27T10:00:00.5+02:00 web app {i} ID1 - m-{i}\n"),
                1 => format!("<13>Nov 27 10:00:00 web app[{i}]: m-{i}\n"),
                _ => format!("plain-{i}\n"),
            })
            .collect();
        let status = post(addr, "/syslog", &body);
        assert!(status.contains(" 200"), "{r}: {status}");
    }
    assert!(lf.stop().success(), "{}", lf.log_text());
    let mut parsed: Vec<usize> = read_lines(&lf.path("parsed.log"))
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let r = &v["record"];
            let i: usize = r["message"].as_str().unwrap()[2..].parse().unwrap();
            assert_eq!(r["pid"], i.to_string(), "{l}");
            assert_eq!(
                (&r["host"], &r["ident"]),
                (&"web".into(), &"app".into()),
                "{l}"
            );
            if i.is_multiple_of(3) {
                assert_eq!(r["pri"], 165, "{l}");
                assert_eq!(r["msgid"], "ID1", "{l}");
                assert_eq!(v["time"], "2026-11-27T08:00:00.500000000Z", "{l}");
            } else {
                assert_eq!(r["pri"], 13, "{l}");
                assert_eq!(r["time"], "Nov 27 10:00:00", "{l}");
            }
            i
        })
        .collect();
    parsed.sort_unstable();
    let want: Vec<usize> = (0..total).filter(|i| i % 3 != 2).collect();
    assert_eq!(parsed, want, "each parsed record once");
    let unparsed = numbers(&read_lines(&lf.path("unparsed.log")), "plain");
    let want: Vec<usize> = (0..total).filter(|i| i % 3 == 2).collect();
    assert_eq!(unparsed, want, "each other line once, unchanged");
    assert_eq!(
        lf.final_counter(
            "logferry_filter_parse_failed_records_total{component=\"syslog\",component_type=\"parser\"}"
        ),
        (total / 3) as u64
    );
}

/// throttle with `key`, a million records of a million distinct values
/// (each its own group, far past the groups it counts at once), under a
/// small memory budget: every record arrives once, the requests are
/// answered as fast as the rest of the path allows (before, each new
/// value scanned every group), the process's own memory (RssAnon) stays
/// bounded, and values seen again while their window runs are still
/// throttled.
#[test]
fn throttle_by_key_takes_a_million_distinct_values_in_bounded_memory() {
    let mut lf = Logferry::start(
        r#"
[limits]
memory = "64MiB"

[sources.in]
type = "http"
address = "127.0.0.1:0"

[filters.per_user]
type = "throttle"
match = "**"
rate = 1
window = "1h"
key = "message"

[sinks.unified]
type = "file"
match = "**"
path = "{dir}/unified.log"
"#,
    );
    let addr = lf.http_addr("in");
    let pid = lf.pid();
    let (total, per) = (1_000_000, 20_000);
    let mut peak = 0;
    for r in 0..total / per {
        let body: String = (r * per..(r + 1) * per)
            .map(|i| format!("user-{i}\n"))
            .collect();
        let status = post(addr, "/app", &body);
        assert!(status.contains(" 200"), "request {r}: {status}");
        peak = peak.max(status_kib(pid, "RssAnon").unwrap_or(0));
    }
    // the newest values again, within their window: over their rate
    let again: String = (total - 100..total)
        .map(|i| format!("user-{i}\n"))
        .collect();
    let status = post(addr, "/app", &again);
    assert!(status.contains(" 200"), "{status}");
    assert!(lf.stop().success(), "{}", lf.log_text());
    let lines = read_lines(&lf.path("unified.log"));
    assert_exactly(&lines, "user", total);
    let dropped = filter_counter(
        &lf,
        "logferry_filter_dropped_records_total",
        "per_user",
        "throttle",
    );
    assert_eq!(dropped, 100, "the repeated values");
    eprintln!("a million groups: RssAnon peaked at {peak} KiB");
    assert!(peak > 0, "RssAnon not read");
    assert!(
        peak < 64 * 1024,
        "RssAnon peaked at {peak} KiB for a million groups, over the 64 MiB budget"
    );
}
