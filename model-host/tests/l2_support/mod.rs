//! A small L2 driver for the model's tests, doing what Linux's bnxt_en does on a P7 with one ring
//! pair (bnxt.c `bnxt_init_chip`, `bnxt_hwrm_ring_alloc`, `bnxt_start_xmit`, `bnxt_poll_p5`):
//! reserve, allocate statistics contexts, an NQ, a completion ring and TX ring, an RX ring and its
//! completion ring, a default VNIC with RSS, an L2 filter and a receive mask; then post RX buffers,
//! send frames with long BDs, and read completions and NQ entries with their valid bits.

#![allow(dead_code)]

use bnxt_hsi::hwrm::layouts::*;
use bnxt_model::l2::doorbell::{L2DbKind, L2Doorbell};
use bnxt_model::roce::doorbell::KERNEL_DB_OFFSET;

use crate::common::{Pages, Rig, req, reserve_rings};

/// Entries of every ring the driver makes.
pub const RING_LEN: u32 = 64;
/// Bytes of each RX buffer.
pub const RX_BUF: u32 = 2048;
/// The NQ's MSI-X vector.
pub const VECTOR: u16 = 3;
/// `cq_handle` of the TX completion ring (bnxt.h `BNXT_SET_NQ_HDL`: type TX in bits 31:24).
pub const TX_HANDLE: u64 = 0x0100_0000;
/// `cq_handle` of the RX completion ring (type RX = 0).
pub const RX_HANDLE: u64 = 0x0000_0001;
/// The Toeplitz key of Microsoft's RSS verification suite.
pub const KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b,
    0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac,
    0x01, 0xfa,
];

/// A ring the driver consumes (NQ or completion ring): where it is and the raw consumer.
#[derive(Debug, Clone, Copy)]
pub struct Consumer {
    pub id: u16,
    pub addr: u64,
    pub cons: u32,
}

/// One NIC brought up for L2.
pub struct L2Nic {
    pub nic: usize,
    pub mac: [u8; 6],
    pub stats: [u32; 2],
    pub stats_addr: [u64; 2],
    pub nq: Consumer,
    pub tx_cq: Consumer,
    pub rx_cq: Consumer,
    pub tx: u16,
    pub tx_addr: u64,
    pub tx_prod: u32,
    pub rx: u16,
    pub rx_addr: u64,
    pub rx_prod: u32,
    pub rx_bufs: Vec<u64>,
    pub tx_bufs: Vec<u64>,
    pub vnic: u16,
    pub filter: u64,
    pub pages: Pages,
    /// Toggle of the latest notification per completion ring (TX, RX), echoed when arming.
    pub toggles: [u8; 2],
}

/// What [`L2Nic::bring_up`] should configure.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// VNIC_RSS_CFG `hash_type` (0: no RSS table, the default ring only).
    pub hash_type: u32,
    /// CFA_L2_SET_RX_MASK `mask`.
    pub rx_mask: u32,
    /// VNIC_CFG VLAN_STRIP_MODE.
    pub vlan_strip: bool,
    /// Register as bnxt_en does with the error recovery capability
    /// (`FLAGS_ERROR_RECOVERY_SUPPORT | FLAGS_MASTER_SUPPORT`, the ERROR_RECOVERY event asked for).
    pub error_recovery: bool,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup { hash_type: 0, rx_mask: HwrmCfaL2SetRxMaskInput::MASK_BCAST, vlan_strip: false, error_recovery: false }
    }
}

/// A doorbell value on the L2 path.
pub fn db(kind: L2DbKind, xid: u16, raw: u32, len: u32, toggle: u8) -> u64 {
    L2Doorbell::encode(kind, xid, raw % len, (raw / len) % 2 == 1, toggle)
}

