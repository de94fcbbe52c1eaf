//! `bench filters`: what processing costs. Each workload runs logferry
//! and, unless `--no-peer`, Fluent Bit doing the same work on the same
//! input in the same sitting, runs alternating, each system with its
//! defaults apart from the work itself:
//!
//! - `apache`: a file of Apache combined-format lines (about 200 B),
//!   written before the start, tailed from its head, parsed by the
//!   `apache2` regex with the time read from the line, written as one
//!   JSON object per line; `apache-short` the same with lines of about
//!   110 B (no referer and a short agent), where the fixed cost per record
//!   (read, split, route, format) weighs most;
//! - `raw`: PackedForward chunks of `--record-size` records, each
//!   `message` written as it came, one per line (Fluent Bit's file output
//!   with `Format template` and `Template {message}`);
//! - `json`: PackedForward chunks whose `message` is a JSON application
//!   log line (about 150 B) → parsed as JSON → one record in ten (health
//!   checks) dropped by a grep → a field set and one renamed → one JSON
//!   object per line;
//! - `pass-through`: logferry alone, forward → file and tail → file (raw),
//!   with no filter against five filters whose `match` takes nothing: what
//!   a filter costs the records it does not apply to.
//!
//! The clock stops when the output file holds every line expected; CPU
//! and peak RSS are the measured process's over that time (start-up
//! included for the tail workloads, which start with the file written).

use std::io::{Read, Seek, SeekFrom, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::load::send_frames;
use super::process::{wait_until_every, Proc};
use super::report::{self, Run, RunArgs, WorkDir};
use super::scenario::peers;
use super::scenario::template::Target;
use crate::protocol::forward::{write_message_entry, write_packed_forward};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// tail → apache2 regex parse (time from the line) → file (JSON).
    Apache,
    /// The same with lines of about 110 B.
    ApacheShort,
    /// forward → file, each `message` written raw, `--record-size` bytes.
    Raw,
    /// forward → JSON parse → grep (drops 1 in 10) → modify → file (JSON).
    Json,
    /// forward → file and tail → file, no filter against five that match
    /// nothing (logferry alone).
    PassThrough,
}

