//! What the firmware can be told to advertise beyond its defaults: a scenario's `firmware:`
//! key, or a vfio-user client's restart, sets these for every NIC it starts.
//!
//! - `resource_limits`: FUNC_QCAPS `flags_ext2` SW_MAX_RESOURCE_LIMITS_SUPPORTED, "the firmware
//!   states resource limits of its own" (bnxt.h `BNXT_SW_RES_LMT`). bnxt_en then sizes the RoCE
//!   context memory to every QP and SRQ the context types allow, and splits the MRAV entries
//!   between regions and the address vectors the MRAV type's `split_entry_0` states
//!   (bnxt.c `bnxt_alloc_ctx_mem`). A firmware stating its limits states that count, so with
//!   this on the MRAV type offers [`FW_LIMIT_AVS`] there (without it, 0: the driver chooses).
//! - `fast_destroy_qps`: the QP type's `split_entry_2`, the QPs the firmware destroys fast
//!   (bnxt.h `qp_fast_qpmd_entries`); without firmware limits bnxt_en adds them beyond its
//!   65,536 extra QPs.
//! - `error_recovery`: FUNC_QCAPS `FLAGS_ERROR_RECOVERY_CAPABLE`, ERROR_RECOVERY_QCFG, the
//!   heartbeat and reset-counter registers and the ERROR_RECOVERY async event
//!   ([`super::recovery`]). Off by default: bnxt_en then runs its health watchdog, which a
//!   guest that knows nothing of it would otherwise start.
//! - `mrav_entries`: the MRAV context type's `max_num_entries` (0: the default,
//!   [`super::caps::CONTEXT_TYPES`]' 262,144). bnxt_en keeps half of what the type offers for
//!   regions, at most 256 Ki (bnxt.c `bnxt_alloc_ctx_mem`: `num_mr = min_t(u32,
//!   ctxm->max_entries / 2, 1024 * 256)`), so 524,288 entries give the 262,144 regions the
//!   contract promises. What a P7's firmware reports is not public.

use serde::{Deserialize, Serialize};

/// Address vectors the MRAV context type states when the firmware states its limits (the
/// model's choice: a quarter of its MRAV entries).
pub const FW_LIMIT_AVS: u32 = 65_536;

/// What the firmware advertises beyond its defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FirmwareOptions {
    /// FUNC_QCAPS reports SW_MAX_RESOURCE_LIMITS_SUPPORTED, and the MRAV type states its AVs.
    pub resource_limits: bool,
    /// The QP context type's fast-destroy QPs (`split_entry_2`; 0: none, two splits offered).
    pub fast_destroy_qps: u32,
    /// The error recovery capability ([`super::recovery`]).
    pub error_recovery: bool,
    /// The MRAV context type's most entries (0: the default).
    pub mrav_entries: u32,
}
