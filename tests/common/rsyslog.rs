//! A real rsyslogd for black-box tests (scripts/rsyslog.sh): a syslog
//! receiver on TCP, TLS and UDP that writes what it parsed of each message as a
//! JSON line (`records`), and, with a forward address, a sender that
//! forwards every message it receives over UDP as `*.* @HOST:PORT` does.
//! Each test runs its own in a state dir of its own, stopped when dropped.
//! Tests fail, never skip, when it cannot start (rsyslogd is installed by
//! scripts/test-deps.sh).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/rsyslog.sh")
}

/// One running rsyslogd.
pub struct Rsyslog {
    /// Its state dir (config, out.jsonl, log).
    dir: PathBuf,
    /// Its imtcp input (newline-delimited or octet-counted).
    pub tcp: SocketAddr,
    /// Its imudp input.
    pub udp: SocketAddr,
    /// Its imtcp input over TLS (RFC 5425), with a certificate for
    /// 127.0.0.1 signed by `ca`.
    pub tls: SocketAddr,
    /// The test CA (PEM) of its TLS certificate.
    pub ca: PathBuf,
}

impl Rsyslog {
    /// Starts one with its state in `dir`, forwarding what it receives over
    /// UDP to `forward_udp` if given.
    pub fn start(dir: &Path, forward_udp: Option<SocketAddr>) -> Rsyslog {
        let printed = rsyslog_sh("start", dir, forward_udp);
        let addr = |key: &str| -> SocketAddr {
            printed
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .unwrap_or_else(|| panic!("no {key} in {printed:?}"))
                .parse()
                .unwrap()
        };
        Rsyslog {
            dir: dir.to_path_buf(),
            tcp: addr("tcp="),
            udp: addr("udp="),
            tls: addr("tls="),
            ca: printed
                .lines()
                .find_map(|l| l.strip_prefix("ca="))
                .map(PathBuf::from)
                .unwrap_or_else(|| panic!("no ca= in {printed:?}")),
        }
    }

    /// The file it writes each message to, a JSON line each.
    pub fn out_path(&self) -> PathBuf {
        self.dir.join("out.jsonl")
    }

    /// What it received so far, one JSON object per message.
    pub fn records(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.out_path()).unwrap_or_default();
        // a last line without its newline is still being written
        let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        whole
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }
}

impl Drop for Rsyslog {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .arg("stop")
            .env("LOGFERRY_RSYSLOG_DIR", &self.dir)
            .output();
    }
}

/// Runs `scripts/rsyslog.sh <cmd>` with its state in `dir` and returns
/// what it printed.
fn rsyslog_sh(cmd: &str, dir: &Path, forward_udp: Option<SocketAddr>) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let out = Command::new(script())
        .arg(cmd)
        .env("LOGFERRY_RSYSLOG_DIR", dir)
        .env(
            "RSYSLOG_FORWARD_UDP",
            forward_udp.map(|a| a.to_string()).unwrap_or_default(),
        )
        .output()
        .expect("run scripts/rsyslog.sh");
    assert!(
        out.status.success(),
        "scripts/rsyslog.sh {cmd} failed; the syslog tests need rsyslogd (see scripts/test-deps.sh):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}
