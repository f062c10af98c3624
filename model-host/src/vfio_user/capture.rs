//! A run's capture of the frames the served NIC sends to the segment: a pcap written into a file
//! the client opened and handed over with `BNXT_RIG_RESTART` (the server never opens a path a
//! client names). Each frame is stamped with the wall clock (time since the Unix epoch, as
//! captures are), which every process of the machine shares: a client merging the captures of
//! several servers orders their frames by it.
//!
//! Writes are buffered; [`Capture::flush`] makes everything recorded so far visible in the file
//! (the server flushes before it answers `BNXT_RIG_STATE`, so a client that asked for the state
//! reads every frame sent before it asked).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::pcap::{PcapTap, PcapTapError};

/// The file, shared between the tap that writes it and the capture that flushes it.
#[derive(Clone)]
struct SharedFile(Arc<Mutex<BufWriter<File>>>);

impl Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).flush()
    }
}

/// Frames recorded into a client's file.
pub struct Capture {
    tap: PcapTap,
    file: SharedFile,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture").field("frames", &self.tap.frames()).finish()
    }
}

impl Capture {
    /// A capture into `fd` (a file open for writing, at its start); the pcap header is written
    /// at once.
    pub fn new(fd: OwnedFd) -> Result<Capture, PcapTapError> {
        let file = SharedFile(Arc::new(Mutex::new(BufWriter::new(File::from(fd)))));
        let tap = PcapTap::new(file.clone())?;
        Ok(Capture { tap, file })
    }

    /// Record `frame`, sent now.
    pub fn record(&mut self, frame: &[u8]) {
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or(Duration::ZERO);
        self.tap.record(now, frame);
    }

    /// Frames recorded.
    pub fn frames(&self) -> u64 {
        self.tap.frames()
    }

    /// Write what is buffered to the file (errors are logged: a broken capture must not stop
    /// the NIC).
    pub fn flush(&mut self) {
        if let Err(e) = self.file.flush() {
            tracing::warn!(error = %e, "the capture file cannot be written");
        }
    }

    /// Flush and close: the frames recorded, or the first error met.
    pub fn finish(self) -> Result<u64, PcapTapError> {
        self.tap.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_reach_the_file_when_flushed_with_wall_clock_stamps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.pcap");
        let file = File::create(&path).unwrap();
        let mut c = Capture::new(OwnedFd::from(file)).unwrap();
        let before = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap();
        c.record(&[7u8; 60]);
        c.record(&[8u8; 61]);
        c.flush();
        let bytes = std::fs::read(&path).unwrap();
        let mut reader = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
        let first = reader.next_packet().unwrap().unwrap();
        assert_eq!(&first.data[..], &[7u8; 60][..]);
        assert!(first.timestamp >= before, "stamped with the wall clock");
        assert_eq!(reader.next_packet().unwrap().unwrap().data.len(), 61);
        assert!(reader.next_packet().is_none());
        assert_eq!(c.frames(), 2);
        assert_eq!(c.finish().unwrap(), 2);
    }
}