#[derive(Debug, clap::Args)]
pub struct FiltersArgs {
    /// The work measured.
    #[arg(long, value_enum, default_value = "apache")]
    pub workload: Workload,
    /// Records (lines) per run.
    #[arg(long, default_value_t = 2_000_000)]
    pub records: usize,
    /// Bytes per record of the `raw` workload.
    #[arg(long, default_value_t = 1024)]
    pub record_size: usize,
    /// Measure logferry alone, without Fluent Bit.
    #[arg(long)]
    pub no_peer: bool,
    /// Fluent Bit's program (default: the peers' build named in
    /// /opt/peers/env or by $LOGFERRY_PEERS_ENV, else `fluent-bit` on PATH).
    #[arg(long)]
    pub peer_bin: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Records per PackedForward chunk in the forward workloads.
const CHUNK: usize = 1000;
/// Distinct chunks the sender takes in turn.
const DISTINCT_CHUNKS: usize = 16;
/// Every `HEALTH_EVERY`th JSON record is a health check the grep drops.
const HEALTH_EVERY: usize = 10;
/// The Apache time format, as both systems write it.
const APACHE_TIME: &str = "%d/%b/%Y:%H:%M:%S %z";

pub fn run(a: FiltersArgs) -> Result<(), String> {
    if a.records == 0 || a.run.runs == 0 || a.record_size == 0 {
        return Err("records, record-size and runs must be positive".into());
    }
    let dir = WorkDir::new(a.run.dir.clone())?;
    let peer = if a.no_peer || a.workload == Workload::PassThrough {
        None
    } else {
        Some(peers::program(Target::FluentBit, a.peer_bin.as_deref())?)
    };
    match a.workload {
        Workload::Apache | Workload::ApacheShort => compare(
            &dir.path,
            &a,
            peer.as_deref(),
            &Apache::new(&dir.path, a.records, a.workload == Workload::ApacheShort)?,
        ),
        Workload::Raw => compare(
            &dir.path,
            &a,
            peer.as_deref(),
            &Raw::new(a.records, a.record_size),
        ),
        Workload::Json => compare(&dir.path, &a, peer.as_deref(), &Json::new(a.records)),
        Workload::PassThrough => pass_through(&dir.path, &a),
    }
}

/// A workload both systems run: its configs and its load.
trait Work: Sync {
    fn title(&self) -> String;
    /// Lines the output holds at the end.
    fn expected(&self) -> usize;
    fn logferry_config(&self, out: &Path) -> String;
    /// Fluent Bit's config; `port` is where it listens, if it does.
    fn fluent_bit_config(
        &self,
        dir: &Path,
        out: &Path,
        port: Option<SocketAddr>,
    ) -> Result<String, String>;
    /// Whether the system listens for the load (else its input is a file
    /// written before the start).
    fn listens(&self) -> bool;
    /// Sends the load to `addr`.
    fn load(&self, addr: SocketAddr) -> Result<(), String>;
}

fn compare(
    dir: &Path,
    a: &FiltersArgs,
    peer: Option<&Path>,
    work: &dyn Work,
) -> Result<(), String> {
    println!("{}; {} runs", work.title(), a.run.runs);
    let out = dir.join("out.log");
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for i in 0..a.run.runs {
        let _ = std::fs::remove_file(&out);
        let mut p = Proc::start(dir, "logferry-filters", &work.logferry_config(&out))?;
        let addr = if work.listens() {
            Some(p.address("source=in ")?)
        } else {
            None
        };
        ours.push(measure(&mut p, work, addr, &out)?);
        drop(p);
        eprintln!("run {}: {}", i + 1, ours[i].row("logferry"));
        if let Some(bin) = peer {
            let _ = std::fs::remove_file(&out);
            let addr = if work.listens() {
                Some(free_port()?)
            } else {
                None
            };
            let conf = dir.join("fluent-bit.conf");
            std::fs::write(&conf, work.fluent_bit_config(dir, &out, addr)?)
                .map_err(|e| e.to_string())?;
            let mut cmd = Command::new(bin);
            cmd.arg("-c").arg(&conf).stdout(std::process::Stdio::null());
            let mut p = Proc::spawn(cmd, "fluent-bit")?;
            if let Some(addr) = addr {
                wait_for_port(addr, &mut p)?;
            }
            theirs.push(measure(&mut p, work, addr, &out)?);
            drop(p);
            eprintln!("run {}: {}", i + 1, theirs[i].row("Fluent Bit"));
        }
    }
    let _ = std::fs::remove_file(&out);
    let mut rows: Vec<(&str, &[Run])> = vec![("logferry", &ours)];
    if peer.is_some() {
        rows.push(("Fluent Bit", &theirs));
    }
    report::print(&rows);
    if peer.is_some() {
        let (o, t) = (report::median(&ours), report::median(&theirs));
        if let (Some(oc), Some(tc)) = (o.cpu, t.cpu) {
            println!(
                "\nmedians: records per CPU-second, logferry / Fluent Bit: {:.2}; peak RSS logferry / Fluent Bit: {:.2}",
                tc.as_secs_f64() / oc.as_secs_f64(),
                o.peak_rss.unwrap_or(0) as f64 / t.peak_rss.unwrap_or(1).max(1) as f64
            );
        }
    }
    report::note_free_page_reporting();
    Ok(())
}

/// One run of a started process: the load (if any) sent from another
/// thread while the output is watched until it holds every line.
fn measure(
    p: &mut Proc,
    work: &dyn Work,
    addr: Option<SocketAddr>,
    out: &Path,
) -> Result<Run, String> {
    let before = p.sample()?;
    let start = Instant::now();
    let mut lines = LineCount::new(out);
    let expected = work.expected();
    std::thread::scope(|s| {
        let sender = addr.map(|addr| s.spawn(move || work.load(addr)));
        wait_until_every(Duration::from_millis(5), &mut [p], || {
            let n = lines.count();
            (
                n >= expected,
                format!("{} holds {n} of {expected} lines", out.display()),
            )
        })?;
        match sender.map(|s| s.join()) {
            Some(Err(_)) => Err("the sender panicked".to_string()),
            Some(Ok(sent)) => sent,
            None => Ok(()),
        }
    })?;
    let seconds = start.elapsed().as_secs_f64();
    let after = p.sample()?;
    Ok(Run {
        seconds,
        records: expected,
        bytes: std::fs::metadata(out).map(|m| m.len()).unwrap_or(0),
        cpu: Some(after.cpu_since(&before)),
        peak_rss: Some(after.peak_rss),
    })
}

/// Counts the lines of a growing file, reading only what was added.
pub(super) struct LineCount {
    path: PathBuf,
    read: u64,
    lines: usize,
    buf: Vec<u8>,
}

impl LineCount {
    pub(super) fn new(path: &Path) -> Self {
        LineCount {
            path: path.to_path_buf(),
            read: 0,
            lines: 0,
            buf: vec![0; 1 << 20],
        }
    }

