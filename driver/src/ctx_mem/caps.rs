//! What the firmware says about each context type: the HWRM_FUNC_BACKING_STORE_QCAPS_V2 walk.
//!
//! Sources: bnxt.c `bnxt_hwrm_func_backing_store_qcaps_v2` (start at type 0, follow
//! `next_valid_type`, stop at `BNXT_CTX_V2_MAX`; skip types without TYPE_VALID and those with
//! DRIVER_MANAGED_MEMORY), `bnxt_init_ctx_mem_type` (the fields kept, at most
//! `BNXT_MAX_SPLIT_ENTRY` split entries), `bnxt_init_ctx_initializer` (the init value counts only
//! with ENABLE_CTX_KIND_INIT, its offset is in 4-byte units) and `__bnxt_init_ctx_mem` (a zero
//! init value initialises nothing).

use std::collections::BTreeMap;

use bnxt_hsi::hwrm::layouts::{HwrmFuncBackingStoreQcapsV2Input, HwrmFuncBackingStoreQcapsV2Output as Qcaps};
use zerocopy::FromZeros;

use crate::error::Error;
use crate::hwrm::Channel;

/// `BNXT_CTX_V2_MAX`: the walk stops at the first type at or past this (`RIGP1_TRACE` + 1).
pub(crate) const V2_MAX: u16 = Qcaps::TYPE_RIGP1_TRACE + 1;
/// `BNXT_MAX_SPLIT_ENTRY`.
pub(crate) const MAX_SPLIT: usize = 4;

/// The byte every entry of a context type starts with, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CtxInit {
    /// The value.
    pub value: u8,
    /// Its byte offset in each entry.
    pub offset: usize,
}

/// One context type as QCAPS_V2 describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CtxCaps {
    /// The type (`FUNC_BACKING_STORE_QCAPS_V2_REQ_TYPE_*`).
    pub ty: u16,
    /// Bytes per entry.
    pub entry_size: u16,
    /// `instance_bit_map`: one instance per set bit (0 means one instance, number 0).
    pub instance_bmap: u32,
    /// Entry initialisation, if the firmware asks for one.
    pub init: Option<CtxInit>,
    /// Entry counts are rounded up to a multiple of this (0: no rounding).
    pub entry_multiple: u8,
    /// Most entries.
    pub max_entries: u32,
    /// Fewest entries.
    pub min_entries: u32,
    /// The split entries (`split_entry_0..3`), as many as `subtype_valid_cnt` says, the rest 0.
    pub split: [u32; MAX_SPLIT],
    /// How many split entries count.
    pub split_cnt: u8,
}

impl CtxCaps {
    /// Read one QCAPS_V2 answer.
    pub(crate) fn from_qcaps(resp: &Qcaps) -> CtxCaps {
        let flags = resp.flags.get();
        let init = (flags & Qcaps::FLAGS_ENABLE_CTX_KIND_INIT != 0 && resp.ctx_init_value != 0)
            .then(|| CtxInit { value: resp.ctx_init_value, offset: usize::from(resp.ctx_init_offset) * 4 });
        let split_cnt = resp.subtype_valid_cnt.min(MAX_SPLIT as u8);
        let all =
            [resp.split_entry_0.get(), resp.split_entry_1.get(), resp.split_entry_2.get(), resp.split_entry_3.get()];
        let mut split = [0; MAX_SPLIT];
        split[..usize::from(split_cnt)].copy_from_slice(&all[..usize::from(split_cnt)]);
        CtxCaps {
            ty: resp.type_.get(),
            entry_size: resp.entry_size.get(),
            instance_bmap: resp.instance_bit_map.get(),
            init,
            entry_multiple: resp.entry_multiple,
            max_entries: resp.max_num_entries.get(),
            min_entries: resp.min_num_entries.get(),
            split,
            split_cnt,
        }
    }

    /// The instance numbers to configure, ascending.
    pub(crate) fn instances(&self) -> Vec<u16> {
        if self.instance_bmap == 0 {
            return vec![0];
        }
        (0..32).filter(|i| self.instance_bmap & (1 << i) != 0).collect()
    }
}

/// Walk the context types the firmware offers; the usable ones by type.
pub(crate) fn walk(nic: &str, ch: &mut Channel) -> Result<BTreeMap<u16, CtxCaps>, Error> {
    let mut caps = BTreeMap::new();
    let mut ty = 0u16;
    while ty < V2_MAX {
        let resp = ch.send(HwrmFuncBackingStoreQcapsV2Input { type_: ty.into(), ..FromZeros::new_zeroed() })?;
        let flags = resp.flags.get();
        let next = resp.next_valid_type.get();
        if flags & Qcaps::FLAGS_TYPE_VALID != 0 && flags & Qcaps::FLAGS_DRIVER_MANAGED_MEMORY == 0 {
            if resp.type_.get() != ty {
                return Err(Error::Firmware {
                    nic: nic.to_string(),
                    what: format!(
                        "FUNC_BACKING_STORE_QCAPS_V2 for type 0x{ty:x} answered for type 0x{:x}",
                        resp.type_.get()
                    ),
                });
            }
            caps.insert(ty, CtxCaps::from_qcaps(&resp));
        }
        if next <= ty {
            // bnxt_en would ask again forever; a walk must move forward.
            return Err(Error::Firmware {
                nic: nic.to_string(),
                what: format!(
                    "FUNC_BACKING_STORE_QCAPS_V2 for type 0x{ty:x} gives next_valid_type 0x{next:x}, which does not move forward"
                ),
            });
        }
        ty = next;
    }
    Ok(caps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_init_byte_counts_only_when_flagged_and_nonzero_and_its_offset_is_in_dwords() {
        let mut r = Qcaps::new_zeroed();
        r.flags = (Qcaps::FLAGS_TYPE_VALID | Qcaps::FLAGS_ENABLE_CTX_KIND_INIT).into();
        r.ctx_init_value = 0xff;
        r.ctx_init_offset = 3;
        assert_eq!(CtxCaps::from_qcaps(&r).init, Some(CtxInit { value: 0xff, offset: 12 }));
        r.flags = Qcaps::FLAGS_TYPE_VALID.into();
        assert_eq!(CtxCaps::from_qcaps(&r).init, None);
        r.flags = (Qcaps::FLAGS_TYPE_VALID | Qcaps::FLAGS_ENABLE_CTX_KIND_INIT).into();
        r.ctx_init_value = 0;
        assert_eq!(CtxCaps::from_qcaps(&r).init, None);
    }

    #[test]
    fn only_the_valid_split_entries_are_kept() {
        let mut r = Qcaps::new_zeroed();
        r.subtype_valid_cnt = 2;
        r.split_entry_0 = 10.into();
        r.split_entry_1 = 20.into();
        r.split_entry_2 = 30.into();
        let c = CtxCaps::from_qcaps(&r);
        assert_eq!((c.split, c.split_cnt), ([10, 20, 0, 0], 2));
        r.subtype_valid_cnt = 9;
        assert_eq!(CtxCaps::from_qcaps(&r).split_cnt, 4);
    }

    #[test]
    fn instances_follow_the_bit_map() {
        let mut c = CtxCaps::from_qcaps(&Qcaps::new_zeroed());
        assert_eq!(c.instances(), vec![0]);
        c.instance_bmap = 0b1011;
        assert_eq!(c.instances(), vec![0, 1, 3]);
    }
}
