//! The destinations of `bench sinks --workload otlp|s3` that are servers
//! of their own, each run by its script with a private state dir: an
//! OpenTelemetry Collector (`scripts/otelcol.sh`) writing OTLP-JSON lines
//! to a file, and s3s-fs (`scripts/s3.sh`) keeping objects as files. The
//! bench reads their state dir for the address, the process id (their CPU
//! is reported apart) and what they received.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::super::procfs;
use super::{measure, start, Batching, Load, Measured, System, RECORD_BYTES};

/// Objects are closed at this many MiB of records before compression.
pub const OBJECT_MIB: usize = 8;
/// And this long after their first record at the latest (Fluent Bit's
/// `upload_timeout`): what the last, partial object of a run waits.
pub const OBJECT_AGE_SECS: u64 = 2;
/// The rate mode's object age, both systems': short enough that the
/// latency of an object closed by its age is measured in a step.
pub const RATE_OBJECT_AGE_SECS: u64 = 10;
/// How often the destination's output is counted.
const COUNT_EVERY: Duration = Duration::from_millis(50);

/// Reads one line of a script's state file, trimmed.
pub(super) fn read_state(dir: &Path, name: &str) -> Result<String, String> {
    let p = dir.join(name);
    std::fs::read_to_string(&p)
        .map(|s| s.trim().to_string())
        .map_err(|e| {
            format!(
                "{}: {e} (is the server started with this state dir?)",
                p.display()
            )
        })
}

/// The process id in a state dir's `pid` file.
pub(super) fn read_pid(dir: &Path) -> Result<u32, String> {
    let pid = read_state(dir, "pid")?;
    pid.parse()
        .map_err(|_| format!("{}: not a process id: {pid}", dir.join("pid").display()))
}

fn cpu_of(pid: u32) -> Option<Duration> {
    procfs::sample(pid).map(|s| s.cpu())
}

/// An OpenTelemetry Collector started by `scripts/otelcol.sh` with
/// `LOGFERRY_OTELCOL_DIR` set to `dir`.
pub struct Collector {
    /// Its OTLP/HTTP base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    /// Its file exporter's output: one OTLP-JSON request a line.
    out: PathBuf,
    /// Its process, whose CPU is reported apart.
    pid: u32,
}

impl Collector {
    pub fn new(dir: &Path) -> Result<Collector, String> {
        let addresses = read_state(dir, "addresses")?;
        let url = addresses
            .lines()
            .find_map(|l| l.strip_prefix("http="))
            .ok_or_else(|| format!("{}: no http= line", dir.join("addresses").display()))?
            .to_string();
        let pid = read_pid(dir)?;
        if procfs::sample(pid).is_none() {
            return Err(format!(
                "the collector of {} (pid {pid}) does not run",
                dir.display()
            ));
        }
        Ok(Collector {
            url,
            out: dir.join("out.jsonl"),
            pid,
        })
    }

    pub fn cpu(&self) -> Option<Duration> {
        cpu_of(self.pid)
    }

    /// Empties the file after a run: millions of records of OTLP-JSON
    /// would fill the disk. The exporter appends (O_APPEND), so its next
    /// line goes to the start of the emptied file.
    pub fn truncate(&self) {
        if let Ok(f) = std::fs::OpenOptions::new().write(true).open(&self.out) {
            let _ = f.set_len(0);
        }
    }

    /// A counter of the log records the collector writes from now on.
    pub fn counter(&self) -> RecordCount {
        let offset = std::fs::metadata(&self.out).map(|m| m.len()).unwrap_or(0);
        RecordCount {
            path: self.out.clone(),
            offset,
            records: 0,
        }
    }
}

/// Log records in the collector's file past an offset: occurrences of
/// `"timeUnixNano"` (one per record, as every record has a time; the
/// observed time's key is `"observedTimeUnixNano"`), counted in whole
/// lines only, each byte read once.
pub struct RecordCount {
    path: PathBuf,
    /// Where the next unread line starts.
    offset: u64,
    /// Records in the lines read.
    records: usize,
}

