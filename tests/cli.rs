//! The command line as a user meets it.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

fn validate(config: &str) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(&path, config).unwrap();
    let out = Command::new(BIN)
        .args(["validate", "-c"])
        .arg(&path)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn validate_accepts_a_good_config() {
    let (ok, stdout, _) = validate(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:24224\"\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n",
    );
    assert!(ok);
    assert!(stdout.contains("ok (1 sources, 1 sinks)"), "{stdout}");
}

#[test]
fn validate_names_the_key_and_line() {
    let (ok, _, stderr) = validate(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:24224\"\nmax_conections = 5\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n",
    );
    assert!(!ok);
    assert!(stderr.contains("c.toml:4:"), "{stderr}");
    assert!(stderr.contains("unknown key `max_conections`"), "{stderr}");
}

#[test]
fn help_is_everywhere() {
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["validate", "--help"],
        &["bench", "--help"],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{args:?}"
        );
    }
}

#[test]
fn run_without_config_uses_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.arg("run")
        .current_dir(dir.path())
        .env("LOGFERRY_FORWARD_ADDRESS", "127.0.0.1:0");
    let mut lf = Logferry::spawn(&mut cmd, dir);
    let addr = lf.forward_addr("forward");
    let mut entries = Vec::new();
    for i in 0..10 {
        logferry::protocol::forward::write_message_entry(
            &mut entries,
            1,
            0,
            format!("d-{i}").as_bytes(),
        );
    }
    let mut frame = Vec::new();
    logferry::protocol::forward::write_packed_forward(&mut frame, "x", &entries, 10, None);
    drop(send(addr, &frame));
    let out = lf.path("logferry-data/unified.log");
    let lines = wait_for_lines(&out, 10, Duration::from_secs(20));
    assert_exactly(&lines, "d", 10);
    assert!(lf.stop().success());
}

#[test]
fn a_finite_generator_drains_and_exits_zero() {
    let mut lf = Logferry::start(
        r#"
[sources.gen]
type = "generator"
count = 123456
size = 10
tag = "gen"

[sinks.file]
type = "file"
match = "gen"
path = "{dir}/gen.log"
"#,
    );
    assert!(lf.wait(Duration::from_secs(60)).success());
    let lines = read_lines(&lf.path("gen.log"));
    assert_eq!(lines.len(), 123_456);
    assert!(lines
        .iter()
        .enumerate()
        .all(|(i, l)| l == &format!("{i:010}")));
}

#[test]
fn sigterm_drains_everything_already_read() {
    let mut lf = Logferry::start(
        r#"
[sources.gen]
type = "generator"
rate = 20000
size = 20

[sinks.file]
type = "file"
match = "**"
path = "{dir}/gen.log"
"#,
    );
    wait_for_lines(&lf.path("gen.log"), 5000, Duration::from_secs(20));
    assert!(lf.stop().success());
    let lines = read_lines(&lf.path("gen.log"));
    let made = lf.final_counter("logferry_source_records_total{component=\"gen\"}");
    assert_eq!(
        lines.len() as u64,
        made,
        "every generated record is in the file"
    );
    assert!(lines
        .iter()
        .enumerate()
        .all(|(i, l)| l == &format!("{i:020}")));
}

#[test]
fn a_taken_port_fails_start_up_with_a_message() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let config = format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"{}\"\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n",
        taken.local_addr().unwrap()
    );
    let mut lf = Logferry::start(&config);
    let status = lf.wait(Duration::from_secs(20));
    assert!(!status.success());
    assert!(
        lf.log_text().contains("cannot listen on"),
        "{}",
        lf.log_text()
    );
}

#[test]
fn sigterm_with_a_full_queue_and_a_dead_downstream_still_exits() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut lf = Logferry::start(&format!(
        "[sources.gen]\ntype = \"generator\"\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{dead}\" }}]\ndrain_timeout = \"1s\"\nbuffer = {{ max_bytes = \"64KiB\" }}\n"
    ));
    lf.wait_for_log("server connection failed", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(500)); // the queue is full by now
    let started = std::time::Instant::now();
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        lf.log_text().contains("drain_timeout passed"),
        "{}",
        lf.log_text()
    );
}
