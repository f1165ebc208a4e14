fn main() -> std::process::ExitCode {
    sqlgate_cli::cli::main()
}