impl L2Nic {
    /// Bring NIC `nic` up as bnxt_en does at probe and `ip link set up`.
    pub fn bring_up(rig: &mut Rig, nic: usize, setup: Setup) -> L2Nic {
        let mut pages = Pages::default();
        let mac = rig.world.nic_state(nic).mac;
        let mut rg: HwrmFuncDrvRgtrInput = req();
        rg.enables = (HwrmFuncDrvRgtrInput::ENABLES_OS_TYPE | HwrmFuncDrvRgtrInput::ENABLES_ASYNC_EVENT_FWD).into();
        rg.os_type = 0x24.into();
        rg.async_event_fwd[0] = (1 | 1 << 8).into(); // LINK_STATUS_CHANGE, RESET_NOTIFY
        if setup.error_recovery {
            type G = HwrmFuncDrvRgtrInput;
            rg.flags = (G::FLAGS_ERROR_RECOVERY_SUPPORT | G::FLAGS_MASTER_SUPPORT).into();
            rg.async_event_fwd[0] = (1 | 1 << 8 | 1 << 9).into(); // and ERROR_RECOVERY
        }
        rig.ok(nic, rg);
        let cfg = reserve_rings(1, 1, 2, 1, 2, 1, 1);
        rig.ok(nic, cfg);

        let mut stats = [0; 2];
        let mut stats_addr = [0; 2];
        for i in 0..2 {
            stats_addr[i] = pages.take(1);
            let mut s: HwrmStatCtxAllocInput = req();
            s.stats_dma_addr = stats_addr[i].into();
            s.stats_dma_length = 160.into();
            s.update_period_ms = 1000.into();
            stats[i] = rig.ok(nic, s).stat_ctx_id.get();
        }
        let ring = |rig: &mut Rig, pages: &mut Pages, ty: u8, f: &dyn Fn(&mut HwrmRingAllocInput)| -> (u16, u64) {
            let addr = pages.take(1);
            let mut r: HwrmRingAllocInput = req();
            r.ring_type = ty;
            r.length = RING_LEN.into();
            r.page_tbl_addr = addr.into();
            f(&mut r);
            (rig.ok(nic, r).ring_id.get(), addr)
        };
        type R = HwrmRingAllocInput;
        let (nq, nq_addr) = ring(rig, &mut pages, R::RING_TYPE_NQ, &|r| {
            r.logical_id = VECTOR.into();
            r.int_mode = R::INT_MODE_MSIX;
        });
        let mut ac: HwrmFuncCfgInput = req();
        ac.fid = 0xffff.into();
        ac.enables = HwrmFuncCfgInput::ENABLES_ASYNC_EVENT_CR.into();
        ac.async_event_cr = nq.into();
        rig.ok(nic, ac);
        let cq_of = |handle: u64| {
            move |r: &mut HwrmRingAllocInput| {
                r.nq_ring_id = nq.into();
                r.cq_handle = handle.into();
                r.enables = R::ENABLES_NQ_RING_ID_VALID.into();
            }
        };
        let (tx_cq, tx_cq_addr) = ring(rig, &mut pages, R::RING_TYPE_L2_CMPL, &cq_of(TX_HANDLE));
        // bnxt_en names the statistics context without the enable bit (bnxt.c
        // `hwrm_ring_alloc_send_msg`).
        let (tx, tx_addr) = ring(rig, &mut pages, R::RING_TYPE_TX, &|r| {
            r.cmpl_ring_id = tx_cq.into();
            r.stat_ctx_id = stats[0].into();
        });
        let (rx, rx_addr) = ring(rig, &mut pages, R::RING_TYPE_RX, &|r| {
            r.rx_buf_size = (RX_BUF as u16).into();
            r.nq_ring_id = nq.into();
            r.stat_ctx_id = stats[1].into();
            r.enables = (R::ENABLES_RX_BUF_SIZE_VALID | R::ENABLES_NQ_RING_ID_VALID).into();
        });
        let (rx_cq, rx_cq_addr) = ring(rig, &mut pages, R::RING_TYPE_L2_CMPL, &cq_of(RX_HANDLE));

        let mut va: HwrmVnicAllocInput = req();
        va.flags = HwrmVnicAllocInput::FLAGS_DEFAULT.into();
        let vnic = rig.ok(nic, va).vnic_id.get() as u16;
        if setup.hash_type != 0 {
            let ctx = rig.ok(nic, req::<HwrmVnicRssCosLbCtxAllocInput>()).rss_cos_lb_ctx_id.get();
            let table = pages.take(1);
            let key = pages.take(1);
            let pairs: Vec<u8> = (0..64).flat_map(|_| [rx.to_le_bytes(), rx_cq.to_le_bytes()].concat()).collect();
            rig.poke(nic, table, &pairs);
            rig.poke(nic, key, &KEY);
            let mut rss: HwrmVnicRssCfgInput = req();
            rss.vnic_id = vnic.into();
            rss.hash_type = setup.hash_type.into();
            rss.rss_ctx_idx = ctx.into();
            rss.ring_grp_tbl_addr = table.into();
            rss.hash_key_tbl_addr = key.into();
            rig.ok(nic, rss);
        }
        let mut vc: HwrmVnicCfgInput = req();
        type V = HwrmVnicCfgInput;
        vc.vnic_id = vnic.into();
        vc.enables = (V::ENABLES_DEFAULT_RX_RING_ID | V::ENABLES_DEFAULT_CMPL_RING_ID | V::ENABLES_MRU).into();
        vc.default_rx_ring_id = rx.into();
        vc.default_cmpl_ring_id = rx_cq.into();
        vc.mru = 1518.into();
        if setup.vlan_strip {
            vc.flags = V::FLAGS_VLAN_STRIP_MODE.into();
        }
        rig.ok(nic, vc);
        let mut fl: HwrmCfaL2FilterAllocInput = req();
        type A = HwrmCfaL2FilterAllocInput;
        fl.flags = (A::FLAGS_PATH_RX | A::FLAGS_OUTERMOST).into();
        fl.enables = (A::ENABLES_L2_ADDR | A::ENABLES_L2_ADDR_MASK | A::ENABLES_DST_ID).into();
        fl.l2_addr = mac;
        fl.l2_addr_mask = [0xff; 6];
        fl.dst_id = vnic.into();
        let filter = rig.ok(nic, fl).l2_filter_id.get();
        let mut m: HwrmCfaL2SetRxMaskInput = req();
        m.vnic_id = u32::from(vnic).into();
        m.mask = setup.rx_mask.into();
        rig.ok(nic, m);

        let mut l2 = L2Nic {
            nic,
            mac,
            stats,
            stats_addr,
            nq: Consumer { id: nq, addr: nq_addr, cons: 0 },
            tx_cq: Consumer { id: tx_cq, addr: tx_cq_addr, cons: 0 },
            rx_cq: Consumer { id: rx_cq, addr: rx_cq_addr, cons: 0 },
            tx,
            tx_addr,
            tx_prod: 0,
            rx,
            rx_addr,
            rx_prod: 0,
            rx_bufs: Vec::new(),
            tx_bufs: Vec::new(),
            vnic,
            filter,
            pages,
            toggles: [0; 2],
        };
        l2.rx_bufs = (0..RING_LEN).map(|_| l2.pages.take(1)).collect();
        l2.tx_bufs = (0..RING_LEN).map(|_| l2.pages.take(1)).collect();
        // As bnxt_en after allocation: NQ consumer with interrupts masked, CQs armed, then
        // `bnxt_enable_int` arms the NQ.
        l2.ring(rig, db(L2DbKind::NqMask, nq, 0, RING_LEN, 0));
        l2.ring(rig, db(L2DbKind::CqArmAll, tx_cq, 0, RING_LEN, 0));
        l2.ring(rig, db(L2DbKind::CqArmAll, rx_cq, 0, RING_LEN, 0));
        l2.ring(rig, db(L2DbKind::NqArm, nq, 0, RING_LEN, 0));
        rig.world.take_interrupts(nic);
        l2
    }

