//! What the fuzz targets share: the model tests' small drivers (`model-host/tests/common`,
//! `model-host/tests/roce_support`, used as they are), the machines the model targets run their
//! inputs on (brought up once, restored for every input: [`snapshot`]), addresses chosen by the
//! input among the places that matter (inside the lent memory, inside a read-only canary, in the
//! unmapped gap between, anywhere), and the canary itself: memory lent to the device read-only,
//! whose bytes must never change, whatever the device was asked to do.

#![allow(clippy::all)]

#[path = "../../model-host/tests/common/mod.rs"]
pub mod common;
#[path = "../../model-host/tests/roce_support/mod.rs"]
pub mod roce_support;
pub mod snapshot;

use std::sync::Arc;

use arbitrary::Arbitrary;
use bnxt_model::host_memory::{Access, HeapBacking, HostMemory, Iommu};
use bnxt_model_host::world::WorldConfig;
use common::{BASE, MEM_LEN, Rig};
use snapshot::{Memories, Observe};

/// Bus address of the read-only canary (past a 64-KiB unmapped gap after the lent memory).
pub const CANARY: u64 = BASE + MEM_LEN as u64 + 0x1_0000;
/// Its size.
pub const CANARY_LEN: usize = 0x1_0000;
/// Its bytes.
pub const CANARY_BYTE: u8 = 0xa5;

/// Memory lent read-only to a NIC, to be checked unchanged.
#[derive(Clone)]
pub struct Canary {
    host: Iommu,
}

impl Canary {
    /// Lend a canary to NIC `nic` of `rig`.
    pub fn lend(rig: &mut Rig, nic: usize) -> Canary {
        let mem = Arc::new(HeapBacking::new(CANARY_LEN));
        let mut host = Iommu::new();
        host.map(CANARY, mem.clone(), 0, CANARY_LEN as u64).unwrap();
        host.view(true).write(CANARY, &[CANARY_BYTE; CANARY_LEN]).unwrap();
        rig.world.map_dma_with(nic, CANARY, mem, Access::ReadOnly).unwrap();
        Canary { host }
    }

    /// Panic if a byte of the canary changed.
    pub fn check(&self) {
        let mut bytes = vec![0u8; CANARY_LEN];
        self.host.view(true).read(CANARY, &mut bytes).unwrap();
        // One comparison of the whole canary (a single memcmp, which the fuzzer's instrumentation
        // sees as one call); the byte that changed is looked for only when one did.
        if bytes[..] != [CANARY_BYTE; CANARY_LEN][..] {
            let at = bytes.iter().position(|&b| b != CANARY_BYTE).unwrap_or(0);
            panic!("the device wrote into read-only memory at 0x{:x}", CANARY + at as u64);
        }
    }
}

/// A bus address the input chose: where in the map, and the offset inside that place.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Place {
    /// Inside the lent (read-write) memory.
    Lent(u32),
    /// Inside the read-only canary.
    Canary(u16),
    /// In the unmapped gap between them.
    Gap(u16),
    /// Across the end of the lent memory.
    LentEnd(u8),
    /// Anywhere.
    Any(u64),
}

impl Place {
    /// The address.
    pub fn address(self) -> u64 {
        match self {
            Place::Lent(o) => BASE + u64::from(o) % MEM_LEN as u64,
            Place::Canary(o) => CANARY + u64::from(o),
            Place::Gap(o) => BASE + MEM_LEN as u64 + u64::from(o),
            Place::LentEnd(o) => BASE + MEM_LEN as u64 - u64::from(o),
            Place::Any(a) => a,
        }
    }
}

/// A rig of `nics` NICs, seeded with `seed`, whose memory comes from `memory`.
pub fn rig(memory: &mut Memories, nics: usize, seed: u64) -> Rig {
    Rig::with_memory(WorldConfig { nics, seed, ..WorldConfig::default() }, &mut || memory.make())
}

impl Observe for Rig {
    fn state(&mut self) -> String {
        self.describe()
    }
}

/// One NIC with a read-only canary (the `hwrm` target's machine).
#[derive(Clone)]
pub struct One {
    /// The machine.
    pub rig: Rig,
    /// Its canary.
    pub canary: Canary,
}

/// A [`One`].
pub fn one(memory: &mut Memories) -> One {
    let mut rig = rig(memory, 1, 1);
    let canary = Canary::lend(&mut rig, 0);
    One { rig, canary }
}

impl Observe for One {
    fn state(&mut self) -> String {
        self.rig.state()
    }
}

/// One NIC with a read-only canary and its RoCE function brought up (a CREQ of 256 entries, a
/// CMDQ of 256 slots) and initialized (the `roce_cmdq` target's machine).
#[derive(Clone)]
pub struct Roce {
    /// The machine.
    pub rig: Rig,
    /// Its canary.
    pub canary: Canary,
    /// The function.
    pub f: roce_support::Func,
}

/// A [`Roce`].
pub fn roce(memory: &mut Memories) -> Roce {
    let One { mut rig, canary } = one(memory);
    let mut f = roce_support::Func::bring_up(&mut rig, 0, 256, 256);
    f.initialize(&mut rig);
    Roce { rig, canary, f }
}

impl Observe for Roce {
    fn state(&mut self) -> String {
        self.rig.state()
    }
}

