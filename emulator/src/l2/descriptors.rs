//! The L2 ring formats: transmit buffer descriptors, receive buffer descriptors, and the
//! transmit and receive completions the device writes.
//!
//! The published bnxt_hsi.h does not carry these; their public definitions are Linux's
//! drivers/net/ethernet/broadcom/bnxt/bnxt.h (`struct tx_bd`, `tx_bd_ext`, `rx_bd`, `tx_cmp`,
//! `rx_cmp`, `rx_cmp_ext`, with the field masks used here) and, for the P7 receive completion,
//! the `rx_pkt_v3_cmpl`/`rx_pkt_v3_cmpl_hi` and `rx_prod_pkt_bd` of Broadcom's HSI as published
//! with DPDK (drivers/net/bnxt/hsi_struct_def_dpdk.h) and iPXE (src/drivers/net/bnxt/bnxt.h).
//! Every entry is 16 bytes; a receive completion takes two ring entries.

use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Bytes of one ring entry (BD, completion, NQ entry).
pub const ENTRY_BYTES: usize = 16;

/// A transmit BD (`struct tx_bd`): the first BD of a packet (long or short) or a fragment.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxBd {
    /// `tx_bd_len_flags_type`: type, flags, BD count, length hint, length.
    pub len_flags_type: U32,
    /// `tx_bd_opaque`: echoed in the packet's completion.
    pub opaque: U32,
    /// `tx_bd_haddr`: the buffer.
    pub haddr: U64,
}

/// `TX_BD_TYPE` mask.
pub const TX_BD_TYPE_MASK: u32 = 0x3f;
/// `TX_BD_TYPE_SHORT_TX_BD`.
pub const TX_BD_TYPE_SHORT: u32 = 0x00;
/// `TX_BD_TYPE_LONG_TX_BD`.
pub const TX_BD_TYPE_LONG: u32 = 0x10;
/// `TX_BD_FLAGS_PACKET_END`.
pub const TX_BD_FLAGS_PACKET_END: u32 = 1 << 6;
/// `TX_BD_FLAGS_NO_CMPL`: no completion for this packet.
pub const TX_BD_FLAGS_NO_CMPL: u32 = 1 << 7;
/// `TX_BD_FLAGS_BD_CNT` (BDs of the packet, the extended BD included).
pub const TX_BD_FLAGS_BD_CNT_MASK: u32 = 0x1f << 8;
/// Shift of the BD count.
pub const TX_BD_FLAGS_BD_CNT_SHIFT: u32 = 8;
/// Shift of `TX_BD_LEN`.
pub const TX_BD_LEN_SHIFT: u32 = 16;

/// The extended BD that follows a long first BD (`struct tx_bd_ext`).
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxBdExt {
    /// `tx_bd_hsize_lflags`: offload flags and the LSO header size.
    pub hsize_lflags: U32,
    /// `tx_bd_mss`.
    pub mss: U32,
    /// `tx_bd_cfa_action`.
    pub cfa_action: U32,
    /// `tx_bd_cfa_meta`: VLAN tag to insert.
    pub cfa_meta: U32,
}

