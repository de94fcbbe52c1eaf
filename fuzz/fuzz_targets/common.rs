//! Shared by the fuzz targets.

/// Stack the code under test runs on. logferry decodes on tokio worker
/// threads (2 MiB stacks) and accepts frames of up to 16 MiB, so anything
/// whose stack use grows with the input (recursion on nesting depth) can be
/// driven into a stack overflow that aborts the whole server. The inputs the
/// fuzzer tries are small (a few KiB), so the targets run on a much smaller
/// stack to make such growth show up as a crash at a depth the fuzzer reaches.
/// Code that uses a bounded amount of stack needs far less than this, even
/// with AddressSanitizer's larger frames.
pub const STACK_BYTES: usize = 256 * 1024;

/// Runs `f` on a fresh thread with a [`STACK_BYTES`] stack and waits for it.
/// (A panic there aborts the process through libfuzzer-sys's panic hook, so
/// libFuzzer records it like any other crash.)
pub fn on_small_stack<F: FnOnce() + Send>(f: F) {
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("fuzz-small-stack".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(s, f)
            .expect("cannot spawn the fuzzing thread");
        if let Err(panic) = worker.join() {
            std::panic::resume_unwind(panic);
        }
    });
}
