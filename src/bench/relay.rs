//! `bench relay`: load → receiver → file, against load → relay → receiver
//! → file in the same run, so the cost of the relay tier reads as a ratio
//! (the classic agent → deliver → receiver topology).
//!
//! `bench forward-sink`: generator → forward sink → receiver that discards,
//! measured until the receiver has counted every record.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use super::load::{packed_frame, send_frames};
use super::pki::{self, Pki};
use super::process::{measure_run, metric, wait_until, Proc};
use super::report::{self, Run, RunArgs, WorkDir};

#[derive(Debug, clap::Args)]
pub struct RelayArgs {
    /// Bytes per record.
    #[arg(long, default_value_t = 100)]
    pub record_size: usize,
    /// Records per run.
    #[arg(long, default_value_t = 5_000_000)]
    pub records: usize,
    /// Records per PackedForward chunk sent by the load writer.
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,
    /// TLS on every hop.
    #[arg(long)]
    pub tls: bool,
    /// The relay asks the receiver for acks.
    #[arg(long)]
    pub ack: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, clap::Args)]
pub struct ForwardSinkArgs {
    /// Bytes per record.
    #[arg(long, default_value_t = 100)]
    pub record_size: usize,
    /// Records per run.
    #[arg(long, default_value_t = 10_000_000)]
    pub records: usize,
    /// TLS between the sink and the receiver.
    #[arg(long)]
    pub tls: bool,
    /// Ask the receiver for acks.
    #[arg(long)]
    pub ack: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

fn q(p: &Path) -> String {
    format!("{:?}", p.display().to_string())
}

fn source_tls(pki: Option<&Pki>) -> String {
    pki.map(|p| {
        format!(
            "tls = {{ cert_file = {}, key_file = {} }}\n",
            q(&p.cert),
            q(&p.key)
        )
    })
    .unwrap_or_default()
}

fn sink_options(pki: Option<&Pki>, ack: bool) -> String {
    let mut s = format!("require_ack = {ack}\n");
    if let Some(p) = pki {
        s.push_str(&format!("tls = {{ ca_file = {} }}\n", q(&p.ca)));
    }
    s
}

fn receiver(dir: &Path, out: &Path, pki: Option<&Pki>) -> Result<(Proc, SocketAddr), String> {
    let _ = std::fs::remove_file(out);
    let mut p = Proc::start(
        dir,
        "receiver",
        &format!(
            "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n{}\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = {}\n",
            source_tls(pki),
            q(out)
        ),
    )?;
    let a = p.address("source=in ")?;
    Ok((p, a))
}

pub fn relay(a: RelayArgs) -> Result<(), String> {
    if a.records == 0 || a.batch == 0 || a.run.runs == 0 || a.record_size == 0 {
        return Err("records, batch, runs and record-size must be positive".into());
    }
    let dir = WorkDir::new(a.run.dir.clone())?;
    let pki = if a.tls {
        Some(pki::generate(&dir.path)?)
    } else {
        None
    };
    let chunks = a.records.div_ceil(a.batch);
    let records = chunks * a.batch;
    let frame = packed_frame("bench", a.batch, a.record_size);
    let out_bytes = (records * (a.record_size + 1)) as u64;
    let out = dir.path.join("received.log");
    println!(
        "relay: {records} records of {} B in chunks of {}; TLS {}, relay acks {}; {} runs",
        a.record_size,
        a.batch,
        if a.tls { "on every hop" } else { "off" },
        if a.ack { "on" } else { "off" },
        a.run.runs
    );
    let ca = pki.as_ref().map(|p| p.ca.clone());
    let send = |addr: SocketAddr| {
        let frame = frame.clone();
        let ca = ca.clone();
        std::thread::spawn(move || send_frames(addr, &[&frame], chunks, ca.as_deref()))
    };
    let mut direct = Vec::new();
    let mut relayed = Vec::new();
    for i in 0..a.run.runs {
        // load → receiver → file
        let (mut rx, addr) = receiver(&dir.path, &out, pki.as_ref())?;
        direct.push(measure_run(
            &mut [&mut rx],
            0,
            &out,
            out_bytes,
            records,
            || send(addr),
        )?);
        drop(rx);

        // load → relay → receiver → file; the relay process is measured
        let (mut rx, addr) = receiver(&dir.path, &out, pki.as_ref())?;
        let mut relay = Proc::start(
            &dir.path,
            "relay",
            &format!(
                "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n{}\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{addr}\" }}]\n{}",
                source_tls(pki.as_ref()),
                sink_options(pki.as_ref(), a.ack)
            ),
        )?;
        let relay_addr = relay.address("source=in ")?;
        relayed.push(measure_run(
            &mut [&mut relay, &mut rx],
            0,
            &out,
            out_bytes,
            records,
            || send(relay_addr),
        )?);
        drop(relay);
        drop(rx);
        let _ = std::fs::remove_file(&out);
        eprintln!(
            "run {}: direct {:.0} records/s, relayed {:.0} records/s",
            i + 1,
            direct[i].records_per_sec(),
            relayed[i].records_per_sec()
        );
    }
    report::print(&[
        (
            "direct: load → receiver → file (CPU, RSS: receiver)",
            &direct,
        ),
        (
            "relayed: load → relay → receiver → file (CPU, RSS: relay)",
            &relayed,
        ),
    ]);
    let (d, r) = (report::median(&direct), report::median(&relayed));
    println!(
        "\nmedians: direct {:.0} records/s, relayed {:.0} records/s: the relay tier keeps {:.1}% of the direct rate",
        d.records_per_sec(),
        r.records_per_sec(),
        100.0 * r.records_per_sec() / d.records_per_sec()
    );
    Ok(())
}

pub fn forward_sink(a: ForwardSinkArgs) -> Result<(), String> {
    if a.records == 0 || a.run.runs == 0 || a.record_size == 0 {
        return Err("records, runs and record-size must be positive".into());
    }
    let dir = WorkDir::new(a.run.dir.clone())?;
    let pki = if a.tls {
        Some(pki::generate(&dir.path)?)
    } else {
        None
    };
    println!(
        "forward sink: generator → forward → receiver (null sink), {} records of {} B; TLS {}, acks {}; {} runs",
        a.records,
        a.record_size,
        if a.tls { "on" } else { "off" },
        if a.ack { "on" } else { "off" },
        a.run.runs
    );
    let mut runs = Vec::new();
    for i in 0..a.run.runs {
        let mut rx = Proc::start(
            &dir.path,
            "receiver",
            &format!(
                "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n{}\n[sinks.null]\ntype = \"null\"\nmatch = \"**\"\n\n[api]\naddress = \"127.0.0.1:0\"\n",
                source_tls(pki.as_ref())
            ),
        )?;
        let addr = rx.address("source=in ")?;
        let api = rx.address("api listening")?;
        let start = Instant::now();
        let mut agent = Proc::start(
            &dir.path,
            "agent",
            &format!(
                "[sources.gen]\ntype = \"generator\"\ncount = {}\nsize = {}\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{addr}\" }}]\n{}",
                a.records,
                a.record_size,
                sink_options(pki.as_ref(), a.ack)
            ),
        )?;
        let mut last = 0;
        wait_until(&mut [&mut rx], || {
            // polling /metrics costs the receiver a little; every 5 ms is plenty
            std::thread::sleep(Duration::from_millis(5));
            last = metric(api, "logferry_sink_records_total", "component=\"null\"");
            (
                last >= a.records as u64,
                format!("receiver counted {last} of {} records", a.records),
            )
        })?;
        let seconds = start.elapsed().as_secs_f64();
        let usage = agent.wait_usage(Duration::from_secs(60))?;
        runs.push(Run {
            seconds,
            records: a.records,
            bytes: (a.records * a.record_size) as u64,
            cpu: Some(usage.cpu),
            peak_rss: Some(usage.peak_rss),
        });
        drop(rx);
        eprintln!("run {}: {}", i + 1, runs[i].row("forward sink"));
    }
    report::print(&[(
        "generator → forward sink → receiver (CPU, RSS: the sending process, start-up included)",
        &runs,
    )]);
    Ok(())
}
