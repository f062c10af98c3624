//! The `bnxt-rig` command (see [`bnxt_rig::cli`]).
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    bnxt_rig::cli::main()
}
