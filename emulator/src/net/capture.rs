//! What a segment's capture holds: each frame the switch saw, with the time it saw it, as data for
//! a host to write (the pcap writer of `bnxt-model-host`) or to look at.

use std::time::Duration;

/// One frame as the switch saw it (after the fault stage), at virtual time `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// When it entered the switch.
    pub at: Duration,
    /// The Ethernet frame, without FCS.
    pub frame: Vec<u8>,
}
