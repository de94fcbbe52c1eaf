//! The destination of `bench sinks --workload loki|splunk`: a VictoriaLogs
//! server (`scripts/victorialogs.sh`, started with `LOGFERRY_VICTORIALOGS_DIR`
//! set to the bench's `--state-dir`), which takes Loki's push API and
//! Splunk HEC and answers LogsQL. Each run sends under a stream field of
//! its own (the Loki label `run`, the HEC `sourcetype`), so the count of
//! one run never holds another's records; the clock stops when LogsQL
//! counts every record sent under it. The server's CPU is reported apart.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use super::stores::{host_port, read_pid, read_state};
use super::{exchange, logferry_batching, measure, start, Load, Measured, System, RECORD_BYTES};
use crate::bench::procfs;

/// How often the run's records are counted: a LogsQL `count()` over a
/// few million rows takes the server milliseconds.
const COUNT_EVERY: Duration = Duration::from_millis(250);

/// The HEC token both systems send (VictoriaLogs does not check it).
pub const HEC_TOKEN: &str = "00000000-0000-0000-0000-000000000001";

/// A VictoriaLogs server run by `scripts/victorialogs.sh`.
pub struct VictoriaLogs {
    /// Its base URL, `http://127.0.0.1:PORT`.
    pub url: String,
    /// Where that URL resolves, for the count queries.
    addr: SocketAddr,
    /// Its process, whose CPU is reported apart.
    pid: u32,
}

/// The push API a run goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// logferry's `loki` sink, Fluent Bit's `loki` output.
    Loki,
    /// logferry's `splunk_hec` sink, Fluent Bit's `splunk` output.
    Splunk,
}

impl Api {
    /// The stream field a run's records carry its name in.
    fn field(self) -> &'static str {
        match self {
            Api::Loki => "run",
            Api::Splunk => "sourcetype",
        }
    }

    /// The logferry sink sending the run `run` to `url`.
    pub fn logferry_sink(self, url: &str, run: &str) -> String {
        let batching = logferry_batching();
        match self {
            // protobuf + snappy: the sink's default encoding
            Api::Loki => format!(
                "[sinks.out]\ntype = \"loki\"\nmatch = \"**\"\nendpoint = \"{url}/insert\"\n\
                 labels = {{ job = \"logferry\", run = \"{run}\" }}\n{batching}"
            ),
            Api::Splunk => format!(
                "[sinks.out]\ntype = \"splunk_hec\"\nmatch = \"**\"\nendpoint = \"{url}\"\n\
                 token = \"{HEC_TOKEN}\"\nsourcetype = \"{run}\"\n{batching}"
            ),
        }
    }

    /// Fluent Bit's output sending the run `run` to `host:port`.
    pub fn fluent_bit_output(self, host: &str, port: &str, run: &str) -> String {
        match self {
            // JSON, Fluent Bit's only encoding; `job=fluent-bit` is its
            // default label
            Api::Loki => format!(
                "[OUTPUT]\n    Name    loki\n    Match   *\n    Host    {host}\n    Port    {port}\n\
                 \x20   Uri     /insert/loki/api/v1/push\n    Labels  job=fluent-bit, run={run}\n    Workers 2\n"
            ),
            Api::Splunk => format!(
                "[OUTPUT]\n    Name             splunk\n    Match            *\n    Host             {host}\n\
                 \x20   Port             {port}\n    TLS              Off\n    Splunk_Token     {HEC_TOKEN}\n\
                 \x20   Event_Sourcetype {run}\n    Workers          2\n"
            ),
        }
    }

    /// The LogsQL query that counts the run `run`'s records.
    pub fn count_query(self, run: &str) -> String {
        format!("_stream:{{{}=\"{run}\"}} | stats count() c", self.field())
    }
}

impl VictoriaLogs {
    /// The server of the state dir `dir`, which must run.
    pub fn new(dir: &Path) -> Result<VictoriaLogs, String> {
        let url = read_state(dir, "url")?;
        let pid = read_pid(dir)?;
        if procfs::sample(pid).is_none() {
            return Err(format!(
                "the VictoriaLogs server of {} (pid {pid}) does not run",
                dir.display()
            ));
        }
        let (host, port) = host_port(&url)?;
        let addr = format!("{host}:{port}")
            .to_socket_addrs()
            .map_err(|e| format!("{url}: {e}"))?
            .next()
            .ok_or_else(|| format!("{url}: no address"))?;
        Ok(VictoriaLogs { url, addr, pid })
    }

    pub fn cpu(&self) -> Option<Duration> {
        procfs::sample(self.pid).map(|s| s.cpu())
    }

