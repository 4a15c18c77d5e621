fn main() -> std::process::ExitCode {
    toolgate::cli::main()
}
