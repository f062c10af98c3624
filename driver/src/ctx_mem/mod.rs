//! Context memory ("backing store", V2 as P7 uses it): learning what the firmware wants,
//! sizing it, allocating it with its page tables, and handing it over with
//! HWRM_FUNC_BACKING_STORE_CFG_V2 (bnxt.c `bnxt_alloc_ctx_mem`, `bnxt_backing_store_cfg_v2`,
//! `bnxt_hwrm_func_backing_store_cfg_v2`; hardware-map §3.3).

pub(crate) mod caps;
pub(crate) mod page_table;
pub(crate) mod sizing;

use bnxt_hsi::backing_store::CtxType;
use bnxt_hsi::hwrm::layouts::HwrmFuncBackingStoreCfgV2Input as CfgV2;
use zerocopy::FromZeros;

use crate::error::Error;
use crate::hwrm::Channel;
use bnxt_pci::{PciError, PciFunction};
use page_table::Block;
use sizing::{Plan, TypePlan};

/// One context type's memory: one block per instance.
pub(crate) struct TypeMemory {
    /// How it was sized.
    pub plan: TypePlan,
    /// Its blocks, in the order of `plan.instances`.
    pub blocks: Vec<Block>,
}

impl TypeMemory {
    /// Bytes of DMA memory held, tables included.
    pub(crate) fn bytes(&self) -> usize {
        self.blocks.iter().map(Block::bytes).sum()
    }
}

/// All context memory given to the firmware.
#[derive(Default)]
pub(crate) struct ContextMemory {
    types: Vec<TypeMemory>,
}

impl ContextMemory {
    /// Allocate every type's memory as `plan` sizes it.
    pub(crate) fn allocate(function: &dyn PciFunction, plan: &Plan) -> Result<ContextMemory, PciError> {
        let mut types = Vec::with_capacity(plan.types.len());
        for t in &plan.types {
            let init = t.init.map(|i| (i, t.entry_size));
            let blocks = t
                .instances
                .iter()
                .map(|_| Block::build(function, t.pages, t.level, init))
                .collect::<Result<Vec<_>, _>>()?;
            types.push(TypeMemory { plan: t.clone(), blocks });
        }
        Ok(ContextMemory { types })
    }

    /// Hand every type and instance to the firmware in ascending type order, the last carrying
    /// BS_CFG_ALL_DONE. On failure, the error and the type whose request failed.
    pub(crate) fn configure(&self, ch: &mut Channel) -> Result<(), (Error, CtxType)> {
        let last_type = self.types.len().saturating_sub(1);
        for (ti, t) in self.types.iter().enumerate() {
            let p = &t.plan;
            let mut req = CfgV2::new_zeroed();
            req.type_ = (p.ty as u16).into();
            req.entry_size = p.entry_size.into();
            req.num_entries = p.entries.into();
            req.subtype_valid_cnt = p.split_cnt;
            let split =
                [&mut req.split_entry_0, &mut req.split_entry_1, &mut req.split_entry_2, &mut req.split_entry_3];
            for (i, field) in split.into_iter().enumerate().take(usize::from(p.split_cnt)) {
                *field = p.split[i].into();
            }
            for (bi, (instance, block)) in p.instances.iter().zip(&t.blocks).enumerate() {
                req.instance = (*instance).into();
                req.page_dir = block.page_dir.into();
                req.page_size_pbl_level = CfgV2::PAGE_SIZE_PG_4K | block.level;
                let last = ti == last_type && bi + 1 == t.blocks.len();
                req.flags = if last { CfgV2::FLAGS_BS_CFG_ALL_DONE } else { 0 }.into();
                ch.send(req).map_err(|e| (e, p.ty))?;
            }
        }
        Ok(())
    }

    /// Bytes of DMA memory held, tables included.
    pub(crate) fn bytes(&self) -> usize {
        self.types.iter().map(TypeMemory::bytes).sum()
    }

    /// Take one type's memory out (to keep it after the rest is freed).
    pub(crate) fn take(&mut self, ty: CtxType) -> Option<TypeMemory> {
        let i = self.types.iter().position(|t| t.plan.ty == ty)?;
        Some(self.types.remove(i))
    }
}
