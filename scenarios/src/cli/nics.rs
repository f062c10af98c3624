//! `bnxt-rig nics`: the machine's BCM57608 functions as the driver would number them (NIC `i` is
//! the `i`th in bus order, whichever driver holds it), with their names and drivers, from sysfs;
//! `bnxt-rig detach N` and `attach N`: the contract's detach and attach (`bnxt::binding`).

use std::io::Write;
use std::process::ExitCode;

use bnxt::sysfs::SysfsMachine;

use super::{BindArgs, EXIT_FAILED, EXIT_INVALID, NicsArgs, say_error};

/// List the functions under `args.sysfs` (the running machine's by default).
pub(crate) fn nics(args: &NicsArgs) -> ExitCode {
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

/// The NICs `args` names: its indices, with `--device` every BCM57608 function tied to each.
fn chosen(machine: &SysfsMachine, args: &BindArgs) -> Result<Vec<usize>, bnxt::binding::BindError> {
    let mut out: Vec<usize> = Vec::new();
    for &i in &args.nics {
        let more = if args.device { bnxt::binding::device_nics(machine, i)? } else { vec![i] };
        for n in more {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    Ok(out)
}

/// The NICs named, for an error (`nic0`, `nic0 nic1`).
fn names(nics: &[usize]) -> String {
    nics.iter().map(|&i| bnxt::name_of(i)).collect::<Vec<_>>().join(" ")
}

/// Bind NICs `args.nics` to vfio-pci.
pub(crate) fn detach(args: &BindArgs) -> ExitCode {
    let machine = machine_at(args.sysfs.as_deref());
    let done = chosen(&machine, args).and_then(|nics| Ok((bnxt::binding::detach_nics(&machine, &nics)?, nics)));
    match done {
        Ok((detached, nics)) => {
            let mut out = std::io::stdout().lock();
            for (d, i) in detached.iter().zip(nics) {
                let from = d.from.as_deref().map(|f| format!("from {f} ")).unwrap_or_default();
                let _ = writeln!(out, "{} {} detached {from}(bound to vfio-pci)", bnxt::name_of(i), d.bus);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            say_error(&format!("{}: {e}", names(&args.nics)));
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// Give NICs `args.nics` back to the kernel.
pub(crate) fn attach(args: &BindArgs) -> ExitCode {
    let machine = machine_at(args.sysfs.as_deref());
    let done = chosen(&machine, args).and_then(|nics| Ok((bnxt::binding::attach_nics(&machine, &nics)?, nics)));
    match done {
        Ok((attached, nics)) => {
            let mut out = std::io::stdout().lock();
            for ((bus, driver), i) in attached.iter().zip(nics) {
                let driver = driver.as_deref().unwrap_or("no driver");
                let _ = writeln!(out, "{} {bus} attached (bound to {driver})", bnxt::name_of(i));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            say_error(&format!("{}: {e}", names(&args.nics)));
            ExitCode::from(EXIT_FAILED)
        }
    }
}
