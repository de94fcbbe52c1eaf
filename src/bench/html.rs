//! `bench report`: one self-contained HTML page (inline CSS and SVG, no
//! script, nothing fetched) from the results scenarios write with
//! `--json FILE`. Results of one scenario share a section: three plots
//! comparing every system in it (received records/s per step, CPU and
//! RSS over time), where the roles name their systems (the deliver
//! scenarios) two more (CPU and RSS per rate of writing, a line per role
//! and system), then a table of steps per result, with the end-to-end
//! latency where it was measured.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::plot::{self, Measure};
use super::procfs::human_bytes;
use super::results::{Machine, ScenarioResult, Step};

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Directory to write `index.html` into (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Result files written by scenarios with `--json FILE`.
    #[arg(required = true, value_name = "RESULT.json")]
    pub results: Vec<PathBuf>,
}

pub fn run(a: ReportArgs) -> Result<(), String> {
    let results = (a.results.iter())
        .map(|p| ScenarioResult::read(p))
        .collect::<Result<Vec<_>, _>>()?;
    let page = write_report(&a.out, &results)?;
    println!("report: {}", page.display());
    Ok(())
}

/// Writes `dir/index.html` for `results` (creating `dir`) and returns its
/// path. Scenarios call it for `--report DIR`.
pub fn write_report(dir: &Path, results: &[ScenarioResult]) -> Result<PathBuf, String> {
    let page = render(results)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join("index.html");
    std::fs::write(&path, page).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// The whole page.
pub fn render(results: &[ScenarioResult]) -> Result<String, String> {
    if results.is_empty() {
        return Err("no results to report: give at least one RESULT.json".into());
    }
    let scenarios = scenarios_in_order(results);
    let mut dates: Vec<&str> = results.iter().map(|r| date_of(&r.started)).collect();
    dates.sort_unstable();
    dates.dedup();
    let title = format!(
        "logferry benchmark: {} ({})",
        scenarios.join(", "),
        dates.join(", ")
    );
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{t}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{t}</h1>\n",
        t = escape(&title)
    );
    h += &machine_lines(results);
    for scenario in scenarios {
        let of_scenario: Vec<&ScenarioResult> =
            results.iter().filter(|r| r.scenario == scenario).collect();
        section(&mut h, scenario, &of_scenario)?;
    }
    h += "</body>\n</html>\n";
    Ok(h)
}

/// Scenario names, each once, in the order the results name them.
fn scenarios_in_order(results: &[ScenarioResult]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for r in results {
        if !names.contains(&r.scenario.as_str()) {
            names.push(&r.scenario);
        }
    }
    names
}

/// `2026-11-22T16:00:00Z` → `2026-11-22`; anything else as it is.
fn date_of(started: &str) -> &str {
    started.split_once('T').map_or(started, |(d, _)| d)
}

/// One line per machine; results measured on different machines say
/// which system ran where.
fn machine_lines(results: &[ScenarioResult]) -> String {
    let mut machines: Vec<(&Machine, Vec<&str>)> = Vec::new();
    for r in results {
        match machines.iter_mut().find(|(m, _)| **m == r.machine) {
            Some((_, targets)) => {
                if !targets.contains(&r.target.as_str()) {
                    targets.push(&r.target);
                }
            }
            None => machines.push((&r.machine, vec![r.target.as_str()])),
        }
    }
    let mut h = String::new();
    for (m, targets) in &machines {
        let whose = if machines.len() > 1 {
            format!(" ({})", targets.join(", "))
        } else {
            String::new()
        };
        let _ = writeln!(
            h,
            "<p class=\"machine\">Machine{}: {} cores, {} memory, {}</p>",
            escape(&whose),
            m.cores,
            human_bytes(m.memory_bytes),
            escape(&m.kernel)
        );
    }
    h
}

fn section(h: &mut String, scenario: &str, results: &[&ScenarioResult]) -> Result<(), String> {
    let systems = plot::system_names(results);
    let _ = writeln!(
        h,
        "<section>\n<h2>{}</h2>\n<p>Systems: {}.</p>",
        escape(scenario),
        escape(&systems.join(", "))
    );
    figure(h, Some(plot::rate_per_step(results)?));
    for what in [Measure::Cpu, Measure::Rss] {
        figure(h, plot::over_time(results, what)?);
    }
    for what in [Measure::Cpu, Measure::Rss] {
        if let Some(svg) = plot::per_rate(results, what)? {
            figure(h, Some(svg));
        }
    }
    for (r, system) in results.iter().zip(&systems) {
        result_table(h, r, system);
    }
    h.push_str("</section>\n");
    Ok(())
}

fn figure(h: &mut String, svg: Option<String>) {
    match svg {
        // plotters escapes the text it puts into the SVG.
        Some(svg) => {
            let _ = write!(h, "<figure>\n{svg}</figure>\n");
        }
        None => h.push_str("<p class=\"note\">No monitor samples in these results.</p>\n"),
    }
}

