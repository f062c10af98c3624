//! The MSN search table entry the driver writes after the SQ when the chip retransmits from host
//! memory (P7 with `REQ_RETRANSMISSION_SUPPORT_HOST_MSN_TABLE`): roce_hsi.h `sq_msn_search`,
//! `SQ_MSN_SEARCH_*`; bnxt_re qplib_fp.h `bnxt_re_update_msn_tbl`, qplib_fp.c
//! `bnxt_qplib_fill_msn_search` (hardware-map §5.3).

use super::layouts::SqMsnSearch as M;

/// Bytes of one entry.
pub const ENTRY_BYTES: usize = 8;
/// Shift of the next-PSN field (`SQ_MSN_SEARCH_NEXT_PSN_SFT`).
pub const NEXT_PSN_SHIFT: u32 = 24;
/// Shift of the start-index field (`SQ_MSN_SEARCH_START_IDX_SFT`).
pub const START_IDX_SHIFT: u32 = 48;

/// One entry: the PSN range of one SEND/RDMA WQE and the SQ slot it starts at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsnEntry {
    /// First PSN of the WQE (24 bits).
    pub start_psn: u32,
    /// First PSN after the WQE (24 bits).
    pub next_psn: u32,
    /// SQ slot the WQE starts at.
    pub start_slot: u16,
}

impl MsnEntry {
    /// The 64-bit little-endian value.
    pub fn encode(&self) -> u64 {
        (u64::from(self.start_slot) << START_IDX_SHIFT)
            | ((u64::from(self.next_psn) << NEXT_PSN_SHIFT) & M::NEXT_PSN_MASK)
            | (u64::from(self.start_psn) & M::START_PSN_MASK)
    }

    /// The fields of a 64-bit value.
    pub fn decode(v: u64) -> MsnEntry {
        MsnEntry {
            start_psn: (v & M::START_PSN_MASK) as u32,
            next_psn: ((v & M::NEXT_PSN_MASK) >> NEXT_PSN_SHIFT) as u32,
            start_slot: ((v & M::START_IDX_MASK) >> START_IDX_SHIFT) as u16,
        }
    }
}

/// Entries in a QP's MSN table (bnxt_re ib_verbs.c `bnxt_re_qp_calculate_msn_psn_size`): the
/// SQ size rounded up to a power of two (static WQEs, `sq_size` in WQEs), or half of that
/// (variable WQEs, `sq_size` in 16-byte slots).
pub fn table_entries(sq_size: u32, variable_wqes: bool) -> u32 {
    let n = sq_size.max(1).next_power_of_two();
    if variable_wqes { (n / 2).max(1) } else { n }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_land_where_the_header_puts_them() {
        let e = MsnEntry { start_psn: 0x123456, next_psn: 0xabcdef, start_slot: 0x8001 };
        let v = e.encode();
        assert_eq!(v, 0x8001_abcdef_123456);
        assert_eq!(MsnEntry::decode(v), e);
        assert_eq!(table_entries(4096, false), 4096);
        assert_eq!(table_entries(4097, false), 8192);
        assert_eq!(table_entries(768, true), 512);
    }
}