    pub(super) fn count(&mut self) -> usize {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return self.lines;
        };
        if f.seek(SeekFrom::Start(self.read)).is_err() {
            return self.lines;
        }
        while let Ok(n) = f.read(&mut self.buf) {
            if n == 0 {
                break;
            }
            self.read += n as u64;
            self.lines += self.buf[..n].iter().filter(|&&b| b == b'\n').count();
        }
        self.lines
    }
}

/// Waits until `addr` accepts connections.
pub(super) fn wait_for_port(addr: SocketAddr, p: &mut Proc) -> Result<(), String> {
    wait_until_every(Duration::from_millis(20), &mut [p], || {
        (
            std::net::TcpStream::connect(addr).is_ok(),
            format!("nothing listens on {addr}"),
        )
    })
}

/// A free loopback port (closed again: the peer binds it next).
pub(super) fn free_port() -> Result<SocketAddr, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map_err(|e| e.to_string())
}

/// The `[SERVICE]` section and the parsers file every Fluent Bit config
/// here starts with.
fn fluent_bit_service(dir: &Path) -> Result<String, String> {
    let parsers = dir.join("fluent-bit-parsers.conf");
    std::fs::write(
        &parsers,
        format!(
            "[PARSER]\n    Name        apache2\n    Format      regex\n    Regex       {}\n    Time_Key    time\n    Time_Format {APACHE_TIME}\n\n\
             [PARSER]\n    Name        json\n    Format      json\n",
            crate::filters::parser::APACHE2
        ),
    )
    .map_err(|e| e.to_string())?;
    Ok(format!(
        "[SERVICE]\n    Log_Level    warn\n    Parsers_File {}\n\n",
        parsers.display()
    ))
}

/// Fluent Bit's file output to `out`, writing records in `format` (the
/// `Format` line and any after it: `"plain"`, or `"template\n    Template {message}"`).
fn fluent_bit_file_output(out: &Path, format: &str) -> String {
    format!(
        "[OUTPUT]\n    Name   file\n    Match  *\n    Path   {}\n    File   {}\n    Format {format}\n",
        out.parent().unwrap_or(Path::new(".")).display(),
        out.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("out.log")
    )
}

struct Apache {
    input: PathBuf,
    records: usize,
    /// Lines of about 110 B rather than 200.
    short: bool,
}

impl Apache {
    fn new(dir: &Path, records: usize, short: bool) -> Result<Self, String> {
        let input = dir.join("access.log");
        let mut w =
            std::io::BufWriter::new(std::fs::File::create(&input).map_err(|e| e.to_string())?);
        for i in 0..records {
            writeln!(w, "{}", apache_line(i, short)).map_err(|e| e.to_string())?;
        }
        w.flush().map_err(|e| e.to_string())?;
        Ok(Apache {
            input,
            records,
            short,
        })
    }
}

/// An Apache combined-format line of about 200 bytes (`short`: about 110,
/// with no referer and a short agent), varied by `i`; a thousand lines a
/// second, as a busy server writes them.
fn apache_line(i: usize, short: bool) -> String {
    const PATHS: [&str; 4] = [
        "/api/v1/items",
        "/static/app.js",
        "/login",
        "/api/v1/orders",
    ];
    const CODES: [u16; 4] = [200, 304, 404, 500];
    let second = i / 1000;
    let head = format!(
        "10.{}.{}.{} - - [27/Nov/2026:{:02}:{:02}:{:02} +0000] \"GET {}/",
        i % 251,
        (i / 251) % 251,
        i % 7,
        (second / 3600) % 24,
        (second / 60) % 60,
        second % 60,
        PATHS[i % 4],
    );
    let (code, size) = (CODES[(i / 4) % 4], 100 + i % 9000);
    if short {
        format!(
            "{head}{} HTTP/1.1\" {code} {size} \"-\" \"Go-http-client/1.1\"",
            i % 100_000
        )
    } else {
        format!(
            "{head}{i}?page=2 HTTP/1.1\" {code} {size} \"https://example.com/start\" \"Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/120.0\""
        )
    }
}