fn result_table(h: &mut String, r: &ScenarioResult, system: &str) {
    let _ = writeln!(h, "<h3>{}</h3>", escape(system));
    let params: Vec<String> = (r.params.iter())
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k} = {s}"),
            other => format!("{k} = {other}"),
        })
        .collect();
    let sent: u64 = r.steps.iter().map(|s| s.sent).sum();
    let lost = r.lost();
    let _ = writeln!(
        h,
        "<p class=\"meta\">Started {}{}. <span{}>Lost {} of {} records.</span></p>",
        escape(&r.started),
        if params.is_empty() {
            String::new()
        } else {
            escape(&format!("; {}", params.join(", ")))
        },
        if lost > 0 { " class=\"lost\"" } else { "" },
        thousands(lost),
        thousands(sent)
    );
    let columns = Columns {
        bytes: r.steps.iter().any(|s| s.received_bytes_rate.is_some()),
        latency: r.steps.iter().any(|s| s.latency.is_some()),
        system: (r.steps.iter())
            .flat_map(|s| &s.processes)
            .any(|p| p.system.is_some()),
    };
    h.push_str(
        "<table>\n<thead><tr><th>step</th><th>offered records/s</th><th>seconds</th>\
         <th>sent</th><th>received</th><th>lost</th><th>received records/s</th>",
    );
    if columns.bytes {
        h.push_str("<th>received MB/s</th>");
    }
    if columns.latency {
        h.push_str("<th>latency p50 ms</th><th>latency p99 ms</th><th>latency max ms</th>");
    }
    h.push_str("<th>process</th><th>tier</th>");
    if columns.system {
        h.push_str("<th>system</th>");
    }
    h.push_str("<th>records/s</th><th>CPU %</th><th>RSS</th><th>remarks</th></tr></thead>\n");
    for step in &r.steps {
        step_rows(h, step, &columns);
    }
    h.push_str("</table>\n");
}

/// The optional columns of a result's table.
struct Columns {
    /// Received MB/s.
    bytes: bool,
    /// End-to-end latency p50, p99, max.
    latency: bool,
    /// The system of each process.
    system: bool,
}

