//! The plots of `bench report`, drawn with plotters as SVG text to be put
//! inline into the page. Text stays `<text>` for the browser to render,
//! so no font crate is built.

use std::collections::BTreeMap;

use std::ops::Range;

use plotters::prelude::*;

use super::results::{Sample, ScenarioResult};

/// Plot width in pixels; the page is laid out for it.
pub const WIDTH: u32 = 960;
/// Plot height without the legend; each legend line adds `LEGEND_LINE`.
const HEIGHT: u32 = 320;
const LEGEND_LINE: u32 = 20;
/// Caption, axis labels and margins: the height that is not plot area.
const FRAME: u32 = 110;

/// Above this many processes in one plot, lines are summed per tier so
/// the plot stays readable.
const MAX_PROCESS_LINES: usize = 8;

/// Colours far enough apart to tell lines from each other (Tableau 10).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// One line of a plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (x, y), x ascending.
    pub points: Vec<(f64, f64)>,
}

/// What one plot over time shows of each sample.
#[derive(Debug, Clone, Copy)]
pub enum Measure {
    Cpu,
    Rss,
}

impl Measure {
    fn title(self) -> &'static str {
        match self {
            Measure::Cpu => "CPU over time",
            Measure::Rss => "Resident memory (RSS) over time",
        }
    }

    fn per_rate_title(self) -> &'static str {
        match self {
            Measure::Cpu => "CPU per rate of writing, by role and system",
            Measure::Rss => "Resident memory (RSS) per rate of writing, by role and system",
        }
    }

    fn axis(self) -> &'static str {
        match self {
            Measure::Cpu => "CPU, % of one core",
            Measure::Rss => "RSS, MiB",
        }
    }

    fn of(self, s: &Sample) -> f64 {
        match self {
            Measure::Cpu => s.cpu_percent,
            Measure::Rss => s.rss_bytes as f64 / (1024.0 * 1024.0),
        }
    }
}

/// The name a result's lines carry: its target, told apart by position
/// when two results have the same one.
pub fn system_names(results: &[&ScenarioResult]) -> Vec<String> {
    results
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let same = results.iter().filter(|o| o.target == r.target).count();
            if same > 1 {
                let nth = results[..=i]
                    .iter()
                    .filter(|o| o.target == r.target)
                    .count();
                format!("{} #{nth}", r.target)
            } else {
                r.target.clone()
            }
        })
        .collect()
}

/// Received records/s per step, one line per result (system). The steps
/// are named after the result with the most of them.
pub fn rate_per_step(results: &[&ScenarioResult]) -> Result<String, String> {
    let names = system_names(results);
    let series: Vec<Series> = results
        .iter()
        .zip(names)
        .map(|(r, name)| Series {
            name,
            points: (r.steps.iter().enumerate())
                .map(|(i, s)| (i as f64, s.received_rate))
                .collect(),
        })
        .collect();
    let labels: Vec<String> = results
        .iter()
        .max_by_key(|r| r.steps.len())
        .map(|r| r.steps.iter().map(|s| s.label.clone()).collect())
        .unwrap_or_default();
    // Steps sit at 0, 1, … n-1; asking for n labels makes them the only
    // ticks (plotters picks the coarsest of 1, 2, 5 × 10^k that fits).
    let n = labels.len().max(1);
    let x = (-0.5..n as f64 - 0.5, n);
    let label_of = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let axes = Axes {
        title: "Received records/s per step",
        x_desc: "step",
        y_desc: "records/s",
    };
    draw(&axes, &series, x, &label_of, true)
}

/// CPU or RSS per rate of writing, one line per role and system (a role
/// is a tier: `agent`, `deliver`, `receiver`), the mean over the role's
/// processes at each step, the rate on a log scale: the shape of the
/// tables that compare systems at everyday rates. `None` when no result
/// names the systems of its processes or has a step at a fixed rate.
pub fn per_rate(results: &[&ScenarioResult], what: Measure) -> Result<Option<String>, String> {
    let series = series_per_rate(results, what);
    let rates: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    if rates.is_empty() {
        return Ok(None);
    }
    // drawn over log10(rate), the decades as ticks (as rate_per_step
    // does with steps: n ticks asked for over n units)
    let lo = rates
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .log10()
        .floor();
    let hi = (rates.iter().copied().fold(0.0, f64::max).log10().ceil()).max(lo + 1.0);
    let decades = (hi - lo) as usize + 1;
    let x = (lo - 0.5..hi + 0.5, decades);
    let log_series: Vec<Series> = series
        .into_iter()
        .map(|s| Series {
            name: s.name,
            points: s.points.iter().map(|(r, y)| (r.log10(), *y)).collect(),
        })
        .collect();
    let label = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 {
            human_number(10f64.powf(i))
        } else {
            String::new()
        }
    };
    let axes = Axes {
        title: what.per_rate_title(),
        x_desc: "rate of writing, lines/s per agent (log scale)",
        y_desc: what.axis(),
    };
    draw(&axes, &log_series, x, &label, true).map(Some)
}

