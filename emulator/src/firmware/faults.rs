//! Applying the run's [`FaultPlan`] to one NIC's requests: counting each `req_type`'s
//! occurrences (1-based, since the NIC was made; a function-level reset does not restart the
//! count) and looking up the fault, if any, for each.

use std::collections::HashMap;
use std::sync::Arc;

use crate::faults::{FaultPlan, FirmwareAction};

/// One NIC's view of the fault plan.
#[derive(Debug, Clone)]
pub struct FaultInjector {
    nic: usize,
    plan: Arc<FaultPlan>,
    seen: HashMap<u16, u32>,
}

impl FaultInjector {
    /// Faults of `plan` that concern NIC `nic`.
    pub fn new(nic: usize, plan: Arc<FaultPlan>) -> FaultInjector {
        FaultInjector { nic, plan, seen: HashMap::new() }
    }

    /// Count a request of `req_type`; its occurrence number and the fault that applies to it.
    pub fn on_request(&mut self, req_type: u16) -> (u32, Option<FirmwareAction>) {
        let n = self.seen.entry(req_type).or_insert(0);
        *n = n.saturating_add(1);
        (*n, self.plan.firmware_action(self.nic, req_type, *n).cloned())
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
    }
}
