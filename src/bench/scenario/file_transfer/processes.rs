//! The processes of the file-transfer scenario: the server (the target
//! system, from `bench/templates/<system>/file-server.*`) first, then the
//! senders. Dropping a [`Processes`] stops the senders first, so they can
//! hand on what they hold, then the server.
//!
//! A sender is whatever turns the files an application writes into
//! forward-protocol traffic to the server. [`SendersKind`] says which: each
//! kind gives the directory the benchmark's writer creates its files in and
//! the sender process that picks them up. `tail`: a logferry agent follows
//! the files; `fuse`: the application writes into a FUSE mount that a
//! logferry sender serves. The steps, the checks and the report are the
//! same for both.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::super::template::{logferry_servers, render, Target};
use super::super::topology::{free_port, output_log, spawn, spawn_logferry, wait_accepting};
use super::OutputFormat;
use crate::bench::process::Proc;

pub const LOGFERRY_FILE_SERVER: &str =
    include_str!("../../../../bench/templates/logferry/file-server.toml");
pub const LOGFERRY_FILE_SENDER: &str =
    include_str!("../../../../bench/templates/logferry/file-sender.toml");
pub const LOGFERRY_FUSE_SENDER: &str =
    include_str!("../../../../bench/templates/logferry/file-sender-fuse.toml");
pub const FLUENT_BIT_FILE_SERVER: &str =
    include_str!("../../../../bench/templates/fluent-bit/file-server.conf");
pub const FLUENTD_FILE_SERVER: &str =
    include_str!("../../../../bench/templates/fluentd/file-server.conf");
pub const VECTOR_FILE_SERVER: &str =
    include_str!("../../../../bench/templates/vector/file-server.toml");

/// The unified file's name, in its own directory (`out/`).
pub const UNIFIED: &str = "unified.log";

/// How the records get from the application's files to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SendersKind {
    /// A logferry agent follows the files the application writes
    /// (`tail` source → `forward` sink).
    Tail,
    /// The application writes into a FUSE mount a logferry sender serves
    /// (`fuse` source → `forward` sink); needs root and /dev/fuse.
    Fuse,
}

impl SendersKind {
    pub fn name(self) -> &'static str {
        match self {
            SendersKind::Tail => "tail",
            SendersKind::Fuse => "fuse",
        }
    }

    /// Where sender `name`'s application writes its files (created here).
    fn files_dir(self, dir: &Path, name: &str) -> Result<PathBuf, String> {
        match self {
            SendersKind::Tail => {
                let files = dir.join(name);
                std::fs::create_dir_all(&files).map_err(|e| format!("{}: {e}", files.display()))?;
                Ok(files)
            }
            // the sender mounts it (and creates it)
            SendersKind::Fuse => Ok(dir.join(name)),
        }
    }

    /// Waits until sender files in `files` can be written.
    fn wait_ready(self, files: &Path, proc: &mut Proc) -> Result<(), String> {
        match self {
            SendersKind::Tail => Ok(()),
            SendersKind::Fuse => {
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
                while !crate::sources::fuse::mount::is_mount_point(files) {
                    if let Some(status) = proc.exited() {
                        return Err(format!(
                            "the fuse sender exited ({status}) before mounting {}",
                            files.display()
                        ));
                    }
                    if std::time::Instant::now() > deadline {
                        return Err(format!("{} was not mounted within 20 s", files.display()));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Ok(())
            }
        }
    }

    /// The sender's logferry config.
    fn config(self, files: &Path, server: SocketAddr) -> Result<String, String> {
        match self {
            SendersKind::Tail => {
                let glob = files.join("*.log").display().to_string();
                render(
                    LOGFERRY_FILE_SENDER,
                    &[
                        ("tail_glob", glob.as_str()),
                        ("forward_to", logferry_servers(&[server]).as_str()),
                    ],
                )
                .map_err(|e| format!("sender template: {e}"))
            }
            SendersKind::Fuse => render(
                LOGFERRY_FUSE_SENDER,
                &[
                    ("mountpoint", files.display().to_string().as_str()),
                    ("forward_to", logferry_servers(&[server]).as_str()),
                ],
            )
            .map_err(|e| format!("sender template: {e}")),
        }
    }
}

/// The file-server template built into the binary for `target`.
pub fn server_template(target: Target) -> &'static str {
    match target {
        Target::Logferry => LOGFERRY_FILE_SERVER,
        Target::FluentBit => FLUENT_BIT_FILE_SERVER,
        Target::Fluentd => FLUENTD_FILE_SERVER,
        Target::Vector => VECTOR_FILE_SERVER,
    }
}

