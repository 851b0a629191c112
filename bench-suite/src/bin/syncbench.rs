//! `syncbench`: see `syncbench --help` and the crate docs of `bench-suite`.

fn main() -> std::process::ExitCode {
    bench_suite::cli::main()
}
