//! `bnxt-rig doctor`: the lab machine's preflight (`bnxt::preflight`), printed a finding a line
//! with its fix under it. What an open pins is measured by opening a NIC through a counting
//! machine: the in-process model's (its firmware's FUNC_BACKING_STORE_QCAPS_V2 answers), or with
//! `--open` each of this machine's NICs bound to vfio-pci (the largest counting, the model's
//! only when none could be opened).
//!
//! Exit status: 0 when nothing blocks a run (warnings may remain), 1 when something does.

use std::io::Write;
use std::process::ExitCode;

use bnxt::preflight::{self, Level, OpenCost, Paths};
use bnxt_model_host::machine::ModelMachine;
use bnxt_model_host::world::WorldConfig;

use super::{DoctorArgs, EXIT_FAILED};

/// What one open pins on the model's NIC.
fn model_cost() -> Result<OpenCost, String> {
    let m = ModelMachine::new(WorldConfig { nics: 1, ..WorldConfig::default() });
    preflight::measure_open(&*m, 0, "the model's NIC").map_err(|e| e.to_string())
}

/// Check the machine `args` names and print the findings.
pub(crate) fn doctor(args: &DoctorArgs) -> ExitCode {
    let paths = Paths { sys: args.sys.clone(), proc: args.proc.clone(), dev_vfio: args.dev_vfio.clone() };
    let mut notes = Vec::new();
    let mut cost = match model_cost() {
        Ok(c) => Some(c),
        Err(e) => {
            notes.push(format!("the model's NIC could not be opened to measure an open: {e}"));
            None
        }
    };
    if args.open {
        // This machine's cards answer for themselves: the largest of their opens counts.
        let machine = paths.machine();
        let functions = machine.functions().unwrap_or_default();
        let mut lab: Option<OpenCost> = None;
        for (i, f) in functions.iter().enumerate() {
            if f.driver.as_deref() != Some(bnxt::sysfs::VFIO_PCI) {
                continue;
            }
            let on = format!("NIC {i} {}", f.bus);
            match preflight::measure_open(&machine, i, &on) {
                Ok(c) => {
                    notes.push(format!(
                        "{on}: an open pinned {} bytes ({} of context memory)",
                        c.bytes, c.context_bytes
                    ));
                    if lab.as_ref().is_none_or(|k| c.bytes > k.bytes) {
                        lab = Some(c);
                    }
                }
                Err(e) => notes.push(format!("{on} could not be opened to measure an open: {e}")),
            }
        }
        if let Some(c) = &cost {
            notes.push(format!(
                "the model's NIC: an open pinned {} bytes ({} of context memory)",
                c.bytes, c.context_bytes
            ));
        }
        cost = lab.or(cost);
    }
    let findings = preflight::check(&paths, cost.as_ref());
    let mut out = std::io::stdout().lock();
    for f in &findings {
        let _ = writeln!(out, "{:<6} {}", f.level.word(), f.what);
        if let Some(fix) = f.fix.as_ref().filter(|_| f.level != Level::Ok) {
            let _ = writeln!(out, "       fix: {fix}");
        }
    }
    for n in &notes {
        let _ = writeln!(out, "note   {n}");
    }
    let count = |l: Level| findings.iter().filter(|f| f.level == l).count();
    let (blocking, warnings) = (count(Level::Block), count(Level::Warn));
    if preflight::blocks(&findings) {
        let _ =
            writeln!(out, "\ndoctor: {blocking} blocking, {warnings} warning(s): fix the blocking ones before a run");
        ExitCode::from(EXIT_FAILED)
    } else {
        let _ = writeln!(out, "\ndoctor: nothing blocks a run ({warnings} warning(s))");
        ExitCode::SUCCESS
    }
}
