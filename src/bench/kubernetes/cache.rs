//! What the metadata cache costs: logferry's RSS with the `kubernetes`
//! source watching N pods of its node (and their namespace) and no logs
//! to read, minus its RSS with no pod on the node. Each count has a node
//! of its own, its pods created before logferry starts; RSS is read once
//! the source holds every pod (its `logferry_kubernetes_pods` gauge) and
//! [`SETTLE`] has passed.

use std::path::Path;
use std::time::{Duration, Instant};

use super::agents::Node;
use super::cluster::{Cluster, NewPod};
use crate::bench::process::{metric, wait_until_every, Proc};

/// Time left after the last pod is held, for the list's buffers to be
/// freed and the watch to settle.
const SETTLE: Duration = Duration::from_secs(3);

/// The longest the source may take to hold every pod.
const LIST_TIMEOUT: Duration = Duration::from_secs(120);

/// The gauge of the pods the source holds (its line starts so).
const HELD: &str = "logferry_kubernetes_pods_cached{";

/// RSS with `pods` node-local pods held, over the runs.
pub struct CacheMemory {
    pub pods: usize,
    /// RSS of each run, in bytes.
    pub rss: Vec<u64>,
}

impl CacheMemory {
    pub fn median(&self) -> u64 {
        let mut r = self.rss.clone();
        r.sort_unstable();
        r.get(r.len() / 2).copied().unwrap_or(0)
    }
}

/// Measures 0 pods and each of `counts`, `runs` times each; pods of node
/// `<node.name>-cache-<n>` are created in `ns` first.
pub fn measure(
    dir: &Path,
    cluster: &Cluster,
    ns: &str,
    node: &Node,
    counts: &[usize],
    runs: usize,
) -> Result<Vec<CacheMemory>, String> {
    let mut all = vec![0];
    all.extend(counts.iter().copied().filter(|n| *n > 0));
    let empty = dir.join("cache-pods-root");
    std::fs::create_dir_all(&empty).map_err(|e| format!("{}: {e}", empty.display()))?;
    let mut out = Vec::new();
    for n in all {
        let name = format!("{}-cache-{n}", node.name);
        let pods: Vec<NewPod> = (0..n)
            .map(|i| NewPod {
                name: format!("cache-{n}-{i:05}"),
                node: name.clone(),
                index: i,
                container_id: Some(super::container_id(n as u64 + 1, i)),
            })
            .collect();
        let started = Instant::now();
        cluster.create_pods(ns, &pods)?;
        if n > 0 {
            eprintln!(
                "cache: {n} pods on node {name} created in {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
        let mut rss = Vec::new();
        for _ in 0..runs {
            rss.push(one(dir, node, &name, &empty, n)?);
        }
        eprintln!(
            "cache: {n} pods: RSS {:?} MiB",
            rss.iter().map(|r| mib(*r)).collect::<Vec<_>>()
        );
        out.push(CacheMemory { pods: n, rss });
    }
    Ok(out)
}

/// One logferry holding the `n` pods of node `name`; its RSS.
fn one(dir: &Path, node: &Node, name: &str, empty: &Path, n: usize) -> Result<u64, String> {
    let config = format!(
        "[sources.k]\ntype = \"kubernetes\"\npods_root = {:?}\nnode_name = {name:?}\nkubeconfig = {:?}\n\n\
         [sinks.out]\ntype = \"null\"\nmatch = \"**\"\n\n[api]\naddress = \"127.0.0.1:0\"\n",
        empty.display().to_string(),
        node.kubeconfig.display().to_string()
    );
    let mut p = Proc::start(dir, "logferry-cache", &config)?;
    let api = p.address("api listening")?;
    let deadline = Instant::now() + LIST_TIMEOUT;
    wait_until_every(Duration::from_millis(200), &mut [&mut p], || {
        let held = metric(api, HELD, "component=\"k\"");
        (
            held as usize >= n || Instant::now() > deadline,
            format!("the source holds {held} of {n} pods"),
        )
    })?;
    let held = metric(api, HELD, "component=\"k\"") as usize;
    if held < n {
        return Err(format!(
            "the source holds {held} of {n} pods after {LIST_TIMEOUT:?}"
        ));
    }
    std::thread::sleep(SETTLE);
    Ok(p.sample()?.rss)
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The table of [`measure`]'s results.
pub fn print(rows: &[CacheMemory]) {
    let base = rows
        .iter()
        .find(|r| r.pods == 0)
        .map(|r| r.median())
        .unwrap_or(0);
    println!(
        "\nmetadata cache: logferry's RSS with N node-local pods watched and no logs, median of {} runs\n\n\
         | node-local pods | RSS MiB | over 0 pods MiB | per pod KiB |\n|---|---|---|---|",
        rows.first().map(|r| r.rss.len()).unwrap_or(0)
    );
    for r in rows {
        let m = r.median();
        let over = m.saturating_sub(base);
        let per_pod = if r.pods > 0 {
            format!("{:.1}", over as f64 / 1024.0 / r.pods as f64)
        } else {
            "-".into()
        };
        println!(
            "| {} | {:.1} | {:.1} | {per_pod} |",
            r.pods,
            mib(m),
            mib(over)
        );
    }
}
