//! The `bnxt-rig` command (see [`bnxt_rig::cli`]).

fn main() -> std::process::ExitCode {
    bnxt_rig::cli::main()
}
