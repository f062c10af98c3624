//! NICs: open, close, names and identity (the contract's "NICs" and "Changes to the machine").

use std::net::Ipv4Addr;

use crate::error::Error;
use crate::pci::{Machine, PciError};

/// A NIC's identity on the fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// MAC address, from HWRM_FUNC_QCAPS.
    pub mac: [u8; 6],
    /// IPv4 address 10.x.y.z, where x.y.z are the MAC's last three bytes.
    pub ipv4: Ipv4Addr,
    /// RoCE v2 GID: the IPv4-mapped IPv6 address `::ffff:10.x.y.z`, in wire order.
    pub gid: [u8; 16],
}

/// How many queue pairs and regions the NIC holds at once (set at open from the firmware's
/// limits and the context memory given to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Queue pairs.
    pub qps: u32,
    /// Memory regions.
    pub regions: u32,
}

/// The name of NIC `index`: `BNXT`, `BNXT:1`, `BNXT:2`, …
pub fn name_of(index: usize) -> String {
    if index == 0 { "BNXT".to_string() } else { format!("BNXT:{index}") }
}

/// The bus addresses of the machine's NICs, in bus order.
pub fn buses(machine: &dyn Machine) -> Result<Vec<String>, PciError> {
    machine.buses()
}

/// The number of the machine's NICs.
pub fn count(machine: &dyn Machine) -> Result<usize, PciError> {
    machine.buses().map(|b| b.len())
}

/// A NIC this process holds.
pub struct Nic {
    _private: (),
}

#[allow(unused_variables)]
impl Nic {
    /// Hold NIC `index` of `machine` and boot it (see the crate docs for what that does).
    pub fn open(machine: &dyn Machine, index: usize) -> Result<Nic, Error> {
        todo!()
    }

    /// Unregister from the firmware, turn bus mastering off, free all DMA memory, restore relaxed
    /// ordering as open found it, and release the function. A second close does nothing.
    pub fn close(&mut self) {
        todo!()
    }

    /// Whether the NIC is still open.
    pub fn is_open(&self) -> bool {
        todo!()
    }

    /// The NIC's name (`BNXT`, `BNXT:1`, …).
    pub fn name(&self) -> &str {
        todo!()
    }

    /// The NIC's bus address.
    pub fn bus(&self) -> &str {
        todo!()
    }

    /// The NIC's identity on the fabric.
    pub fn identity(&self) -> Identity {
        todo!()
    }

    /// Queue pairs and regions the NIC holds at once.
    pub fn limits(&self) -> Limits {
        todo!()
    }

    /// The request whose missing answer wedged the NIC, if one did.
    pub fn wedged_by(&self) -> Option<&str> {
        todo!()
    }
}

impl Drop for Nic {
    fn drop(&mut self) {
        // Closing is idempotent; the process holds the NIC until close or exit.
    }
}