/// The JSON-like line of `--format template` in logferry's template format.
const LOGFERRY_LINE: &str =
    r#"{{"time":"{time}","host":"{host}","tag":"{tag}","message":"{message}"}}"#;

/// `{{format}}` of `target`'s file-server template.
pub fn format_value(target: Target, format: OutputFormat) -> String {
    match (target, format) {
        (Target::Logferry, OutputFormat::Raw) => r#""raw""#.into(),
        (Target::Logferry, OutputFormat::Template) => {
            format!("{{ type = \"template\", template = '{LOGFERRY_LINE}' }}")
        }
        (Target::FluentBit, OutputFormat::Raw) => {
            "    Format       template\n    Template     {message}".into()
        }
        (Target::FluentBit, OutputFormat::Template) => "    Format       plain".into(),
        (Target::Fluentd, OutputFormat::Raw) => {
            "<format>\n    @type single_value\n    message_key message\n  </format>".into()
        }
        (Target::Fluentd, OutputFormat::Template) => "<format>\n    @type json\n  </format>".into(),
        (Target::Vector, OutputFormat::Raw) => r#""text""#.into(),
        (Target::Vector, OutputFormat::Template) => r#""json""#.into(),
    }
}

/// The server's config for `target`, listening on `port`, writing into
/// `out_dir`.
pub fn server_config(
    template: &str,
    target: Target,
    format: OutputFormat,
    port: u16,
    out_dir: &Path,
) -> Result<String, String> {
    let port = port.to_string();
    let output_path = out_dir.join(UNIFIED).display().to_string();
    let output_dir = out_dir.display().to_string();
    let output_file = match target {
        // out_file appends `.log` itself
        Target::Fluentd => "unified".to_string(),
        _ => UNIFIED.to_string(),
    };
    let format = format_value(target, format);
    render(
        template,
        &[
            ("listen_port", port.as_str()),
            ("output_path", output_path.as_str()),
            ("output_dir", output_dir.as_str()),
            ("output_file", output_file.as_str()),
            ("format", format.as_str()),
        ],
    )
    .map_err(|e| format!("{} file-server template: {e}", target.name()))
}

/// One running process.
pub struct Member {
    /// `sender-1`, …, `server`.
    pub name: String,
    /// `sender` or `server`.
    pub tier: &'static str,
    pub proc: Proc,
}

/// A running sender.
pub struct Sender {
    pub member: Member,
    /// Where its application writes its files.
    pub files: PathBuf,
}

/// What to start.
pub struct Plan<'a> {
    pub senders: usize,
    pub kind: SendersKind,
    pub target: Target,
    pub target_bin: Option<&'a Path>,
    /// A file-server template to use instead of the built-in one.
    pub template: Option<&'a Path>,
    pub format: OutputFormat,
}

/// The running processes. Fields drop in order: senders, then the server.
pub struct Processes {
    pub senders: Vec<Sender>,
    pub server: Member,
    /// The directory holding the unified file, and nothing else.
    pub out_dir: PathBuf,
}

