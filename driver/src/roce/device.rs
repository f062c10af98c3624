//! Bringing the RoCE engine up inside `Nic::open` and down inside `close`, in bnxt_re's order
//! (main.c `bnxt_re_dev_init`, `bnxt_re_dev_uninit`; hardware-map §4.1, §6c):
//!
//! 1. the channel's memory, then HWRM_RING_ALLOC of the CREQ as an NQ-type ring
//!    (`bnxt_re_net_ring_alloc`), then the CREQ armed and `cmdq_init` written;
//! 2. QUERY_FUNC and QUERY_VERSION (`bnxt_re_update_dev_attr`);
//! 3. HWRM_STAT_CTX_ALLOC with the RoCE flag (`bnxt_re_net_stats_ctx_alloc`);
//! 4. INITIALIZE_FW with the statistics context and the flags P7 takes
//!    (`bnxt_qplib_init_rcfw`), then QUERY_FUNC and QUERY_VERSION again;
//! 5. one NQ (`bnxt_re_setup_nqs`), armed, then serviced on every CQ poll ([`super::nq`]);
//! 6. ADD_GID of the NIC's GID `::ffff:10.x.y.z` (`bnxt_qplib_add_sgid`).
//!
//! Down runs the reverse: DELETE_GID, RING_FREE of the NQ, DEINITIALIZE_FW, STAT_CTX_FREE,
//! RING_FREE of the CREQ, each only while the NIC is not wedged.

use std::sync::Arc;
use std::time::Duration;

use bnxt_hsi::hwrm::INTF_VERSION;
use bnxt_hsi::hwrm::layouts::{HwrmRingAllocInput, HwrmRingFreeInput, HwrmStatCtxAllocInput, HwrmStatCtxFreeInput};
use bnxt_hsi::roce::gid::{gid_for_command, mac_for_command};
use bnxt_hsi::roce::layouts::{
    CmdqAddGid, CmdqDeinitializeFw, CmdqDeleteGid, CmdqInitializeFw, CmdqQueryFunc, CmdqQueryVersion,
};
use zerocopy::{FromZeros, IntoBytes};

use super::caps::DevCaps;
use super::db::DbPage;
use super::nq::NqService;
use super::pbl::PblKind;
use super::queue::{Queue, Shape};
use super::rcfw::Rcfw;
use super::{Info, Memory, Roce};
use crate::error::Error;
use crate::hwrm::Channel;
use crate::l2::{HW_STATS_BYTES, STATS_PERIOD_MS};
use crate::nic::{Doorbells, Identity, Limits};
use bnxt_pci::PciFunction;
use bnxt_pci::dma::{DmaBuffer, PAGE_SIZE};

/// NQ entries bnxt_re allocates per NQ (`BNXT_QPLIB_NQE_MAX_CNT`).
const NQ_ENTRIES: u32 = 128 * 1024;
/// Bytes of an NQ entry (`sizeof(struct nq_base)`).
const NQE_BYTES: usize = 16;
/// MSI-X vector of the CREQ (`BNXT_RE_AEQ_IDX`, the first of the vectors bnxt_en hands the RoCE
/// driver, after its own: `bnxt_get_ulp_msix_base`) and of the first NQ; without interrupts these
/// only tie the rings to vectors, as RING_ALLOC's `logical_id` does for bnxt_re.
const CREQ_VECTOR: u16 = crate::l2::L2_NQS;
const NQ_VECTOR: u16 = CREQ_VECTOR + 1;
/// NQ-type rings the RoCE engine allocates (the CREQ and one NQ), which the function's
/// reservation counts among its MSI-X vectors (bnxt_en's `bnxt_get_ulp_msix_num`).
pub(crate) const ROCE_NQS: u16 = 2;
/// Statistics contexts it allocates (`bnxt_get_ulp_stat_ctxs`).
pub(crate) const ROCE_STAT_CTXS: u16 = 1;
/// `page_size` of a multi-page ring's table (`BNXT_PAGE_SHIFT`), and what bnxt_re writes for a
/// single-page ring (main.c `bnxt_re_net_ring_alloc`, "FIXME: hardconding").
const RING_PAGE_SHIFT: u8 = 12;
const SINGLE_PAGE_RING_PAGE_SIZE: u8 = 4;
/// The protection domain every object is made in: the first id bnxt_re's PD table hands out
/// (qplib_res.c `bnxt_qplib_alloc_pd`).
const PD_ID: u32 = 0;
/// The queue depth this driver needs of the firmware: rings of 4096 slots.
pub(crate) const RING_SLOTS: u32 = 4096;