/// The lines of [`per_rate`]: (offered rate, mean of the role's
/// processes) per step at a fixed rate, named `ROLE SYSTEM` (and by the
/// result first when two results would draw lines of the same name).
pub fn series_per_rate(results: &[&ScenarioResult], what: Measure) -> Vec<Series> {
    const ROLES: [&str; 3] = ["agent", "deliver", "receiver"];
    // (result, role order, role, system) → rate → (sum, processes)
    type Key<'a> = (usize, usize, &'a str, &'a str);
    let mut lines: BTreeMap<Key, Vec<(f64, f64, u32)>> = BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        for step in &r.steps {
            let Some(rate) = step.offered_rate.filter(|r| *r > 0.0) else {
                continue;
            };
            for p in &step.processes {
                let Some(system) = p.system.as_deref() else {
                    continue;
                };
                let order = ROLES
                    .iter()
                    .position(|t| *t == p.tier)
                    .unwrap_or(ROLES.len());
                let points = lines.entry((i, order, &p.tier, system)).or_default();
                let value = match what {
                    Measure::Cpu => p.cpu_percent,
                    Measure::Rss => p.rss_bytes as f64 / (1024.0 * 1024.0),
                };
                match points.iter_mut().find(|(r, _, _)| *r == rate) {
                    Some(point) => {
                        point.1 += value;
                        point.2 += 1;
                    }
                    None => points.push((rate, value, 1)),
                }
            }
        }
    }
    let plain = |(_, _, tier, system): &Key| format!("{tier} {system}");
    let mut names: Vec<String> = lines.keys().map(plain).collect();
    names.sort();
    let clash = names.windows(2).any(|w| w[0] == w[1]);
    let systems = system_names(results);
    lines
        .into_iter()
        .map(|(key, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                name: if clash {
                    format!("{}: {}", systems[key.0], plain(&key))
                } else {
                    plain(&key)
                },
                points: points
                    .into_iter()
                    .map(|(r, sum, n)| (r, sum / f64::from(n)))
                    .collect(),
            }
        })
        .collect()
}

/// CPU or RSS over time of every process, or of every tier when there are
/// too many processes; `None` when no result has samples.
pub fn over_time(results: &[&ScenarioResult], what: Measure) -> Result<Option<String>, String> {
    let series = series_over_time(results, what);
    if series.is_empty() {
        return Ok(None);
    }
    let t_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0, f64::max)
        .max(1.0);
    let x = (0.0..t_max, 10);
    let seconds = |v: &f64| format!("{v}");
    let axes = Axes {
        title: what.title(),
        x_desc: "seconds since start",
        y_desc: what.axis(),
    };
    draw(&axes, &series, x, &seconds, false).map(Some)
}

/// A line per process (named `system process` when several systems are
/// compared), or per tier, summed over its processes, past
/// `MAX_PROCESS_LINES` processes.
pub fn series_over_time(results: &[&ScenarioResult], what: Measure) -> Vec<Series> {
    let systems = system_names(results);
    let prefix = |i: usize| {
        if results.len() > 1 {
            format!("{} ", systems[i])
        } else {
            String::new()
        }
    };
    // (result, process) → (tier, samples in time order)
    let mut processes: BTreeMap<(usize, &str), (&str, Vec<&Sample>)> = BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        for s in &r.samples {
            let entry = processes
                .entry((i, s.name.as_str()))
                .or_insert((s.tier.as_str(), Vec::new()));
            entry.1.push(s);
        }
    }
    for (_, samples) in processes.values_mut() {
        samples.sort_by(|a, b| a.t.total_cmp(&b.t));
    }
    if processes.len() <= MAX_PROCESS_LINES {
        return processes
            .iter()
            .map(|((i, name), (_, samples))| Series {
                name: format!("{}{name}", prefix(*i)),
                points: samples.iter().map(|s| (s.t, what.of(s))).collect(),
            })
            .collect();
    }
    // Samples of different processes are taken at slightly different
    // times: each process's mean per time bin, summed over the tier.
    let bin = sample_interval(processes.values().map(|(_, s)| s.as_slice()));
    let mut tiers: BTreeMap<(usize, &str), TierSums> = BTreeMap::new();
    for ((i, _), (tier, samples)) in &processes {
        let mut means: BTreeMap<i64, (f64, u32)> = BTreeMap::new();
        for s in samples {
            let m = means.entry((s.t / bin).round() as i64).or_insert((0.0, 0));
            m.0 += what.of(s);
            m.1 += 1;
        }
        let (count, sums) = tiers.entry((*i, *tier)).or_default();
        *count += 1;
        for (b, (sum, n)) in means {
            *sums.entry(b).or_insert(0.0) += sum / f64::from(n);
        }
    }
    tiers
        .into_iter()
        .map(|((i, tier), (count, sums))| Series {
            name: format!("{}{tier} (sum of {count})", prefix(i)),
            points: sums.into_iter().map(|(b, v)| (b as f64 * bin, v)).collect(),
        })
        .collect()
}

