//! Helpers shared by the `transport_*` integration tests: a memory of plain byte regions, and a
//! segment of NICs whose RC QPs talk through the model's switch and fault stage, driven in
//! virtual time by a small deterministic executor.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::hash::Hasher;
use std::time::Duration;

use bnxt_model::net::fault::{FaultStage, WireFaults};
use bnxt_model::net::switch::{LinkTiming, PortId, Switch};
use bnxt_model::net::{DropCounters, MacAddr, Path, RoceFrame};
use bnxt_model::roce::transport::{
    AccessError, Limits, Memory, Mtu, QpAttrs, RcQp, RecvCompletion, RecvWqe, RemoteAccess, SendCompletion, SendOp,
    SendWqe, Sge,
};

/// A region: bytes at a virtual address, with its rights. Its lkey and rkey are the same key.
pub struct Region {
    pub va: u64,
    pub bytes: Vec<u8>,
    pub local_write: bool,
    pub remote: RemoteAccess,
}

/// Regions by key.
#[derive(Default)]
pub struct TestMem {
    pub regions: BTreeMap<u32, Region>,
}

impl TestMem {
    /// Add a region of `len` bytes at `va` with every right, filled by `fill(offset)`.
    pub fn add(&mut self, key: u32, va: u64, len: usize, fill: impl Fn(usize) -> u8) {
        let bytes = (0..len).map(fill).collect();
        self.regions.insert(key, Region { va, bytes, local_write: true, remote: RemoteAccess::ALL });
    }

    /// The bytes of region `key`.
    pub fn bytes(&self, key: u32) -> &[u8] {
        &self.regions[&key].bytes
    }

    fn span(&mut self, key: u32, addr: u64, len: usize) -> Result<&mut Region, AccessError> {
        let r = self.regions.get_mut(&key).ok_or(AccessError::InvalidKey { key })?;
        let inside = addr >= r.va && addr.checked_add(len as u64).is_some_and(|end| end <= r.va + r.bytes.len() as u64);
        if inside { Ok(r) } else { Err(AccessError::OutOfBounds { key, addr, len: len as u64 }) }
    }

    fn slice(&mut self, key: u32, addr: u64, len: usize) -> Result<&mut [u8], AccessError> {
        let r = self.span(key, addr, len)?;
        let at = (addr - r.va) as usize;
        Ok(&mut r.bytes[at..at + len])
    }
}

impl Memory for TestMem {
    fn gather(&mut self, sge: &Sge, offset: u32, dst: &mut [u8]) -> Result<(), AccessError> {
        let n = dst.len();
        dst.copy_from_slice(self.slice(sge.lkey, sge.addr + u64::from(offset), n)?);
        Ok(())
    }

    fn scatter(&mut self, sge: &Sge, offset: u32, src: &[u8]) -> Result<(), AccessError> {
        let key = sge.lkey;
        if !self.span(key, sge.addr, 0)?.local_write {
            return Err(AccessError::NotAllowed { key, what: "local write" });
        }
        self.slice(key, sge.addr + u64::from(offset), src.len())?.copy_from_slice(src);
        Ok(())
    }

    fn check_remote(&mut self, rkey: u32, va: u64, len: u32, access: RemoteAccess) -> Result<(), AccessError> {
        let r = self.span(rkey, va, len as usize)?;
        if (access.read && !r.remote.read) || (access.write && !r.remote.write) || (access.atomic && !r.remote.atomic) {
            return Err(AccessError::NotAllowed { key: rkey, what: "remote access" });
        }
        Ok(())
    }

    fn remote_read(&mut self, rkey: u32, va: u64, dst: &mut [u8]) -> Result<(), AccessError> {
        let n = dst.len();
        dst.copy_from_slice(self.slice(rkey, va, n)?);
        Ok(())
    }

    fn remote_write(&mut self, rkey: u32, va: u64, src: &[u8]) -> Result<(), AccessError> {
        self.slice(rkey, va, src.len())?.copy_from_slice(src);
        Ok(())
    }
}

/// The MAC of test NIC `n`.
pub fn mac(n: usize) -> MacAddr {
    MacAddr([0x02, 0x00, 0x5e, 0x10, 0x30, n as u8])
}

/// One NIC: a switch port, its memory and its QPs by number.
pub struct Node {
    pub port: PortId,
    pub mac: MacAddr,
    pub mem: TestMem,
    pub qps: BTreeMap<u32, RcQp>,
    pub drops: DropCounters,
    /// Frames for a QP the node does not have.
    pub unknown_qp: u64,
}

