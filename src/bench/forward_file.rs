//! `bench forward-file`: one sender connection (or `--connections`) sends
//! PackedForward chunks to a forward source; the records are written as
//! raw lines to one file.
//! Baseline: the same wire bytes copied from a loopback socket to a file.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::Instant;

use super::load::{packed_frame, send_frames};
use super::process::{measure_run, Proc};
use super::report::{self, Run, RunArgs, WorkDir};

#[derive(Debug, clap::Args)]
pub struct ForwardFileArgs {
    /// Bytes per record (the message written as one line).
    #[arg(long, default_value_t = 100)]
    pub record_size: usize,
    /// Records per run.
    #[arg(long, default_value_t = 10_000_000)]
    pub records: usize,
    /// Records per PackedForward chunk.
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,
    /// Connections the chunks are spread over, sending at once (the
    /// baseline copy keeps one): many busy connections are what a read
    /// buffer per connection costs memory with.
    #[arg(long, default_value_t = 1)]
    pub connections: usize,
    /// Put the file sink behind a disk buffer (fsync = "interval") instead
    /// of the memory queue, to compare the two.
    #[arg(long)]
    pub disk_buffer: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

pub fn run(a: ForwardFileArgs) -> Result<(), String> {
    if a.records == 0 || a.batch == 0 || a.run.runs == 0 || a.record_size == 0 {
        return Err("records, batch, runs and record-size must be positive".into());
    }
    if a.connections == 0 || a.connections > a.records.div_ceil(a.batch) {
        return Err("connections must be between 1 and the number of chunks".into());
    }
    let chunks = a.records.div_ceil(a.batch);
    let records = chunks * a.batch;
    let frame = packed_frame("bench", a.batch, a.record_size);
    let out_bytes = (records * (a.record_size + 1)) as u64;
    let wire_bytes = (frame.len() * chunks) as u64;
    let dir = WorkDir::new(a.run.dir.clone())?;
    let buffer = if a.disk_buffer {
        "disk buffer, fsync = interval"
    } else {
        "memory buffer"
    };
    println!(
        "forward → file (raw, {buffer}): {records} records of {} B in PackedForward chunks of {} over {} connection(s) ({:.1} MB on the wire, {:.1} MB written), {} runs",
        a.record_size,
        a.batch,
        a.connections,
        wire_bytes as f64 / 1e6,
        out_bytes as f64 / 1e6,
        a.run.runs
    );
    let mut base = Vec::new();
    let mut ours = Vec::new();
    for i in 0..a.run.runs {
        base.push(socket_copy(
            &dir.path.join("baseline.out"),
            &frame,
            chunks,
            records,
            wire_bytes,
        )?);
        ours.push(logferry(
            &dir.path,
            &frame,
            chunks,
            records,
            out_bytes,
            a.connections,
            a.disk_buffer,
        )?);
        eprintln!("run {}: {}", i + 1, ours[i].row("logferry"));
    }
    report::print(&[
        ("baseline: socket → file copy (MB/s of wire bytes)", &base),
        ("logferry forward → file (MB/s of output)", &ours),
    ]);
    let (b, o) = (report::median(&base), report::median(&ours));
    println!(
        "\nmedians: logferry {:.0} records/s, {:.1} MB/s written; baseline copy {:.1} MB/s; logferry / baseline time: {:.2}",
        o.records_per_sec(),
        o.bytes as f64 / o.seconds / 1e6,
        b.bytes as f64 / b.seconds / 1e6,
        b.seconds / o.seconds
    );
    report::note_free_page_reporting();
    Ok(())
}

/// Baseline: a loopback receiver copies the same wire bytes into a file.
fn socket_copy(
    out: &Path,
    frame: &[u8],
    chunks: usize,
    records: usize,
    wire: u64,
) -> Result<Run, String> {
    let _ = std::fs::remove_file(out);
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let out_path = out.to_path_buf();
    let receiver = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = listener.accept()?;
        let mut f = std::fs::File::create(out_path)?;
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            f.write_all(&buf[..n])?;
        }
    });
    let start = Instant::now();
    send_frames(addr, &[frame], chunks, None).map_err(|e| format!("baseline sender: {e}"))?;
    receiver
        .join()
        .map_err(|_| "baseline receiver panicked".to_string())?
        .map_err(|e| format!("baseline receiver: {e}"))?;
    let seconds = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(out);
    Ok(Run {
        seconds,
        records,
        bytes: wire,
        cpu: None,
        peak_rss: None,
    })
}

fn logferry(
    dir: &Path,
    frame: &[u8],
    chunks: usize,
    records: usize,
    out_bytes: u64,
    connections: usize,
    disk_buffer: bool,
) -> Result<Run, String> {
    let out = dir.join("forward-file.out");
    let _ = std::fs::remove_file(&out);
    let buffer_dir = dir.join("forward-file.buffer");
    let _ = std::fs::remove_dir_all(&buffer_dir);
    let buffer = if disk_buffer {
        format!(
            "buffer = {{ type = \"disk\", dir = {:?}, max_bytes = \"1GiB\", fsync = \"interval\" }}\n",
            buffer_dir.display().to_string()
        )
    } else {
        String::new()
    };
    let mut p = Proc::start(
        dir,
        "forward-file",
        &format!(
            "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = {:?}\nformat = \"raw\"\n{buffer}",
            out.display().to_string()
        ),
    )?;
    let addr = p.address("source=in ")?;
    let frame = frame.to_vec();
    let run = measure_run(&mut [&mut p], 0, &out, out_bytes, records, || {
        std::thread::spawn(move || send_spread(addr, &frame, chunks, connections))
    });
    drop(p);
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_dir_all(&buffer_dir);
    run
}

/// Sends `chunks` copies of `frame` over `connections` connections at
/// once, as evenly as they divide.
fn send_spread(
    addr: std::net::SocketAddr,
    frame: &[u8],
    chunks: usize,
    connections: usize,
) -> Result<(), String> {
    if connections == 1 {
        return send_frames(addr, &[frame], chunks, None);
    }
    std::thread::scope(|s| {
        let senders: Vec<_> = (0..connections)
            .map(|c| {
                let share = chunks / connections + usize::from(c < chunks % connections);
                s.spawn(move || send_frames(addr, &[frame], share, None))
            })
            .collect();
        senders
            .into_iter()
            .try_for_each(|t| t.join().unwrap_or_else(|_| Err("sender panicked".into())))
    })
}
