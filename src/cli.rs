//! Command line: `logferry run`, `logferry validate`, `logferry test`,
//! `logferry bench`, `logferry replay`, `logferry buffer`, `logferry top`,
//! `logferry tap`, `logferry config`, `logferry completions`, `logferry man`.

pub mod import;
pub mod manual;
pub mod tap;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::topology::config::Config;
use crate::topology::{Pipeline, Stopped};

#[derive(Debug, Parser)]
#[command(
    name = "logferry",
    version,
    about = "Moves log records from where they are written to where they are kept."
)]
pub struct Cli {
    /// Log level (off, error, warn, info, debug, trace) or filter directives
    /// (`info,logferry::sinks=debug`). LOGFERRY_LOG, when set, wins over it.
    #[arg(long, alias = "log", global = true, value_name = "LEVEL", default_value = "info",
          value_parser = crate::logging::parse_level)]
    pub log_level: String,
    /// Log line format on standard error: `text`, or `json` (one object per line).
    #[arg(long, global = true, value_enum, default_value_t)]
    pub log_format: crate::logging::LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a pipeline (the embedded default when no --config is given).
    Run {
        /// Configuration file: TOML, or YAML when named *.yaml or *.yml.
        #[arg(short, long)]
        config: Option<PathBuf>,
    },
    /// Check a configuration file without starting it: every problem a
    /// start would meet (addresses, directories, TLS files, patterns, flow).
    Validate {
        /// Configuration file: TOML, or YAML when named *.yaml or *.yml.
        #[arg(short, long)]
        config: PathBuf,
    },
    /// Run the `[[tests]]` of a configuration file: feed their inputs
    /// through the file's filters and routes, compare what arrives. Exit
    /// status 1 if a test fails, 2 if the file or a test is invalid.
    Test {
        /// Configuration file with `[[tests]]` tables (`tests:` in YAML):
        /// TOML, or YAML when named *.yaml or *.yml.
        #[arg(short, long)]
        config: PathBuf,
    },
    /// Measure a whole pipeline on this machine (see docs/BENCHMARKS.md).
    Bench(crate::bench::BenchArgs),
    /// Print the embedded default configuration.
    DefaultConfig,
    /// Send the records of a dead-letter file to a forward receiver.
    Replay(crate::sinks::forward::replay::ReplayArgs),
    /// Look into a sink's disk buffer directory (read-only).
    #[command(subcommand)]
    Buffer(BufferCommand),
    /// Live view of a running logferry's components, read from its [api].
    Top(crate::top::TopArgs),
    /// Print the records passing a component of a running logferry, live,
    /// read from its [api] (sampled: at most --rate records a second).
    Tap(tap::TapArgs),
    /// Help with configuration files.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(manual::CompletionsArgs),
    /// Print the manual page (roff), e.g. `logferry man | man -l -`.
    Man,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print a commented example of a component: `source forward`, `sink kafka`, … (`--list`).
    Example(crate::topology::examples::ExampleArgs),
    /// Print a logferry configuration made from a Fluent Bit one (classic or
    /// YAML), each key not carried over named in a comment.
    Import(import::ImportArgs),
}