impl Work for Apache {
    fn title(&self) -> String {
        format!(
            "tail → parser (apache2, time from the line) → file (JSON): {} lines of about {} B written before the start",
            self.records,
            apache_line(self.records / 2, self.short).len()
        )
    }

    fn expected(&self) -> usize {
        self.records
    }

    fn logferry_config(&self, out: &Path) -> String {
        format!(
            "[sources.tail]\ntype = \"tail\"\npaths = [{:?}]\ntag = \"access\"\nread_from_head = true\n\n\
             [filters.parse]\ntype = \"parser\"\nmatch = \"**\"\nformat = \"apache2\"\ntime_key = \"time\"\ntime_format = {APACHE_TIME:?}\n\n\
             [sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = {:?}\nformat = \"json\"\n",
            self.input.display().to_string(),
            out.display().to_string()
        )
    }

    fn fluent_bit_config(
        &self,
        dir: &Path,
        out: &Path,
        _: Option<SocketAddr>,
    ) -> Result<String, String> {
        Ok(format!(
            "{}[INPUT]\n    Name           tail\n    Path           {}\n    Read_from_Head on\n    Key            message\n\n\
             [FILTER]\n    Name     parser\n    Match    *\n    Key_Name message\n    Parser   apache2\n\n{}",
            fluent_bit_service(dir)?,
            self.input.display(),
            fluent_bit_file_output(out, "plain")
        ))
    }

    fn load(&self, _: SocketAddr) -> Result<(), String> {
        Err("the Apache workload tails a file written before the start".into())
    }

    fn listens(&self) -> bool {
        false
    }
}

struct Json {
    records: usize,
    frames: Vec<Vec<u8>>,
}

impl Json {
    fn new(records: usize) -> Self {
        let frames = (0..DISTINCT_CHUNKS)
            .map(|c| {
                let mut entries = Vec::with_capacity(CHUNK * 260);
                for i in 0..CHUNK {
                    let n = c * CHUNK + i;
                    write_message_entry(
                        &mut entries,
                        1_700_000_000,
                        i as u32,
                        json_line(n).as_bytes(),
                    );
                }
                let mut frame = Vec::with_capacity(entries.len() + 64);
                write_packed_forward(&mut frame, "app", &entries, CHUNK, None);
                frame
            })
            .collect();
        Json {
            records: records.div_ceil(CHUNK) * CHUNK,
            frames,
        }
    }

    /// Whole chunks sent.
    fn chunks(&self) -> usize {
        self.records / CHUNK
    }
}

/// A JSON application log line of about 150 bytes; every
/// `HEALTH_EVERY`th is a health check.
fn json_line(i: usize) -> String {
    const LEVELS: [&str; 3] = ["info", "warn", "error"];
    let path = if i.is_multiple_of(HEALTH_EVERY) {
        "/healthz".to_string()
    } else {
        format!("/api/v1/orders/{i}")
    };
    format!(
        "{{\"level\":\"{}\",\"path\":\"{path}\",\"user\":\"user-{}\",\"latency_ms\":{},\"status\":{},\"msg\":\"request handled by the order service without trouble\"}}",
        LEVELS[i % 3],
        i % 977,
        i % 300,
        [200, 201, 404][i % 3]
    )
}

impl Work for Json {
    fn title(&self) -> String {
        format!(
            "forward → parser (json) → grep (drops 1 in {HEALTH_EVERY}) → modify (set + rename) → file (JSON): {} records of about {} B in chunks of {CHUNK}",
            self.records,
            json_line(1).len()
        )
    }

    fn expected(&self) -> usize {
        // each distinct chunk holds CHUNK / HEALTH_EVERY health checks
        self.records - self.records / HEALTH_EVERY
    }

    fn logferry_config(&self, out: &Path) -> String {
        format!(
            "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n\
             [filters.parse]\ntype = \"parser\"\nmatch = \"**\"\nformat = \"json\"\n\n\
             [filters.health]\ntype = \"grep\"\nmatch = \"**\"\nexclude = {{ path = \"^/health\" }}\n\n\
             [filters.enrich]\ntype = \"modify\"\nmatch = \"**\"\nset = {{ host = \"bench-host\" }}\nrename = {{ user = \"user_id\" }}\n\n\
             [sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = {:?}\nformat = \"json\"\n",
            out.display().to_string()
        )
    }

