//! Posted writes held back and sent together: what every connection of the process holds, and
//! the flush that sends it all.
//!
//! A posted write is appended to its connection's buffer; `held` then raises one flag for the
//! process. [`send_all`] lowers the flag and sends every connection's buffer, each in one socket
//! write. One flush runs at a time, and a `send_all` that finds one running waits for it to end:
//! so when `send_all` returns, every write held when it was called has gone to its socket,
//! whichever thread sent it. A flush takes each connection's lock in turn, waiting for a thread
//! that holds it: one appending lets go at once; one making a call sent the connection's buffer
//! before its command, and lets go when the reply is in (a slow server delays the flush by as
//! much as it delays that call). No thread holding a connection's lock calls `send_all` or takes
//! another connection's lock, so the waits cannot close a circle.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bnxt_vfio_user::transport::send_message;
use std::os::fd::AsFd;

use super::Conn;

/// Bytes of posted writes a connection holds before it sends them without waiting for a flush.
pub(super) const HOLD_AT_MOST: usize = 64 * 1024;

/// Whether any connection may hold posted writes.
static HELD: AtomicBool = AtomicBool::new(false);

/// Held by the flush that is running.
static FLUSH: Mutex<()> = Mutex::new(());

/// Whether a flush is running: raised before it lowers [`HELD`], lowered once it has sent all,
/// so a `send_all` that finds `HELD` low while another's flush is still sending sees this high.
static FLUSHING: AtomicBool = AtomicBool::new(false);

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

/// Send the posted writes every connection of the process holds, or wait for the flush that
/// took them to end. Costs two atomic loads (no read-modify-write) when none holds any and no
/// flush runs: the driver's clock calls this before every look at the time.
pub fn send_all() {
    if !HELD.load(Ordering::SeqCst) && !FLUSHING.load(Ordering::SeqCst) {
        return;
    }
    let _one = FLUSH.lock().unwrap_or_else(|e| e.into_inner());
    FLUSHING.store(true, Ordering::SeqCst);
    if HELD.swap(false, Ordering::SeqCst) {
        let all: Vec<Arc<Mutex<Conn>>> =
            CONNECTIONS.lock().unwrap_or_else(|e| e.into_inner()).iter().filter_map(Weak::upgrade).collect();
        for conn in all {
            conn.lock().unwrap_or_else(|e| e.into_inner()).send_posted();
        }
    }
    FLUSHING.store(false, Ordering::SeqCst);
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
            self.break_off();
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
