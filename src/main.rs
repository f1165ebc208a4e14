fn main() -> std::process::ExitCode {
    sqlgate::cli::main()
}
