//! What the vfio-user tests share: a `bnxt-model serve` process in a private folder, a raw
//! protocol client written from the specification on the shared wire format (it can also send
//! what no well-behaved client would), sealed memfds for guest memory, and an HWRM_VER_GET.

#![allow(dead_code)]

use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bnxt_hsi::hwrm::layouts::HwrmVerGetInput;
use bnxt_vfio_user::Message;
use bnxt_vfio_user::header::{Command, TYPE_COMMAND};
use bnxt_vfio_user::message::encode;
use bnxt_vfio_user::payload::Version;
use bnxt_vfio_user::transport::{Receiver, send_message};
use rustix::fs::{MemfdFlags, SealFlags};
use zerocopy::{FromZeros, IntoBytes};

/// The MAC every test server gets.
pub const MAC: &str = "02:57:60:80:00:01";

/// A server process and its folder.
pub struct Server {
    pub child: Child,
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub hwrm_log: PathBuf,
}

impl Server {
    /// `bnxt-model serve` with `extra` arguments; returns once its socket exists.
    pub fn start(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("nic.sock");
        let hwrm_log = dir.path().join("hwrm.log");
        let child = Process::new(env!("CARGO_BIN_EXE_bnxt-model"))
            .args(["serve", "--socket"])
            .arg(&socket)
            .args(["--mac", MAC, "--hwrm-log"])
            .arg(&hwrm_log)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut server = Server { child, dir, socket, hwrm_log };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !server.socket.exists() {
            if let Some(status) = server.child.try_wait().unwrap() {
                panic!("the server exited with {status} before listening: {}", server.stderr());
            }
            assert!(Instant::now() < deadline, "the server did not create its socket");
            std::thread::sleep(Duration::from_millis(10));
        }
        server
    }

    /// Everything the server wrote to stderr so far (only after it exited).
    pub fn stderr(&mut self) -> String {
        let mut s = String::new();
        if let Some(err) = self.child.stderr.as_mut() {
            let _ = err.read_to_string(&mut s);
        }
        s
    }

    /// Wait up to `timeout` for the server to exit; its status and log.
    pub fn wait_exit(&mut self, timeout: Duration) -> (ExitStatus, String) {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status, self.stderr());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let status = self.child.wait().unwrap();
                panic!("the server did not exit within {timeout:?} ({status}): {}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether the server still runs.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw vfio-user client.
pub struct Raw {
    pub stream: UnixStream,
    rx: Receiver,
    next_id: u16,
}

impl Raw {
    /// Connect (no negotiation).
    pub fn connect(path: &Path) -> Raw {
        let stream = UnixStream::connect(path).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw { stream, rx: Receiver::new(4 << 20), next_id: 0 }
    }

    /// Connect and negotiate version 0.0.
    pub fn negotiated(path: &Path) -> Raw {
        let mut c = Raw::connect(path);
        let caps = b"{\"capabilities\":{\"max_msg_fds\":8}}\0";
        let reply = c.call(Command::Version as u16, &[Version::default().as_bytes(), caps], &[]);
        assert!(!reply.header.is_error(), "version refused: errno {}", reply.header.error);
        c
    }

    /// Send raw bytes.
    pub fn send_bytes(&mut self, bytes: &[u8], fds: &[BorrowedFd<'_>]) {
        send_message(self.stream.as_fd(), bytes, fds, Duration::from_secs(5)).unwrap();
    }

    /// Receive one message.
    pub fn receive(&mut self) -> Option<Message> {
        self.rx.receive(self.stream.as_fd()).ok().flatten()
    }

    /// Send a command and return the reply (which may be an error reply).
    pub fn call(&mut self, command: u16, parts: &[&[u8]], fds: &[BorrowedFd<'_>]) -> Message {
        let id = self.next_id;
        self.next_id += 1;
        self.send_bytes(&encode(id, command, TYPE_COMMAND, 0, parts), fds);
        let reply = self.receive().expect("a reply");
        assert!(reply.header.is_reply(), "got a non-reply");
        assert_eq!((reply.header.message_id, reply.header.command), (id, command), "reply to the command sent");
        reply
    }

    /// A command that must succeed; its reply payload.
    pub fn ok(&mut self, command: Command, parts: &[&[u8]], fds: &[BorrowedFd<'_>]) -> Vec<u8> {
        let reply = self.call(command as u16, parts, fds);
        assert!(!reply.header.is_error(), "{} refused: errno {}", command.name(), reply.header.error);
        reply.body
    }

    /// A command that must be refused; its errno.
    pub fn refused(&mut self, command: u16, parts: &[&[u8]], fds: &[BorrowedFd<'_>]) -> u32 {
        let reply = self.call(command, parts, fds);
        assert!(reply.header.is_error(), "command {command} was not refused");
        assert_eq!(reply.header.message_size, 16, "an error reply is the header alone");
        reply.header.error
    }
}

/// A memfd of `len` bytes sealed against shrinking and growing, as QEMU's memfd backend is.
pub fn memfd(len: usize) -> OwnedFd {
    let fd = rustix::fs::memfd_create("guest-ram", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).unwrap();
    rustix::fs::ftruncate(&fd, len as u64).unwrap();
    rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW).unwrap();
    fd
}

/// Read `len` bytes of `fd` at `offset`.
pub fn peek(fd: &OwnedFd, offset: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    rustix::io::pread(fd, &mut out, offset).unwrap();
    out
}

/// An HWRM_VER_GET request as bnxt_en builds it (interface 1.10.3), answered at `resp_addr`.
pub fn ver_get(seq: u16, resp_addr: u64) -> Vec<u8> {
    let mut req = HwrmVerGetInput::new_zeroed();
    req.req_type = 0u16.into();
    req.cmpl_ring = 0xffffu16.into();
    req.seq_id = seq.into();
    req.target_id = 0xffffu16.into();
    req.resp_addr = resp_addr.into();
    req.hwrm_intf_maj = 1;
    req.hwrm_intf_min = 10;
    req.hwrm_intf_upd = 3;
    req.as_bytes().to_vec()
}

/// Poll `fd` at `offset` for a complete HWRM response to `seq` (resp_len, seq_id, valid byte).
pub fn wait_response(fd: &OwnedFd, offset: u64, seq: u16, timeout: Duration) -> Option<Vec<u8>> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let head = peek(fd, offset, 8);
        let len = u16::from_le_bytes([head[6], head[7]]) as usize;
        if len >= 8 && u16::from_le_bytes([head[4], head[5]]) == seq {
            let bytes = peek(fd, offset, len);
            if bytes[len - 1] == 1 {
                return Some(bytes);
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

/// Write `data` to region `region` at `offset`.
pub fn write_region(c: &mut Raw, region: u32, offset: u64, data: &[u8]) {
    let req = bnxt_vfio_user::payload::RegionAccess { offset, region, count: data.len() as u32 };
    c.ok(bnxt_vfio_user::header::Command::RegionWrite, &[req.as_bytes(), data], &[]);
}

/// Take a borrowed descriptor of `fd`.
pub fn fd_of(fd: &OwnedFd) -> BorrowedFd<'_> {
    fd.as_fd()
}
