//! Applying the run's [`FaultPlan`] and the faults armed since ([`ArmedFaults`]) to one NIC's
//! requests: counting each `req_type`'s occurrences (1-based, since the NIC was made; a
//! function-level reset does not restart the count) and looking up the fault, if any, for each
//! (armed faults first).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::armed::{Action, ArmedFault, ArmedFaults, Target};
use crate::faults::{FaultPlan, FirmwareAction};

/// One NIC's view of the fault plan.
#[derive(Debug, Clone)]
pub struct FaultInjector {
    nic: usize,
    plan: Arc<FaultPlan>,
    seen: BTreeMap<u16, u32>,
    armed: ArmedFaults,
}

impl FaultInjector {
    /// Faults of `plan` that concern NIC `nic`.
    pub fn new(nic: usize, plan: Arc<FaultPlan>) -> FaultInjector {
        FaultInjector { nic, plan, seen: BTreeMap::new(), armed: ArmedFaults::default() }
    }

    /// Count a request of `req_type`; its occurrence number and the fault that applies to it.
    pub fn on_request(&mut self, req_type: u16) -> (u32, Option<FirmwareAction>) {
        let n = self.seen.entry(req_type).or_insert(0);
        *n = n.saturating_add(1);
        let n = *n;
        if let Some((_, Action::Hwrm(action))) = self.armed.fire(Target::Hwrm(req_type), n) {
            return (n, Some(action));
        }
        (n, self.plan.firmware_action(self.nic, req_type, n).cloned())
    }

    /// Requests of `req_type` taken so far.
    pub fn seen(&self, req_type: u16) -> u32 {
        self.seen.get(&req_type).copied().unwrap_or(0)
    }

    /// The faults armed on HWRM requests.
    pub fn armed(&self) -> &ArmedFaults {
        &self.armed
    }

    /// The same, to arm or clear faults.
    pub fn armed_mut(&mut self) -> &mut ArmedFaults {
        &mut self.armed
    }

    /// Arm `fault` (an HWRM one; the caller checked).
    pub fn arm(&mut self, fault: ArmedFault) {
        self.armed.arm(fault);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::FirmwareFault;

    #[test]
    fn occurrences_are_counted_per_request_type() {
        let plan = FaultPlan {
            firmware: vec![FirmwareFault { nic: 2, req_type: 0x15, nth: Some(2), action: FirmwareAction::NoResponse }],
            ..FaultPlan::default()
        };
        let mut f = FaultInjector::new(2, Arc::new(plan));
        assert_eq!(f.on_request(0x15), (1, None));
        assert_eq!(f.on_request(0x16), (1, None));
        assert_eq!(f.on_request(0x15), (2, Some(FirmwareAction::NoResponse)));
        assert_eq!(f.on_request(0x15), (3, None));
        let armed =
            ArmedFault::new(7, Target::Hwrm(0x15), f.seen(0x15), None, Some(1), Action::Hwrm(FirmwareAction::Error(4)))
                .unwrap();
        f.arm(armed);
        assert_eq!(f.on_request(0x15), (4, Some(FirmwareAction::Error(4))), "armed faults apply from the next");
        assert_eq!(f.on_request(0x15), (5, None));
    }
}