/// What the bring-up has given the firmware so far; undone in reverse.
#[derive(Default)]
pub(crate) struct Parts {
    /// The command channel (its memory, once allocated).
    pub rcfw: Option<Rcfw>,
    creq_ring: Option<u16>,
    stats: Option<DmaBuffer>,
    stat_ctx: Option<u32>,
    initialized: bool,
    nq_memory: Option<Queue>,
    nq: Option<NqService>,
    nq_ring: Option<u16>,
    gid_index: Option<u16>,
}

impl Parts {
    /// Undo what was done, in bnxt_re's order, skipping firmware requests once the NIC is
    /// wedged; the memory, to free once the NIC can no longer reach it.
    pub(crate) fn undo(mut self, nic: &str, hwrm: &mut Channel) -> Vec<Memory> {
        let warn = |what: &str, e: Error| tracing::warn!(nic, error = %e, "{what} failed while closing");
        if let (Some(index), Some(rcfw)) = (self.gid_index.take(), self.rcfw.as_mut())
            && !hwrm.is_wedged()
            && let Err(e) = rcfw.send(CmdqDeleteGid { gid_index: index.into(), ..FromZeros::new_zeroed() })
        {
            warn("DELETE_GID", e);
        }
        if let Some(id) = self.nq_ring.take()
            && !hwrm.is_wedged()
            && let Err(e) = ring_free(hwrm, id)
        {
            warn("RING_FREE of the NQ", e);
        }
        if std::mem::take(&mut self.initialized)
            && let Some(rcfw) = self.rcfw.as_mut()
            && !hwrm.is_wedged()
            && let Err(e) = rcfw.send(CmdqDeinitializeFw::new_zeroed())
        {
            warn("DEINITIALIZE_FW", e);
        }
        if let Some(id) = self.stat_ctx.take()
            && !hwrm.is_wedged()
            && let Err(e) = hwrm.send(HwrmStatCtxFreeInput { stat_ctx_id: id.into(), ..FromZeros::new_zeroed() })
        {
            warn("STAT_CTX_FREE", e);
        }
        if let Some(id) = self.creq_ring.take()
            && !hwrm.is_wedged()
            && let Err(e) = ring_free(hwrm, id)
        {
            warn("RING_FREE of the CREQ", e);
        }
        let mut memory = Vec::new();
        if let Some(nq) = self.nq.take() {
            memory.push(nq.into_memory());
        }
        if let Some(nq) = self.nq_memory.take() {
            let bytes = nq.bytes();
            memory.push(Memory::new(nq, bytes));
        }
        if let Some(stats) = self.stats.take() {
            let bytes = stats.len();
            memory.push(Memory::new(stats, bytes));
        }
        if let Some(rcfw) = self.rcfw.take() {
            memory.push(rcfw.into_memory());
        }
        memory
    }
}

/// HWRM_RING_ALLOC of an NQ-type ring over `queue` (P5/P7 `bnxt_re_get_rtype`), tied to MSI-X
/// vector `vector`; its ring id.
fn ring_alloc(hwrm: &mut Channel, queue: &Queue, vector: u16) -> Result<u16, Error> {
    let multi = queue.pages() > 1;
    let req = HwrmRingAllocInput {
        ring_type: HwrmRingAllocInput::RING_TYPE_NQ,
        page_tbl_addr: queue.base().into(),
        page_size: if multi { RING_PAGE_SHIFT } else { SINGLE_PAGE_RING_PAGE_SIZE },
        page_tbl_depth: u8::from(multi),
        length: queue.shape.depth.into(),
        logical_id: vector.into(),
        int_mode: HwrmRingAllocInput::INT_MODE_MSIX,
        ..FromZeros::new_zeroed()
    };
    Ok(hwrm.send(req)?.ring_id.get())
}

/// HWRM_RING_FREE of an NQ-type ring.
fn ring_free(hwrm: &mut Channel, id: u16) -> Result<(), Error> {
    let req = HwrmRingFreeInput {
        ring_type: HwrmRingAllocInput::RING_TYPE_NQ,
        ring_id: id.into(),
        ..FromZeros::new_zeroed()
    };
    hwrm.send(req).map(|_| ())
}

