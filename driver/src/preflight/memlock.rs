//! Locked memory: VFIO's type1 IOMMU pins every page it maps for a device and counts the pages
//! against the process's RLIMIT_MEMLOCK unless the process has CAP_IPC_LOCK (Linux
//! drivers/vfio/vfio_iommu_type1.c: `vfio_dma_do_map` sets `dma->lock_cap = capable(CAP_IPC_LOCK)`;
//! `vfio_pin_pages_remote` refuses with ENOMEM past `rlimit(RLIMIT_MEMLOCK)` when it is not set).
//! An open pins what the driver allocates for it ([`super::OpenCost`], measured); each region a
//! scenario registers pins its bytes too.

use std::path::Path;

use super::{Finding, OpenCost};

/// `CAP_IPC_LOCK`'s bit in a capability set (Linux include/uapi/linux/capability.h).
const CAP_IPC_LOCK: u32 = 14;

/// This process's locked-memory limit and whether it is exempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memlock {
    /// The soft limit in bytes (`None`: unlimited).
    pub soft: Option<u64>,
    /// Whether the process has CAP_IPC_LOCK in its effective set (the limit does not apply).
    pub ipc_lock: bool,
}

/// Why the limit could not be read.
fn unreadable(path: &Path, why: impl std::fmt::Display) -> String {
    format!("{}: {why}", path.display())
}

/// Read the limit from `proc/self/limits` ("Max locked memory  SOFT  HARD  bytes") and the
/// capability from `proc/self/status` (`CapEff:`, hexadecimal).
///
/// # Errors
///
/// The file and what was wrong with it.
pub fn read_memlock(proc: &Path) -> Result<Memlock, String> {
    let limits = proc.join("self/limits");
    let text = std::fs::read_to_string(&limits).map_err(|e| unreadable(&limits, e))?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("Max locked memory"))
        .ok_or_else(|| unreadable(&limits, "no \"Max locked memory\" line"))?;
    let soft = match line.split_whitespace().next() {
        Some("unlimited") => None,
        Some(n) => Some(n.parse::<u64>().map_err(|_| unreadable(&limits, format!("{n:?} is not a number of bytes")))?),
        None => return Err(unreadable(&limits, "the \"Max locked memory\" line has no value")),
    };
    let status = proc.join("self/status");
    let text = std::fs::read_to_string(&status).map_err(|e| unreadable(&status, e))?;
    let caps = text
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .map(str::trim)
        .ok_or_else(|| unreadable(&status, "no CapEff line"))?;
    let caps = u64::from_str_radix(caps, 16)
        .map_err(|_| unreadable(&status, format!("CapEff {caps:?} is not hexadecimal")))?;
    Ok(Memlock { soft, ipc_lock: caps & (1 << CAP_IPC_LOCK) != 0 })
}

/// `n` bytes in the largest binary unit that keeps a fraction of at most one decimal.
pub(crate) fn size(n: u64) -> String {
    const UNITS: [&str; 4] = ["GiB", "MiB", "KiB", "B"];
    for (i, unit) in UNITS.iter().enumerate() {
        let scale = 1u64 << (10 * (3 - i));
        if n >= scale {
            return if n.is_multiple_of(scale) {
                format!("{} {unit}", n / scale)
            } else {
                format!("{:.1} {unit}", n as f64 / scale as f64)
            };
        }
    }
    "0 B".into()
}

/// The finding: the limit against `nics` opens of `cost` each.
pub(super) fn finding(proc: &Path, nics: usize, cost: Option<&OpenCost>) -> Finding {
    let m = match read_memlock(proc) {
        Ok(m) => m,
        Err(e) => return Finding::warn(format!("locked memory: cannot tell ({e})"), "ulimit -l shows the limit"),
    };
    let need = cost.map(|c| c.bytes * nics.max(1) as u64);
    let what_need = match (cost, need) {
        (Some(c), Some(n)) => format!(
            "{} NIC(s) × {} per open ({} of it context memory, measured on {}) = {}, plus every region a scenario registers",
            nics.max(1),
            size(c.bytes),
            size(c.context_bytes),
            c.measured_on,
            size(n)
        ),
        _ => "an open's need was not measured".into(),
    };
    let fix = "ulimit -l unlimited in the shell that runs bnxt-rig (for a user: `USER - memlock unlimited` in /etc/security/limits.conf, then log in again)";
    if m.ipc_lock {
        return Finding::ok(format!("locked memory: not limited (CAP_IPC_LOCK); {what_need}"));
    }
    match (m.soft, need) {
        (None, _) => Finding::ok(format!("locked memory: unlimited; {what_need}")),
        (Some(limit), Some(n)) if limit < n => {
            Finding::block(format!("locked memory: limit {} is less than {what_need}", size(limit)), fix)
        }
        (Some(limit), Some(_)) => Finding::ok(format!("locked memory: limit {}; {what_need}", size(limit))),
        (Some(limit), None) => Finding::warn(format!("locked memory: limit {}; {what_need}", size(limit)), fix),
    }
}
