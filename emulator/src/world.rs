//! The in-process executor: a machine of model NICs sharing one virtual clock.
//!
//! Single-threaded and deterministic: nothing here reads the wall clock. Time passes only when
//! [`World::advance`] is called (the in-process target's clock does so when the driver sleeps),
//! and then every NIC's due work runs in time order.
//!
//! This file fixes the API the in-process target (in `bnxt-rig`) is written against.

use std::sync::Arc;
use std::time::Duration;

use crate::faults::FaultPlan;
use crate::host_memory::{DmaBacking, MapError};

/// How to build a [`World`].
#[derive(Debug, Clone, Default)]
pub struct WorldConfig {
    /// Number of NICs.
    pub nics: usize,
    /// Seed of every random choice the model makes (MAC addresses, later wire faults).
    pub seed: u64,
    /// Faults to inject.
    pub faults: FaultPlan,
}

/// What one NIC of a world looks like from outside, for tests and scenario checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicState {
    /// Bus address (`0000:01:00.0`).
    pub bus: String,
    /// MAC address the firmware reports.
    pub mac: [u8; 6],
    /// Command register: memory space enable.
    pub memory_enabled: bool,
    /// Command register: bus master enable.
    pub bus_master: bool,
    /// PCIe Device Control: relaxed ordering enable.
    pub relaxed_ordering: bool,
    /// Number of DMA mappings the host has given this NIC.
    pub dma_mappings: usize,
    /// Whether a driver is registered with the firmware (FUNC_DRV_RGTR without UNRGTR).
    pub driver_registered: bool,
    /// HWRM requests answered CMD_NOT_SUPPORTED, by `req_type`, with counts.
    pub unsupported_requests: Vec<(u16, u64)>,
}

/// A machine of model NICs.
pub struct World {
    _private: (),
}

#[allow(unused_variables)]
impl World {
    /// A machine with `config.nics` NICs, just powered on.
    pub fn new(config: WorldConfig) -> World {
        todo!()
    }
    /// Number of NICs.
    pub fn nic_count(&self) -> usize {
        todo!()
    }
    /// Virtual time since the world was made.
    pub fn now(&self) -> Duration {
        todo!()
    }
    /// Let `d` of virtual time pass, running every NIC's work that falls due, in time order.
    pub fn advance(&mut self, d: Duration) {
        todo!()
    }
    /// Read config space of NIC `nic`.
    pub fn config_read(&mut self, nic: usize, offset: u16, data: &mut [u8]) {
        todo!()
    }
    /// Write config space of NIC `nic`.
    pub fn config_write(&mut self, nic: usize, offset: u16, data: &[u8]) {
        todo!()
    }
    /// Load from BAR `bar` of NIC `nic` (`data.len()` is 4 or 8).
    pub fn bar_read(&mut self, nic: usize, bar: u8, offset: u64, data: &mut [u8]) {
        todo!()
    }
    /// Store to BAR `bar` of NIC `nic` (`data.len()` is 4 or 8).
    pub fn bar_write(&mut self, nic: usize, bar: u8, offset: u64, data: &[u8]) {
        todo!()
    }
    /// Map host memory for NIC `nic`'s DMA at bus address `iova`.
    pub fn map_dma(&mut self, nic: usize, iova: u64, backing: Arc<dyn DmaBacking>) -> Result<(), MapError> {
        todo!()
    }
    /// Remove the mapping at `iova`.
    pub fn unmap_dma(&mut self, nic: usize, iova: u64) -> Result<(), MapError> {
        todo!()
    }
    /// Outside view of NIC `nic`.
    pub fn nic_state(&self, nic: usize) -> NicState {
        todo!()
    }
}
