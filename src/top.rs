//! `logferry top`: each component's rates, errors and buffer fill, read
//! from a running logferry's `/metrics` and redrawn in place with plain
//! ANSI escapes (any terminal; no terminal library). `--once` prints one
//! table (rates over one interval) for scripts.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::TokioIo;

/// `logferry top` options.
#[derive(Debug, clap::Args)]
pub struct TopArgs {
    /// The `[api]` address of the logferry to watch (`host:port`; a
    /// leading `http://` is accepted).
    #[arg(long, default_value = "127.0.0.1:8686")]
    pub api: String,
    /// Print one table (rates measured over one interval) and exit.
    #[arg(long)]
    pub once: bool,
    /// Time between two readings, e.g. `1s`, `500ms`.
    #[arg(long, default_value = "1s", value_parser = crate::config::units::parse_duration)]
    pub interval: Duration,
}

/// One component's numbers in one reading.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    pub component_type: String,
    /// `source`, `filter` or `sink`.
    pub role: &'static str,
    pub records_in: f64,
    pub records_out: f64,
    pub bytes_in: f64,
    pub bytes_out: f64,
    /// Records handed to a sink (its input), written or not.
    pub records_received: f64,
    pub errors: f64,
    pub dropped: f64,
    pub fill_ratio: Option<f64>,
}

/// One scrape, by component name.
pub type Reading = BTreeMap<String, Row>;

/// `name{labels} value` lines of the OpenMetrics text, summed per
/// component into [`Row`]s.
pub fn parse(text: &str) -> Reading {
    let mut out = Reading::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => (n, l.trim_end_matches('}')),
            None => (series, ""),
        };
        let label = |key: &str| {
            labels.split("\",").find_map(|kv| {
                let (k, v) = kv.split_once("=\"")?;
                (k == key).then(|| v.trim_end_matches('"').to_string())
            })
        };
        let Some(component) = label("component") else {
            continue;
        };
        let row = out.entry(component).or_default();
        if let Some(t) = label("component_type") {
            row.component_type = t;
        }
        match name {
            "logferry_source_records_total" => {
                row.role = "source";
                row.records_in += value;
            }
            "logferry_source_bytes_total" => row.bytes_in += value,
            "logferry_sink_records_total" => {
                row.role = "sink";
                row.records_out += value;
            }
            "logferry_sink_bytes_total" => row.bytes_out += value,
            "logferry_sink_received_records_total" => {
                row.role = "sink";
                row.records_received += value;
            }
            "logferry_buffer_fill_ratio" => {
                row.role = "sink";
                row.fill_ratio = Some(value);
            }
            "logferry_filter_records_total" => {
                row.role = "filter";
                row.records_in += value;
            }
            "logferry_buffer_dropped_records_total"
            | "logferry_sink_rejected_records_total"
            | "logferry_filter_dropped_records_total" => row.dropped += value,
            n if n.ends_with("errors_total") => row.errors += value,
            _ => {}
        }
    }
    // the API's own accept errors have no row of their own
    out.retain(|_, r| !r.role.is_empty());
    out
}

/// The table of `now`, with per-second rates against `before`.
pub fn table(before: &Reading, now: &Reading, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64().max(1e-3);
    let rate = |name: &str, f: fn(&Row) -> f64| {
        let prev = before.get(name).map(f).unwrap_or(0.0);
        let cur = now.get(name).map(f).unwrap_or(0.0);
        (cur - prev).max(0.0) / secs
    };
    let mut s = format!(
        "{:<20} {:<10} {:<6} {:>12} {:>12} {:>12} {:>10} {:>10} {:>7} {:>12}\n",
        "COMPONENT",
        "TYPE",
        "KIND",
        "RECORDS/S",
        "BYTES/S",
        "TOTAL",
        "ERRORS",
        "DROPPED",
        "BUFFER",
        "IN/S"
    );
    for (name, row) in now {
        let (records, bytes, total) = if row.role == "source" {
            (
                rate(name, |r| r.records_in),
                rate(name, |r| r.bytes_in),
                row.records_in,
            )
        } else if row.role == "filter" {
            // what goes on past the filter; what reaches it is IN/S
            (
                rate(name, |r| r.records_in - r.dropped),
                0.0,
                row.records_in - row.dropped,
            )
        } else {
            (
                rate(name, |r| r.records_out),
                rate(name, |r| r.bytes_out),
                row.records_out,
            )
        };
        let fill = row
            .fill_ratio
            .map(|f| format!("{:.0}%", f * 100.0))
            .unwrap_or_else(|| "-".into());
        // what a sink was handed, next to what it wrote; what reached a
        // filter, next to what went on
        let received = match row.role {
            "sink" => format!("{:.0}", rate(name, |r| r.records_received)),
            "filter" => format!("{:.0}", rate(name, |r| r.records_in)),
            _ => "-".into(),
        };
        s.push_str(&format!(
            "{:<20} {:<10} {:<6} {:>12.0} {:>12} {:>12.0} {:>10.0} {:>10.0} {:>7} {:>12}\n",
            name,
            row.component_type,
            row.role,
            records,
            human_bytes(bytes),
            total,
            row.errors,
            row.dropped,
            fill,
            received
        ));
    }
    s
}

