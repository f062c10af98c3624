//! vfio-user message sequences against the server's protocol state machine, in process: the
//! server's `Protocol` and `ServedNic` driven message by message as the serve loop drives them,
//! with memfds (sealed or not, of any size), eventfds, pipes and no descriptor at all where
//! commands take them, and structure-aware payloads for every command the server knows (faults
//! armed with BNXT_RIG_ARM among them), plus raw ones, and shrinking (`ftruncate`) an unsealed memfd the server has mapped, as a client may
//! (the server's SIGBUS guard must take the fault). Invariants: every command gets exactly one reply (none with NO_REPLY) naming its id and
//! command, an error reply is the header alone, and the counters agree; a read-only mapping the
//! harness lent (a canary) is never written; afterwards a new connection negotiates and reads
//! the PCI identity.
#![no_main]

use std::os::fd::OwnedFd;
use std::time::Duration;

use arbitrary::Arbitrary;
use bnxt_model::faults::FaultPlan;
use bnxt_model_host::vfio_user::nic::ServedNic;
use bnxt_model_host::vfio_user::protocol::Protocol;
use bnxt_vfio_user::Message;
use bnxt_vfio_user::header::{Command, FLAG_NO_REPLY, Header};
use bnxt_vfio_user::linux::{DMA_MAP_FLAG_READ, PCI_CONFIG_REGION_INDEX};
use bnxt_vfio_user::payload::{DmaMap, DmaUnmap, IrqSet, RegionAccess, Version};
use libfuzzer_sys::fuzz_target;
use rustix::fs::{MemfdFlags, SealFlags};
use zerocopy::{FromBytes, IntoBytes};

const PAGE: u64 = 4096;
/// Where the harness lends its read-only canary, and its byte.
const CANARY_IOVA: u64 = 0x7000_0000;
const CANARY_BYTE: u8 = 0x5a;

#[derive(Debug, Arbitrary)]
enum Fd {
    /// A memfd of this many pages sealed against shrinking (as QEMU's).
    Sealed(u8),
    /// A memfd that is not sealed.
    Unsealed(u8),
    Eventfd,
    PipeRead,
    PipeWrite,
}

impl Fd {
    fn make(&self) -> OwnedFd {
        let memfd = |pages: u8, seal: bool| {
            let fd = rustix::fs::memfd_create("fuzz", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).unwrap();
            rustix::fs::ftruncate(&fd, u64::from(pages % 17) * PAGE).unwrap();
            if seal {
                rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW).unwrap();
            }
            fd
        };
        match self {
            Fd::Sealed(p) => memfd(*p, true),
            Fd::Unsealed(p) => memfd(*p, false),
            Fd::Eventfd => rustix::event::eventfd(0, rustix::event::EventfdFlags::NONBLOCK).unwrap(),
            Fd::PipeRead => rustix::pipe::pipe().unwrap().0,
            Fd::PipeWrite => rustix::pipe::pipe().unwrap().1,
        }
    }
}

#[derive(Debug, Arbitrary)]
enum Caps {
    None,
    Good { max_xfer: u32 },
    Raw(String),
}

#[derive(Debug, Arbitrary)]
enum Op {
    Version {
        major: u16,
        caps: Caps,
    },
    DmaMap {
        argsz: Option<u32>,
        flags: u8,
        offset: u8,
        iova_page: u16,
        pages: u8,
        fd: Option<Fd>,
    },
    DmaUnmap {
        flags: u8,
        iova_page: u16,
        pages: u8,
    },
    SetIrqs {
        flags: u8,
        index: u8,
        start: u8,
        count: u8,
        data: Vec<u8>,
        fds: Vec<Fd>,
    },
    Read {
        region: u8,
        offset: u32,
        count: u16,
    },
    Write {
        region: u8,
        offset: u32,
        data: Vec<u8>,
    },
    /// An HWRM request through BAR0's window, its response aimed at `resp_page`.
    Hwrm {
        body: Vec<u8>,
        resp_page: u16,
    },
    Restart(String),
    /// BNXT_RIG_ARM of a fault on an HWRM request (`req_type`) or a RoCE command (its low
    /// byte), with an action of either channel (one of the other channel's must be refused),
    /// chosen by `action` and `value`.
    Arm {
        roce: bool,
        request: u16,
        nth: Option<u8>,
        count: Option<u8>,
        roce_action: bool,
        action: u8,
        value: u32,
    },
    /// BNXT_RIG_ARM with any text.
    ArmRaw(String),
    Raw {
        command: u16,
        flags: u8,
        body: Vec<u8>,
    },
    Reset,
    State,
    Advance(u16),
    /// Truncate one of the unsealed memfds lent so far to this many pages (`% 17`).
    Shrink {
        which: u8,
        pages: u8,
    },
}

