//! Faults the model injects on request: what the hardware cannot be made to do on demand.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What the firmware does instead of answering a request normally.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FirmwareAction {
    /// Take the request and never answer it (nor act on it).
    NoResponse,
    /// Answer normally, but this much later than usual.
    Delay(Duration),
    /// Answer with this HWRM error code (its wire value) instead of acting on the request.
    Error(u16),
}

/// A fault on one HWRM request type of one NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirmwareFault {
    /// Index of the NIC in the machine.
    pub nic: usize,
    /// The request's `req_type`.
    pub req_type: u16,
    /// Which occurrence (1 = the first request of that type since the model was created); every
    /// occurrence when `None`.
    pub nth: Option<u32>,
    /// What to do instead.
    pub action: FirmwareAction,
}

/// Every fault a run injects.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultPlan {
    /// Firmware faults, checked in order; the first that matches a request applies.
    pub firmware: Vec<FirmwareFault>,
}

impl FaultPlan {
    /// The action for occurrence `nth` (1-based) of `req_type` on `nic`, if a fault matches.
    pub fn firmware_action(&self, nic: usize, req_type: u16, nth: u32) -> Option<&FirmwareAction> {
        self.firmware
            .iter()
            .find(|f| f.nic == nic && f.req_type == req_type && f.nth.is_none_or(|n| n == nth))
            .map(|f| &f.action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_fault_applies_and_nth_selects_one_occurrence() {
        let plan = FaultPlan {
            firmware: vec![
                FirmwareFault { nic: 0, req_type: 0x1d, nth: Some(2), action: FirmwareAction::NoResponse },
                FirmwareFault { nic: 0, req_type: 0x1d, nth: None, action: FirmwareAction::Error(4) },
            ],
        };
        assert_eq!(plan.firmware_action(0, 0x1d, 1), Some(&FirmwareAction::Error(4)));
        assert_eq!(plan.firmware_action(0, 0x1d, 2), Some(&FirmwareAction::NoResponse));
        assert_eq!(plan.firmware_action(1, 0x1d, 2), None);
        assert_eq!(plan.firmware_action(0, 0x15, 1), None);
    }
}