/// Everything `start` needs from the HWRM bring-up.
pub(crate) struct Inputs<'a> {
    /// The NIC's name.
    pub nic: &'a str,
    /// Its function.
    pub function: &'a Arc<dyn PciFunction>,
    /// Where its doorbells are.
    pub doorbells: Doorbells,
    /// Its identity.
    pub identity: Identity,
    /// What its context memory lets it hold.
    pub limits: Limits,
    /// How long a command is waited for.
    pub command_timeout: Duration,
}

/// Bring the RoCE engine up. On failure, what was done is undone and its memory returned with
/// the error (to keep if the NIC is wedged, else to free once bus mastering is off).
pub(crate) fn start(inputs: Inputs<'_>, hwrm: &mut Channel) -> Result<Roce, (Error, Vec<Memory>)> {
    let mut parts = Parts::default();
    match bring_up(&inputs, hwrm, &mut parts) {
        Ok(info) => {
            let nq = parts.nq.take().expect("a started engine has its NQ");
            Ok(Roce::new(info, parts, nq, hwrm.wedged()))
        }
        Err(e) => Err((e, parts.undo(inputs.nic, hwrm))),
    }
}

fn bring_up(inputs: &Inputs<'_>, hwrm: &mut Channel, parts: &mut Parts) -> Result<Info, Error> {
    let nic = inputs.nic;
    let function = inputs.function;
    let pci = |source| Error::Pci { nic: nic.to_string(), source };
    let db = DbPage::new(function, inputs.doorbells.offset);

    let rcfw = Rcfw::alloc(nic, function.clone(), db.clone(), inputs.command_timeout, hwrm.wedged()).map_err(pci)?;
    // Held in `parts` before the firmware is told of it: an unanswered RING_ALLOC keeps it.
    let rcfw = parts.rcfw.insert(rcfw);
    let creq_ring = ring_alloc(hwrm, rcfw.creq(), CREQ_VECTOR)?;
    parts.creq_ring = Some(creq_ring);
    let rcfw = parts.rcfw.as_mut().expect("allocated above");
    rcfw.start(creq_ring);

    let caps = query_func(nic, rcfw)?;
    let stats = function.alloc_dma(PAGE_SIZE).map_err(pci)?;
    let stats_addr = stats.iova();
    parts.stats = Some(stats);
    let stat_ctx = hwrm
        .send(HwrmStatCtxAllocInput {
            stats_dma_addr: stats_addr.into(),
            stats_dma_length: HW_STATS_BYTES.into(),
            update_period_ms: STATS_PERIOD_MS.into(),
            stat_ctx_flags: HwrmStatCtxAllocInput::STAT_CTX_FLAGS_ROCE,
            ..FromZeros::new_zeroed()
        })?
        .stat_ctx_id
        .get();
    parts.stat_ctx = Some(stat_ctx);

    let rcfw = parts.rcfw.as_mut().expect("allocated above");
    rcfw.send(initialize_fw(&caps, stat_ctx))?;
    parts.initialized = true;
    let caps = query_func(nic, rcfw)?;
    check_caps(nic, &caps)?;

    let nq = Queue::alloc(&**function, Shape::ring(NQ_ENTRIES, NQE_BYTES), PblKind::Queue).map_err(pci)?;
    // Held in `parts` until the engine is up: an unanswered RING_ALLOC keeps it.
    let nq = parts.nq_memory.insert(nq);
    let nq_ring = ring_alloc(hwrm, nq, NQ_VECTOR)?;
    parts.nq_ring = Some(nq_ring);
    let nq = NqService::new(nic, parts.nq_memory.take().expect("allocated above"), nq_ring, db.clone());
    nq.start();
    parts.nq = Some(nq);

    let rcfw = parts.rcfw.as_mut().expect("allocated above");
    let mut add = CmdqAddGid::new_zeroed();
    add.gid.as_mut_bytes().copy_from_slice(&gid_for_command(inputs.identity.gid));
    add.src_mac.as_mut_bytes().copy_from_slice(&mac_for_command(inputs.identity.mac));
    let gid_index = u16::try_from(rcfw.send(add)?.xid.get()).map_err(|_| Error::Firmware {
        nic: nic.to_string(),
        what: "ADD_GID answered a GID index beyond 16 bits".into(),
    })?;
    parts.gid_index = Some(gid_index);
    tracing::info!(nic, creq_ring, nq_ring, stat_ctx, gid_index, "RoCE engine up");

    Ok(Info {
        name: nic.to_string(),
        function: Arc::downgrade(function),
        db,
        caps,
        identity: inputs.identity,
        gid_index,
        nq_ring_id: nq_ring,
        pd_id: PD_ID,
        limits: inputs.limits,
        command_timeout: inputs.command_timeout,
    })
}

