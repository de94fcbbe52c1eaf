//! The `parser` filter's formats end to end, against the built binary:
//! lines posted to an HTTP source, parsed, written by a file sink as JSON
//! and read back. The presets named after Fluent Bit's parsers are held to
//! what Fluent Bit gives on its own test lines.

mod common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

/// One plain-text POST to `/tag`; the answer's status line.
fn post(addr: SocketAddr, tag: &str, body: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "POST /{tag} HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.lines().next().unwrap_or_default().to_string()
}

/// An HTTP source `in`, the given filters, and a file sink writing JSON
/// lines to `{dir}/out.log`.
fn config(filters: &str) -> String {
    format!(
        r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"

{filters}

[sinks.out]
type = "file"
match = "**"
path = "{{dir}}/out.log"
format = "json"
"#
    )
}

/// Posts `lines` under `tag`, one request, and checks it was taken.
fn post_lines(lf: &mut Logferry, tag: &str, lines: &[&str]) {
    let addr = lf.http_addr("in");
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let status = post(addr, tag, &body);
    assert!(status.contains(" 200"), "{tag}: {status}");
}

/// The JSON lines of `{dir}/out.log` of tag `tag`, in order.
fn written(lf: &Logferry, tag: &str) -> Vec<Value> {
    read_lines(&lf.path("out.log"))
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|v| v["tag"] == tag)
        .collect()
}

/// The time a written line carries, as seconds and nanoseconds.
fn time_of(v: &Value) -> (i64, u32) {
    let t = chrono::DateTime::parse_from_rfc3339(v["time"].as_str().unwrap()).unwrap();
    (t.timestamp(), t.timestamp_subsec_nanos())
}

/// `logfmt` values in quotes are unescaped as Go's logfmt (the format's
/// reference) does: `\n`, `\t`, `\"`, `\\`, `\/`, `\uXXXX` (a surrogate
/// pair too); a bare key is `true`, `key=` an empty string. A quoted
/// value with an escape Go refuses does not parse: the record goes on
/// unchanged and is counted.
#[test]
fn logfmt_values_are_unescaped_as_go_logfmt_does() {
    let mut lf = Logferry::start(&config(
        "[filters.kv]\ntype = \"parser\"\nmatch = \"**\"\nformat = \"logfmt\"\n",
    ));
    let lines = [
        r#"msg="line1\nline2\ttab caf\u00e9" q="say \"hi\"" path="C:\\dir" slash="a\/b" smile="\ud83d\ude00" flag empty= level=info"#,
        r#"bad="a \x b" n=1"#,
        r#"cr="a\rb" ff="\f\b" apos="it\'s""#,
    ];
    post_lines(&mut lf, "kv", &lines);
    let out = wait_for_lines(&lf.path("out.log"), 3, Duration::from_secs(30));
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert_eq!(out.len(), 3, "{out:?}");
    let got = written(&lf, "kv");
    assert_eq!(
        got[0]["record"],
        json!({
            "msg": "line1\nline2\ttab café",
            "q": "say \"hi\"",
            "path": "C:\\dir",
            "slash": "a/b",
            "smile": "😀",
            "flag": true,
            "empty": "",
            "level": "info",
        })
    );
    assert_eq!(got[1]["record"], json!({ "message": lines[1] }));
    assert_eq!(
        got[2]["record"],
        json!({ "cr": "a\rb", "ff": "\u{c}\u{8}", "apos": "it's" })
    );
    let failed = lf.final_counter(
        "logferry_filter_parse_failed_records_total{component=\"kv\",component_type=\"parser\"}",
    );
    assert_eq!(failed, 1);
}

