//! Which functions this process holds: a backend's machine refuses to hand out a function twice
//! (the contract: an open of a NIC a process holds is an error, this process included).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// The bus addresses held, shared by a machine and the guards it hands out.
#[derive(Debug, Clone, Default)]
pub struct HeldSet {
    held: Arc<Mutex<BTreeSet<String>>>,
}

impl HeldSet {
    /// Mark `bus` held, or `None` when it already is.
    pub fn hold(&self, bus: &str) -> Option<HoldGuard> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if !held.insert(bus.to_string()) {
            return None;
        }
        Some(HoldGuard { bus: bus.to_string(), held: self.held.clone() })
    }

    /// Whether `bus` is held.
    pub fn is_held(&self, bus: &str) -> bool {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).contains(bus)
    }
}

/// Keeps a function marked held while it lives.
#[derive(Debug)]
pub struct HoldGuard {
    bus: String,
    held: Arc<Mutex<BTreeSet<String>>>,
}

impl Drop for HoldGuard {
    fn drop(&mut self) {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.bus);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bus_is_held_once_until_its_guard_goes() {
        let set = HeldSet::default();
        let guard = set.hold("0000:01:00.0").expect("free at first");
        assert!(set.hold("0000:01:00.0").is_none());
        assert!(set.is_held("0000:01:00.0"));
        assert!(set.hold("0000:02:00.0").is_some(), "another bus is independent");
        drop(guard);
        assert!(!set.is_held("0000:01:00.0"));
        assert!(set.hold("0000:01:00.0").is_some());
    }
}
