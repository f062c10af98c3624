//! Context memory ("backing store", V2 as P7 uses it) given to the firmware by the driver.
//!
//! Sources: bnxt_hsi.h `FUNC_BACKING_STORE_QCAPS_V2_REQ_TYPE_*` and CFG_V2 fields; bnxt.c
//! `bnxt_alloc_ctx_mem`, `bnxt_setup_ctxm_pg_tbls`, `bnxt_hwrm_set_pg_attr`; bnxt.h
//! `MAX_CTX_PAGES`, `BNXT_PAGE_SIZE`; roce_hsi.h `ptu_pte`/`ptu_pde` (hardware-map §3.3).

/// A context type as `FUNC_BACKING_STORE_QCAPS_V2`/`CFG_V2` name it in their `type` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u16)]
pub enum CtxType {
    /// Queue-pair contexts (split 0: L2 QPs, 1: QP1 QPs, 2: fast-modify QPs).
    Qp = 0x0,
    /// Shared receive queue contexts.
    Srq = 0x1,
    /// Completion queue contexts.
    Cq = 0x2,
    /// VNIC contexts.
    Vnic = 0x3,
    /// Statistics contexts.
    Stat = 0x4,
    /// Slow-path TQM rings.
    SpTqmRing = 0x5,
    /// Fast-path TQM rings (one instance per bit of `instance_bit_map`).
    FpTqmRing = 0x6,
    /// Memory regions, windows and address vectors (split 0: number of AV entries).
    Mrav = 0xe,
    /// Timers.
    Tim = 0xf,
    /// TX checksum contexts.
    TxCk = 0x13,
    /// RX checksum contexts.
    RxCk = 0x14,
    /// Mid-path TQM rings.
    MpTqmRing = 0x15,
}

impl CtxType {
    /// Every type the model offers, in ascending type order (the order bnxt_en configures them).
    pub const ALL: [CtxType; 12] = [
        CtxType::Qp,
        CtxType::Srq,
        CtxType::Cq,
        CtxType::Vnic,
        CtxType::Stat,
        CtxType::SpTqmRing,
        CtxType::FpTqmRing,
        CtxType::Mrav,
        CtxType::Tim,
        CtxType::TxCk,
        CtxType::RxCk,
        CtxType::MpTqmRing,
    ];

    /// The type for a wire value.
    pub fn from_value(v: u16) -> Option<CtxType> {
        Self::ALL.iter().copied().find(|t| *t as u16 == v)
    }

    /// The type's name as the header spells it (`QP`, `MRAV`, …).
    pub fn name(self) -> &'static str {
        match self {
            CtxType::Qp => "QP",
            CtxType::Srq => "SRQ",
            CtxType::Cq => "CQ",
            CtxType::Vnic => "VNIC",
            CtxType::Stat => "STAT",
            CtxType::SpTqmRing => "SP_TQM_RING",
            CtxType::FpTqmRing => "FP_TQM_RING",
            CtxType::Mrav => "MRAV",
            CtxType::Tim => "TIM",
            CtxType::TxCk => "TX_CK",
            CtxType::RxCk => "RX_CK",
            CtxType::MpTqmRing => "MP_TQM_RING",
        }
    }
}

/// `next_valid_type` value ending the QCAPS_V2 walk.
pub const TYPE_INVALID: u16 = 0xffff;
/// Page size of context memory (`BNXT_PAGE_SIZE`).
pub const PAGE_SIZE: u64 = 4096;
/// Entries in one page-table page (`MAX_CTX_PAGES`: 4096 / 8).
pub const PTES_PER_PAGE: u64 = 512;
/// Valid bit of a page-table entry (`PTU_PTE_VALID`, also `PTU_PDE_VALID`).
pub const PTE_VALID: u64 = 0x1;
/// Last-page bit of a ring page-table entry (`PTU_PTE_LAST`); not used for context memory.
pub const PTE_LAST: u64 = 0x2;
/// Next-to-last bit of a ring page-table entry (`PTU_PTE_NEXT_TO_LAST`).
pub const PTE_NEXT_TO_LAST: u64 = 0x4;
/// Mask of the address bits of a page-table entry (4-KB aligned).
pub const PTE_ADDR_MASK: u64 = !0xfff;
/// `page_size_pbl_level` bits 3:0: the number of table levels (0, 1 or 2).
pub const PBL_LEVEL_MASK: u8 = 0x0f;
/// `page_size_pbl_level` bits 7:4: the page size code.
pub const PAGE_SIZE_SHIFT: u8 = 4;
/// Page size code 0: 4 KB (`..._PG_4K`).
pub const PAGE_SIZE_CODE_4K: u8 = 0;

/// Bytes of a page of the given `page_size_pbl_level` size code (0 = 4K, 1 = 8K, 2 = 64K,
/// 3 = 2M, 4 = 8M, 5 = 1G), or `None` for an undefined code.
pub fn page_size_bytes(code: u8) -> Option<u64> {
    match code {
        0 => Some(4 << 10),
        1 => Some(8 << 10),
        2 => Some(64 << 10),
        3 => Some(2 << 20),
        4 => Some(8 << 20),
        5 => Some(1 << 30),
        _ => None,
    }
}

/// How bnxt_en sizes the RoCE context types (bnxt.c `bnxt_alloc_ctx_mem`).
pub mod sizing {
    /// Extra QPs beyond L2 and QP1 that bnxt_en asks for when RoCE is on (`BNXT_MAX_QP`... 64K cap).
    pub const MAX_EXTRA_QPS: u32 = 65_536;
    /// Extra SRQs bnxt_en asks for (`BNXT_MAX_SRQ` cap, 8K).
    pub const MAX_EXTRA_SRQS: u32 = 8_192;
    /// Cap on memory regions (`BNXT_MAX_MR` region, 256K).
    pub const MAX_MRS: u32 = 262_144;
    /// Cap on address vectors (128K).
    pub const MAX_AVS: u32 = 131_072;
}
