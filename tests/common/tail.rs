//! Helpers for the tail tests: numbered lines, appends, and writer
//! threads that rotate the file they write.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// A thread that appends `{prefix}-{round}-{n}` lines to `live`, 100 at
/// a time (each write under `gate`), until told to stop; `hook` runs after
/// each write (to rotate).
/// Returns the stop flag and the handle yielding the number of lines.
pub fn spawn_writer(
    live: &Path,
    prefix: &'static str,
    gate: std::sync::Arc<std::sync::Mutex<()>>,
    mut hook: impl FnMut(&mut Writer) + Send + 'static,
) -> (
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<usize>,
) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let live = live.to_path_buf();
    let handle = std::thread::spawn(move || {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&live)
            .unwrap();
        let mut w = Writer {
            live,
            file,
            round: 0,
            n: 0,
            since: std::time::Instant::now(),
        };
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            let mut buf = String::new();
            for _ in 0..100 {
                buf.push_str(&format!("{prefix}-{}-{}\n", w.round, w.n));
                w.n += 1;
            }
            {
                let _held = gate.lock().unwrap();
                w.file.write_all(buf.as_bytes()).unwrap();
            }
            hook(&mut w);
            std::thread::sleep(Duration::from_millis(1));
        }
        w.n
    });
    (stop, handle)
}

pub struct Writer {
    pub live: std::path::PathBuf,
    pub file: std::fs::File,
    pub round: usize,
    pub n: usize,
    pub since: std::time::Instant,
}

/// Lines `{prefix}-{i}` for i in `range`.
pub fn numbered(prefix: &str, range: std::ops::Range<usize>) -> String {
    range.map(|i| format!("{prefix}-{i}\n")).collect()
}

pub fn append(path: &Path, text: &[u8]) {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(text)
        .unwrap();
}

/// Truncates `path` to nothing, as copytruncate does after its copy.
pub fn truncate(path: &Path) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(0)
        .unwrap();
}
