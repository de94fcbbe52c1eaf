//! `bench sinks --workload forward-gzip`: the `forward` sink with
//! `compress = "gzip"` (Fluent Bit: the `forward` output with `Compress
//! gzip`), sending CompressedPackedForward chunks to a receiver that is a
//! separate logferry process (forward source → file), the same for both
//! systems and started afresh for each run. Both keep their chunking as
//! shipped in either mode (logferry: up to 8,192 records a chunk, sent
//! when the sink's queue runs empty; Fluent Bit: a chunk at each flush):
//! the throughput mode's batching settings are the request sinks'.

use std::net::SocketAddr;

/// The receiver's source.
pub(super) const RECEIVER: &str = "type = \"forward\"\n";

/// The logferry sink and the Fluent Bit output sending to `recv`.
pub(super) fn configs(recv: SocketAddr) -> (String, String) {
    let sink = format!(
        "[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{recv}\" }}]\ncompress = \"gzip\"\n"
    );
    let output = format!(
        "[OUTPUT]\n    Name     forward\n    Match    *\n    Host     {}\n    Port     {}\n    Compress gzip\n",
        recv.ip(),
        recv.port()
    );
    (sink, output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sink_configuration_parses_and_compresses() {
        let (sink, output) = configs("127.0.0.1:24224".parse().unwrap());
        let config =
            format!("[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n{sink}");
        crate::topology::config::Config::parse(&config, "bench")
            .unwrap_or_else(|e| panic!("{e}\n{config}"));
        assert!(sink.contains("compress = \"gzip\""), "{sink}");
        assert!(output.contains("Compress gzip"), "{output}");
    }
}
