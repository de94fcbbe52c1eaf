fn main() -> std::process::ExitCode {
    logferry::cli::main()
}