    fn fluent_bit_config(
        &self,
        dir: &Path,
        out: &Path,
        port: Option<SocketAddr>,
    ) -> Result<String, String> {
        let port = port.ok_or("the JSON workload's Fluent Bit listens")?;
        Ok(format!(
            "{}[INPUT]\n    Name   forward\n    Listen 127.0.0.1\n    Port   {}\n\n\
             [FILTER]\n    Name     parser\n    Match    *\n    Key_Name message\n    Parser   json\n\n\
             [FILTER]\n    Name    grep\n    Match   *\n    Exclude path ^/health\n\n\
             [FILTER]\n    Name   modify\n    Match  *\n    Set    host bench-host\n    Rename user user_id\n\n{}",
            fluent_bit_service(dir)?,
            port.port(),
            fluent_bit_file_output(out, "plain")
        ))
    }

    fn load(&self, addr: SocketAddr) -> Result<(), String> {
        let frames: Vec<&[u8]> = self.frames.iter().map(|f| f.as_slice()).collect();
        send_frames(addr, &frames, self.chunks(), None)
    }

    fn listens(&self) -> bool {
        true
    }
}

/// forward → file with each `message` written as it came.
struct Raw {
    records: usize,
    size: usize,
    frame: Vec<u8>,
}

impl Raw {
    fn new(records: usize, size: usize) -> Self {
        Raw {
            records: records.div_ceil(CHUNK) * CHUNK,
            size,
            frame: super::load::packed_frame("bench", CHUNK, size),
        }
    }
}

impl Work for Raw {
    fn title(&self) -> String {
        format!(
            "forward → file (the message raw, one per line): {} records of {} B in chunks of {CHUNK}",
            self.records, self.size
        )
    }

    fn expected(&self) -> usize {
        self.records
    }

    fn logferry_config(&self, out: &Path) -> String {
        format!(
            "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n\
             [sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = {:?}\nformat = \"raw\"\n",
            out.display().to_string()
        )
    }

    fn fluent_bit_config(
        &self,
        dir: &Path,
        out: &Path,
        port: Option<SocketAddr>,
    ) -> Result<String, String> {
        let port = port.ok_or("the raw workload's Fluent Bit listens")?;
        Ok(format!(
            "{}[INPUT]\n    Name   forward\n    Listen 127.0.0.1\n    Port   {}\n\n{}",
            fluent_bit_service(dir)?,
            port.port(),
            fluent_bit_file_output(out, "template\n    Template {message}")
        ))
    }

    fn load(&self, addr: SocketAddr) -> Result<(), String> {
        send_frames(addr, &[&self.frame], self.records / CHUNK, None)
    }

    fn listens(&self) -> bool {
        true
    }
}

/// Five filters of the common kinds whose `match` takes no tag the
/// pass-through workloads send.
const FIVE_IDLE_FILTERS: &str = "[filters.f1]\ntype = \"grep\"\nmatch = \"other.**\"\ninclude = { message = \"x\" }\n\n\
[filters.f2]\ntype = \"modify\"\nmatch = \"other.**\"\nset = { a = \"b\" }\n\n\
[filters.f3]\ntype = \"parser\"\nmatch = \"other.**\"\nformat = \"json\"\n\n\
[filters.f4]\ntype = \"rewrite_tag\"\nmatch = \"other.**\"\nrules = [{ field = \"message\", regex = \"x\", tag = \"y\" }]\n\n\
[filters.f5]\ntype = \"sample\"\nmatch = \"other.**\"\nrate = 2\n\n";

