//! `bnxt-rig nics`: the machine's BCM57608 functions as the driver would number them (NIC `i` is
//! the `i`th in bus order, whichever driver holds it), with their names and drivers, from sysfs;
//! `bnxt-rig detach N` and `attach N`: the contract's detach and attach (`bnxt::binding`).

use std::io::Write;
use std::process::ExitCode;

use bnxt::sysfs::SysfsMachine;

use super::{BindArgs, EXIT_FAILED, EXIT_INVALID, NicsArgs, say_error};

/// List the functions under `args.sysfs` (the running machine's by default).
pub fn nics(args: &NicsArgs) -> ExitCode {
    let machine = machine_at(args.sysfs.as_deref());
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

fn machine_at(sysfs: Option<&std::path::Path>) -> SysfsMachine {
    sysfs.map_or_else(SysfsMachine::new, SysfsMachine::with_root)
}

/// Bind NIC `args.nic` to vfio-pci.
pub fn detach(args: &BindArgs) -> ExitCode {
    let machine = machine_at(args.sysfs.as_deref());
    match bnxt::binding::detach(&machine, args.nic) {
        Ok(d) => {
            let from = d.from.map(|f| format!("from {f} ")).unwrap_or_default();
            println!("{} {} detached {from}(bound to vfio-pci)", bnxt::name_of(args.nic), d.bus);
            ExitCode::SUCCESS
        }
        Err(e) => {
            say_error(&format!("{}: {e}", bnxt::name_of(args.nic)));
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// Give NIC `args.nic` back to the kernel.
pub fn attach(args: &BindArgs) -> ExitCode {
    let machine = machine_at(args.sysfs.as_deref());
    match bnxt::binding::attach(&machine, args.nic) {
        Ok(driver) => {
            println!("{} attached (bound to {})", bnxt::name_of(args.nic), driver.as_deref().unwrap_or("no driver"));
            ExitCode::SUCCESS
        }
        Err(e) => {
            say_error(&format!("{}: {e}", bnxt::name_of(args.nic)));
            ExitCode::from(EXIT_FAILED)
        }
    }
}
