//! The client side of the control channels (`bnxt-model ctl`): connect, send one request line,
//! read one reply line, with a time limit on each. The request and reply types are the
//! channel's (serve's [`super::protocol`], the segment hub's [`super::hub`]), or JSON values for
//! a client that speaks to either.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why a request got no reply.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket could not be reached.
    #[error("cannot connect to {path}: {source}")]
    Connect {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Sending or receiving failed (or timed out).
    #[error("{path}: {what}: {source}")]
    Io {
        /// The socket.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// The server closed the connection without replying.
    #[error("{path}: the server closed the connection without a reply")]
    NoReply {
        /// The socket.
        path: PathBuf,
    },
    /// The reply is not one.
    #[error("{path}: the reply is not a control reply: {source}")]
    BadReply {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
}

/// Send `request` to the control socket at `path` and wait up to `timeout` for its reply.
pub fn call<Q: Serialize, R: DeserializeOwned>(path: &Path, request: &Q, timeout: Duration) -> Result<R, ClientError> {
    let io = |what| move |source| ClientError::Io { path: path.to_path_buf(), what, source };
    let stream =
        UnixStream::connect(path).map_err(|source| ClientError::Connect { path: path.to_path_buf(), source })?;
    stream.set_read_timeout(Some(timeout)).map_err(io("setting a timeout"))?;
    stream.set_write_timeout(Some(timeout)).map_err(io("setting a timeout"))?;
    let mut line = serde_json::to_vec(request).expect("a request is always JSON");
    line.push(b'\n');
    (&stream).write_all(&line).map_err(io("sending the request"))?;
    let mut reply = String::new();
    let n = BufReader::new(&stream).read_line(&mut reply).map_err(io("reading the reply"))?;
    if n == 0 {
        return Err(ClientError::NoReply { path: path.to_path_buf() });
    }
    serde_json::from_str(&reply).map_err(|source| ClientError::BadReply { path: path.to_path_buf(), source })
}