/// `TX_BD_FLAGS_TCP_UDP_CHKSUM`.
pub const TX_BD_FLAGS_TCP_UDP_CHKSUM: u32 = 1 << 0;
/// `TX_BD_FLAGS_IP_CKSUM`.
pub const TX_BD_FLAGS_IP_CKSUM: u32 = 1 << 1;
/// `TX_BD_FLAGS_NO_CRC`.
pub const TX_BD_FLAGS_NO_CRC: u32 = 1 << 2;
/// `TX_BD_FLAGS_STAMP`.
pub const TX_BD_FLAGS_STAMP: u32 = 1 << 3;
/// `TX_BD_FLAGS_T_IP_CHKSUM`.
pub const TX_BD_FLAGS_T_IP_CHKSUM: u32 = 1 << 4;
/// `TX_BD_FLAGS_LSO`.
pub const TX_BD_FLAGS_LSO: u32 = 1 << 5;
/// `TX_BD_FLAGS_IPID_FMT`.
pub const TX_BD_FLAGS_IPID_FMT: u32 = 1 << 6;
/// `TX_BD_FLAGS_T_IPID`.
pub const TX_BD_FLAGS_T_IPID: u32 = 1 << 7;
/// `TX_BD_HSIZE` mask: the LSO header length in 16-bit words (bnxt_en stores `hdr_len << 15`).
pub const TX_BD_HSIZE_MASK: u32 = 0xff << 16;
/// Shift of `TX_BD_HSIZE`.
pub const TX_BD_HSIZE_SHIFT: u32 = 16;
/// `TX_BD_CFA_META_VID_MASK`.
pub const TX_BD_CFA_META_VID_MASK: u32 = 0xfff;
/// `TX_BD_CFA_META_PRI_MASK`.
pub const TX_BD_CFA_META_PRI_MASK: u32 = 0xf << 12;
/// `TX_BD_CFA_META_TPID_MASK`.
pub const TX_BD_CFA_META_TPID_MASK: u32 = 3 << 16;
/// Shift of the TPID selector.
pub const TX_BD_CFA_META_TPID_SHIFT: u32 = 16;
/// `TX_BD_CFA_META_KEY` mask.
pub const TX_BD_CFA_META_KEY_MASK: u32 = 0xf << 28;
/// `TX_BD_CFA_META_KEY_VLAN`.
pub const TX_BD_CFA_META_KEY_VLAN: u32 = 1 << 28;

/// A receive BD (`struct rx_bd`, `rx_prod_pkt_bd`).
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxBd {
    /// `rx_bd_len_flags_type`.
    pub len_flags_type: U32,
    /// `rx_bd_opaque`: echoed in the completion.
    pub opaque: U32,
    /// `rx_bd_haddr`.
    pub haddr: U64,
}

/// `RX_BD_TYPE` mask.
pub const RX_BD_TYPE_MASK: u32 = 0x3f;
/// `RX_BD_TYPE_RX_PACKET_BD` (`RX_PROD_PKT_BD_TYPE_RX_PROD_PKT`).
pub const RX_BD_TYPE_RX_PACKET: u32 = 0x4;
/// `RX_BD_FLAGS_SOP` (`RX_PROD_PKT_BD_FLAGS_SOP_PAD`): leave 2 bytes before the frame.
pub const RX_BD_FLAGS_SOP_PAD: u32 = 1 << 6;
/// Shift of `RX_BD_LEN`.
pub const RX_BD_LEN_SHIFT: u32 = 16;

/// A transmit completion (`struct tx_cmp`).
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxCmpl {
    /// `tx_cmp_flags_type`.
    pub flags_type: U32,
    /// `tx_cmp_opaque`: the first BD's opaque.
    pub opaque: U32,
    /// `tx_cmp_errors_v`: valid bit and errors.
    pub errors_v: U32,
    /// `sq_cons_idx` (coalesced completions only).
    pub sq_cons_idx: U32,
}

/// `CMP_TYPE_TX_L2_CMP`.
pub const CMP_TYPE_TX_L2: u32 = 0;
/// `TX_CMP_FLAGS_ERROR`.
pub const TX_CMP_FLAGS_ERROR: u32 = 1 << 6;
/// `TX_CMP_ERRORS_BUFFER_ERROR_BAD_FORMAT` (in the `errors_v` word).
pub const TX_CMP_ERRORS_BAD_FORMAT: u32 = 2 << 1;
/// `TX_CMP_ERRORS_ZERO_LENGTH_PKT`.
pub const TX_CMP_ERRORS_ZERO_LENGTH_PKT: u32 = 1 << 4;
/// `TX_CMP_ERRORS_EXCESSIVE_BD_LEN`.
pub const TX_CMP_ERRORS_EXCESSIVE_BD_LEN: u32 = 1 << 5;
/// `TX_CMP_ERRORS_DMA_ERROR`.
pub const TX_CMP_ERRORS_DMA_ERROR: u32 = 1 << 6;

/// The first half of a P7 receive completion (`rx_pkt_v3_cmpl`; Linux `struct rx_cmp`).
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxCmplV3 {
    /// `flags_type` (low 16 bits) and `len` (high 16 bits).
    pub len_flags_type: U32,
    /// `opaque`: the BD's opaque.
    pub opaque: U32,
    /// `rss_hash_type_agg_bufs_v1` (low 16 bits) and `metadata1_payload_offset` (high 16 bits).
    pub misc_v1: U32,
    /// `rss_hash`.
    pub rss_hash: U32,
}