    /// The rows the LogsQL `query` (ending in `stats count() c`) counts.
    fn count(&self, query: &str) -> Result<usize, String> {
        let body = format!("query={}", form_encode(query));
        let (status, answer) = exchange(
            self.addr,
            "POST",
            "/select/logsql/query",
            "application/x-www-form-urlencoded",
            body.as_bytes(),
        )
        .map_err(|e| format!("LogsQL {query:?} to {}: {e}", self.url))?;
        if status != 200 {
            return Err(format!("LogsQL {query:?}: {status} {answer}"));
        }
        count_answer(&answer).ok_or_else(|| format!("LogsQL {query:?} answered {answer:?}"))
    }
}

/// The count in the answer of a `stats count() c` query: one JSON line,
/// `{"c":"N"}` (no line at all when nothing matched yet).
fn count_answer(answer: &str) -> Option<usize> {
    let line = answer.lines().find(|l| !l.trim().is_empty());
    let Some(line) = line else { return Some(0) };
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    match &v["c"] {
        serde_json::Value::String(s) => s.parse().ok(),
        serde_json::Value::Number(n) => n.as_u64().map(|n| n as usize),
        _ => None,
    }
}

/// `s` as an `application/x-www-form-urlencoded` value.
fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// One run of `api` under the name `run`: the clock stops when LogsQL
/// counts every record sent under it.
pub fn measure_victorialogs(
    dir: &Path,
    system: System,
    peer: Option<&Path>,
    server: &VictoriaLogs,
    api: Api,
    run: &str,
    load: &Load,
) -> Result<Measured, String> {
    let (host, port) = host_port(&server.url)?;
    let sink = api.logferry_sink(&server.url, run);
    let output = api.fluent_bit_output(host, port, run);
    let (mut p, addr) = start(dir, system, peer, &sink, &output, &[])?;
    let query = api.count_query(run);
    let before = server.cpu();
    let mut n = 0;
    let json_bytes = (load.records * RECORD_BYTES) as u64;
    let run_figures = measure(&mut p, &mut [], addr, load, json_bytes, COUNT_EVERY, || {
        n = server.count(&query).unwrap_or(n);
        (
            n >= load.records,
            format!(
                "VictoriaLogs counts {n} of {} records ({query})",
                load.records
            ),
        )
    })?;
    let dest_cpu = match (before, server.cpu()) {
        (Some(b), Some(a)) => Some(a.saturating_sub(b)),
        _ => None,
    };
    drop(p);
    if n > load.records {
        eprintln!(
            "{}: VictoriaLogs counts {n} records for {} sent (duplicates)",
            system.name(),
            load.records
        );
    }
    Ok(Measured {
        run: run_figures,
        dest_cpu,
        stored: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_is_read_from_the_stats_line() {
        assert_eq!(count_answer("{\"c\":\"2000000\"}\n"), Some(2_000_000));
        assert_eq!(count_answer("{\"c\":17}"), Some(17));
        assert_eq!(count_answer(""), Some(0), "no row yet: nothing counted");
        assert_eq!(count_answer("\n"), Some(0));
        assert_eq!(count_answer("{\"c\":\"x\"}"), None);
        assert_eq!(count_answer("not json"), None);
    }

    #[test]
    fn each_api_counts_by_the_field_its_run_is_named_in() {
        let run = "logferry-42-1";
        let loki = Api::Loki.logferry_sink("http://127.0.0.1:9428", run);
        assert!(
            loki.contains("endpoint = \"http://127.0.0.1:9428/insert\""),
            "{loki}"
        );
        assert!(loki.contains("run = \"logferry-42-1\""), "{loki}");
        assert!(
            !loki.contains("encoding"),
            "the sink's default encoding: {loki}"
        );
        let hec = Api::Splunk.logferry_sink("http://127.0.0.1:9428", run);
        assert!(hec.contains("sourcetype = \"logferry-42-1\""), "{hec}");
        let fb = Api::Loki.fluent_bit_output("127.0.0.1", "9428", run);
        assert!(fb.contains("Uri     /insert/loki/api/v1/push"), "{fb}");
        assert!(fb.contains("run=logferry-42-1"), "{fb}");
        let fb = Api::Splunk.fluent_bit_output("127.0.0.1", "9428", run);
        assert!(fb.contains("Event_Sourcetype logferry-42-1"), "{fb}");
        assert_eq!(
            Api::Loki.count_query(run),
            "_stream:{run=\"logferry-42-1\"} | stats count() c"
        );
        assert_eq!(
            Api::Splunk.count_query(run),
            "_stream:{sourcetype=\"logferry-42-1\"} | stats count() c"
        );
        assert_eq!(form_encode("a b{\"}|"), "a%20b%7B%22%7D%7C");
    }

    #[test]
    fn both_configurations_parse() {
        for api in [Api::Loki, Api::Splunk] {
            let config = format!(
                "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n{}",
                api.logferry_sink("http://127.0.0.1:9428", "r")
            );
            crate::topology::config::Config::parse(&config, "bench")
                .unwrap_or_else(|e| panic!("{api:?}: {e}\n{config}"));
        }
    }
}