/// Fluent Bit's `conf/parsers.conf` regexes of the presets that are
/// regexes, as Fluent Bit has them (Onigmo syntax that Rust's `regex`
/// reads the same), with whether the preset takes the record time from
/// `time` and drops it (`Time_Key time` without `Time_Keep`).
const FLUENT_BIT_REGEXES: [(&str, &str, bool); 5] = [
    (
        "apache",
        r#"^(?<host>[^ ]*) [^ ]* (?<user>[^ ]*) \[(?<time>[^\]]*)\] "(?<method>\S+)(?: +(?<path>[^\"]*?)(?: +\S*)?)?" (?<code>[^ ]*) (?<size>[^ ]*)(?: "(?<referer>[^\"]*)" "(?<agent>[^\"]*)")?$"#,
        true,
    ),
    (
        "apache2",
        r#"^(?<host>[^ ]*) [^ ]* (?<user>[^ ]*) \[(?<time>[^\]]*)\] "(?<method>\S+)(?: +(?<path>[^ ]*) +\S*)?" (?<code>[^ ]*) (?<size>[^ ]*)(?: "(?<referer>[^\"]*)" "(?<agent>.*)")?$"#,
        true,
    ),
    (
        "apache_error",
        r#"^\[[^ ]* (?<time>[^\]]*)\] \[(?<level>[^\]]*)\](?: \[pid (?<pid>[^\]]*)\])?( \[client (?<client>[^\]]*)\])? (?<message>.*)$"#,
        false,
    ),
    (
        "nginx",
        r#"^(?<remote>[^ ]*) (?<host>[^ ]*) (?<user>[^ ]*) \[(?<time>[^\]]*)\] "(?<method>\S+)(?: +(?<path>[^\"]*?)(?: +\S*)?)?" (?<code>[^ ]*) (?<size>[^ ]*)(?: "(?<referer>[^\"]*)" "(?<agent>[^\"]*)")"#,
        true,
    ),
    (
        "cri",
        r#"^(?<time>[^ ]+) (?<stream>stdout|stderr) (?<logtag>[^ ]*) (?<message>.*)$"#,
        false,
    ),
];

/// Access-log lines: Fluent Bit's own (its tail test's line from the
/// Apache documentation, lines of its `apache_10k.mp` benchmark data),
/// then the shapes its `apache` and `nginx` regexes accept beyond
/// `METHOD PATH PROTOCOL`: no protocol, a path with spaces, one word.
const ACCESS_LINES: &[&str] = &[
    r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#,
    r#"126.230.88.179 - - [17/May/2018:21:11:28 +0000] "GET /Benoite HTTP/1.0" 500 2216"#,
    r#"164.186.247.192 - - [17/May/2018:21:11:29 +0000] "GET /crusty HTTP/1.0" 400 2216"#,
    r#"207.87.166.148 - - [17/May/2018:21:11:30 +0000] "GET /Coopersmith HTTP/1.0" 200 2216"#,
    r#"85.41.105.32 - - [17/May/2018:21:11:41 +0000] "GET /duffing HTTP/1.0" 404 2216"#,
    r#"10.0.0.1 - - [27/Nov/2026:10:00:00 +0000] "GET /index.html" 200 512 "-" "curl/8.5.0""#,
    r#"10.0.0.2 - bob [27/Nov/2026:10:00:01 +0100] "GET /my file.html HTTP/1.1" 404 0 "https://example.com/a b" "Mozilla/5.0 (X11)""#,
    r#"10.0.0.3 - - [27/Nov/2026:10:00:02 -0500] "-" 400 0 "-" "-""#,
];

/// Apache error lines, with the time layout of Fluent Bit's test of it.
const APACHE_ERROR_LINES: &[&str] = &[
    "[Fri Jul 17 20:17:03.1234 2017] [error] [pid 4242] [client 10.0.0.1:5050] File does not exist: /var/www/favicon.ico",
    "[Fri Jul 17 20:17:04.000001 2017] [core:notice] AH00094: Command line: '/usr/sbin/apache2'",
];

/// Fluent Bit's CRI test lines (from its multiline test).
const CRI_LINES: &[&str] = &[
    "2019-05-07T18:57:50.904275087+00:00 stdout P 1a. some ",
    "2019-05-07T18:57:52.904275089+00:00 stdout F log",
    "2019-05-07T18:57:53.904275090+00:00 stderr P 2b. another ",
    "2019-05-07T18:57:57.904275094+00:00 stderr F 4b. non multiline 2",
];

