//! logferry processes under measurement: started from this very binary
//! with a config, their listening addresses read from their log.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::procfs::{self, ProcSample};

pub struct Proc {
    child: Child,
    /// Log lines that announce a listener.
    listening: Arc<Mutex<Vec<String>>>,
    /// Set once `wait_usage` has collected the exit status itself.
    reaped: bool,
}

/// What a finished process used, from wait4(2).
pub struct Usage {
    pub cpu: Duration,
    pub peak_rss: u64,
}

impl Proc {
    /// Writes `config` to `dir/name.toml` and runs `logferry run` on it.
    pub fn start(dir: &Path, name: &str, config: &str) -> Result<Proc, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        Self::start_bin(dir, name, config, &exe)
    }

    /// [`Proc::start`] with another logferry binary (an older build, for a
    /// before/after).
    pub fn start_bin(dir: &Path, name: &str, config: &str, exe: &Path) -> Result<Proc, String> {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, config).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut cmd = Command::new(exe);
        cmd.args(["run", "--config"])
            .arg(&path)
            .env("LOGFERRY_LOG", "info")
            .stdout(Stdio::null());
        Proc::spawn(cmd, name)
    }

    /// Runs `cmd` (any program: its stdout as the caller set it), with its
    /// stderr read for warnings, errors and listener lines.
    pub fn spawn(mut cmd: Command, name: &str) -> Result<Proc, String> {
        cmd.stderr(Stdio::piped());
        let program = cmd.get_program().to_owned();
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {name} ({program:?}): {e}"))?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let listening = Arc::new(Mutex::new(Vec::new()));
        let seen = listening.clone();
        let label = name.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("ERROR") || line.contains("WARN") {
                    eprintln!("{label}: {line}");
                }
                if line.contains("listening") {
                    seen.lock().unwrap_or_else(|e| e.into_inner()).push(line);
                }
            }
        });
        Ok(Proc {
            child,
            listening,
            reaped: false,
        })
    }

    /// The address logged by the listener whose line contains `what`
    /// (`"source=in "`, `"api listening"`).
    pub fn address(&mut self, what: &str) -> Result<SocketAddr, String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let found = self
                .listening
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .find(|l| l.contains(what))
                .and_then(|l| {
                    l.split_whitespace()
                        .find_map(|w| w.strip_prefix("address="))
                })
                .and_then(|a| a.parse().ok());
            if let Some(a) = found {
                return Ok(a);
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "logferry exited ({status}) before listening ({what})"
                ));
            }
            if Instant::now() > deadline {
                return Err(format!("logferry did not log a listener matching {what:?}"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn sample(&self) -> Result<ProcSample, String> {
        procfs::sample(self.child.id()).ok_or_else(|| "cannot read /proc for logferry".to_string())
    }

    pub fn exited(&mut self) -> Option<String> {
        self.child.try_wait().ok().flatten().map(|s| s.to_string())
    }

    /// Waits `d`, failing if the process exits meanwhile.
    pub fn pause(&mut self, d: Duration) -> Result<(), String> {
        let end = Instant::now() + d;
        while Instant::now() < end {
            if let Some(status) = self.exited() {
                return Err(format!("the measured process exited ({status})"));
            }
            std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
        }
        Ok(())
    }
}

impl Proc {
    /// Waits for the process to exit by itself and returns its total CPU
    /// time and peak RSS (exact, from the kernel's accounting).
    pub fn wait_usage(&mut self, timeout: Duration) -> Result<Usage, String> {
        let pid = self.child.id() as libc::pid_t;
        let deadline = Instant::now() + timeout;
        loop {
            let mut status = 0;
            // SAFETY: rusage is plain data; wait4 fills it for our own child.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
            if r == pid {
                self.reaped = true;
                if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
                    return Err(format!("logferry ended abnormally (wait status {status})"));
                }
                let tv =
                    |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec * 1000) as u32);
                return Ok(Usage {
                    cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
                    peak_rss: ru.ru_maxrss as u64 * 1024,
                });
            }
            if r < 0 {
                return Err(format!("wait4: {}", std::io::Error::last_os_error()));
            }
            if Instant::now() > deadline {
                return Err("logferry did not finish in time".into());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One measured run: starts `load`, waits until `out` holds `bytes` bytes
/// (failing if a watched process exits), and reports the CPU and peak RSS
/// of `watched[measured]` over that time.
pub fn measure_run(
    watched: &mut [&mut Proc],
    measured: usize,
    out: &Path,
    bytes: u64,
    records: usize,
    load: impl FnOnce() -> std::thread::JoinHandle<Result<(), String>>,
) -> Result<super::report::Run, String> {
    let before = watched[measured].sample()?;
    let start = Instant::now();
    let sender = load();
    wait_for_size(out, bytes, watched)?;
    let seconds = start.elapsed().as_secs_f64();
    let after = watched[measured].sample()?;
    sender.join().map_err(|_| "sender panicked".to_string())??;
    Ok(super::report::Run {
        seconds,
        records,
        bytes,
        cpu: Some(after.cpu_since(&before)),
        peak_rss: Some(after.peak_rss),
    })
}

/// Waits until `path` holds `bytes` bytes.
pub fn wait_for_size(path: &Path, bytes: u64, watched: &mut [&mut Proc]) -> Result<(), String> {
    wait_until(watched, || {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        (
            size >= bytes,
            format!("{} holds {size} of {bytes} bytes", path.display()),
        )
    })
}

/// Polls `done` (every 0.5 ms) until it says yes, failing if a watched
/// process exits or ten minutes pass.
pub fn wait_until(
    watched: &mut [&mut Proc],
    done: impl FnMut() -> (bool, String),
) -> Result<(), String> {
    wait_until_every(Duration::from_micros(500), watched, done)
}

/// [`wait_until`], polling every `period`.
pub fn wait_until_every(
    period: Duration,
    watched: &mut [&mut Proc],
    mut done: impl FnMut() -> (bool, String),
) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let (ok, state) = done();
        if ok {
            return Ok(());
        }
        for p in watched.iter_mut() {
            if let Some(status) = p.exited() {
                return Err(format!("logferry exited early ({status}): {state}"));
            }
        }
        if Instant::now() > deadline {
            return Err(format!("stuck: {state}"));
        }
        std::thread::sleep(period);
    }
}

/// Whether a logferry's `GET /ready` answers 200: every sink can take
/// records (a Kafka sink, once it is connected to a broker).
pub fn ready(api: SocketAddr) -> bool {
    api_get(api, "/ready").starts_with("HTTP/1.1 200")
}

/// A counter or gauge from a logferry `/metrics` endpoint (summed over
/// labels that contain `labels`; a gauge may be written as `110.0`).
pub fn metric(api: SocketAddr, name: &str, labels: &str) -> u64 {
    api_get(api, "/metrics")
        .lines()
        .filter(|l| l.starts_with(name) && l.contains(labels))
        .filter_map(|l| {
            let v = l.rsplit(' ').next()?;
            v.parse::<u64>()
                .ok()
                .or_else(|| v.parse::<f64>().ok().map(|f| f as u64))
        })
        .sum()
}

/// The whole answer (status line, headers, body) of a `GET` to a
/// logferry's API, which closes the connection after it; empty if the API
/// cannot be reached.
fn api_get(api: SocketAddr, path: &str) -> String {
    let mut answer = String::new();
    if let Ok(mut s) = TcpStream::connect(api) {
        let _ = write!(s, "GET {path} HTTP/1.1\r\nhost: {api}\r\n\r\n");
        let _ = s.read_to_string(&mut answer);
    }
    answer
}
