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
//! [`write`] renames once the whole content is written (readers see the old file or the new
//! one, never half of one); [`create`] renames at once and hands back the file, for outputs
//! written as they go (logs, pcaps), which can then be read while they grow.

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

/// A new, empty file at `path`, replacing whatever entry is there (never writing through it).
pub fn create(path: &Path) -> std::io::Result<File> {
    put_in_place(new_beside(path)?, path)
}

/// Write `bytes` as the file at `path`, replacing whatever entry is there once they are all
/// written (never writing through it).
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
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
    fn a_folder_at_the_path_or_a_path_without_a_file_name_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = write(dir.path(), b"x").unwrap_err();
        assert!(e.to_string().contains("cannot put the new file in place"), "{e}");
        assert!(write(Path::new("/"), b"x").is_err());
        assert!(create(&dir.path().join("no-such-folder/out")).is_err());
    }
}
