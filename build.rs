//! Links the `logferry` program as a position-dependent executable.
//!
//! A position-independent one carries about 80,000 relative relocations
//! (vtables, static tables of strings), which the loader applies at every
//! start: that reads 2 MiB of relocation records and writes 2 MiB of
//! relocated data into private memory, about 5 MiB of resident memory in
//! every process before it does anything (an idle agent: 14 MiB instead of
//! 19). An agent runs on every machine of a fleet, so that memory is worth
//! more than load-address randomisation of the program's own code; shared
//! libraries, the heap and the stacks are still placed at random.
fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
}
