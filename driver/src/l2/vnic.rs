//! The default VNIC, its RSS context, and the L2 filter that steers the NIC's MAC to it, as
//! bnxt_en sets them up on P7 (bnxt.c `bnxt_init_chip` → `bnxt_hwrm_vnic_alloc`,
//! `__bnxt_setup_vnic_p5` → `bnxt_hwrm_vnic_ctx_alloc`, `bnxt_hwrm_vnic_set_rss_p5`,
//! `bnxt_hwrm_vnic_cfg`; then `bnxt_hwrm_set_vnic_filter` → `bnxt_hwrm_l2_filter_alloc`).
//!
//! - VNIC_ALLOC with `flags` DEFAULT (VNIC 0 is the function's default).
//! - One RSS context (`bnxt_get_nr_rss_ctxs`: one per 64 RX rings), and VNIC_RSS_CFG of it: the
//!   64-pair table of (RX ring, completion ring) every pair naming the one RX ring
//!   (`bnxt_fill_hw_rss_tbl_p5`), the 40-byte key (`HW_HASH_KEY_SIZE`), hash types IPv4 and
//!   IPv6 with TCP and UDP ports (bnxt_en's default with UDP RSS), Toeplitz ring selection,
//!   default hash mode, and on P7 `IPSEC_HASH_TYPE_CFG_SUPPORT`.
//! - VNIC_CFG with the default RX ring and completion ring (and their enables) and the MRU,
//!   which bnxt_en sets on P5 and later without `ENABLES_MRU`; `flags` the RoCE VNIC mode, as
//!   bnxt_en sets it on VNIC 0 while a RoCE driver is registered (`bnxt_get_roce_vnic_mode`).
//! - CFA_L2_FILTER_ALLOC: the receive path, outermost header, XDP off, and RoCE with L2 traffic
//!   (`TRAFFIC_ROCE`, which Broadcom's bnxt_en sends on RoCE-capable functions; upstream's sends
//!   none of the traffic bits), the MAC under an all-ones mask, to the VNIC.
//!
//! The MRU: Linux gives an RDMA port the path MTU `iboe_get_mtu(netdev MTU)` (include/rdma/
//! ib_addr.h), the MTU less 96 bytes of RoCE headers (GRH 40, UDP 8, BTH 12, XRC 4,
//! AtomicETH 28, ICRC 4); 4096 needs an MTU of 4192, and bnxt_en's MRU is the MTU plus an
//! Ethernet header and one VLAN tag (`ETH_HLEN + VLAN_HLEN`).

use bnxt_hsi::hwrm::layouts::{
    HwrmCfaL2FilterAllocInput as F, HwrmVnicAllocInput, HwrmVnicCfgInput as V, HwrmVnicRssCfgInput as S,
    HwrmVnicRssCosLbCtxAllocInput,
};
use zerocopy::FromZeros;

use crate::error::Error;
use crate::hwrm::Channel;
use crate::qp::modify::PATH_MTU;
use bnxt_pci::dma::DmaBuffer;

/// RoCE headers `iboe_get_mtu` takes off the MTU.
const ROCE_HEADERS: u16 = 40 + 8 + 12 + 4 + 28 + 4;
/// The MTU that gives a 4096-byte path MTU.
pub(crate) const ROCE_MTU: u16 = PATH_MTU as u16 + ROCE_HEADERS;
/// Ethernet header and one VLAN tag (`ETH_HLEN + VLAN_HLEN`).
const ETH_VLAN_HEADER: u16 = 14 + 4;
/// The VNIC's MRU.
pub(crate) const ROCE_MRU: u16 = ROCE_MTU + ETH_VLAN_HEADER;
/// Pairs in one RSS context's table on P5 and later (`BNXT_RSS_TABLE_ENTRIES_P5`).
const RSS_PAIRS: usize = 64;
/// Bytes of the RSS key (`HW_HASH_KEY_SIZE`).
const RSS_KEY_BYTES: usize = 40;
/// Where the key sits in the RSS page, after the table.
const RSS_KEY_OFFSET: usize = 512;
/// The key: 0x6d5a repeated, the symmetric Toeplitz key (a flow hashes alike both ways). With
/// one RX ring the hash picks nothing; any key does.
const RSS_KEY: [u8; RSS_KEY_BYTES] = {
    let mut k = [0u8; RSS_KEY_BYTES];
    let mut i = 0;
    while i < RSS_KEY_BYTES {
        k[i] = if i % 2 == 0 { 0x6d } else { 0x5a };
        i += 1;
    }
    k
};

const _: () = assert!(RSS_PAIRS * 4 <= RSS_KEY_OFFSET && RSS_KEY_OFFSET + RSS_KEY_BYTES <= bnxt_pci::dma::PAGE_SIZE);