/// The key every log record of the file exporter's OTLP-JSON has once.
const RECORD_KEY: &[u8] = b"\"timeUnixNano\"";

impl RecordCount {
    pub fn count(&mut self) -> usize {
        use std::io::{Seek, SeekFrom};
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return self.records;
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return self.records;
        }
        let mut buf = Vec::new();
        if f.read_to_end(&mut buf).is_err() {
            return self.records;
        }
        // a line the exporter is still writing is read at the next call
        let whole = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        self.records += occurrences(&buf[..whole], RECORD_KEY);
        self.offset += whole as u64;
        self.records
    }
}

fn occurrences(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// An S3 server (s3s-fs) started by `scripts/s3.sh` with `LOGFERRY_S3_DIR`
/// set to `dir`: bucket B is the directory `dir/data/B`, an object a file
/// in it, renamed into place whole.
pub struct Store {
    /// Its endpoint URL (path-style).
    pub url: String,
    /// Its root: a bucket is a directory in it.
    data: PathBuf,
    /// Its process, whose CPU is reported apart.
    pid: u32,
}

/// The keys scripts/s3.sh's server takes by default.
pub const ACCESS_KEY: &str = "logferry";
pub const SECRET_KEY: &str = "logferry-secret";

impl Store {
    pub fn new(dir: &Path) -> Result<Store, String> {
        let url = read_state(dir, "url")?;
        let pid = read_pid(dir)?;
        if procfs::sample(pid).is_none() {
            return Err(format!(
                "the S3 server of {} (pid {pid}) does not run",
                dir.display()
            ));
        }
        Ok(Store {
            url,
            data: dir.join("data"),
            pid,
        })
    }

    pub fn cpu(&self) -> Option<Duration> {
        cpu_of(self.pid)
    }

    fn bucket_dir(&self, bucket: &str) -> PathBuf {
        self.data.join(bucket)
    }

    /// A fresh bucket (s3s-fs's CreateBucket makes just this directory).
    pub fn create(&self, bucket: &str) -> Result<(), String> {
        self.delete(bucket);
        let p = self.bucket_dir(bucket);
        std::fs::create_dir_all(&p).map_err(|e| format!("mkdir {}: {e}", p.display()))
    }

    /// The bucket and its objects: the runs would fill the disk otherwise.
    pub fn delete(&self, bucket: &str) {
        let _ = std::fs::remove_dir_all(self.bucket_dir(bucket));
    }

    pub fn counter(&self, bucket: &str) -> ObjectLines {
        ObjectLines {
            root: self.bucket_dir(bucket),
            seen: HashSet::new(),
            lines: 0,
            objects: 0,
            compressed: 0,
        }
    }
}

/// Lines in the gzip objects of a bucket, each object read once.
pub struct ObjectLines {
    root: PathBuf,
    /// Objects counted.
    seen: HashSet<PathBuf>,
    /// Lines in them.
    pub lines: usize,
    /// How many.
    pub objects: usize,
    /// Their bytes as stored.
    pub compressed: u64,
}

impl ObjectLines {
    pub fn count(&mut self) -> usize {
        let mut files = Vec::new();
        walk(&self.root, &mut files);
        for f in files {
            if self.seen.contains(&f) {
                continue;
            }
            // objects are renamed into the bucket whole, but an object
            // that does not decode yet is read again at the next call
            let Ok(raw) = std::fs::read(&f) else { continue };
            let mut text = Vec::new();
            if flate2::read::MultiGzDecoder::new(raw.as_slice())
                .read_to_end(&mut text)
                .is_err()
            {
                continue;
            }
            self.lines += text.iter().filter(|&&b| b == b'\n').count();
            self.objects += 1;
            self.compressed += raw.len() as u64;
            self.seen.insert(f);
        }
        self.lines
    }
}

/// Every file under `dir`, dot files (s3s-fs's metadata) left out.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => walk(&p, out),
            Ok(t) if t.is_file() => out.push(p),
            _ => {}
        }
    }
}