struct Run {
    nic: ServedNic,
    protocol: Protocol,
    now: Duration,
    id: u16,
    sent: u64,
    /// The unsealed memfds handed over in DMA_MAP, kept to shrink them later.
    unsealed: Vec<OwnedFd>,
}

impl Run {
    /// Hand one message to the server; check its reply.
    fn send(&mut self, command: u16, flags: u32, body: Vec<u8>, fds: Vec<OwnedFd>) -> Option<Message> {
        self.id = self.id.wrapping_add(1);
        let header = Header { message_id: self.id, command, message_size: 16 + body.len() as u32, flags, error: 0 };
        let is_reply = header.is_reply();
        let reply = self.protocol.handle(self.now, Message { header, body, fds }, &mut self.nic);
        if is_reply {
            assert!(reply.is_none(), "a reply got a reply");
            return None;
        }
        self.sent += 1;
        if header.no_reply() {
            assert!(reply.is_none(), "a NO_REPLY command got a reply");
            return None;
        }
        let bytes = reply.expect("every command is answered");
        let (h, body) = Header::read_from_prefix(&bytes).expect("a reply has a header");
        assert_eq!((h.message_id, h.command), (self.id, command), "the reply names its command");
        assert!(h.is_reply());
        assert_eq!(h.message_size as usize, bytes.len());
        if h.is_error() {
            assert_eq!(bytes.len(), 16, "an error reply is the header alone");
        }
        Some(Message { header: h, body: body.to_vec(), fds: Vec::new() })
    }

