//! The listening socket of `bnxt-model serve`: created with mode 0600 (only its owner may connect:
//! the protocol has no authentication of its own and relies on the socket file's permissions,
//! as the specification says for AF_UNIX), never over a file that is not a socket, and removed
//! when the server ends.

use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// Why the socket could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// Something that is not a socket is at the path.
    #[error("{path} exists and is not a socket; refusing to replace it")]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
    /// A server already listens at the path.
    #[error("{path}: another server is listening there")]
    InUse {
        /// The path.
        path: PathBuf,
    },
    /// A system call failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
}

/// A listening socket that removes its file when dropped.
#[derive(Debug)]
pub struct Listener {
    listener: UnixListener,
    path: PathBuf,
}

impl Listener {
    /// Listen at `path` with mode 0600. A stale socket file (nobody listening) is replaced; any
    /// other file is left alone and refused.
    pub fn bind(path: &Path) -> Result<Listener, SocketError> {
        let io = |what, source| SocketError::Io { what, path: path.to_path_buf(), source };
        match std::fs::symlink_metadata(path) {
            Ok(meta) if !meta.file_type().is_socket() => {
                return Err(SocketError::NotASocket { path: path.to_path_buf() });
            }
            Ok(_) => {
                if UnixStream::connect(path).is_ok() {
                    return Err(SocketError::InUse { path: path.to_path_buf() });
                }
                std::fs::remove_file(path).map_err(|e| io("cannot remove the stale socket", e))?;
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io("cannot look at", e)),
        }
        // The file is created with mode 0777 & !umask: a umask of 0177 makes it 0600 from the
        // start, so no other user can connect in the moment before the chmod below.
        let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o177));
        let bound = UnixListener::bind(path);
        rustix::process::umask(old);
        let listener = bound.map_err(|e| io("cannot listen at", e))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| io("cannot set mode 0600 on", e))?;
        listener.set_nonblocking(true).map_err(|e| io("cannot make non-blocking", e))?;
        Ok(Listener { listener, path: path.to_path_buf() })
    }

    /// The listener.
    pub fn listener(&self) -> &UnixListener {
        &self.listener
    }

    /// Where it listens.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_is_private_and_other_files_are_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nic.sock");
        let l = Listener::bind(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(matches!(Listener::bind(&path), Err(SocketError::InUse { .. })));
        drop(l);
        assert!(!path.exists(), "removed on drop");

        let file = dir.path().join("precious");
        std::fs::write(&file, b"keep me").unwrap();
        let err = Listener::bind(&file).unwrap_err();
        assert!(err.to_string().contains("is not a socket"), "{err}");
        assert_eq!(std::fs::read(&file).unwrap(), b"keep me");

        // A socket nobody listens on any more is replaced.
        let stale = UnixListener::bind(&path).unwrap();
        drop(stale);
        assert!(path.exists());
        Listener::bind(&path).unwrap();
    }
}