/// `RX_PKT_V3_CMPL_TYPE_RX_L2_V3` (Linux `CMP_TYPE_RX_L2_V3_CMP`).
pub const CMP_TYPE_RX_L2_V3: u32 = 0x17;
/// `RX_PKT_V3_CMPL_FLAGS_ERROR`.
pub const RX_CMP_FLAGS_ERROR: u32 = 1 << 6;
/// `RX_PKT_V3_CMPL_FLAGS_RSS_VALID`.
pub const RX_CMP_FLAGS_RSS_VALID: u32 = 1 << 10;
/// Shift of `RX_PKT_V3_CMPL_FLAGS_ITYPE`.
pub const RX_CMP_ITYPE_SHIFT: u32 = 12;
/// Shift of the length.
pub const RX_CMP_LEN_SHIFT: u32 = 16;
/// `RX_PKT_V3_CMPL_RSS_HASH_TYPE` shift (in `misc_v1`): bnxt_en reads its top four bits
/// (`RX_CMP_V3_RSS_EXT_OP_LEGACY`, bits 15:12) as the hash's "extended op".
pub const RX_CMP_RSS_EXT_OP_SHIFT: u32 = 12;
/// `RX_PKT_V3_CMPL_METADATA1_VALID` (in `misc_v1`).
pub const RX_CMP_METADATA1_VALID: u32 = 0x8 << 28;
/// `RX_PKT_V3_CMPL_METADATA1_TPID_SEL` shift (in `misc_v1`).
pub const RX_CMP_METADATA1_TPID_SHIFT: u32 = 28;

/// The second half of a P7 receive completion (`rx_pkt_v3_cmpl_hi`; Linux `struct rx_cmp_ext`).
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxCmplV3Hi {
    /// `flags2`.
    pub flags2: U32,
    /// `metadata2`.
    pub metadata2: U32,
    /// `errors_v2` (low 16 bits) and `metadata0` (high 16 bits: the stripped VLAN TCI).
    pub errors_v2: U32,
    /// `timestamp`.
    pub timestamp: U32,
}

/// `RX_PKT_V3_CMPL_HI_FLAGS2_IP_CS_CALC`.
pub const RX_CMP_FLAGS2_IP_CS_CALC: u32 = 0x1;
/// `RX_PKT_V3_CMPL_HI_FLAGS2_L4_CS_CALC`.
pub const RX_CMP_FLAGS2_L4_CS_CALC: u32 = 0x2;
/// `RX_PKT_V3_CMPL_HI_FLAGS2_IP_TYPE` (set: IPv6).
pub const RX_CMP_FLAGS2_IP_TYPE: u32 = 0x100;
/// `RX_PKT_V3_CMPL_HI_ERRORS_BUFFER_ERROR_DID_NOT_FIT`.
pub const RX_CMP_ERRORS_DID_NOT_FIT: u32 = 0x1 << 1;
/// `RX_PKT_V3_CMPL_HI_ERRORS_IP_CS_ERROR`.
pub const RX_CMP_ERRORS_IP_CS: u32 = 0x10;
/// `RX_PKT_V3_CMPL_HI_ERRORS_L4_CS_ERROR`.
pub const RX_CMP_ERRORS_L4_CS: u32 = 0x20;
/// Shift of `metadata0` in the `errors_v2` word.
pub const RX_CMP_METADATA0_SHIFT: u32 = 16;

/// `NQ_CN_TYPE_CQ_NOTIFICATION` (Linux `struct nqe_cn`; the same layout as roce_hsi.h `nq_cn`).
pub const NQ_CN_TYPE_CQ_NOTIFICATION: u16 = 0x30;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_sixteen_bytes() {
        assert_eq!(size_of::<TxBd>(), ENTRY_BYTES);
        assert_eq!(size_of::<TxBdExt>(), ENTRY_BYTES);
        assert_eq!(size_of::<RxBd>(), ENTRY_BYTES);
        assert_eq!(size_of::<TxCmpl>(), ENTRY_BYTES);
        assert_eq!(size_of::<RxCmplV3>(), ENTRY_BYTES);
        assert_eq!(size_of::<RxCmplV3Hi>(), ENTRY_BYTES);
    }
}
