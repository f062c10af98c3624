//! Files the model's hosts and the runner write (HWRM logs, pcaps, captures, reports,
//! transcripts, schemas), written so that nothing already at the path is written through.
//!
//! An output path may sit in a folder others can write to (`/tmp`), where another user can
//! place a symbolic link (or a hard link) at it beforehand, aimed at a file of ours: opening the
//! path to truncate and write would then overwrite that file. So the path is never opened:
//! each output is a new file created beside it under a random name with `O_CREAT | O_EXCL`
//! (which follows no link), then renamed onto the path. rename(2) replaces the directory entry
//! (a link is replaced, not followed), atomically; where the folder's sticky bit forbids
//! replacing another user's entry, the rename fails and the error says so.
//!
//! A device or a FIFO at the path (`/dev/null`, `/dev/stdout`, a named pipe) is not a file to
//! replace: it is opened for writing as it is (never created, never truncated). Replacing it
//! would put a regular file where the system's device was. `/dev`'s own links (`/dev/stdout`
//! to `/proc/self/fd/1`) are followed to theirs; a link elsewhere is replaced as above.
//!
//! [`write()`] renames once the whole content is written (readers see the old file or the new
//! one, never half of one); [`create`] renames at once and hands back the file, for outputs
//! written as they go (logs, pcaps), which can then be read while they grow.
#![deny(missing_docs)]
#![warn(unreachable_pub)]
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::Write;
use std::path::Path;

use tempfile::NamedTempFile;

/// Mode of new outputs before the umask (as `File::create` gives).
const MODE: u32 = 0o666;

fn new_beside(path: &Path) -> std::io::Result<NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{} does not name a file", path.display()))
    })?;
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".new")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(MODE))
        .tempfile_in(dir)
}

fn put_in_place(tmp: NamedTempFile, path: &Path) -> std::io::Result<File> {
    tmp.persist(path).map_err(|e| {
        std::io::Error::new(
            e.error.kind(),
            format!("cannot put the new file in place at {}: {}", path.display(), e.error),
        )
    })
}

/// The device or FIFO at `path`, opened for writing, if that is what is there (see the module's
/// doc); `None` for anything else (a regular file, a link outside `/dev`, nothing).
fn device_at(path: &Path) -> std::io::Result<Option<File>> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let Ok(entry) = std::fs::symlink_metadata(path) else { return Ok(None) };
    let is_device = |t: std::fs::FileType| t.is_char_device() || t.is_block_device() || t.is_fifo();
    let in_dev = path.parent().is_some_and(|d| d == Path::new("/dev"));
    let follow = if is_device(entry.file_type()) {
        false
    } else if entry.file_type().is_symlink() && in_dev {
        match std::fs::metadata(path) {
            Ok(target) if is_device(target.file_type()) => true,
            _ => return Ok(None),
        }
    } else {
        return Ok(None);
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if !follow {
        options.custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    options.open(path).map(Some)
}

/// A new, empty file at `path`, replacing whatever entry is there (never writing through it);
/// a device or FIFO there is written to as it is.
pub fn create(path: &Path) -> std::io::Result<File> {
    if let Some(device) = device_at(path)? {
        return Ok(device);
    }
    put_in_place(new_beside(path)?, path)
}

/// Write `bytes` as the file at `path`, replacing whatever entry is there once they are all
/// written (never writing through it).
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    if let Some(mut device) = device_at(path)? {
        return device.write_all(bytes.as_ref());
    }
    let mut tmp = new_beside(path)?;
    tmp.write_all(bytes.as_ref())?;
    tmp.flush()?;
    put_in_place(tmp, path).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_link_at_the_path_is_replaced_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let soft = dir.path().join("soft.json");
        std::os::unix::fs::symlink(&victim, &soft).unwrap();
        let hard = dir.path().join("hard.log");
        std::fs::hard_link(&victim, &hard).unwrap();
        write(&soft, b"report").unwrap();
        let mut log = create(&hard).unwrap();
        log.write_all(b"line\n").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(!std::fs::symlink_metadata(&soft).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&soft).unwrap(), b"report");
        assert_eq!(std::fs::read(&hard).unwrap(), b"line\n");
        // A dangling link is replaced too, and nothing is created where it pointed.
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("made-by-following"), &dangling).unwrap();
        write(&dangling, b"x").unwrap();
        assert!(!dir.path().join("made-by-following").exists());
        // Nothing is left beside the outputs.
        let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["dangling", "hard.log", "soft.json", "victim"]);
        let mode = std::fs::metadata(&soft).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o600, 0o600, "readable and writable by its owner");
    }

    #[test]
    fn a_device_at_the_path_is_written_to_and_stays_a_device() {
        use std::os::unix::fs::FileTypeExt;
        let null = Path::new("/dev/null");
        assert!(std::fs::symlink_metadata(null).unwrap().file_type().is_char_device());
        write(null, b"nothing").unwrap();
        drop(create(null).unwrap());
        assert!(std::fs::symlink_metadata(null).unwrap().file_type().is_char_device(), "still the device");
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, 0o600.into(), 0).unwrap();
        let reader = std::thread::spawn({
            let fifo = fifo.clone();
            move || std::fs::read(fifo).unwrap()
        });
        write(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "still the FIFO");
    }

    #[test]
    fn a_folder_at_the_path_or_a_path_without_a_file_name_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = write(dir.path(), b"x").unwrap_err();
        assert!(e.to_string().contains("cannot put the new file in place"), "{e}");
        assert!(write(Path::new("/"), b"x").is_err());
        assert!(create(&dir.path().join("no-such-folder/out")).is_err());
    }
}