#[derive(Debug, Subcommand)]
pub enum BufferCommand {
    /// Segments, frames, records, bytes, oldest record time, delivered cursor.
    Inspect {
        /// The buffer's `dir`.
        dir: PathBuf,
    },
    /// Verify every frame's CRC; exit status 1 if any damage is found.
    Check {
        /// The buffer's `dir`.
        dir: PathBuf,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = crate::logging::init(&cli.log_level, cli.log_format) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    match cli.command {
        Command::Validate { config } => {
            let (outcome, warnings) = crate::topology::validate::validate_file(&config);
            for w in &warnings {
                eprintln!("warning: {w}");
            }
            validated(&config, outcome)
        }
        Command::Run { config } => {
            ignore_hangup_until_handled();
            let config_path = config;
            let config = match &config_path {
                Some(path) => Config::load(path),
                None => Config::embedded_default(),
            };
            let config = match config {
                Ok(c) => c,
                Err(e) => {
                    // the message must not quote a secret (as validate's)
                    let text = match &config_path {
                        Some(path) => std::fs::read_to_string(path).unwrap_or_default(),
                        None => crate::topology::config::DEFAULT_CONFIG.to_string(),
                    };
                    for e in crate::topology::validate::redact(&text, vec![e]) {
                        crate::logging::fatal(&e);
                    }
                    return ExitCode::FAILURE;
                }
            };
            let from = match &config_path {
                Some(path) => crate::topology::reload::ReloadFrom::File(path.clone()),
                None => crate::topology::reload::ReloadFrom::Embedded,
            };
            run(config, from)
        }
        Command::Test { config } => unit_tests(&config),
        Command::Tap(args) => tap::main(args),
        Command::Bench(args) => crate::bench::main(args),
        Command::DefaultConfig => {
            print!("{}", crate::topology::config::DEFAULT_CONFIG);
            ExitCode::SUCCESS
        }
        Command::Replay(args) => replay(&args),
        Command::Buffer(cmd) => buffer(cmd),
        Command::Top(args) => crate::top::main(args),
        Command::Config(ConfigCommand::Example(args)) => crate::topology::examples::main(&args),
        Command::Config(ConfigCommand::Import(args)) => import::main(&args),
        Command::Completions(args) => manual::completions(&args),
        Command::Man => manual::man(),
    }
}

/// What `logferry validate` prints for `outcome`, and its exit status.
fn validated(
    path: &std::path::Path,
    outcome: Result<Config, Vec<crate::config::ConfigError>>,
) -> ExitCode {
    match outcome {
        Ok(c) => {
            println!(
                "{}: ok ({} sources, {} sinks)",
                path.display(),
                c.sources.len(),
                c.sinks.len()
            );
            ExitCode::SUCCESS
        }
        Err(errors) => {
            for e in &errors {
                eprintln!("error: {e}");
            }
            eprintln!("{}: {} problem(s) found", path.display(), errors.len());
            ExitCode::FAILURE
        }
    }
}

/// `logferry test`: 0 when every test passes, 1 when one fails, 2 when
/// the file or a test cannot be run.
fn unit_tests(path: &std::path::Path) -> ExitCode {
    use crate::topology::unit_test;
    let config = match Config::load(path) {
        Ok(c) => c,
        Err(e) => {
            // the message must not quote a secret (as validate's)
            let text = std::fs::read_to_string(path).unwrap_or_default();
            for e in crate::topology::validate::redact(&text, vec![e]) {
                eprintln!("error: {e}");
            }
            return ExitCode::from(2);
        }
    };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let specs = match unit_test::specs(&config, &text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let Some(rt) = runtime(tokio::runtime::Builder::new_current_thread()) else {
        return ExitCode::from(2);
    };
    let outcomes = rt.block_on(unit_test::run_all(&config, &specs));
    print!("{}", unit_test::report(&outcomes));
    ExitCode::from(unit_test::exit_code(&outcomes))
}

/// Builds a runtime from `builder`, saying why if it cannot.
fn runtime(mut builder: tokio::runtime::Builder) -> Option<tokio::runtime::Runtime> {
    builder
        .enable_all()
        .build()
        .map_err(|e| eprintln!("error: cannot start the runtime: {e}"))
        .ok()
}

/// `logferry replay`: success only if every record was acknowledged.
fn replay(args: &crate::sinks::forward::replay::ReplayArgs) -> ExitCode {
    let Some(rt) = runtime(tokio::runtime::Builder::new_current_thread()) else {
        return ExitCode::FAILURE;
    };
    match rt.block_on(crate::sinks::forward::replay::replay(args)) {
        Ok(r) => {
            println!(
                "{}: {} records in {} frames sent to {}: {} acknowledged, {} not acknowledged",
                args.file.display(),
                r.records,
                r.frames,
                args.to,
                r.acknowledged,
                r.records - r.acknowledged
            );
            if r.acknowledged == r.records {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn buffer(cmd: BufferCommand) -> ExitCode {
    use crate::buffer::disk::inspect;
    match cmd {
        BufferCommand::Inspect { dir } => match inspect::inspect(&dir) {
            Ok(report) => {
                print!("{report}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", dir.display());
                ExitCode::from(2)
            }
        },
        BufferCommand::Check { dir } => match inspect::check(&dir) {
            Ok(found) if found.is_empty() => {
                println!("{}: ok, every frame's CRC matches", dir.display());
                ExitCode::SUCCESS
            }
            Ok(found) => {
                for f in &found {
                    println!(
                        "{}: damage at offset {} ({} bytes): {}",
                        f.segment,
                        f.damage.range.start,
                        f.damage.range.len(),
                        f.damage.reason
                    );
                }
                println!(
                    "{}: {} damaged stretches; logferry quarantines them at its next start",
                    dir.display(),
                    found.len()
                );
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", dir.display());
                ExitCode::from(2)
            }
        },
    }
}

fn run(config: Config, reload_from: crate::topology::reload::ReloadFrom) -> ExitCode {
    // before the runtime's threads exist, so every descriptor sees one limit
    let nofile = crate::limits::raise_nofile();
    let Some(rt) = runtime(tokio::runtime::Builder::new_multi_thread()) else {
        return ExitCode::FAILURE;
    };
    let (status, forced) = rt.block_on(async {
        // handlers first: a signal during start-up must stop us cleanly too
        let signals = match stop_signals() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: cannot install signal handlers: {e}");
                return (ExitCode::FAILURE, false);
            }
        };
        let reload = std::sync::Arc::new(std::sync::OnceLock::new());
        if let Err(e) = reopen_on_hangup(reload.clone()) {
            eprintln!("error: cannot install the SIGHUP handler: {e}");
            return (ExitCode::FAILURE, false);
        }
        // the first line: from here a stop signal stops us cleanly
        nofile.log();
        let mut pipeline = match Pipeline::start(config).await {
            Ok(p) => p,
            Err(e) => {
                // the message must not quote a secret (as validate's)
                let e = reload_from.redactions().apply(&e);
                tracing::error!("{e}");
                if !crate::logging::is_json() {
                    eprintln!("error: {e}");
                }
                return (ExitCode::FAILURE, false);
            }
        };
        pipeline.reload_from(reload_from);
        pipeline.release_start_up_code();
        let _ = reload.set(pipeline.reload_handle());
        let metrics = pipeline.metrics.clone();
        let held = pipeline.held();
        let mut first = signals.clone();
        let mut second = signals;
        tokio::select! {
            why = pipeline.run_until(async move { signal_number(&mut first, 1).await }) => {
                (exit_status(why, &metrics), false)
            }
            _ = signal_number(&mut second, 2) => {
                // a second signal: stop now, saying what is left behind
                let held = held();
                let records: usize = held.iter().map(|h| h.records).sum();
                let bytes: usize = held.iter().map(|h| h.bytes).sum();
                let per_sink: Vec<String> = held
                    .iter()
                    .map(|h| format!("{}={}/{}B", h.sink, h.records, h.bytes))
                    .collect();
                tracing::error!(unacknowledged_records = records, unacknowledged_bytes = bytes,
                    per_sink = %per_sink.join(","), counters = %metrics.summary(),
                    "second stop signal: stopping at once; records still queued or in delivery are not acknowledged");
                (ExitCode::FAILURE, true)
            }
        }
    });
    if forced {
        // do not wait for tasks still delivering
        rt.shutdown_background();
    }
    status
}

/// Exit status of a pipeline that stopped: a finite run (every source
/// finished by itself) fails if generated records could not be delivered.
fn exit_status(why: Stopped, metrics: &crate::metrics::Registry) -> ExitCode {
    let undelivered = metrics.value("logferry_generator_undelivered_records_total", &[]);
    if undelivered == 0 {
        return ExitCode::SUCCESS;
    }
    if why == Stopped::SourcesFinished {
        tracing::error!(
            records = undelivered,
            "generated records were not delivered (a sink rejected them); exiting with status 1"
        );
        return ExitCode::FAILURE;
    }
    tracing::warn!(
        records = undelivered,
        "generated records were not delivered before the stop"
    );
    ExitCode::SUCCESS
}

/// Installs the SIGINT and SIGTERM handlers now; the receiver counts the
/// signals received (the first stops in order, a second at once).
fn stop_signals() -> std::io::Result<tokio::sync::watch::Receiver<u32>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let (tx, rx) = tokio::sync::watch::channel(0u32);
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM received"),
                _ = int.recv() => tracing::info!("SIGINT received"),
            }
            tx.send_modify(|n| *n += 1);
        }
    });
    Ok(rx)
}