    fn command(&mut self, command: Command, parts: &[&[u8]], fds: Vec<OwnedFd>) -> Option<Message> {
        self.send(command as u16, 0, parts.concat(), fds)
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let mut run = Run {
        nic: ServedNic::new([2, 0, 0, 0, 0, 9], 1, FaultPlan::default()).unwrap(),
        protocol: Protocol::new(),
        now: Duration::ZERO,
        id: 0,
        sent: 0,
        unsealed: Vec::new(),
    };
    run.command(Command::Version, &[Version::default().as_bytes()], Vec::new());
    // The canary: one page lent read-only.
    let canary = Fd::Sealed(1).make();
    rustix::io::pwrite(&canary, &[CANARY_BYTE; PAGE as usize], 0).unwrap();
    let map = DmaMap { argsz: 32, flags: DMA_MAP_FLAG_READ, offset: 0, address: CANARY_IOVA, size: PAGE };
    let lent = run.command(Command::DmaMap, &[map.as_bytes()], vec![canary.try_clone().unwrap()]).unwrap();
    assert!(!lent.header.is_error());
    for op in ops.iter().take(64) {
        match op {
            Op::Version { major, caps } => {
                let json = match caps {
                    Caps::None => String::new(),
                    Caps::Good { max_xfer } => {
                        format!(r#"{{"capabilities":{{"max_msg_fds":8,"max_data_xfer_size":{max_xfer}}}}}"#)
                    }
                    Caps::Raw(s) => s.clone(),
                };
                let v = Version { major: *major % 2, minor: 0 };
                run.command(Command::Version, &[v.as_bytes(), json.as_bytes(), &[0]], Vec::new());
            }
            Op::DmaMap { argsz, flags, offset, iova_page, pages, fd } => {
                let req = DmaMap {
                    argsz: argsz.unwrap_or(32),
                    flags: u32::from(*flags),
                    offset: u64::from(*offset % 17) * PAGE,
                    address: u64::from(*iova_page) * PAGE,
                    size: u64::from(*pages % 17) * PAGE,
                };
                let fds: Vec<OwnedFd> = fd.iter().map(Fd::make).collect();
                if let (Some(Fd::Unsealed(_)), Some(f)) = (fd, fds.first())
                    && run.unsealed.len() < 8
                {
                    run.unsealed.push(f.try_clone().unwrap());
                }
                run.command(Command::DmaMap, &[req.as_bytes()], fds);
            }
            Op::DmaUnmap { flags, iova_page, pages } => {
                let address = u64::from(*iova_page) * PAGE;
                if address != CANARY_IOVA {
                    let req =
                        DmaUnmap { argsz: 24, flags: u32::from(*flags & 3), address, size: u64::from(*pages) * PAGE };
                    run.command(Command::DmaUnmap, &[req.as_bytes()], Vec::new());
                }
            }
            Op::SetIrqs { flags, index, start, count, data, fds } => {
                let req = IrqSet {
                    argsz: 20 + data.len() as u32,
                    flags: u32::from(*flags & 0x3f),
                    index: u32::from(*index % 6),
                    start: u32::from(*start),
                    count: u32::from(*count),
                };
                let fds = fds.iter().take(8).map(Fd::make).collect();
                run.command(Command::DeviceSetIrqs, &[req.as_bytes(), data], fds);
            }
            Op::Read { region, offset, count } => {
                let req = RegionAccess {
                    offset: u64::from(*offset),
                    region: u32::from(*region % 10),
                    count: u32::from(*count),
                };
                if let Some(r) = run.command(Command::RegionRead, &[req.as_bytes()], Vec::new()) {
                    if !r.header.is_error() {
                        assert_eq!(r.body.len(), 16 + usize::from(*count), "a read returns what it asked for");
                    }
                }
            }
            Op::Write { region, offset, data } => {
                let req = RegionAccess {
                    offset: u64::from(*offset),
                    region: u32::from(*region % 10),
                    count: data.len() as u32,
                };
                run.command(Command::RegionWrite, &[req.as_bytes(), data], Vec::new());
            }
            Op::Hwrm { body, resp_page } => {
                let mut window = [0u8; 128];
                let n = body.len().min(128);
                window[..n].copy_from_slice(&body[..n]);
                let resp = if *resp_page == 0 { CANARY_IOVA } else { u64::from(*resp_page) * PAGE };
                window[8..16].copy_from_slice(&resp.to_le_bytes());
                let req = RegionAccess { offset: 0, region: 0, count: 128 };
                run.command(Command::RegionWrite, &[req.as_bytes(), &window], Vec::new());
                let trigger = RegionAccess { offset: 0x100, region: 0, count: 4 };
                run.command(Command::RegionWrite, &[trigger.as_bytes(), &1u32.to_le_bytes()], Vec::new());
            }
            Op::Restart(json) => {
                // The canary stays lent across a restart (DMA maps belong to the connection).
                run.command(Command::RigRestart, &[json.as_bytes()], Vec::new());
            }
            Op::Arm { roce, request, nth, count, roce_action, action, value } => {
                let target = if *roce {
                    serde_json::json!({"roce": *request as u8})
                } else {
                    serde_json::json!({"hwrm": request})
                };
                let what = match action % 7 {
                    0 => serde_json::json!("no-response"),
                    1 => serde_json::json!("acts-no-response"),
                    2 => serde_json::json!({"delay": {"secs": value % 4000, "nanos": value % 1_000_000_000}}),
                    3 if *roce_action => serde_json::json!({"error": *value as u8}),
                    3 => serde_json::json!({"error": *value as u16}),
                    4 => serde_json::json!("wrong-resp-len"),
                    5 => serde_json::json!("wrong-seq-id"),
                    _ => serde_json::json!("no-valid-byte"),
                };
                let action =
                    if *roce_action { serde_json::json!({"roce": what}) } else { serde_json::json!({"hwrm": what}) };
                let arm = serde_json::json!({"target": target, "nth": nth, "count": count, "action": action});
                run.command(Command::RigArm, &[arm.to_string().as_bytes()], Vec::new());
            }
            Op::ArmRaw(json) => {
                run.command(Command::RigArm, &[json.as_bytes()], Vec::new());
            }
            Op::Raw { command, flags, body } => {
                let flags = u32::from(*flags) & (0xf | FLAG_NO_REPLY);
                run.send(*command, flags, body.clone(), Vec::new());
            }
            Op::Reset => {
                run.command(Command::DeviceReset, &[], Vec::new());
            }
            Op::State => {
                if let Some(r) = run.command(Command::RigState, &[], Vec::new()) {
                    if !r.header.is_error() {
                        serde_json::from_slice::<serde_json::Value>(&r.body).expect("the state is JSON");
                    }
                }
            }
            Op::Advance(us) => {
                run.now += Duration::from_micros(u64::from(*us) * 16);
                run.nic.advance_to(run.now);
            }
            Op::Shrink { which, pages } => {
                if !run.unsealed.is_empty() {
                    let fd = &run.unsealed[usize::from(*which) % run.unsealed.len()];
                    rustix::fs::ftruncate(fd, u64::from(*pages % 17) * PAGE).unwrap();
                }
            }
        }
        run.nic.take_events();
    }
    run.now += Duration::from_secs(1);
    run.nic.advance_to(run.now);
    let stats = run.protocol.stats();
    assert_eq!(stats.commands, run.sent, "every command counted");
    assert!(stats.refused <= stats.commands);
    let mut page = [0u8; PAGE as usize];
    rustix::io::pread(&canary, &mut page, 0).unwrap();
    assert!(page.iter().all(|&b| b == CANARY_BYTE), "the device wrote into memory lent read-only");
    // A new connection is served as the first was.
    run.nic.client_gone();
    run.protocol = Protocol::new();
    let v = run.command(Command::Version, &[Version::default().as_bytes()], Vec::new()).unwrap();
    assert!(!v.header.is_error());
    let req = RegionAccess { offset: 0, region: PCI_CONFIG_REGION_INDEX, count: 4 };
    let id = run.command(Command::RegionRead, &[req.as_bytes()], Vec::new()).unwrap();
    assert_eq!(&id.body[16..20], &0x1760_14e4u32.to_le_bytes(), "the PCI identity after the sequence");
});