    /// Store a doorbell.
    pub fn ring(&self, rig: &mut Rig, value: u64) {
        rig.world.bar_write(self.nic, 2, KERNEL_DB_OFFSET, &value.to_le_bytes());
    }

    /// Post `n` RX buffers (`RX_BUF` bytes each, opaque = ring index) and ring the SRQ doorbell.
    pub fn post_rx(&mut self, rig: &mut Rig, n: u32) {
        for _ in 0..n {
            let idx = self.rx_prod % RING_LEN;
            let mut bd = Vec::with_capacity(16);
            bd.extend_from_slice(&(0x4 | (RX_BUF << 16)).to_le_bytes());
            bd.extend_from_slice(&idx.to_le_bytes());
            bd.extend_from_slice(&self.rx_bufs[idx as usize].to_le_bytes());
            rig.poke(self.nic, self.rx_addr + 16 * u64::from(idx), &bd);
            self.rx_prod = (self.rx_prod + 1) % (2 * RING_LEN);
        }
        self.ring(rig, db(L2DbKind::Srq, self.rx, self.rx_prod, RING_LEN, 0));
    }

    /// Queue `frame` on the TX ring as bnxt_en does (long BD, extended BD with `lflags`, `mss`
    /// and `cfa_meta`, the frame in one buffer), `flags` extra first-BD flags; the opaque.
    pub fn queue_tx(&mut self, rig: &mut Rig, frame: &[u8], lflags: u32, mss: u32, cfa_meta: u32, flags: u32) -> u32 {
        let idx = self.tx_prod % RING_LEN;
        let buf = self.tx_bufs[idx as usize];
        rig.poke(self.nic, buf, frame);
        let opaque = 0x5500_0000 | (2 << 16) | idx;
        let first = (frame.len() as u32) << 16 | 0x10 | (1 << 6) | (2 << 8) | flags;
        let mut bd = Vec::with_capacity(32);
        bd.extend_from_slice(&first.to_le_bytes());
        bd.extend_from_slice(&opaque.to_le_bytes());
        bd.extend_from_slice(&buf.to_le_bytes());
        rig.poke(self.nic, self.tx_addr + 16 * u64::from(idx), &bd);
        let next = (idx + 1) % RING_LEN;
        let mut ext = Vec::with_capacity(16);
        for w in [lflags, mss, 0, cfa_meta] {
            ext.extend_from_slice(&w.to_le_bytes());
        }
        rig.poke(self.nic, self.tx_addr + 16 * u64::from(next), &ext);
        self.tx_prod = (self.tx_prod + 2) % (2 * RING_LEN);
        opaque
    }