/// Every preset named after a Fluent Bit parser gives Fluent Bit's
/// fields on Fluent Bit's test lines: for the regex presets, exactly the
/// named captures of Fluent Bit's regex (the `time` taken as the record
/// time where Fluent Bit's preset takes it, kept where it keeps it); for
/// `docker`, `syslog-rfc5424` and `syslog-rfc3164`, the fields Fluent
/// Bit's tests expect, with the record time they stand for; `json` and
/// `logfmt` as its parser tests.
#[test]
fn presets_named_after_fluent_bits_give_its_fields_on_its_test_lines() {
    let mut filters = String::new();
    let presets = [
        "apache",
        "apache2",
        "apache_error",
        "nginx",
        "cri",
        "docker",
        "syslog-rfc5424",
        "syslog-rfc3164",
        "json",
        "logfmt",
    ];
    for p in presets {
        filters.push_str(&format!(
            "[filters.{n}]\ntype = \"parser\"\nmatch = \"{n}\"\nformat = \"{p}\"\n\n",
            n = p.replace('-', "_")
        ));
    }
    let mut lf = Logferry::start(&config(&filters));
    let by_preset = |p: &str| -> Vec<String> {
        let lines = match p {
            "apache" | "apache2" | "nginx" => ACCESS_LINES,
            "apache_error" => APACHE_ERROR_LINES,
            "cri" => CRI_LINES,
            _ => &[],
        };
        let lines = lines.iter().map(|l| l.to_string());
        if p == "nginx" {
            // nginx's combined format always has the referer and agent
            lines
                .map(|l| match l.ends_with('"') {
                    true => l,
                    false => format!("{l} \"-\" \"Wget/1.21\""),
                })
                .collect()
        } else {
            lines.collect()
        }
    };
    let docker = [
        r#"{"log":"Fluent Bit is logging\n","stream":"stdout","time":"2019-04-01T17:58:33.598656444Z"}"#,
        r#"{"log":"{\"text\":\"Simple text\"}\n","stream":"stdout","time":"2019-04-01T17:58:33.598656444Z"}"#,
    ];
    let rfc5424 = "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - 'su root' failed for lonvick on /dev/pts/8";
    let rfc3164 = "<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8";
    let json_line = r#"{"str":"text", "int":100, "double":1.23, "bool":true}"#;
    let logfmt_line = r#"str="text" int=100 double=1.23 bool=true"#;
    let mut total = 0;
    for p in presets {
        let tag = p.replace('-', "_");
        let lines = match p {
            "docker" => docker.iter().map(|l| l.to_string()).collect(),
            "syslog-rfc5424" => vec![rfc5424.to_string()],
            "syslog-rfc3164" => vec![rfc3164.to_string()],
            "json" => vec![json_line.to_string()],
            "logfmt" => vec![logfmt_line.to_string()],
            _ => by_preset(p),
        };
        total += lines.len();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        post_lines(&mut lf, &tag, &lines);
    }
    wait_for_lines(&lf.path("out.log"), total, Duration::from_secs(30));
    assert!(lf.stop().success(), "{}", lf.log_text());

    // the regex presets against Fluent Bit's regexes, line by line
    for (preset, pattern, takes_time) in FLUENT_BIT_REGEXES {
        let re = regex::Regex::new(pattern).unwrap();
        let got = written(&lf, preset);
        let lines = by_preset(preset);
        assert_eq!(got.len(), lines.len(), "{preset}");
        let parsed = lines.iter().filter(|l| re.is_match(l)).count();
        assert!(parsed * 2 > lines.len(), "{preset}: most lines are its own");
        for (line, v) in lines.iter().zip(&got) {
            let line = line.as_str();
            let Some(caps) = re.captures(line) else {
                // Fluent Bit leaves it unparsed: so must we
                assert_eq!(v["record"], json!({ "message": line }), "{preset}: {line}");
                continue;
            };
            let mut want = serde_json::Map::new();
            for name in re.capture_names().flatten() {
                if let Some(m) = caps.name(name) {
                    want.insert(name.into(), json!(m.as_str()));
                }
            }
            if takes_time {
                let text = want.remove("time").unwrap();
                let at = chrono::DateTime::parse_from_str(
                    text.as_str().unwrap(),
                    "%d/%b/%Y:%H:%M:%S %z",
                )
                .unwrap();
                assert_eq!(time_of(v), (at.timestamp(), 0), "{preset}: {line}");
            }
            assert_eq!(v["record"], Value::Object(want), "{preset}: {line}");
        }
    }
    // CRI: Time_Format %Y-%m-%dT%H:%M:%S.%L%z, Time_Keep On
    for (line, v) in CRI_LINES.iter().zip(&written(&lf, "cri")) {
        let at = chrono::DateTime::parse_from_rfc3339(line.split(' ').next().unwrap()).unwrap();
        assert_eq!(
            time_of(v),
            (at.timestamp(), at.timestamp_subsec_nanos()),
            "{line}"
        );
    }
    // docker: the json-file fields, time kept (Time_Keep On) and taken
    let got = written(&lf, "docker");
    assert_eq!(
        got[0]["record"],
        json!({"log": "Fluent Bit is logging\n", "stream": "stdout", "time": "2019-04-01T17:58:33.598656444Z"})
    );
    assert_eq!(got[1]["record"]["log"], "{\"text\":\"Simple text\"}\n");
    for v in &got {
        assert_eq!(time_of(v), (1_554_141_513, 598_656_444));
    }
    // syslog: the fields of Fluent Bit's in_syslog tests, and what its
    // regexes give for the parts the message leaves as `-`
    let got = written(&lf, "syslog_rfc5424");
    assert_eq!(
        got[0]["record"],
        json!({
            "pri": "34",
            "time": "2003-10-11T22:14:15.003Z",
            "host": "mymachine.example.com",
            "ident": "su",
            "pid": "-",
            "msgid": "ID47",
            "extradata": "-",
            "message": "'su root' failed for lonvick on /dev/pts/8",
        })
    );
    assert_eq!(time_of(&got[0]), (1_065_910_455, 3_000_000));
    let got = written(&lf, "syslog_rfc3164");
    assert_eq!(
        got[0]["record"],
        json!({
            "pri": "34",
            "time": "Oct 11 22:14:15",
            "host": "mymachine",
            "ident": "su",
            "message": "'su root' failed for lonvick on /dev/pts/8",
        })
    );
    // json and logfmt: Fluent Bit's parser tests' line and fields
    assert_eq!(
        written(&lf, "json")[0]["record"],
        json!({"str": "text", "int": 100, "double": 1.23, "bool": true})
    );
    assert_eq!(
        written(&lf, "logfmt")[0]["record"],
        json!({"str": "text", "int": "100", "double": "1.23", "bool": "true"})
    );
}

