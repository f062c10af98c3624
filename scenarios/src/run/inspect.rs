//! The `inspect` step: what the model sees of a NIC against what the step asks.

use super::exec::{Checks, Mismatch};
use crate::scenario::Action;
use crate::target::Internals;

/// Check `state` against what `inspect` (an `inspect` step's action) asks. With `seam`, the NIC's
/// firmware faults are injected by the layer at the driver's seam, which maps memory of its own
/// for the NIC (the pages it keeps answers in, the CREQ ring it stands in for, kept until the NIC
/// is next reset): the NIC's count of DMA mappings includes them, so `dma_mappings` is not
/// checked, and the note says so.
pub(super) fn check(state: &Internals, inspect: &Action, seam: bool) -> Result<Option<String>, Mismatch> {
    let Action::Inspect { dma_mappings, driver_registered, firmware_objects, rx_no_l2_filter, .. } = inspect else {
        unreachable!("called for an inspect step")
    };
    let mut checks = Checks::default();
    let mut note = None;
    if let Some(n) = dma_mappings.filter(|_| seam) {
        note = Some(format!(
            "dma_mappings {n} not checked: the layer at the driver's seam maps memory of its own for this NIC \
             ({} mappings counted)",
            state.dma_mappings
        ));
    } else if let Some(n) = dma_mappings {
        checks.check(
            state.dma_mappings == *n as usize,
            format!("dma_mappings {n}"),
            format!("dma_mappings {}", state.dma_mappings),
        );
    }
    if let Some(r) = driver_registered {
        checks.check(
            state.driver_registered == *r,
            format!("driver_registered {r}"),
            format!("driver_registered {}", state.driver_registered),
        );
    }
    if let Some(n) = firmware_objects {
        let held = state.held.total();
        checks.check(
            held == *n as usize,
            format!("firmware_objects {n}"),
            format!("firmware_objects {held} ({})", state.held.describe()),
        );
    }
    if let Some(n) = rx_no_l2_filter {
        let got = state.roce.rx_no_l2_filter;
        checks.check(got == u64::from(*n), format!("rx_no_l2_filter {n}"), format!("rx_no_l2_filter {got}"));
    }
    checks.done().map(|_| note)
}