/// One `<tbody>` per step: a row per process, the step's own cells
/// spanning them.
fn step_rows(h: &mut String, s: &Step, columns: &Columns) {
    let span = s.processes.len().max(1);
    let offered = s.offered_rate.map_or("max".into(), rate);
    let lost_class = if s.lost() > 0 { " lost" } else { "" };
    let _ = write!(
        h,
        "<tbody><tr><th rowspan=\"{span}\">{}</th>{}{}{}{}<td rowspan=\"{span}\" class=\"num{lost_class}\">{}</td>{}",
        escape(&s.label),
        num(span, &offered),
        num(span, &format!("{:.1}", s.seconds)),
        num(span, &thousands(s.sent)),
        num(span, &thousands(s.received)),
        thousands(s.lost()),
        num(span, &rate(s.received_rate)),
    );
    if columns.bytes {
        let mb = s
            .received_bytes_rate
            .map_or("–".into(), |b| format!("{:.1}", b / 1e6));
        h.push_str(&num(span, &mb));
    }
    if columns.latency {
        let ms = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.1}"));
        let l = s.latency;
        h.push_str(&num(span, &ms(l.map(|l| l.p50_ms))));
        h.push_str(&num(span, &ms(l.map(|l| l.p99_ms))));
        h.push_str(&num(span, &ms(l.map(|l| l.max_ms))));
    }
    let remarks = format!(
        "<td rowspan=\"{span}\" class=\"remarks\">{}</td>",
        escape(&s.remarks.join("; "))
    );
    if s.processes.is_empty() {
        let empty = if columns.system { 6 } else { 5 };
        let _ = writeln!(h, "{}{remarks}</tr></tbody>", "<td></td>".repeat(empty));
        return;
    }
    for (i, p) in s.processes.iter().enumerate() {
        if i > 0 {
            h.push_str("<tr>");
        }
        let _ = write!(
            h,
            "<td>{}</td><td>{}</td>",
            escape(&p.name),
            escape(&p.tier)
        );
        if columns.system {
            let _ = write!(h, "<td>{}</td>", escape(p.system.as_deref().unwrap_or("–")));
        }
        let _ = write!(
            h,
            "<td class=\"num\">{}</td><td class=\"num\">{:.1}</td><td class=\"num\">{}</td>",
            p.rate.map_or("–".into(), rate),
            p.cpu_percent,
            human_bytes(p.rss_bytes)
        );
        if i == 0 {
            h.push_str(&remarks);
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n");
}

/// A right-aligned number cell spanning the step's rows.
fn num(span: usize, text: &str) -> String {
    format!("<td rowspan=\"{span}\" class=\"num\">{}</td>", escape(text))
}

fn rate(r: f64) -> String {
    if r.is_finite() && r >= 0.0 {
        thousands(r.round() as u64)
    } else {
        "–".into()
    }
}

/// 1234567 → "1,234,567".
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Text made safe for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body { font-family: sans-serif; color: #222; max-width: 1000px; margin: 1.5em auto; padding: 0 1em; }
h1 { font-size: 1.5em; }
h2 { margin-top: 2em; border-bottom: 2px solid #ccc; }
.machine, .meta, .note { color: #555; }
.lost { color: #b00; font-weight: bold; }
figure { margin: 1em 0; }
svg { max-width: 100%; height: auto; border: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.9em; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; white-space: nowrap; }
td.remarks { white-space: normal; }
thead th { background: #e8ecf0; white-space: normal; }
tbody:nth-of-type(even) { background: #f5f7f9; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
";

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bench::results::{ProcessStep, Sample};

    /// A result of `scenario` for `target`: a step per label, every
    /// process in every step, and three monitor samples per process.
    pub(crate) fn result(
        scenario: &str,
        target: &str,
        labels: &[&str],
        processes: &[(&str, &str)],
    ) -> ScenarioResult {
        let steps = (labels.iter().enumerate())
            .map(|(i, label)| Step {
                label: label.to_string(),
                offered_rate: Some(1000.0 * (i + 1) as f64),
                seconds: 10.0,
                sent: 10_000 * (i as u64 + 1),
                received: 10_000 * (i as u64 + 1) - i as u64,
                received_rate: 999.5 * (i + 1) as f64,
                received_bytes_rate: None,
                processes: (processes.iter())
                    .map(|(name, tier)| ProcessStep {
                        name: name.to_string(),
                        tier: tier.to_string(),
                        system: None,
                        pid: 100,
                        rate: Some(1000.0),
                        cpu_percent: 12.5,
                        rss_bytes: 30 << 20,
                    })
                    .collect(),
                latency: None,
                remarks: vec![],
            })
            .collect();
        let samples = (1..=3)
            .flat_map(|t| {
                processes.iter().map(move |(name, tier)| Sample {
                    t: f64::from(t),
                    name: name.to_string(),
                    tier: tier.to_string(),
                    cpu_percent: 10.0 * f64::from(t),
                    rss_bytes: (20 + t as u64) << 20,
                })
            })
            .collect();
        ScenarioResult {
            scenario: scenario.into(),
            target: target.into(),
            started: "2026-11-22T16:00:00Z".into(),
            machine: Machine {
                cores: 2,
                memory_bytes: 24 << 30,
                kernel: "Linux 6.1.0".into(),
            },
            params: serde_json::Map::new(),
            steps,
            samples,
        }
    }

    #[test]
    fn escape_replaces_every_markup_character() {
        assert_eq!(
            escape(r#"<a href="x" title='y'>R&D</a>"#),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;R&amp;D&lt;/a&gt;"
        );
        assert_eq!(escape("plain 10000 lines/s"), "plain 10000 lines/s");
    }

    #[test]
    fn text_from_result_files_is_escaped_everywhere_on_the_page() {
        let mut r = result(
            "peer-deliver<i>",
            "<script>alert(1)</script>",
            &["1000 <b>lines</b>/s"],
            &[("agent&1", "<agent>")],
        );
        r.steps[0].remarks = vec!["delay <occurred>".into()];
        r.machine.kernel = "Linux <6>".into();
        r.params.insert("size<".into(), "\"4 KiB\"".into());
        let page = render(&[r]).unwrap();
        for raw in [
            "<script",
            "<b>",
            "<i>",
            "<agent>",
            "<occurred>",
            "<6>",
            "size<",
        ] {
            assert!(!page.contains(raw), "{raw} is not escaped");
        }
        for escaped in [
            "&lt;script&gt;alert(1)&lt;/script&gt;",
            "1000 &lt;b&gt;lines&lt;/b&gt;/s",
            "agent&amp;1",
            "delay &lt;occurred&gt;",
            "Linux &lt;6&gt;",
            "size&lt; = &quot;4 KiB&quot;",
        ] {
            assert!(page.contains(escaped), "{escaped} missing");
        }
    }

    #[test]
    fn two_systems_make_two_tables_and_three_plots_in_one_section() {
        let procs = [("agent-1", "agent"), ("receiver-1", "receiver")];
        let ours = result(
            "peer-deliver",
            "logferry",
            &["1000 lines/s", "2000 lines/s"],
            &procs,
        );
        let theirs = result(
            "peer-deliver",
            "fluentd",
            &["1000 lines/s", "2000 lines/s"],
            &procs,
        );
        let page = render(&[ours, theirs]).unwrap();
        assert_eq!(page.matches("<section>").count(), 1);
        assert_eq!(page.matches("<table>").count(), 2);
        assert_eq!(page.matches("<svg").count(), 3);
        assert_eq!(page.matches("<h3>logferry</h3>").count(), 1);
        assert_eq!(page.matches("<h3>fluentd</h3>").count(), 1);
        // Each step label: a row in each table and an x-axis label.
        assert_eq!(
            page.matches("<th rowspan=\"2\">2000 lines/s</th>").count(),
            2
        );
        // Legends: a line per system, and per system and process.
        assert!(page.contains(">\nlogferry\n</text>") && page.contains(">\nfluentd\n</text>"));
        assert!(page.contains("fluentd receiver-1\n</text>"));
        assert!(page.contains("<title>logferry benchmark: peer-deliver (2026-11-22)</title>"));
        assert_eq!(page.matches("class=\"machine\"").count(), 1);
        assert!(page.contains("Machine: 2 cores, 24.0 GiB memory, Linux 6.1.0"));
        // 1 record lost in the second step of each.
        assert!(page.contains("Lost 1 of 30,000 records."));
        assert!(!page.contains("<script"));
    }

    #[test]
    fn systems_and_latency_get_columns_and_the_per_rate_plots() {
        let procs = [("agent-1", "agent"), ("receiver-1", "receiver")];
        let mut r = result(
            "peer-deliver",
            "logferry",
            &["100 lines/s", "1000 lines/s"],
            &procs,
        );
        for step in &mut r.steps {
            step.latency = crate::bench::results::Latency::of(&mut [1200, 3400, 56_700]);
            for p in &mut step.processes {
                p.system = Some(
                    if p.tier == "agent" {
                        "fluent-bit"
                    } else {
                        "logferry"
                    }
                    .into(),
                );
            }
        }
        let page = render(&[r]).unwrap();
        assert!(
            page.contains("<th>latency p50 ms</th><th>latency p99 ms</th><th>latency max ms</th>")
        );
        assert!(page.contains("<th>tier</th><th>system</th>"));
        assert!(page.contains("<td>agent-1</td><td>agent</td><td>fluent-bit</td>"));
        assert!(page.contains("class=\"num\">3.4</td><td rowspan=\"2\" class=\"num\">56.7</td>"));
        // rate per step, CPU and RSS over time, CPU and RSS per rate
        assert_eq!(page.matches("<svg").count(), 5);
        assert!(page.contains("CPU per rate of writing, by role and system"));
        assert!(page.contains(">\nagent fluent-bit\n</text>"));
        // an older result: none of it
        let old = render(&[result("peer-deliver", "logferry", &["100 lines/s"], &procs)]).unwrap();
        assert!(!old.contains("latency p50") && !old.contains("<th>system</th>"));
        assert_eq!(old.matches("<svg").count(), 3);
    }

    #[test]
    fn each_scenario_gets_its_own_section() {
        let procs = [("server", "server")];
        let page = render(&[
            result("file-transfer", "logferry", &["10 B records"], &procs),
            result("http-kafka", "logferry", &["8 workers"], &procs),
            result("file-transfer", "fluentd", &["10 B records"], &procs),
        ])
        .unwrap();
        assert_eq!(page.matches("<section>").count(), 2);
        assert_eq!(page.matches("<svg").count(), 6);
        assert_eq!(page.matches("<table>").count(), 3);
        let file = page.find("<h2>file-transfer</h2>").unwrap();
        let http = page.find("<h2>http-kafka</h2>").unwrap();
        let fluentd = page.find("<h3>fluentd</h3>").unwrap();
        assert!(
            file < fluentd && fluentd < http,
            "fluentd's table is in file-transfer"
        );
    }

    #[test]
    fn results_without_samples_say_so_instead_of_empty_plots() {
        let mut r = result("tcp-writer", "logferry", &["1 round"], &[]);
        r.samples.clear();
        let page = render(&[r]).unwrap();
        assert_eq!(page.matches("<svg").count(), 1);
        assert_eq!(page.matches("No monitor samples").count(), 2);
        assert!(page.contains("<th rowspan=\"1\">1 round</th>"));
    }

    #[test]
    fn write_report_creates_the_directory_and_needs_results() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a/b");
        let r = result(
            "tail-writer",
            "logferry",
            &["1 round"],
            &[("tail", "server")],
        );
        let page = write_report(&out, &[r]).unwrap();
        assert_eq!(page, out.join("index.html"));
        assert!(std::fs::read_to_string(&page)
            .unwrap()
            .starts_with("<!DOCTYPE html>"));
        let e = write_report(&out, &[]).unwrap_err();
        assert!(e.contains("give at least one RESULT.json"), "{e}");
    }

    #[test]
    fn numbers_read_with_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(rate(f64::NAN), "–");
    }
}