/// `host:port` of an `http://` URL.
pub(super) fn host_port(url: &str) -> Result<(&str, &str), String> {
    url.strip_prefix("http://")
        .map(|h| h.trim_end_matches('/'))
        .and_then(|h| h.rsplit_once(':'))
        .ok_or_else(|| format!("{url}: not http://host:port"))
}

/// The logferry sink and the Fluent Bit output into `collector`, gzip
/// both ways (logferry's default, and the Collector's own exporter's).
pub(super) fn otlp_configs(
    collector: &Collector,
    batching: Batching,
) -> Result<(String, String), String> {
    let sink = format!(
        "[sinks.out]\ntype = \"otlp\"\nmatch = \"**\"\nendpoint = {:?}\ncompression = \"gzip\"\n{}",
        collector.url,
        batching.logferry()
    );
    let (host, port) = host_port(&collector.url)?;
    let output = format!(
        "[OUTPUT]\n    Name     opentelemetry\n    Match    *\n    Host     {host}\n    Port     {port}\n    Logs_uri /v1/logs\n    Compress gzip\n{}",
        batching.fluent_bit_workers()
    );
    Ok((sink, output))
}

pub fn measure_otlp(
    dir: &Path,
    system: System,
    peer: Option<&Path>,
    collector: &Collector,
    load: &Load,
) -> Result<Measured, String> {
    let (sink, output) = otlp_configs(collector, Batching::Throughput)?;
    let (mut p, addr) = start(dir, system, peer, &sink, &output, &[])?;
    let mut records = collector.counter();
    let before = collector.cpu();
    let json_bytes = (load.records * RECORD_BYTES) as u64;
    let run = measure(&mut p, &mut [], addr, load, json_bytes, COUNT_EVERY, || {
        let n = records.count();
        (
            n >= load.records,
            format!("the collector wrote {n} of {} log records", load.records),
        )
    })?;
    let dest_cpu = match (before, collector.cpu()) {
        (Some(b), Some(a)) => Some(a.saturating_sub(b)),
        _ => None,
    };
    drop(p);
    collector.truncate();
    Ok(Measured {
        run,
        dest_cpu,
        stored: None,
    })
}

/// The credentials both systems sign with (Fluent Bit reads them from
/// its environment).
pub(super) const S3_ENV: [(&str, &str); 2] = [
    ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
    ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
];

/// The logferry sink and the Fluent Bit output into `bucket` of
/// `store`, gzip objects both (logferry's default; the bench reads gzip),
/// Fluent Bit keeping its buffer in `store_dir`. For throughput, objects
/// close at [`OBJECT_MIB`] or [`OBJECT_AGE_SECS`] with room for whole
/// objects in logferry's buffer and Fluent Bit's `use_put_object`; as
/// shipped, only the age is set, [`RATE_OBJECT_AGE_SECS`] on both.
/// `time_format`: the logferry sink's.
pub(super) fn s3_configs(
    store: &Store,
    bucket: &str,
    store_dir: &Path,
    batching: Batching,
    time_format: Option<&str>,
) -> (String, String) {
    let time_format = time_format
        .map(|f| format!("time_format = {f:?}\n"))
        .unwrap_or_default();
    let common = format!(
        "[sinks.out]\ntype = \"s3\"\nmatch = \"**\"\nbucket = {bucket:?}\nendpoint = {:?}\nforce_path_style = true\nregion = \"us-east-1\"\n\
         access_key_id = {ACCESS_KEY:?}\nsecret_access_key = {SECRET_KEY:?}\nkey = \"bench/{{unique}}.log.gz\"\ncompression = \"gzip\"\n{time_format}",
        store.url
    );
    let output = format!(
        "[OUTPUT]\n    Name            s3\n    Match           *\n    bucket          {bucket}\n    endpoint        {}\n    region          us-east-1\n\
         \x20   compression     gzip\n    s3_key_format   /bench/$UUID.log.gz\n    store_dir       {}\n",
        store.url,
        store_dir.display()
    );
    match batching {
        // the sink holds an object's batches until it is stored, and
        // closes it early at half its buffer: room for a whole object and
        // the next one
        Batching::Throughput => (
            format!(
                "{common}max_object_bytes = \"{OBJECT_MIB}MiB\"\nmax_object_age = \"{OBJECT_AGE_SECS}s\"\n\n[sinks.out.buffer]\nmax_bytes = \"{}MiB\"\n",
                4 * OBJECT_MIB
            ),
            format!(
                "{output}    total_file_size {OBJECT_MIB}M\n    upload_timeout  {OBJECT_AGE_SECS}s\n    use_put_object  On\n"
            ),
        ),
        Batching::Defaults => (
            format!("{common}max_object_age = \"{RATE_OBJECT_AGE_SECS}s\"\n"),
            format!("{output}    upload_timeout  {RATE_OBJECT_AGE_SECS}s\n"),
        ),
    }
}

