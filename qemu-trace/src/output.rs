//! The tracer's two files: the transcript (docs/transcripts.md: `# bnxt-rig transcript 1`, `#
//! key: value` header lines, then one event a line: time, `drvN`, text) and the access log
//! (every load and store into the traced BARs, one a line).

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The first line of a transcript (`bnxt_rig::transcript::MAGIC`).
pub const MAGIC: &str = "# bnxt-rig transcript 1";

/// A file that cannot be opened or written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct OutputError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub source: io::Error,
}

/// A new, empty file at `path` for writing: a link someone placed there (symbolic or hard) is
/// replaced, never written through (`bnxt_output::create`, as the model's hosts and the runner
/// write theirs).
pub fn create(path: &Path) -> Result<BufWriter<File>, OutputError> {
    bnxt_output::create(path).map(BufWriter::new).map_err(|source| OutputError { path: path.to_path_buf(), source })
}

/// One transcript line as `bnxt_rig::transcript::Line` prints it.
pub fn line(at: Duration, nic: usize, text: &str) -> String {
    format!("{:>6}.{:09}  {:<5}  {}", at.as_secs(), at.subsec_nanos(), format!("drv{nic}"), text)
}

/// The transcript's first lines: the magic line and `# key: value` for each of `header`.
pub fn header(header: &[(&str, String)]) -> String {
    let mut out = String::from(MAGIC);
    out.push('\n');
    for (k, v) in header {
        out.push_str(&format!("# {k}: {v}\n"));
    }
    out
}

/// Where an access went and what it carried, for the access log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessRecord {
    /// When.
    pub at: Duration,
    /// Which vCPU.
    pub vcpu: u32,
    /// Which traced function.
    pub nic: usize,
    /// BAR.
    pub bar: u8,
    /// Offset in it.
    pub offset: u64,
    /// Bytes.
    pub size: u8,
    /// Store (else load).
    pub store: bool,
    /// The value.
    pub value: u64,
}

impl AccessRecord {
    /// `SECONDS vcpuN drvK BARb+0xOFF W|R SIZE 0xVALUE`.
    pub fn to_line(&self) -> String {
        format!(
            "{}.{:09} vcpu{} drv{} BAR{}+0x{:x} {} {} 0x{:x}",
            self.at.as_secs(),
            self.at.subsec_nanos(),
            self.vcpu,
            self.nic,
            self.bar,
            self.offset,
            if self.store { 'W' } else { 'R' },
            self.size,
            self.value
        )
    }
}

/// `SECONDS drvK response SEQ HEX`: the bytes of a response seen answered.
pub fn response_line(at: Duration, nic: usize, seq: u16, body: &[u8]) -> String {
    let hex: String = body.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}.{:09} drv{nic} response seq={seq} {hex}", at.as_secs(), at.subsec_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_the_transcript_layout_and_links_are_not_written_through() {
        assert_eq!(
            line(Duration::new(12, 345), 1, "hwrm-request VER_GET seq=0"),
            "    12.000000345  drv1   hwrm-request VER_GET seq=0"
        );
        assert_eq!(header(&[("kernel", "6.12".into())]), "# bnxt-rig transcript 1\n# kernel: 6.12\n");
        let r = AccessRecord {
            at: Duration::from_millis(1500),
            vcpu: 1,
            nic: 0,
            bar: 2,
            offset: 0x10000,
            size: 8,
            store: true,
            value: 0xb500_0003_0000_0007,
        };
        assert_eq!(r.to_line(), "1.500000000 vcpu1 drv0 BAR2+0x10000 W 8 0xb500000300000007");
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let soft = dir.path().join("soft");
        std::os::unix::fs::symlink(&target, &soft).unwrap();
        let hard = dir.path().join("hard");
        std::fs::hard_link(&target, &hard).unwrap();
        for link in [&soft, &hard] {
            let mut out = create(link).unwrap();
            std::io::Write::write_all(&mut out, b"trace").unwrap();
            drop(out);
            assert_eq!(std::fs::read_to_string(link).unwrap(), "trace");
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(!std::fs::symlink_metadata(&soft).unwrap().file_type().is_symlink());
    }
}
