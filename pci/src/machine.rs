//! A machine's set of BCM57608 functions, handed out for exclusive use.

use std::sync::Arc;

use crate::{PciError, PciFunction};

/// A machine's set of BCM57608 functions.
pub trait Machine: Send + Sync {
    /// The bus addresses of the machine's BCM57608 functions, in bus order.
    fn buses(&self) -> Result<Vec<String>, PciError>;
    /// Take the function at `bus` for this process's exclusive use. It is released when the
    /// returned value (and every clone of it) is dropped.
    fn take(&self, bus: &str) -> Result<Arc<dyn PciFunction>, PciError>;
}

impl<T: Machine + ?Sized> Machine for Arc<T> {
    fn buses(&self) -> Result<Vec<String>, PciError> {
        (**self).buses()
    }
    fn take(&self, bus: &str) -> Result<Arc<dyn PciFunction>, PciError> {
        (**self).take(bus)
    }
}