/// QUERY_FUNC, then QUERY_VERSION as bnxt_re follows it (main.c `bnxt_re_update_dev_attr`);
/// a refused QUERY_VERSION is only logged (`bnxt_qplib_query_version`).
fn query_func(nic: &str, rcfw: &mut Rcfw) -> Result<DevCaps, Error> {
    let (_, sb) = rcfw.query(CmdqQueryFunc::new_zeroed())?;
    match rcfw.send(CmdqQueryVersion::new_zeroed()) {
        Ok(v) => tracing::debug!(
            nic,
            fw = format_args!("{}.{}.{}.{}", v.fw_maj, v.fw_minor, v.fw_bld, v.fw_rsvd),
            "RoCE firmware"
        ),
        Err(e @ (Error::Timeout { .. } | Error::Wedged { .. })) => return Err(e),
        Err(e) => tracing::warn!(nic, error = %e, "QUERY_VERSION failed"),
    }
    Ok(DevCaps::from_sb(&sb))
}

/// INITIALIZE_FW as bnxt_re sends it on P5/P7, where the PF's context memory was given over
/// HWRM and none is named here (`bnxt_qplib_init_rcfw`, `skip_ctx_setup`). The context-dump
/// side buffers of DESTROY commands (DESTROY_CONTEXT_SB_SUPPORTED) are not asked for.
pub(crate) fn initialize_fw(caps: &DevCaps, stat_ctx: u32) -> CmdqInitializeFw {
    type F = CmdqInitializeFw;
    let mut req = F::new_zeroed();
    let mut flags = 0;
    if caps.hw_retx() {
        flags |= F::FLAGS_HW_REQUESTER_RETX_SUPPORTED;
    }
    if caps.drv_version() {
        flags |= F::FLAGS_DRV_VERSION;
        (req.drv_hsi_ver_maj, req.drv_hsi_ver_min, req.drv_hsi_ver_upd) = INTF_VERSION;
        let part = |p: &str| p.parse::<u16>().unwrap_or(0);
        req.drv_build_ver_maj = part(env!("CARGO_PKG_VERSION_MAJOR")).into();
        req.drv_build_ver_min = part(env!("CARGO_PKG_VERSION_MINOR")).into();
        req.drv_build_ver_upd = part(env!("CARGO_PKG_VERSION_PATCH")).into();
    }
    if caps.optimize_modify_qp() {
        flags |= F::FLAGS_OPTIMIZE_MODIFY_QP_SUPPORTED;
    }
    req.flags = flags.into();
    // (log2 of the host page size) − 12: 0 for 4-KB pages.
    req.log2_dbr_pg_size = F::LOG2_DBR_PG_SIZE_PG_4K.into();
    req.stat_ctx_id = stat_ctx.into();
    req
}

/// Refuse a firmware that cannot give this driver its 4096-slot rings.
fn check_caps(nic: &str, caps: &DevCaps) -> Result<(), Error> {
    let unsupported = |what: String| Err(Error::Unsupported { nic: nic.to_string(), what });
    if u32::from(caps.max_qp_wr) < RING_SLOTS {
        return unsupported(format!(
            "QUERY_FUNC allows send queues of {} WQEs, fewer than the {RING_SLOTS} this driver's rings take",
            caps.max_qp_wr
        ));
    }
    if caps.max_cqe < RING_SLOTS {
        return unsupported(format!(
            "QUERY_FUNC allows CQs of {} entries, fewer than the {RING_SLOTS} a ring's completions take",
            caps.max_cqe
        ));
    }
    if caps.max_sge == 0 {
        return unsupported("QUERY_FUNC allows no SGE per WQE".into());
    }
    Ok(())
}