/// Time formats as Fluent Bit users write them: `%z` takes `Z`; a format
/// without a year (`%b %d %H:%M:%S`) takes the current one; `%L` is the
/// fraction of a second, after `.`, `,` or `:`. A time that does not read
/// is counted and warned about, once per interval however many there are.
#[test]
fn time_formats_as_fluent_bit_reads_them_and_failures_warned() {
    let filter = |name: &str, format: &str| {
        format!(
            "[filters.{name}]\ntype = \"parser\"\nmatch = \"{name}\"\nformat = \"regex\"\nregex = '^(?<time>[^|]+)\\|(?<message>.*)$'\ntime_key = \"time\"\ntime_format = \"{format}\"\n\n"
        )
    };
    let filters = [
        filter("zulu", "%Y-%m-%dT%H:%M:%S%z"),
        filter("noyear", "%b %d %H:%M:%S"),
        filter("frac", "%m/%d/%Y %H:%M:%S.%L %z"),
        filter("comma", "%m/%d/%Y %H:%M:%S,%LZ"),
        filter("colon", "%m/%d/%Y %H:%M:%S:%L %z"),
        filter("errlog", "%a %b %d %H:%M:%S.%L %Y"),
    ]
    .concat();
    let mut lf = Logferry::start(&config(&filters));
    post_lines(
        &mut lf,
        "zulu",
        &["2017-07-17T20:17:03Z|z", "2017-07-17T22:17:03+02:00|plus"],
    );
    post_lines(&mut lf, "noyear", &["Feb 16 04:06:58|old"]);
    post_lines(&mut lf, "frac", &["07/17/2017 22:17:03.1 +0200|f"]);
    post_lines(&mut lf, "comma", &["07/17/2017 20:17:03,1234Z|c"]);
    post_lines(&mut lf, "colon", &["07/17/2017 22:17:03:1 +02:00|l"]);
    post_lines(&mut lf, "errlog", &["Fri Jul 17 20:17:03.1234 2017|e"]);
    // 50 times that do not read: counted each, warned about once
    let bad: Vec<String> = (0..50).map(|i| format!("not a time {i}|bad {i}")).collect();
    let bad: Vec<&str> = bad.iter().map(String::as_str).collect();
    post_lines(&mut lf, "zulu", &bad);
    let total = 2 + 1 + 1 + 1 + 1 + 1 + 50;
    wait_for_lines(&lf.path("out.log"), total, Duration::from_secs(30));
    let warning = lf.wait_for_log("not a time in time_format", Duration::from_secs(10));
    assert!(warning.contains("filter=zulu"), "{warning}");
    assert!(
        warning.contains("not a time 0"),
        "names the text: {warning}"
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
    let warnings = lf
        .log_text()
        .lines()
        .filter(|l| l.contains("not a time in time_format"))
        .count();
    assert_eq!(warnings, 1, "rate-limited:\n{}", lf.log_text());
    let at = |tag: &str, i: usize| time_of(&written(&lf, tag)[i]);
    assert_eq!(at("zulu", 0), (1_500_322_623, 0));
    assert_eq!(at("zulu", 1), (1_500_322_623, 0));
    assert_eq!(at("frac", 0), (1_500_322_623, 100_000_000));
    assert_eq!(at("comma", 0), (1_500_322_623, 123_400_000));
    assert_eq!(at("colon", 0), (1_500_322_623, 100_000_000));
    assert_eq!(at("errlog", 0), (1_500_322_623, 123_400_000));
    // Feb 16 04:06:58 UTC of this year (or of last year, for a run in the
    // first hours of a year before the 16th of February: never)
    use chrono::Datelike;
    let year = chrono::Utc::now().year();
    let feb16 = chrono::NaiveDate::from_ymd_opt(year, 2, 16)
        .unwrap()
        .and_hms_opt(4, 6, 58)
        .unwrap()
        .and_utc()
        .timestamp();
    let old = at("noyear", 0).0;
    assert!(
        old == feb16 || old == feb16 - 365 * 86_400 || old == feb16 - 366 * 86_400,
        "{old} for Feb 16 of {year}"
    );
    let bad_times = lf.final_counter(
        "logferry_filter_bad_time_records_total{component=\"zulu\",component_type=\"parser\"}",
    );
    assert_eq!(bad_times, 50);
}

/// A record nested 100 levels deep, which the JSON parser accepts, is
/// written whole by a JSON output: not cut to `null` at some depth.
#[test]
fn a_record_nested_100_levels_is_written_whole_as_json() {
    let mut lf = Logferry::start(&config(
        "[filters.j]\ntype = \"parser\"\nmatch = \"**\"\nformat = \"json\"\n",
    ));
    let depth = 100;
    let mut nested = String::from("\"bottom\"");
    for i in (1..depth).rev() {
        nested = if i % 2 == 0 {
            format!("{{\"k{i}\":{nested}}}")
        } else {
            format!("[{i},{nested}]")
        };
    }
    let line = format!("{{\"n\":0,\"deep\":{nested}}}");
    let mut want: Value = serde_json::from_str(&line).unwrap();
    post_lines(&mut lf, "deep", &[&line, "{\"n\":1}"]);
    wait_for_lines(&lf.path("out.log"), 2, Duration::from_secs(30));
    assert!(lf.stop().success(), "{}", lf.log_text());
    let text = std::fs::read_to_string(lf.path("out.log")).unwrap();
    let first = text.lines().next().unwrap();
    // 102 levels with the line's own object: within serde_json's 128
    let got: Value = serde_json::from_str(first).unwrap();
    assert!(!first.contains("null"), "cut short: {first}");
    assert_eq!(got["record"], want.take());
}
