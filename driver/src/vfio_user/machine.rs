//! A machine whose BCM57608 functions are vfio-user servers (`bnxt-model serve` processes, one
//! function per socket), and the real clock the driver times its waits by there.
//!
//! Each socket is connected once, when the machine is made, and the connection is kept for the
//! machine's life (a server serves one client at a time). The functions get bus addresses in
//! socket order, `0000:01:00.0`, `0000:02:00.0`, …: names only, as a vfio-user device has no
//! address of its own on this side of the socket.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::client::{Client, ClientError};
use super::function::VfioUserFunction;
use crate::pci::{Clock, Machine, PciError, PciFunction};

/// The wall clock: time since the machine was made; `sleep` sleeps.
#[derive(Debug, Clone, Copy)]
pub struct RealClock {
    origin: Instant,
}

impl RealClock {
    /// A clock starting now.
    pub fn new() -> RealClock {
        RealClock { origin: Instant::now() }
    }
}

impl Default for RealClock {
    fn default() -> RealClock {
        RealClock::new()
    }
}

impl Clock for RealClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// Marks a function held while a [`VfioUserFunction`] lives.
pub struct HeldFlag {
    index: usize,
    held: Arc<Mutex<Vec<bool>>>,
}

impl Drop for HeldFlag {
    fn drop(&mut self) {
        self.held.lock().unwrap_or_else(|e| e.into_inner())[self.index] = false;
    }
}

/// Functions behind vfio-user sockets.
pub struct VfioUserMachine {
    clients: Vec<Arc<Client>>,
    buses: Vec<String>,
    held: Arc<Mutex<Vec<bool>>>,
    clock: RealClock,
}

impl VfioUserMachine {
    /// Connect to each socket in `paths` (one function each).
    pub fn connect(paths: &[PathBuf]) -> Result<VfioUserMachine, ClientError> {
        let clients = paths.iter().map(|p| Client::connect(p).map(Arc::new)).collect::<Result<Vec<_>, _>>()?;
        let buses = (1..=clients.len()).map(|i| format!("0000:{i:02x}:00.0")).collect();
        let held = Arc::new(Mutex::new(vec![false; clients.len()]));
        Ok(VfioUserMachine { clients, buses, held, clock: RealClock::new() })
    }

    /// The connection of function `index` (for commands beyond the seam, such as the model's
    /// extension commands).
    pub fn client(&self, index: usize) -> Option<&Arc<Client>> {
        self.clients.get(index)
    }

    /// The machine's clock.
    pub fn clock(&self) -> &RealClock {
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
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held[index] {
            return Err(PciError::Busy { bus: bus.to_string(), holder: "this process".into() });
        }
        held[index] = true;
        drop(held);
        let flag = HeldFlag { index, held: self.held.clone() };
        Ok(Arc::new(VfioUserFunction::new(self.clients[index].clone(), bus.to_string(), self.clock, flag)))
    }
}