/// NICs on one segment and a virtual clock.
pub struct Fabric {
    pub sw: Switch,
    pub nodes: Vec<Node>,
    pub now: Duration,
    /// Hash of every frame sent, in order (for determinism checks).
    trace: std::collections::hash_map::DefaultHasher,
    pub frames_sent: u64,
    pub refused_by_switch: u64,
    pool: Vec<Vec<u8>>,
}

/// QP attributes between node `a`'s QP `qa` and node `b`'s QP `qb`, with a 4 KiB MTU, the
/// usual timeout (14: 67 ms) and every retry count at 7.
pub fn attrs(fab: &Fabric, a: usize, qa: u32, b: usize, qb: u32) -> QpAttrs {
    QpAttrs {
        qpn: qa,
        dest_qpn: qb,
        path: Path::between(fab.nodes[a].mac, fab.nodes[b].mac, qb),
        mtu: Mtu::Mtu4096,
        sq_psn: qa * 1000,
        rq_psn: qb * 1000,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        min_rnr_timer: 1,
        max_rd_atomic: 16,
        max_dest_rd_atomic: 16,
        access: RemoteAccess::ALL,
    }
}

impl Fabric {
    /// `n` NICs on a switch with the default link timing, with `faults` (seeded) if given.
    pub fn new(n: usize, faults: Option<(u64, WireFaults)>) -> Fabric {
        let mut sw = Switch::new(LinkTiming::default());
        let nodes = (0..n)
            .map(|i| Node {
                port: sw.add_port(),
                mac: mac(i),
                mem: TestMem::default(),
                qps: BTreeMap::new(),
                drops: DropCounters::default(),
                unknown_qp: 0,
            })
            .collect();
        let mut fab = Fabric {
            sw,
            nodes,
            now: Duration::ZERO,
            trace: Default::default(),
            frames_sent: 0,
            refused_by_switch: 0,
            pool: Vec::new(),
        };
        // Every NIC speaks once before faults are on, so the switch knows where each MAC is.
        for i in 0..n {
            let mut hello = vec![0u8; 60];
            hello[..6].copy_from_slice(&MacAddr::BROADCAST.0);
            hello[6..12].copy_from_slice(&fab.nodes[i].mac.0);
            hello[12..14].copy_from_slice(&[0x88, 0xb5]);
            fab.sw.send(Duration::ZERO, fab.nodes[i].port, hello).unwrap();
        }
        fab.now = Duration::from_micros(10);
        fab.sw.poll(fab.now);
        if let Some((seed, w)) = faults {
            fab.sw.set_faults(FaultStage::new(seed, w, vec![]).unwrap());
        }
        fab
    }

    /// Connect node `a`'s QP `qa` and node `b`'s QP `qb`, letting `tweak` change each side's
    /// attributes (called with the side's node index) before the QPs are made.
    pub fn connect(&mut self, a: usize, qa: u32, b: usize, qb: u32, tweak: impl Fn(usize, &mut QpAttrs)) {
        self.connect_with_limits(a, qa, b, qb, Limits::default(), tweak)
    }

    /// [`Fabric::connect`] with transport limits.
    pub fn connect_with_limits(
        &mut self,
        a: usize,
        qa: u32,
        b: usize,
        qb: u32,
        limits: Limits,
        tweak: impl Fn(usize, &mut QpAttrs),
    ) {
        let mut at = attrs(self, a, qa, b, qb);
        let mut bt = attrs(self, b, qb, a, qa);
        tweak(a, &mut at);
        tweak(b, &mut bt);
        self.nodes[a].qps.insert(qa, RcQp::with_limits(at, limits).unwrap());
        self.nodes[b].qps.insert(qb, RcQp::with_limits(bt, limits).unwrap());
    }

    /// The QP `qpn` of node `n`.
    pub fn qp(&mut self, n: usize, qpn: u32) -> &mut RcQp {
        self.nodes[n].qps.get_mut(&qpn).unwrap()
    }

    /// Post a send on node `n`'s QP `qpn`.
    pub fn post_send(&mut self, n: usize, qpn: u32, wqe: SendWqe) {
        self.qp(n, qpn).post_send(wqe);
    }