    /// Ring the TX doorbell with the current producer.
    pub fn kick_tx(&self, rig: &mut Rig) {
        self.ring(rig, db(L2DbKind::Sq, self.tx, self.tx_prod, RING_LEN, 0));
    }

    /// Send `frame` (no offloads): the opaque.
    pub fn send(&mut self, rig: &mut Rig, frame: &[u8]) -> u32 {
        let o = self.queue_tx(rig, frame, 0, 0, 0, 0);
        self.kick_tx(rig);
        o
    }

    /// Read the valid entries of a consumed ring past its consumer (16 bytes each), moving the
    /// consumer past them (no doorbell).
    pub fn drain(rig: &Rig, nic: usize, c: &mut Consumer) -> Vec<[u8; 16]> {
        let mut out = Vec::new();
        loop {
            let idx = c.cons % RING_LEN;
            let e = rig.peek(nic, c.addr + 16 * u64::from(idx), 16);
            let want = u8::from(c.cons < RING_LEN);
            if e[8] & 1 != want {
                return out;
            }
            out.push(e.try_into().unwrap());
            c.cons = (c.cons + 1) % (2 * RING_LEN);
        }
    }

    /// Take the NQ's new entries and give them back with NQ_ARM.
    pub fn take_nq(&mut self, rig: &mut Rig) -> Vec<[u8; 16]> {
        let mut c = self.nq;
        let e = L2Nic::drain(rig, self.nic, &mut c);
        self.nq = c;
        self.ring(rig, db(L2DbKind::NqArm, c.id, c.cons, RING_LEN, 0));
        e
    }

    /// Take a completion ring's new entries (0 = TX, 1 = RX), give them back and re-arm it with
    /// the toggle of `toggle` (the latest notification's).
    pub fn take_cq(&mut self, rig: &mut Rig, which: usize) -> Vec<[u8; 16]> {
        let mut c = if which == 0 { self.tx_cq } else { self.rx_cq };
        let e = L2Nic::drain(rig, self.nic, &mut c);
        if which == 0 {
            self.tx_cq = c
        } else {
            self.rx_cq = c
        }
        self.ring(rig, db(L2DbKind::CqArmAll, c.id, c.cons, RING_LEN, self.toggles[which]));
        e
    }

    /// Note the toggle an NQ notification carried for the completion ring it names.
    pub fn note(&mut self, cn: &[u8; 16]) -> Option<usize> {
        let ty = u16::from_le_bytes([cn[0], cn[1]]);
        if ty & 0x3f != 0x30 {
            return None;
        }
        let handle = u64::from(u32::from_le_bytes(cn[4..8].try_into().unwrap()))
            | u64::from(u32::from_le_bytes(cn[12..16].try_into().unwrap())) << 32;
        let which = if handle == TX_HANDLE { 0 } else { 1 };
        self.toggles[which] = ((ty >> 6) & 3) as u8;
        Some(which)
    }
}

/// An Ethernet frame from `src` to `dst` with EtherType `ethertype` and `payload`.
pub fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An IPv4/UDP frame between the given endpoints, checksums left zero (for offload tests) or
/// filled with `fill`.
pub fn udp4(
    dst: [u8; 6],
    src: [u8; 6],
    ips: ([u8; 4], [u8; 4]),
    ports: (u16, u16),
    payload: &[u8],
    fill: bool,
) -> Vec<u8> {
    let total = 20 + 8 + payload.len();
    let mut ip = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 1, 0x40, 0, 64, 17, 0, 0];
    ip.extend_from_slice(&ips.0);
    ip.extend_from_slice(&ips.1);
    let udp_len = (8 + payload.len()) as u16;
    ip.extend_from_slice(&ports.0.to_be_bytes());
    ip.extend_from_slice(&ports.1.to_be_bytes());
    ip.extend_from_slice(&udp_len.to_be_bytes());
    ip.extend_from_slice(&[0, 0]);
    ip.extend_from_slice(payload);
    let mut f = eth(dst, src, 0x0800, &ip);
    if fill {
        bnxt_model::l2::frame::fill_ipv4_checksum(&mut f);
        bnxt_model::l2::frame::fill_l4_checksum(&mut f);
    }
    f
}