impl Processes {
    /// Every process: senders, then the server.
    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.senders
            .iter()
            .map(|s| &s.member)
            .chain(std::iter::once(&self.server))
    }

    /// A process that has exited, with its status.
    pub fn exited(&mut self) -> Option<String> {
        self.senders
            .iter_mut()
            .map(|s| &mut s.member)
            .chain(std::iter::once(&mut self.server))
            .find_map(|m| m.proc.exited().map(|s| format!("{} exited ({s})", m.name)))
    }

    /// The unified file: the one file the server has created in
    /// `out_dir` (`None` before it has written anything). Another system
    /// may name the file itself; more than one file is an error, since the
    /// scenario is about one unified file.
    pub fn unified(&self) -> Result<Option<PathBuf>, String> {
        let entries = std::fs::read_dir(&self.out_dir)
            .map_err(|e| format!("{}: {e}", self.out_dir.display()))?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .collect();
        match files.len() {
            0 => Ok(None),
            1 => Ok(files.pop()),
            _ => {
                files.sort();
                Err(format!(
                    "the server wrote {} files instead of one unified file: {files:?}",
                    files.len()
                ))
            }
        }
    }

    /// Starts the server, then the senders, in `dir`, announcing each one
    /// (`started NAME pid=PID`) on stdout.
    pub fn start(plan: &Plan, dir: &Path) -> Result<Processes, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let out_dir = dir.join("out");
        std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
        let template = match plan.template {
            Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
            None => server_template(plan.target).to_string(),
        };
        // logferry binds port 0 and logs the address; the others get a
        // free port picked here
        let port = match plan.target {
            Target::Logferry => 0,
            _ => free_port()?,
        };
        let config = server_config(&template, plan.target, plan.format, port, &out_dir)?;
        let path = dir.join(format!("server.{}", plan.target.config_ext()));
        std::fs::write(&path, config).map_err(|e| format!("{}: {e}", path.display()))?;
        let bin = super::super::peers::program(plan.target, plan.target_bin)?;
        let mut cmd = Command::new(&bin);
        cmd.args(plan.target.args(&path))
            .env("LOGFERRY_LOG", "info")
            .stdout(output_log(dir, "server")?);
        // Fluent Bit's template reads the host name from ${HOSTNAME},
        // which shells set but do not export
        if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
            cmd.env("HOSTNAME", host.trim());
        }
        let mut proc = spawn(cmd, "server")?;
        let addr = match plan.target {
            Target::Logferry => proc.address("source=in ")?,
            _ => {
                let addr = SocketAddr::from(([127, 0, 0, 1], port));
                wait_accepting(&mut proc, addr, "server")?;
                addr
            }
        };
        let server = announce(Member {
            name: "server".into(),
            tier: "server",
            proc,
        });
        let mut senders = Vec::new();
        for i in 1..=plan.senders {
            let name = format!("sender-{i}");
            let files = plan.kind.files_dir(dir, &name)?;
            let config = plan.kind.config(&files, addr)?;
            let mut proc = spawn_logferry(&exe, dir, &name, &config)?;
            plan.kind.wait_ready(&files, &mut proc)?;
            senders.push(Sender {
                member: announce(Member {
                    name,
                    tier: "sender",
                    proc,
                }),
                files,
            });
        }
        Ok(Processes {
            senders,
            server,
            out_dir,
        })
    }
}

fn announce(m: Member) -> Member {
    use std::io::Write;
    println!("started {} pid={}", m.name, m.proc.pid());
    let _ = std::io::stdout().flush();
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_server_template_renders_whole_in_both_formats() {
        let out = Path::new("/tmp/ft/out");
        for target in [
            Target::Logferry,
            Target::FluentBit,
            Target::Fluentd,
            Target::Vector,
        ] {
            for format in [OutputFormat::Raw, OutputFormat::Template] {
                let config = server_config(server_template(target), target, format, 24224, out)
                    .unwrap_or_else(|e| panic!("{e}"));
                assert!(config.contains("/tmp/ft/out"), "{config}");
                if target == Target::Logferry {
                    // a config logferry accepts
                    let config =
                        server_config(server_template(target), target, format, 0, out).unwrap();
                    crate::topology::config::Config::parse(&config, "file-server")
                        .unwrap_or_else(|e| panic!("{e}\n{config}"));
                    assert!(config.contains("/tmp/ft/out/unified.log"), "{config}");
                } else {
                    assert!(config.contains("24224"), "{config}");
                }
            }
        }
        let fd = server_config(
            FLUENTD_FILE_SERVER,
            Target::Fluentd,
            OutputFormat::Raw,
            1,
            out,
        )
        .unwrap();
        assert!(fd.contains("path /tmp/ft/out/unified\n"), "{fd}");
        assert!(fd.contains("@type single_value"), "{fd}");
    }

    #[test]
    fn the_tail_sender_follows_its_directory_and_forwards_to_the_server() {
        let dir = tempfile::tempdir().unwrap();
        let files = SendersKind::Tail.files_dir(dir.path(), "sender-2").unwrap();
        assert!(files.is_dir());
        let config = SendersKind::Tail
            .config(&files, "127.0.0.1:4000".parse().unwrap())
            .unwrap();
        crate::topology::config::Config::parse(&config, "file-sender")
            .unwrap_or_else(|e| panic!("{e}\n{config}"));
        assert!(
            config.contains(&format!("{}/*.log", files.display())),
            "{config}"
        );
        assert!(
            config.contains(r#"{ address = "127.0.0.1:4000" }"#),
            "{config}"
        );
    }
}