/// Processes in a tier, and per time bin the sum of their means.
type TierSums = (usize, BTreeMap<i64, f64>);

/// The usual time between two samples of one process (the median gap),
/// 1 s when no process has two samples.
fn sample_interval<'a, 'b: 'a>(processes: impl Iterator<Item = &'a [&'b Sample]>) -> f64 {
    let mut gaps: Vec<f64> = processes
        .flat_map(|s| s.windows(2).map(|w| w[1].t - w[0].t))
        .filter(|g| *g > 0.0)
        .collect();
    if gaps.is_empty() {
        return 1.0;
    }
    gaps.sort_by(f64::total_cmp);
    gaps[gaps.len() / 2]
}

/// Titles of one plot.
struct Axes<'a> {
    title: &'a str,
    x_desc: &'a str,
    y_desc: &'a str,
}

/// Draws `series` as lines (with a dot per point if `markers`) over `x`
/// (range, number of labels) and returns the SVG element.
fn draw(
    axes: &Axes,
    series: &[Series],
    x: (Range<f64>, usize),
    x_label: &dyn Fn(&f64) -> String,
    markers: bool,
) -> Result<String, String> {
    let y_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|y| y.is_finite())
        .fold(0.0, f64::max);
    // The legend sits in the upper right corner, above the highest point:
    // the plot grows by a line per series, the y axis by the legend's share.
    let legend = LEGEND_LINE * series.len() as u32 + 16;
    let height = HEIGHT + LEGEND_LINE * series.len() as u32;
    let free = 1.0 - f64::from(legend) / f64::from(height - FRAME);
    let y_top = if y_max > 0.0 { y_max / free } else { 1.0 };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(axes.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(80)
            .build_cartesian_2d(x.0, 0.0..y_top)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_labels(x.1)
            .x_desc(axes.x_desc)
            .y_desc(axes.y_desc)
            .x_label_formatter(x_label)
            .y_label_formatter(&|v| human_number(*v))
            .label_style(("sans-serif", 13))
            .light_line_style(BLACK.mix(0.04))
            .draw()
            .map_err(plot_error)?;
        for (i, s) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(plot_error)?
                .label(s.name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
                });
            if markers {
                chart
                    .draw_series(s.points.iter().map(|p| Circle::new(*p, 4, color.filled())))
                    .map_err(plot_error)?;
            }
        }
        if !series.is_empty() {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.4))
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(plot_error)?;
        }
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

fn plot_error(e: impl std::fmt::Display) -> String {
    format!("drawing a plot: {e}")
}