pub fn measure_s3(
    dir: &Path,
    system: System,
    peer: Option<&Path>,
    store: &Store,
    bucket: &str,
    load: &Load,
    time_format: Option<&str>,
) -> Result<Measured, String> {
    let store_dir = dir.join(format!("fluent-bit-s3-{bucket}"));
    let (sink, output) = s3_configs(store, bucket, &store_dir, Batching::Throughput, time_format);
    let (mut p, addr) = start(dir, system, peer, &sink, &output, &S3_ENV)?;
    let mut objects = store.counter(bucket);
    let before = store.cpu();
    let json_bytes = (load.records * RECORD_BYTES) as u64;
    let run = measure(&mut p, &mut [], addr, load, json_bytes, COUNT_EVERY, || {
        let n = objects.count();
        (
            n >= load.records,
            format!(
                "{bucket} holds {n} of {} lines in {} objects",
                load.records, objects.objects
            ),
        )
    })?;
    let dest_cpu = match (before, store.cpu()) {
        (Some(b), Some(a)) => Some(a.saturating_sub(b)),
        _ => None,
    };
    drop(p);
    let _ = std::fs::remove_dir_all(&store_dir);
    eprintln!(
        "{}: {} objects, {:.1} MiB stored",
        system.name(),
        objects.objects,
        objects.compressed as f64 / 1048576.0
    );
    Ok(Measured {
        run,
        dest_cpu,
        stored: Some(objects.compressed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_collectors_file_is_counted_in_whole_lines_from_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.jsonl");
        let line = r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"1","observedTimeUnixNano":"2"},{"timeUnixNano":"3"}]}]}]}"#;
        std::fs::write(&out, format!("{line}\n")).unwrap();
        let mut c = Collector {
            url: String::new(),
            out: out.clone(),
            pid: 0,
        }
        .counter();
        assert_eq!(c.count(), 0, "what was there before is not counted");
        // half a line: not yet
        let (a, b) = line.split_at(60);
        std::fs::write(&out, format!("{line}\n{a}")).unwrap();
        assert_eq!(c.count(), 0);
        std::fs::write(&out, format!("{line}\n{a}{b}\n{line}\n")).unwrap();
        assert_eq!(c.count(), 4);
        assert_eq!(c.count(), 4, "each line is counted once");
    }

    #[test]
    fn objects_are_counted_once_and_only_when_they_decode() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let store = Store {
            url: String::new(),
            data: dir.path().to_path_buf(),
            pid: 0,
        };
        store.create("b").unwrap();
        let mut c = store.counter("b");
        let gz = |n: usize| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), Default::default());
            for i in 0..n {
                writeln!(e, "{{\"seq\":{i}}}").unwrap();
            }
            e.finish().unwrap()
        };
        let key = dir.path().join("b/bench/x");
        std::fs::create_dir_all(&key).unwrap();
        std::fs::write(key.join("1.log.gz"), gz(3)).unwrap();
        let g = gz(5);
        std::fs::write(key.join("2.log.gz"), &g[..g.len() / 2]).unwrap();
        std::fs::write(dir.path().join("b/.meta"), b"not an object").unwrap();
        assert_eq!(c.count(), 3);
        std::fs::write(key.join("2.log.gz"), &g).unwrap();
        assert_eq!(c.count(), 8);
        assert_eq!(c.count(), 8);
        assert_eq!(c.objects, 2);
    }
}
