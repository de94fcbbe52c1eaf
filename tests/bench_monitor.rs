//! `logferry bench monitor` against real processes: a busy loop reads
//! near a full core, a sleeper near zero. Its own test binary, so the busy
//! loop does not share the CPU with this suite's other load tests.

mod common;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::BIN;

/// Runs `logferry bench ARGS` to its end; asserts it succeeded.
fn bench(args: &[&str]) -> String {
    let out = bench_output(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "bench {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn bench_output(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("bench")
        .args(args)
        .env("LOGFERRY_LOG", "warn")
        .output()
        .unwrap()
}

/// A child killed (and reaped) when the test ends, however it ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(program: &str, args: &[&str]) -> Reaped {
    Reaped(
        Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// The monitor's summary row for `pid`: (average RSS bytes, peak RSS
/// bytes, average % CPU).
fn monitor_summary(out: &str, pid: u32) -> (u64, u64, f64) {
    let (_, summary) = out
        .split_once("\nsummary\n")
        .unwrap_or_else(|| panic!("no summary:\n{out}"));
    let row = summary
        .lines()
        .find(|l| l.split('|').nth(2).map(str::trim) == Some(&pid.to_string()))
        .unwrap_or_else(|| panic!("no summary row for {pid}:\n{out}"));
    let cols: Vec<&str> = row.split('|').map(str::trim).collect();
    // | process | PID | elapsed | avg bytes | avg | peak bytes | peak | avg % cpu |
    (
        cols[4].parse().unwrap(),
        cols[6].parse().unwrap(),
        cols[8].parse().unwrap(),
    )
}

/// User plus system CPU time of `pid` so far, in clock ticks
/// (`/proc/PID/stat` fields 14 and 15).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // the command name (field 2) may hold spaces; the fields after it do not
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    // after_name starts at field 3, so field N is fields[N - 3]
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a system constant.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}

/// Set in the environment of the busy child.
const BUSY_CHILD: &str = "LOGFERRY_TEST_BUSY_CHILD";

/// Not a test: the busy child (this binary run with `busy_child --ignored`
/// and BUSY_CHILD set) spins six threads until it is killed.
#[test]
#[ignore]
fn busy_child() {
    if std::env::var_os(BUSY_CHILD).is_none() {
        return;
    }
    let spin = || loop {
        std::hint::black_box(0u64.wrapping_add(1));
    };
    for _ in 0..5 {
        std::thread::spawn(spin);
    }
    spin();
}

#[test]
fn monitor_reads_a_busy_loop_as_the_kernel_counts_it_and_a_sleeper_near_zero() {
    // the busy child spins several threads: a process's CPU is the sum of
    // its threads', so it reads well above one core on an idle machine and
    // still clearly above zero when other work shares the cores; how much
    // it gets depends on that other work, so the monitor's reading is
    // compared with the CPU time the kernel counted for it meanwhile
    let busy = Reaped(
        Command::new(std::env::current_exe().unwrap())
            .args(["busy_child", "--exact", "--ignored", "--nocapture"])
            .env(BUSY_CHILD, "1")
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let sleeper = spawn("sleep", &["30"]);
    let (b, s) = (busy.0.id(), sleeper.0.id());
    let (ticks_before, started) = (cpu_ticks(b), Instant::now());
    let out = bench(&[
        "monitor",
        "--pid",
        &b.to_string(),
        &s.to_string(),
        "--interval",
        "500ms",
        "--duration",
        "3s",
    ]);
    let counted = 100.0 * (cpu_ticks(b) - ticks_before) as f64
        / clock_ticks_per_second()
        / started.elapsed().as_secs_f64();
    assert!(
        out.starts_with(
            "| elapsed (s) | process | PID | % cpu | user (ms) | sys (ms) | Mem (bytes) | Mem |"
        ),
        "{out}"
    );
    // a row per process per sample
    let rows = |pid: u32| {
        out.split("\nsummary\n")
            .next()
            .unwrap()
            .lines()
            .filter(|l| l.split('|').nth(3).map(str::trim) == Some(&pid.to_string()))
            .count()
    };
    assert!(rows(b) >= 5 && rows(s) >= 5, "{out}");
    let (avg, peak, cpu) = monitor_summary(&out, b);
    assert!(avg > 0 && peak >= avg, "{out}");
    assert!(
        counted > 10.0,
        "the busy loop got only {counted:.1} % CPU:\n{out}"
    );
    assert!(
        (cpu - counted).abs() <= 10.0 + counted * 0.15,
        "the monitor read the busy loop at {cpu} % CPU, the kernel counted {counted:.1} %:\n{out}"
    );
    let (avg, peak, cpu) = monitor_summary(&out, s);
    assert!(avg > 0 && peak >= avg, "{out}");
    assert!(cpu < 5.0, "sleep at {cpu} % CPU:\n{out}");
    assert!(out.contains("| sleep |"), "{out}");
}

#[test]
fn monitor_finds_processes_by_name_and_ends_when_they_exit() {
    let sleeper = spawn("sleep", &["1.5"]);
    // copy `sleep` under a name nobody else runs
    let dir = tempfile::tempdir().unwrap();
    let unique = dir.path().join("lf-mon-test");
    std::fs::copy(
        String::from_utf8(
            Command::new("sh")
                .args(["-c", "command -v sleep"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap()
        .trim(),
        &unique,
    )
    .unwrap();
    let named = Reaped(Command::new(&unique).arg("1.5").spawn().unwrap());
    let out = bench(&["monitor", "--name", "lf-mon-test", "--interval", "200ms"]);
    // no --duration: the monitor ends once the process has exited
    let (avg, _, _) = monitor_summary(&out, named.0.id());
    assert!(avg > 0, "{out}");
    assert!(!out.contains(&format!("| {} |", sleeper.0.id())), "{out}");

    let out = bench_output(&["monitor", "--pid", "4000000000"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("process 4000000000 does not exist"),
        "{out:?}"
    );
}

#[test]
fn monitor_prints_its_summary_on_ctrl_c() {
    let sleeper = spawn("sleep", &["30"]);
    let monitor = Command::new(BIN)
        .args(["bench", "monitor", "--interval", "200ms", "--pid"])
        .arg(sleeper.0.id().to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(monitor.id() as i32, libc::SIGINT) };
    let out = monitor.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let (avg, _, cpu) = monitor_summary(&stdout, sleeper.0.id());
    assert!(avg > 0 && cpu < 5.0, "{stdout}");
}
