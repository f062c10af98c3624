//! The control socket's side in a server (`bnxt-model serve`'s, the segment hub's): a listener
//! of its own (mode 0600, as the vfio-user socket), any number of clients at once, each sending
//! JSON lines and getting one reply line per request, in order; what the requests and replies
//! are is the caller's (serve's [`super::protocol`], the hub's [`super::hub`]), a refusal is
//! `{"ok":false,"error":"…"}` in both. Everything is non-blocking and driven by the caller's
//! `poll(2)` loop:
//! a client that sends garbage gets an error reply and stays; one that sends a line longer than
//! [`MAX_LINE`] or does not read its replies (more than [`MAX_PENDING`] bytes waiting) is
//! disconnected; one that disconnects is forgotten. Nothing a client sends stops the server.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use rustix::event::{PollFd, PollFlags};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::serve::socket::{Listener, SocketError};

/// Longest request line taken (bytes, newline excluded).
pub const MAX_LINE: usize = 64 * 1024;
/// Most reply bytes kept for a client that does not read them.
pub const MAX_PENDING: usize = 1024 * 1024;
/// Most clients connected at once (further ones are refused with a reply saying so).
pub const MAX_CLIENTS: usize = 16;

/// One connected client.
struct Client {
    stream: UnixStream,
    input: Vec<u8>,
    output: Vec<u8>,
    /// Close once `output` is written (it broke the framing).
    closing: bool,
}

/// The control listener and its clients.
pub struct ControlServer {
    listener: Listener,
    clients: Vec<Client>,
}

impl ControlServer {
    /// Listen at `path` (mode 0600; a stale socket is replaced, any other file refused).
    pub fn bind(path: &Path) -> Result<ControlServer, SocketError> {
        Ok(ControlServer { listener: Listener::bind(path)?, clients: Vec::new() })
    }

    /// Listen at `path`, if there is one, saying so in the log.
    pub fn listen(path: Option<&Path>) -> Result<Option<ControlServer>, SocketError> {
        let Some(path) = path else { return Ok(None) };
        let server = ControlServer::bind(path)?;
        tracing::info!(control = %path.display(), "control socket listening");
        Ok(Some(server))
    }

    /// Clients connected now.
    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    /// The descriptors to poll: the listener first, then each client.
    pub fn poll_fds(&self) -> Vec<PollFd<'_>> {
        let mut fds = vec![PollFd::new(self.listener.listener(), PollFlags::IN)];
        for c in &self.clients {
            let flags = if c.output.is_empty() { PollFlags::IN } else { PollFlags::IN | PollFlags::OUT };
            fds.push(PollFd::new(&c.stream, flags));
        }
        fds
    }

    /// Serve what is ready (`ready[0]` the listener, then the clients as [`Self::poll_fds`]
    /// listed them): accept, read requests, answer each with `handle`, write replies.
    pub fn serve<Q: DeserializeOwned, R: Serialize>(&mut self, ready: &[bool], handle: &mut dyn FnMut(Q) -> R) {
        for (i, c) in self.clients.iter_mut().enumerate() {
            if ready.get(i + 1).copied().unwrap_or(false) {
                c.turn(handle);
            }
        }
        self.clients.retain(|c| !c.gone());
        if ready.first().copied().unwrap_or(false) {
            self.accept();
        }
    }

    fn accept(&mut self) {
        loop {
            match self.listener.listener().accept() {
                Ok((stream, _)) => {
                    if let Err(e) = stream.set_nonblocking(true) {
                        tracing::warn!(error = %e, "control client: cannot make its socket non-blocking; closing it");
                        continue;
                    }
                    let mut c = Client { stream, input: Vec::new(), output: Vec::new(), closing: false };
                    if self.clients.len() >= MAX_CLIENTS {
                        c.reply(&refusal(format!("too many control clients (at most {MAX_CLIENTS})")));
                        c.closing = true;
                        c.flush();
                        continue;
                    }
                    tracing::info!("control client connected");
                    self.clients.push(c);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::warn!(error = %e, "control socket: accept failed");
                    return;
                }
            }
        }
    }
}

/// A refusal, as every control channel writes one.
fn refusal(why: String) -> serde_json::Value {
    serde_json::json!({ "ok": false, "error": why })
}

impl Client {
    /// Whether the client is to be forgotten.
    fn gone(&self) -> bool {
        self.closing && self.output.is_empty()
    }

    /// Read what arrived, answer every whole line, write what waits.
    fn turn<Q: DeserializeOwned, R: Serialize>(&mut self, handle: &mut dyn FnMut(Q) -> R) {
        let mut buf = [0u8; 4096];
        while !self.closing {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    // What it sent before closing its side is still answered.
                    tracing::info!("control client gone");
                    self.closing = true;
                }
                Ok(n) => self.input.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::info!(error = %e, "control client: read failed; closing");
                    self.closing = true;
                    self.output.clear();
                }
            }
            self.answer(handle);
        }
        self.flush();
    }

    /// Answer each whole line in `input`.
    fn answer<Q: DeserializeOwned, R: Serialize>(&mut self, handle: &mut dyn FnMut(Q) -> R) {
        while let Some(end) = self.input.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.input.drain(..=end).collect();
            let line = &line[..end];
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match std::str::from_utf8(line) {
                Err(e) => self.reply(&refusal(format!("the request is not UTF-8: {e}"))),
                Ok(text) => match serde_json::from_str::<Q>(text) {
                    Err(e) => self.reply(&refusal(format!("bad request: {e}"))),
                    Ok(request) => {
                        let reply = handle(request);
                        self.reply(&reply);
                    }
                },
            }
        }
        if self.input.len() > MAX_LINE {
            self.reply(&refusal(format!("request line longer than {MAX_LINE} bytes; closing")));
            self.input.clear();
            self.closing = true;
        }
        if self.output.len() > MAX_PENDING {
            tracing::warn!("control client does not read its replies; closing");
            self.output.clear();
            self.closing = true;
        }
    }

    fn reply(&mut self, reply: &impl Serialize) {
        match serde_json::to_vec(reply) {
            Ok(bytes) => {
                self.output.extend_from_slice(&bytes);
                self.output.push(b'\n');
            }
            Err(e) => tracing::error!(error = %e, "a control reply could not be written as JSON"),
        }
    }

    /// Write as much of `output` as the socket takes now.
    fn flush(&mut self) {
        while !self.output.is_empty() {
            match self.stream.write(&self.output) {
                Ok(n) => {
                    self.output.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.output.clear();
                    self.closing = true;
                }
            }
        }
    }
}
