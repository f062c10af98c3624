//! A pcap writer for a segment: link type Ethernet (no FCS), nanosecond timestamps taken from
//! virtual time (time 0 is the start of the run, so Wireshark shows 1970-01-01), readable by
//! Wireshark and tshark, which decode UDP port 4791 as RoCE v2 (InfiniBand) by default.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bnxt_model::net::capture::Captured;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

/// Largest frame recorded whole; longer frames are cut to it (their original length is kept).
pub const SNAPLEN: u32 = 65_535;

/// Why a pcap could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PcapTapError {
    /// The file could not be created.
    #[error("cannot create pcap file {path}: {source}")]
    Create {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Writing the header or a record failed.
    #[error("cannot write pcap {what}: {source}")]
    Write {
        /// "header" or "frame N".
        what: String,
        /// Why.
        source: pcap_file::PcapError,
    },
    /// Flushing the output failed.
    #[error("cannot flush pcap: {0}")]
    Flush(std::io::Error),
}

/// Records frames into a pcap stream.
pub struct PcapTap {
    writer: PcapWriter<Box<dyn Write + Send>>,
    frames: u64,
    errors: u64,
    first_error: Option<PcapTapError>,
}

impl std::fmt::Debug for PcapTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapTap").field("frames", &self.frames).field("errors", &self.errors).finish()
    }
}

impl PcapTap {
    /// A tap writing to a new file at `path` (replacing what is there, see [`bnxt_output::create`]).
    pub fn create(path: &Path) -> Result<PcapTap, PcapTapError> {
        let file =
            bnxt_output::create(path).map_err(|source| PcapTapError::Create { path: path.to_owned(), source })?;
        PcapTap::new(BufWriter::new(file))
    }

    /// A tap writing to `out`; the pcap header is written at once.
    pub fn new(out: impl Write + Send + 'static) -> Result<PcapTap, PcapTapError> {
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen: SNAPLEN,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::Little,
        };
        let boxed: Box<dyn Write + Send> = Box::new(out);
        let writer = PcapWriter::with_header(boxed, header)
            .map_err(|source| PcapTapError::Write { what: "header".into(), source })?;
        Ok(PcapTap { writer, frames: 0, errors: 0, first_error: None })
    }

    /// Record `frame` at virtual time `at`. A write error is logged and counted (see
    /// [`PcapTap::errors`]), never raised: a broken capture must not stop the model.
    pub fn record(&mut self, at: Duration, frame: &[u8]) {
        let orig_len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        let kept = &frame[..frame.len().min(SNAPLEN as usize)];
        match self.writer.write_packet(&PcapPacket::new(at, orig_len, kept)) {
            Ok(_) => self.frames += 1,
            Err(source) => {
                self.errors += 1;
                tracing::warn!(frame = self.frames + self.errors, error = %source, "pcap tap cannot write a frame");
                if self.first_error.is_none() {
                    self.first_error =
                        Some(PcapTapError::Write { what: format!("frame {}", self.frames + self.errors), source });
                }
            }
        }
    }

    /// Record every frame of `captured` (a switch's capture, oldest first), leaving it empty.
    pub fn record_captured(&mut self, captured: &mut Vec<Captured>) {
        for c in captured.drain(..) {
            self.record(c.at, &c.frame);
        }
    }

    /// Frames recorded.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Frames that could not be written.
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// Flush and close, returning the first error met while recording, if any.
    pub fn finish(self) -> Result<u64, PcapTapError> {
        let mut out = self.writer.into_writer();
        if let Some(e) = self.first_error {
            return Err(e);
        }
        out.flush().map_err(PcapTapError::Flush)?;
        Ok(self.frames)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use pcap_file::pcap::PcapReader;

    use super::*;

    /// A Write that shares its bytes with the test.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A Write that takes this many bytes, then fails.
    struct Broken(usize);

    impl Write for Broken {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0 < buf.len() {
                return Err(std::io::Error::other("disk full"));
            }
            self.0 -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn records_read_back_with_nanosecond_virtual_timestamps() {
        let out = Shared::default();
        let mut tap = PcapTap::new(out.clone()).unwrap();
        tap.record(Duration::from_nanos(1_500), &[1u8; 60]);
        tap.record(Duration::from_secs(3) + Duration::from_nanos(7), &[2u8; 100]);
        assert_eq!(tap.finish().unwrap(), 2);
        let bytes = out.0.lock().unwrap().clone();
        assert_eq!(bytes[..4], [0x4d, 0x3c, 0xb2, 0xa1], "little-endian nanosecond magic");
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        assert_eq!(r.header().datalink, DataLink::ETHERNET);
        let a = r.next_packet().unwrap().unwrap();
        assert_eq!((a.timestamp, a.orig_len, a.data.len()), (Duration::from_nanos(1_500), 60, 60));
        let b = r.next_packet().unwrap().unwrap();
        assert_eq!(b.timestamp, Duration::from_secs(3) + Duration::from_nanos(7));
        assert_eq!(&b.data[..], &[2u8; 100][..]);
        assert!(r.next_packet().is_none());
    }

    #[test]
    fn write_errors_are_counted_not_raised() {
        let mut tap = PcapTap::new(Broken(24)).unwrap(); // room for the 24-byte header only
        tap.record(Duration::ZERO, &[0u8; 60]);
        tap.record(Duration::ZERO, &[0u8; 60]);
        assert_eq!((tap.frames(), tap.errors()), (0, 2));
        assert!(matches!(tap.finish(), Err(PcapTapError::Write { .. })));
        assert!(matches!(PcapTap::new(Broken(0)), Err(PcapTapError::Write { .. })));
    }
}