/// 1234567 → "1.23M", 12000 → "12k", 3.5 → "3.5": axis labels that fit.
pub fn human_number(v: f64) -> String {
    let a = v.abs();
    let (scaled, unit) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let text = format!("{scaled:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::html::tests::result;

    #[test]
    fn a_few_processes_get_a_line_each_named_by_system_when_compared() {
        let procs = [("agent-1", "agent"), ("receiver-1", "receiver")];
        let a = result("relay", "logferry", &["x"], &procs);
        let b = result("relay", "vector", &["x"], &procs);
        let names: Vec<String> = series_over_time(&[&a, &b], Measure::Cpu)
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(
            names,
            [
                "logferry agent-1",
                "logferry receiver-1",
                "vector agent-1",
                "vector receiver-1"
            ]
        );
        let alone = series_over_time(&[&a], Measure::Rss);
        assert_eq!(alone[0].name, "agent-1");
        assert_eq!(alone[0].points, [(1.0, 21.0), (2.0, 22.0), (3.0, 23.0)]);
    }

    #[test]
    fn many_processes_are_summed_per_tier_over_the_same_sample_times() {
        let mut names = Vec::new();
        for i in 0..6 {
            names.push((format!("agent-{i}"), "agent"));
        }
        for i in 0..4 {
            names.push((format!("deliver-{i}"), "deliver"));
        }
        let procs: Vec<(&str, &str)> = names.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        let mut r = result("peer-deliver", "logferry", &["x"], &procs);
        // Samples of one round are taken a few milliseconds apart.
        for (i, s) in r.samples.iter_mut().enumerate() {
            s.t += 0.003 * (i % 10) as f64;
        }
        let series = series_over_time(&[&r], Measure::Cpu);
        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["agent (sum of 6)", "deliver (sum of 4)"]);
        // Each process uses 10 % × t at t = 1, 2, 3.
        assert_eq!(series[0].points.len(), 3);
        for (k, (t, cpu)) in series[0].points.iter().enumerate() {
            let expected_t = (k + 1) as f64;
            assert!((t - expected_t).abs() < 0.01, "t {t}");
            assert!((cpu - 6.0 * 10.0 * expected_t).abs() < 1e-9, "cpu {cpu}");
        }
        assert!((series[1].points[2].1 - 4.0 * 30.0).abs() < 1e-9);
    }

    #[test]
    fn the_rate_plot_names_steps_and_systems() {
        let a = result("http-kafka", "logferry", &["1 worker", "8 workers"], &[]);
        let b = result("http-kafka", "fluent-bit", &["1 worker"], &[]);
        let svg = rate_per_step(&[&a, &b]).unwrap();
        assert!(svg.starts_with("<svg"));
        for text in [
            "1 worker",
            "8 workers",
            "logferry",
            "fluent-bit",
            "records/s",
        ] {
            assert!(
                svg.contains(&format!(">\n{text}\n</text>")),
                "{text} missing"
            );
        }
        assert!(over_time(&[&a, &b], Measure::Cpu).unwrap().is_none());
    }

    #[test]
    fn per_rate_lines_are_one_per_role_and_system_on_decades() {
        let procs = [
            ("agent-1", "agent"),
            ("agent-2", "agent"),
            ("deliver-1", "deliver"),
        ];
        let mut r = result(
            "peer-deliver",
            "logferry",
            &["100", "1000", "10000"],
            &procs,
        );
        for (i, step) in r.steps.iter_mut().enumerate() {
            step.offered_rate = Some(100.0 * 10f64.powi(i as i32));
            for (k, p) in step.processes.iter_mut().enumerate() {
                p.system = Some(
                    if p.tier == "agent" {
                        "fluent-bit"
                    } else {
                        "logferry"
                    }
                    .into(),
                );
                p.cpu_percent = (i + 1) as f64 * (k + 1) as f64;
            }
        }
        let series = series_per_rate(&[&r], Measure::Cpu);
        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["agent fluent-bit", "deliver logferry"]);
        // the agents' mean: (1 + 2) / 2 × step
        assert_eq!(
            series[0].points,
            [(100.0, 1.5), (1000.0, 3.0), (10000.0, 4.5)]
        );
        assert_eq!(series[1].points[2], (10000.0, 9.0));
        let svg = per_rate(&[&r], Measure::Cpu).unwrap().unwrap();
        for text in ["100", "1k", "10k", "agent fluent-bit", "CPU, % of one core"] {
            assert!(
                svg.contains(&format!(">\n{text}\n</text>")),
                "{text} missing"
            );
        }
        // two runs with the same roles and systems: told apart
        let series = series_per_rate(&[&r, &r], Measure::Rss);
        assert_eq!(series[0].name, "logferry #1: agent fluent-bit");
        assert_eq!(series.len(), 4);
        // results without systems (older ones, other scenarios): no plot
        let plain = result("peer-deliver", "logferry", &["100"], &procs);
        assert!(per_rate(&[&plain], Measure::Cpu).unwrap().is_none());
    }

    #[test]
    fn axis_numbers_are_short() {
        assert_eq!(human_number(0.0), "0");
        assert_eq!(human_number(2.5), "2.5");
        assert_eq!(human_number(1500.0), "1.5k");
        assert_eq!(human_number(1_230_000.0), "1.23M");
        assert_eq!(human_number(2e9), "2G");
    }
}