fn human_bytes(b: f64) -> String {
    match b {
        b if b >= 1e9 => format!("{:.1}GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1}MB", b / 1e6),
        b if b >= 1e3 => format!("{:.1}kB", b / 1e3),
        b => format!("{b:.0}B"),
    }
}

/// `GET /metrics` from `api` (hyper's HTTP/1 client, one connection).
async fn scrape(api: &str) -> Result<Reading, String> {
    let stream = tokio::net::TcpStream::connect(api)
        .await
        .map_err(|e| format!("cannot connect to the api at {api}: {e} (is [api] configured, and is --api its address?)"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("api {api}: {e}"))?;
    tokio::spawn(conn);
    let req = Request::get("/metrics")
        .header(hyper::header::HOST, api)
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| format!("api {api}: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!(
            "api {api}: GET /metrics answered {}",
            resp.status()
        ));
    }
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("api {api}: {e}"))?
        .to_bytes();
    Ok(parse(&String::from_utf8_lossy(&body)))
}

pub fn main(args: TopArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &TopArgs) -> Result<(), String> {
    let api = args.api.trim_start_matches("http://").trim_end_matches('/');
    let mut before = scrape(api).await?;
    let mut at = Instant::now();
    let mut stdout = std::io::stdout();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(args.interval) => {}
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
        let now = match scrape(api).await {
            Ok(r) => r,
            Err(e) if !args.once => {
                // the watched process may be restarting: say so and keep trying
                let _ = writeln!(stdout, "\x1b[H\x1b[2J{e}");
                let _ = stdout.flush();
                continue;
            }
            Err(e) => return Err(e),
        };
        let elapsed = at.elapsed();
        let text = table(&before, &now, elapsed);
        if args.once {
            print!("{text}");
            return Ok(());
        }
        // home, clear, draw: no alternate screen, so Ctrl-C leaves the last table
        let _ = write!(
            stdout,
            "\x1b[H\x1b[2Jlogferry top — {} — every {:?} (Ctrl-C to quit)\n\n{text}",
            api, args.interval
        );
        let _ = stdout.flush();
        before = now;
        at = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# TYPE logferry_source_records counter\n\
logferry_source_records_total{component=\"in\",component_type=\"forward\"} 100\n\
logferry_source_bytes_total{component=\"in\",component_type=\"forward\"} 2000\n\
logferry_forward_frame_errors_total{component=\"in\",component_type=\"forward\",kind=\"malformed\"} 2\n\
logferry_forward_connection_errors_total{component=\"in\",component_type=\"forward\",kind=\"io\"} 1\n\
logferry_sink_records_total{component=\"out\",component_type=\"file\"} 90\n\
logferry_sink_received_records_total{component=\"out\",component_type=\"file\"} 94\n\
logferry_buffer_fill_ratio{component=\"out\",component_type=\"file\"} 0.25\n\
logferry_accept_errors_total{component=\"api\",kind=\"emfile\"} 3\n\
# EOF\n";

    #[test]
    fn a_reading_sums_each_component() {
        let r = parse(TEXT);
        assert_eq!(r.len(), 2, "{r:?}");
        let inp = &r["in"];
        assert_eq!(
            (inp.role, inp.component_type.as_str()),
            ("source", "forward")
        );
        assert_eq!(
            (inp.records_in, inp.bytes_in, inp.errors),
            (100.0, 2000.0, 3.0)
        );
        let out = &r["out"];
        assert_eq!(
            (out.role, out.records_out, out.records_received),
            ("sink", 90.0, 94.0)
        );
        assert_eq!(out.fill_ratio, Some(0.25));
    }

    #[test]
    fn the_table_shows_rates_per_second() {
        let before = parse(TEXT);
        let now = parse(
            &TEXT
                .replace("} 100\n", "} 300\n")
                .replace("} 90\n", "} 190\n")
                .replace("} 94\n", "} 214\n"),
        );
        let t = table(&before, &now, Duration::from_secs(2));
        let line = |name: &str| {
            t.lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("{name} missing:\n{t}"))
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(line("in")[..5], ["in", "forward", "source", "100", "0B"]);
        assert_eq!(line("out")[3], "50", "{t}");
        assert_eq!(line("out")[8], "25%", "{t}");
        assert_eq!(line("out")[9], "60", "what the sink was handed: {t}");
        assert_eq!(line("in")[9], "-", "{t}");
    }

    #[test]
    fn a_filter_shows_what_reached_it_what_went_on_and_what_it_dropped() {
        let text = |seen: u32, dropped: u32| {
            format!(
                "logferry_filter_records_total{{component=\"quiet\",component_type=\"grep\"}} {seen}\n\
                 logferry_filter_dropped_records_total{{component=\"quiet\",component_type=\"grep\"}} {dropped}\n"
            )
        };
        let before = parse(&text(100, 40));
        assert_eq!(before["quiet"].role, "filter");
        let now = parse(&text(300, 100));
        let t = table(&before, &now, Duration::from_secs(2));
        let line: Vec<&str> = t
            .lines()
            .find(|l| l.starts_with("quiet"))
            .unwrap_or_else(|| panic!("no filter row:\n{t}"))
            .split_whitespace()
            .collect();
        // out/s, total gone on, dropped, in/s
        assert_eq!(
            [line[1], line[2], line[3], line[5], line[7], line[9]],
            ["grep", "filter", "70", "200", "100", "100"],
            "{t}"
        );
    }
}