/// Two NICs up with their RoCE functions, each with an NQ, a CQ, a 256-KiB region registered
/// for local and remote access and one RC QP, the QPs connected (as the model's data-path
/// tests set them up).
#[derive(Clone)]
pub struct Pair {
    /// The machine.
    pub rig: Rig,
    /// The functions.
    pub f: [roce_support::Func; 2],
    /// Their NQs.
    pub nq: [roce_support::NqRing; 2],
    /// Their CQs.
    pub cq: [roce_support::TCq; 2],
    /// Their QPs.
    pub qp: [roce_support::TQp; 2],
    /// Their regions (key, address).
    pub mr: [(u32, u64); 2],
    /// A read-only canary lent to each NIC.
    pub canary: [Canary; 2],
}

/// A pair as [`Pair`] says, its memory from `memory`.
pub fn pair(memory: &mut Memories) -> Pair {
    use bnxt_hsi::roce::layouts::CmdqRegisterMr as Mr;
    use roce_support::{Func, Rings, nq_ring};
    let mut rig = rig(memory, 2, 11);
    let canary = [Canary::lend(&mut rig, 0), Canary::lend(&mut rig, 1)];
    let mut f = [Func::bring_up(&mut rig, 0, 1024, 256), Func::bring_up(&mut rig, 1, 1024, 256)];
    let (mut nq, mut cq, mut qp, mut mr, mut sgid) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, fi) in f.iter_mut().enumerate() {
        fi.initialize(&mut rig);
        sgid.push(fi.add_own_gid(&mut rig));
        let n = nq_ring(&mut rig, i, &mut fi.pages, 256, 1);
        let c = fi.create_cq(&mut rig, 64, n.id);
        qp.push(fi.create_qp(&mut rig, Rings::fixed(64, 64), &c));
        mr.push(fi.region(
            &mut rig,
            256 << 10,
            Mr::ACCESS_LOCAL_WRITE | Mr::ACCESS_REMOTE_WRITE | Mr::ACCESS_REMOTE_READ,
        ));
        nq.push(n);
        cq.push(c);
    }
    let peers: Vec<([u8; 16], [u8; 6], u32)> = (0..2).map(|i| (f[i].gid(), f[i].mac, qp[i].id)).collect();
    for i in 0..2 {
        let p = &peers[1 - i];
        f[i].connect(&mut rig, &mut qp[i], sgid[i], (&p.0, p.1, p.2), 0x100);
    }
    Pair {
        rig,
        f,
        nq: [nq[0], nq[1]],
        cq: [cq[0], cq[1]],
        qp: [qp[0].clone(), qp[1].clone()],
        mr: [mr[0], mr[1]],
        canary,
    }
}

impl Observe for Pair {
    fn state(&mut self) -> String {
        self.rig.state()
    }
}

impl Pair {
    /// The NICs still move a message after whatever came before: a new CQ and QP on each
    /// (what came before may have broken the old ones, as it would on hardware), connected, a
    /// 4-KiB SEND, both completions ok and the bytes landed; and neither canary was written.
    pub fn still_moves_data(&mut self) {
        use bnxt_hsi::roce::layouts::{SqBase, SqSendHdr};
        use roce_support::{Rings, cqe_status};
        const MS: std::time::Duration = std::time::Duration::from_millis(1);
        let p = self;
        let sgid = [p.f[0].add_own_gid(&mut p.rig), p.f[1].add_own_gid(&mut p.rig)];
        let mut c0 = p.f[0].create_cq(&mut p.rig, 64, p.nq[0].id);
        let mut c1 = p.f[1].create_cq(&mut p.rig, 64, p.nq[1].id);
        let mut q0 = p.f[0].create_qp(&mut p.rig, Rings::fixed(64, 64), &c0);
        let mut q1 = p.f[1].create_qp(&mut p.rig, Rings::fixed(64, 64), &c1);
        let (gid0, mac0, gid1, mac1) = (p.f[0].gid(), p.f[0].mac, p.f[1].gid(), p.f[1].mac);
        p.f[0].connect(&mut p.rig, &mut q0, sgid[0], (&gid1, mac1, q1.id), 0x9000);
        p.f[1].connect(&mut p.rig, &mut q1, sgid[1], (&gid0, mac0, q0.id), 0x9000);
        let ((k0, b0), (k1, b1)) = (p.mr[0], p.mr[1]);
        let data: Vec<u8> = (0..4096u32).map(|i| (i as u8).wrapping_mul(31).wrapping_add(77)).collect();
        p.rig.poke(0, b0, &data);
        p.f[1].post_recv(&mut p.rig, &mut q1, 1, &[(b1 + 8192, k1, 4096)]);
        let (send, signal) = (SqBase::WQE_TYPE_SEND, SqSendHdr::FLAGS_SIGNAL_COMP);
        p.f[0].post_send(&mut p.rig, &mut q0, send, signal, &[(b0, k0, 4096)], None, None, 0);
        let s = c0.wait(&mut p.rig, 0, 100 * MS);
        let r = c1.wait(&mut p.rig, 1, 100 * MS);
        assert_eq!((cqe_status(&s), cqe_status(&r)), (0, 0), "the new pair's SEND completes ok");
        assert_eq!(p.rig.peek(1, b1 + 8192, 4096), data, "the new pair's bytes landed");
        for c in &p.canary {
            c.check();
        }
    }
}