    /// Post a receive on node `n`'s QP `qpn`.
    pub fn post_recv(&mut self, n: usize, qpn: u32, wqe: RecvWqe) {
        self.qp(n, qpn).post_recv(wqe);
    }

    /// Every send completion node `n`'s QP `qpn` has.
    pub fn send_completions(&mut self, n: usize, qpn: u32) -> Vec<SendCompletion> {
        let qp = self.qp(n, qpn);
        std::iter::from_fn(|| qp.pop_send_completion()).collect()
    }

    /// Every receive completion node `n`'s QP `qpn` has.
    pub fn recv_completions(&mut self, n: usize, qpn: u32) -> Vec<RecvCompletion> {
        let qp = self.qp(n, qpn);
        std::iter::from_fn(|| qp.pop_recv_completion()).collect()
    }

    /// One round at the current time: every QP sends what it can, every frame due arrives,
    /// every timer due runs. Whether anything happened.
    pub fn step(&mut self) -> bool {
        let now = self.now;
        let mut busy = false;
        for node in &mut self.nodes {
            for qp in node.qps.values_mut() {
                loop {
                    let mut buf = self.pool.pop().unwrap_or_default();
                    if !qp.poll_transmit(now, &mut node.mem, &mut buf) {
                        self.pool.push(buf);
                        break;
                    }
                    busy = true;
                    self.trace.write(&buf);
                    self.frames_sent += 1;
                    if self.sw.send(now, node.port, buf).is_err() {
                        self.refused_by_switch += 1;
                    }
                }
            }
        }
        for d in self.sw.poll(now) {
            busy = true;
            let Some(node) = self.nodes.iter_mut().find(|n| n.port == d.port) else {
                continue;
            };
            match RoceFrame::parse(&d.frame) {
                Ok(f) => match node.qps.get_mut(&f.transport.bth.dest_qp) {
                    Some(qp) => qp.handle_frame(now, &f, &mut node.mem),
                    None => node.unknown_qp += 1,
                },
                Err(e) => {
                    node.drops.count(&e);
                }
            }
            self.pool.push(d.frame);
        }
        for node in &mut self.nodes {
            for qp in node.qps.values_mut() {
                if qp.next_deadline().is_some_and(|t| t <= now) {
                    qp.on_timer(now);
                    busy = true;
                }
            }
        }
        busy
    }

    /// When anything next has to happen.
    pub fn next_event(&self) -> Option<Duration> {
        let qps = self.nodes.iter().flat_map(|n| n.qps.values()).filter_map(|q| q.next_deadline());
        qps.chain(self.sw.next_deadline()).min()
    }

    /// Run until `done` holds (true), or until nothing is left to happen or virtual time passes
    /// `limit` (false).
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Fabric) -> bool) -> bool {
        loop {
            if done(self) {
                return true;
            }
            if self.step() {
                continue;
            }
            match self.next_event() {
                Some(t) if t <= limit => self.now = self.now.max(t),
                _ => return done(self),
            }
        }
    }

    /// Run until nothing is left to happen (or `limit`).
    pub fn run_idle(&mut self, limit: Duration) {
        self.run_until(limit, |_| false);
    }

    /// Hash of every frame sent so far, in order.
    pub fn trace_hash(&self) -> u64 {
        self.trace.finish()
    }
}

/// A send of `len` bytes from `addr` of region `key`, id `id`, signaled.
pub fn send(id: u64, key: u32, addr: u64, len: u32) -> SendWqe {
    SendWqe {
        id,
        op: SendOp::Send { imm: None },
        sges: smallvec::smallvec![Sge { addr, lkey: key, len }],
        length: len,
        signaled: true,
        solicited: false,
    }
}

/// A receive of up to `len` bytes at `addr` of region `key`, id `id`.
pub fn recv(id: u64, key: u32, addr: u64, len: u32) -> RecvWqe {
    RecvWqe { id, sges: smallvec::smallvec![Sge { addr, lkey: key, len }] }
}

/// A byte pattern that differs for every (message, offset).
pub fn pattern(msg: u64, i: usize) -> u8 {
    (msg.wrapping_mul(131).wrapping_add(i as u64 * 7 + (i as u64 >> 8) * 13) % 251) as u8
}

/// Assert two byte strings are equal, naming the first difference (not printing megabytes).
#[track_caller]
pub fn assert_bytes(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!("{what}: first difference at byte {i} of {}: {} != {}", got.len(), got[i], want[i]);
    }
}
