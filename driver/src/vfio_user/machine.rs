//! A machine whose BCM57608 functions are vfio-user servers (`bnxt-model serve` processes, one
//! function per socket), and the real clock the driver times its waits by there
//! ([`PostedFlushClock`]: before it reads the time or sleeps, the posted stores held back go out,
//! so a wait never waits on a doorbell the server has not seen).
//!
//! Each socket is connected once, when the machine is made, and the connection is kept for the
//! machine's life (a server serves one client at a time). The functions get bus addresses in
//! socket order, `0000:01:00.0`, `0000:02:00.0`, …: names only, as a vfio-user device has no
//! address of its own on this side of the socket.

use std::path::PathBuf;
use std::sync::Arc;

use super::client::{Client, ClientError};
use super::function::VfioUserFunction;
use crate::held::HeldSet;
use bnxt_pci::{Clock, Interrupted, Machine, PciError, PciFunction, RealClock};
use std::time::Duration;

/// Functions behind vfio-user sockets.
pub struct VfioUserMachine {
    clients: Vec<Arc<Client>>,
    buses: Vec<String>,
    held: HeldSet,
    clock: PostedFlushClock,
}

impl VfioUserMachine {
    /// Connect to each socket in `paths` (one function each).
    pub fn connect(paths: &[PathBuf]) -> Result<VfioUserMachine, ClientError> {
        let clients = paths.iter().map(|p| Client::connect(p).map(Arc::new)).collect::<Result<Vec<_>, _>>()?;
        let buses = (1..=clients.len()).map(|i| format!("0000:{i:02x}:00.0")).collect();
        Ok(VfioUserMachine { clients, buses, held: HeldSet::default(), clock: PostedFlushClock(RealClock::new()) })
    }

    /// The connection of function `index` (for commands beyond the seam, such as the model's
    /// extension commands).
    pub fn client(&self, index: usize) -> Option<&Arc<Client>> {
        self.clients.get(index)
    }

    /// The machine's clock.
    pub fn clock(&self) -> &PostedFlushClock {
        &self.clock
    }
}

impl Machine for VfioUserMachine {
    fn buses(&self) -> Result<Vec<String>, PciError> {
        Ok(self.buses.clone())
    }

    fn take(&self, bus: &str) -> Result<Arc<dyn PciFunction>, PciError> {
        let index = self.buses.iter().position(|b| b == bus).ok_or_else(|| PciError::Take {
            bus: bus.to_string(),
            reason: "no such function on this machine".into(),
        })?;
        let flag = self
            .held
            .hold(bus)
            .ok_or_else(|| PciError::Busy { bus: bus.to_string(), holder: "this process".into() })?;
        Ok(Arc::new(VfioUserFunction::new(self.clients[index].clone(), bus.to_string(), self.clock, flag)))
    }
}

/// The real clock, which sends the process's held posted stores
/// ([`super::client::posted::send_all`]) before it reads the time or sleeps: whoever waits has
/// rung its doorbells.
#[derive(Debug, Clone, Copy, Default)]
pub struct PostedFlushClock(pub RealClock);

impl Clock for PostedFlushClock {
    fn now(&self) -> Duration {
        super::client::posted::send_all();
        self.0.now()
    }
    fn sleep(&self, d: Duration) -> Result<(), Interrupted> {
        super::client::posted::send_all();
        self.0.sleep(d)
    }
}