/// The MRU for RoCE's path MTU, if the function's largest MTU allows it.
pub(crate) fn mru(nic: &str, max_mtu: u16) -> Result<u16, Error> {
    if max_mtu < ROCE_MTU {
        return Err(Error::Unsupported {
            nic: nic.to_string(),
            what: format!(
                "FUNC_QCFG allows an MTU of at most {max_mtu}; a {PATH_MTU}-byte RoCE path MTU needs {ROCE_MTU}"
            ),
        });
    }
    Ok(ROCE_MRU)
}

/// VNIC_ALLOC of the default VNIC; its id.
pub(crate) fn alloc(nic: &str, hwrm: &mut Channel) -> Result<u16, Error> {
    let req = HwrmVnicAllocInput { flags: HwrmVnicAllocInput::FLAGS_DEFAULT.into(), ..FromZeros::new_zeroed() };
    let id = hwrm.send(req)?.vnic_id.get();
    // VNIC ids are 16 bits wherever the interface names one (VNIC_CFG, RSS_CFG, filters).
    u16::try_from(id).map_err(|_| Error::Firmware {
        nic: nic.to_string(),
        what: format!("VNIC_ALLOC answered VNIC id {id}, beyond 16 bits"),
    })
}

/// VNIC_RSS_COS_LB_CTX_ALLOC; the context's id.
pub(crate) fn rss_ctx_alloc(hwrm: &mut Channel) -> Result<u16, Error> {
    Ok(hwrm.send(HwrmVnicRssCosLbCtxAllocInput::new_zeroed())?.rss_cos_lb_ctx_id.get())
}

/// VNIC_RSS_CFG of context `ctx` of `vnic`, its table and key written into `page` first.
pub(crate) fn rss_cfg(
    hwrm: &mut Channel,
    vnic: u16,
    ctx: u16,
    page: &DmaBuffer,
    (rx, cmpl): (u16, u16),
) -> Result<(), Error> {
    let mut table = [0u8; RSS_PAIRS * 4];
    for pair in table.chunks_exact_mut(4) {
        pair[..2].copy_from_slice(&rx.to_le_bytes());
        pair[2..].copy_from_slice(&cmpl.to_le_bytes());
    }
    page.write(0, &table);
    page.write(RSS_KEY_OFFSET, &RSS_KEY);
    let req = S {
        hash_type: (S::HASH_TYPE_IPV4
            | S::HASH_TYPE_TCP_IPV4
            | S::HASH_TYPE_UDP_IPV4
            | S::HASH_TYPE_IPV6
            | S::HASH_TYPE_TCP_IPV6
            | S::HASH_TYPE_UDP_IPV6)
            .into(),
        vnic_id: vnic.into(),
        ring_table_pair_index: 0,
        hash_mode_flags: S::HASH_MODE_FLAGS_DEFAULT,
        ring_grp_tbl_addr: page.iova().into(),
        hash_key_tbl_addr: page.iova_at(RSS_KEY_OFFSET).into(),
        rss_ctx_idx: ctx.into(),
        flags: S::FLAGS_IPSEC_HASH_TYPE_CFG_SUPPORT,
        ring_select_mode: S::RING_SELECT_MODE_TOEPLITZ,
        ..FromZeros::new_zeroed()
    };
    hwrm.send(req).map(|_| ())
}

/// VNIC_CFG of `vnic`: its default rings, `mru`, and RoCE VNIC mode `roce_mode`.
pub(crate) fn cfg(
    hwrm: &mut Channel,
    vnic: u16,
    (rx, cmpl): (u16, u16),
    mru: u16,
    roce_mode: u32,
) -> Result<(), Error> {
    let req = V {
        flags: roce_mode.into(),
        enables: (V::ENABLES_DEFAULT_RX_RING_ID | V::ENABLES_DEFAULT_CMPL_RING_ID).into(),
        vnic_id: vnic.into(),
        default_rx_ring_id: rx.into(),
        default_cmpl_ring_id: cmpl.into(),
        mru: mru.into(),
        ..FromZeros::new_zeroed()
    };
    hwrm.send(req).map(|_| ())
}

/// CFA_L2_FILTER_ALLOC of `mac` to `vnic`; the filter's id.
pub(crate) fn filter_alloc(hwrm: &mut Channel, vnic: u16, mac: [u8; 6]) -> Result<u64, Error> {
    let req = F {
        flags: (F::FLAGS_PATH_RX | F::FLAGS_OUTERMOST | F::FLAGS_XDP_DISABLE | F::FLAGS_TRAFFIC_ROCE).into(),
        enables: (F::ENABLES_L2_ADDR | F::ENABLES_L2_ADDR_MASK | F::ENABLES_DST_ID).into(),
        l2_addr: mac,
        l2_addr_mask: [0xff; 6],
        dst_id: vnic.into(),
        ..FromZeros::new_zeroed()
    };
    Ok(hwrm.send(req)?.l2_filter_id.get())
}
