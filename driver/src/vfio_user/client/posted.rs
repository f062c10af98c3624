//! Posted writes held back and sent together: what every connection of the process holds, and
//! the flush that sends it all.
//!
//! A posted write is appended to its connection's buffer; `held` then raises one flag for the
//! process. [`send_all`] lowers the flag and sends every connection's buffer, each in one socket
//! write. A connection whose lock is taken at that moment is skipped: whoever holds it is either
//! appending (and raises the flag again after letting go) or making a call, which sends the
//! connection's buffer before its command. So no held write is forgotten, and a flush never
//! waits behind a call that waits for its reply.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, TryLockError, Weak};

use bnxt_vfio_user::transport::send_message;
use std::os::fd::AsFd;

use super::Conn;

/// Bytes of posted writes a connection holds before it sends them without waiting for a flush.
pub(super) const HOLD_AT_MOST: usize = 64 * 1024;

/// Whether any connection may hold posted writes.
static HELD: AtomicBool = AtomicBool::new(false);

/// Every open connection of the process.
static CONNECTIONS: Mutex<Vec<Weak<Mutex<Conn>>>> = Mutex::new(Vec::new());

/// Count `conn` among the connections a flush sends from (and forget closed ones).
pub(super) fn register(conn: &Arc<Mutex<Conn>>) {
    let mut all = CONNECTIONS.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|c| c.strong_count() > 0);
    all.push(Arc::downgrade(conn));
}

/// A posted write was just appended to a connection (called after its lock is let go).
pub(super) fn held() {
    HELD.store(true, Ordering::Release);
}

/// Send the posted writes every connection of the process holds. Costs one atomic load (no
/// read-modify-write) when none holds any: the driver's clock calls this before every look at
/// the time.
pub fn send_all() {
    if !HELD.load(Ordering::Acquire) || !HELD.swap(false, Ordering::AcqRel) {
        return;
    }
    let all: Vec<Arc<Mutex<Conn>>> =
        CONNECTIONS.lock().unwrap_or_else(|e| e.into_inner()).iter().filter_map(Weak::upgrade).collect();
    for conn in all {
        match conn.try_lock() {
            Ok(mut c) => c.send_posted(),
            Err(TryLockError::Poisoned(p)) => p.into_inner().send_posted(),
            Err(TryLockError::WouldBlock) => {}
        }
    }
}

impl Conn {
    /// Send the posted writes this connection holds, in one socket write. When that fails they
    /// are lost, as stores to a device that fell off the bus: logged, and the connection is
    /// marked broken so later calls fail fast.
    pub(super) fn send_posted(&mut self) {
        if self.posted.is_empty() || self.broken {
            self.posted.clear();
            return;
        }
        if let Err(e) = send_message(self.stream.as_fd(), &self.posted, &[], self.timeout) {
            tracing::error!(socket = %self.path.display(), bytes = self.posted.len(), error = %e,
                "posted BAR stores could not be sent; dropped");
            self.broken = true;
        }
        self.posted.clear();
    }
}

impl Drop for Conn {
    /// Stores made before a connection closes still reach the server.
    fn drop(&mut self) {
        self.send_posted();
    }
}