/// Resolves once `n` stop signals have been received.
async fn signal_number(signals: &mut tokio::sync::watch::Receiver<u32>, n: u32) {
    if signals.wait_for(|got| *got >= n).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// SIGHUP's and SIGUSR1's default action ends the process; until
/// [`reopen_on_hangup`] installs the handlers, they (from a logrotate
/// postrotate, say) are ignored instead.
fn ignore_hangup_until_handled() {
    // SAFETY: setting a signal's disposition to SIG_IGN runs no code in
    // the handler context.
    unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
    // SAFETY: as above; SIGUSR1's default action ends the process too.
    unsafe { libc::signal(libc::SIGUSR1, libc::SIG_IGN) };
}

/// Installs the SIGHUP and SIGUSR1 handlers now, before start-up. Each
/// SIGHUP asks the file sinks to reopen their outputs (what logrotate's
/// `postrotate kill -HUP` expects) and, once the pipeline runs, reloads the
/// configuration; SIGUSR1 only reopens. Neither stops the process.
fn reopen_on_hangup(
    reload: std::sync::Arc<std::sync::OnceLock<crate::api::reload::ReloadHandle>>,
) -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup())?;
    let mut usr1 = signal(SignalKind::user_defined1())?;
    tokio::spawn(async move {
        while usr1.recv().await.is_some() {
            tracing::info!("SIGUSR1 received: reopening file outputs");
            crate::sinks::file::request_reopen("SIGUSR1");
        }
    });
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            tracing::info!(
                "SIGHUP received: reopening file outputs and reloading the configuration"
            );
            crate::sinks::file::request_reopen("SIGHUP");
            if let Some(handle) = reload.get() {
                // the outcome is logged (and counted) by the reload itself
                let _ = handle.reload().await;
            }
        }
    });
    Ok(())
}
