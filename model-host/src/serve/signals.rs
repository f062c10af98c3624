//! SIGTERM and SIGINT as something the executor can poll: a self-pipe (signal-hook writes a byte
//! to it from the handler), so a signal ends the loop between two messages, never in the middle
//! of one.

use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;

use signal_hook::consts::{SIGINT, SIGTERM};

/// Readable when SIGTERM or SIGINT arrived.
pub struct StopSignals {
    read: UnixStream,
    _write: UnixStream,
    ids: Vec<signal_hook::SigId>,
}

impl StopSignals {
    /// Start catching SIGTERM and SIGINT (with `catch` false: a descriptor that never becomes
    /// readable, and no handlers).
    pub fn install(catch: bool) -> std::io::Result<StopSignals> {
        let (read, write) = UnixStream::pair()?;
        read.set_nonblocking(true)?;
        write.set_nonblocking(true)?;
        let mut ids = Vec::new();
        if catch {
            for sig in [SIGTERM, SIGINT] {
                ids.push(signal_hook::low_level::pipe::register(sig, write.try_clone()?)?);
            }
        }
        // Without handlers the write end is kept open (in `_write`) so the read end never sees
        // end-of-file.
        Ok(StopSignals { read, _write: write, ids })
    }

    /// The descriptor to poll.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }

    /// A handle that makes [`StopSignals::fd`] readable as a signal would (to stop a hub or a
    /// server run on a thread of a program that handles signals itself).
    pub fn stopper(&self) -> std::io::Result<Stopper> {
        Ok(Stopper { write: self._write.try_clone()? })
    }

    /// Whether a signal arrived (consumes the notification).
    pub fn arrived(&mut self) -> bool {
        let mut buf = [0u8; 16];
        matches!((&self.read).read(&mut buf), Ok(n) if n > 0)
    }
}

/// Stops the loop of the [`StopSignals`] it came from, as SIGTERM would.
#[derive(Debug)]
pub struct Stopper {
    write: UnixStream,
}

impl Stopper {
    /// Ask the loop to stop (it does so between two inputs).
    pub fn stop(&self) {
        let _ = std::io::Write::write(&mut &self.write, &[1]);
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}