/// logferry alone: forward → file and tail → file (raw), without filters
/// and with five idle ones, alternating.
fn pass_through(dir: &Path, a: &FiltersArgs) -> Result<(), String> {
    const SIZE: usize = 100;
    let chunks = a.records.div_ceil(CHUNK);
    let records = chunks * CHUNK;
    let frame = super::load::packed_frame("bench", CHUNK, SIZE);
    let input = dir.join("input.log");
    {
        let mut w =
            std::io::BufWriter::new(std::fs::File::create(&input).map_err(|e| e.to_string())?);
        let line = vec![b'x'; SIZE];
        for _ in 0..records {
            w.write_all(&line)
                .and_then(|()| w.write_all(b"\n"))
                .map_err(|e| e.to_string())?;
        }
        w.flush().map_err(|e| e.to_string())?;
    }
    println!(
        "pass-through: {records} records of {SIZE} B, forward → file and tail → file (raw), with no filter and with five whose match takes nothing; {} runs",
        a.run.runs
    );
    let out = dir.join("out.log");
    let mut runs: [Vec<Run>; 4] = Default::default();
    for i in 0..a.run.runs {
        for (k, filters) in [(0, ""), (1, FIVE_IDLE_FILTERS)] {
            // forward → file
            let _ = std::fs::remove_file(&out);
            let mut p = Proc::start(
                dir,
                "forward-file",
                &format!(
                    "{filters}[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = {:?}\nformat = \"raw\"\n",
                    out.display().to_string()
                ),
            )?;
            let addr = p.address("source=in ")?;
            let frame = frame.clone();
            let run = super::process::measure_run(
                &mut [&mut p],
                0,
                &out,
                (records * (SIZE + 1)) as u64,
                records,
                || std::thread::spawn(move || send_frames(addr, &[&frame], chunks, None)),
            )?;
            drop(p);
            eprintln!(
                "run {}: {}",
                i + 1,
                run.row(&format!("forward → file, {} filters", k * 5))
            );
            runs[k].push(run);
            // tail → file
            let _ = std::fs::remove_file(&out);
            let mut p = Proc::start(
                dir,
                "tail-file",
                &format!(
                    "{filters}[sources.tail]\ntype = \"tail\"\npaths = [{:?}]\ntag = \"bench\"\nread_from_head = true\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = {:?}\nformat = \"raw\"\n",
                    input.display().to_string(),
                    out.display().to_string()
                ),
            )?;
            let run = super::process::measure_run(
                &mut [&mut p],
                0,
                &out,
                (records * (SIZE + 1)) as u64,
                records,
                || std::thread::spawn(|| Ok(())),
            )?;
            drop(p);
            eprintln!(
                "run {}: {}",
                i + 1,
                run.row(&format!("tail → file, {} filters", k * 5))
            );
            runs[2 + k].push(run);
        }
    }
    let _ = std::fs::remove_file(&out);
    report::print(&[
        ("forward → file, no filter", &runs[0]),
        ("forward → file, 5 idle filters", &runs[1]),
        ("tail → file, no filter", &runs[2]),
        ("tail → file, 5 idle filters", &runs[3]),
    ]);
    for (name, none, five) in [
        ("forward → file", &runs[0], &runs[1]),
        ("tail → file", &runs[2], &runs[3]),
    ] {
        let cpu = |r: &[Run]| {
            let mut c: Vec<f64> = r
                .iter()
                .filter_map(|r| r.cpu)
                .map(|c| c.as_secs_f64())
                .collect();
            c.sort_by(f64::total_cmp);
            c[c.len() / 2]
        };
        println!(
            "{name}: median CPU with five idle filters / without: {:.3}; median time: {:.3}",
            cpu(five) / cpu(none),
            report::median(five).seconds / report::median(none).seconds
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_lines_parse_as_the_workloads_expect() {
        let re = regex::Regex::new(crate::filters::parser::APACHE2).unwrap();
        for (short, sizes) in [(false, 170..230), (true, 95..125)] {
            for i in [0, 1, 250, 9999, 1_999_999] {
                let line = apache_line(i, short);
                let c = re.captures(&line).unwrap_or_else(|| panic!("{line}"));
                assert!(
                    chrono::DateTime::parse_from_str(&c["time"], APACHE_TIME).is_ok(),
                    "{line}"
                );
                assert_eq!(&c["code"], ["200", "304", "404", "500"][(i / 4) % 4]);
                assert!(sizes.contains(&line.len()), "{} B: {line}", line.len());
            }
        }
        for i in [0, 1, 10, 977] {
            let v: serde_json::Value = serde_json::from_str(&json_line(i)).unwrap();
            assert_eq!(
                v["path"].as_str().unwrap().starts_with("/health"),
                i % HEALTH_EVERY == 0
            );
        }
        // every distinct chunk drops the same share, so any number of
        // whole chunks drops exactly one in HEALTH_EVERY
        assert_eq!(CHUNK % HEALTH_EVERY, 0);
    }
}
