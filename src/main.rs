/// mimalloc rather than glibc's allocator: under MCP load glibc's `free` and
/// `malloc_consolidate` took a fifth of Toolgate's CPU (bench/README.md, "Profile").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    toolgate::cli::main()
}
