//! `bnxt-rig nics`: the machine's BCM57608 functions as the driver would number them (NIC `i` is
//! the `i`th in bus order, whichever driver holds it), with their names and drivers, from sysfs.

use std::io::Write;
use std::process::ExitCode;

use bnxt::sysfs::SysfsMachine;

use super::{EXIT_INVALID, NicsArgs, say_error};

/// List the functions under `args.sysfs` (the running machine's by default).
pub fn nics(args: &NicsArgs) -> ExitCode {
    let machine = match &args.sysfs {
        Some(root) => SysfsMachine::with_root(root),
        None => SysfsMachine::new(),
    };
    let functions = match machine.functions() {
        Ok(f) => f,
        Err(e) => {
            say_error(&e.to_string());
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let mut out = std::io::stdout().lock();
    if functions.is_empty() {
        let _ = writeln!(out, "no BCM57608 (14e4:1760) function on this machine");
        return ExitCode::SUCCESS;
    }
    for (i, f) in functions.iter().enumerate() {
        let driver = f.driver.as_deref().unwrap_or("no driver");
        let _ = writeln!(out, "{:<8} {}  {}", bnxt::name_of(i), f.bus, driver);
    }
    ExitCode::SUCCESS
}
