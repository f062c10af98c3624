//! HWRM, the firmware's request/response channel.
//!
//! Request and response layouts are in [`layouts`] (generated, one struct per message, field
//! offsets asserted at compile time); [`Request`] pairs each request with its response and
//! `req_type`. Protocol constants come from bnxt_hsi.h and `bnxt_hwrm.[ch]` (hardware-map §2).

#[allow(missing_docs)]
#[path = "gen/hwrm_layouts.rs"]
pub mod layouts;

#[allow(missing_docs)]
#[path = "gen/hwrm_req_types.rs"]
pub mod req_type;

#[path = "gen/hwrm_requests.rs"]
mod requests;

mod error_code;
pub use error_code::ErrorCode;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// An HWRM request layout: its `req_type`, its name as a scenario or transcript writes it
/// (`FUNC_DRV_RGTR`), and the layout of its response.
pub trait Request: FromBytes + IntoBytes + KnownLayout + Immutable + Copy {
    /// The request's `req_type` (`HWRM_*` in bnxt_hsi.h).
    const REQ_TYPE: u16;
    /// The request's name without the `HWRM_` prefix.
    const NAME: &'static str;
    /// The response layout.
    type Response: FromBytes + IntoBytes + KnownLayout + Immutable + Copy;
}

/// Length of the common request header (`struct input`).
pub const REQ_HEADER_LEN: usize = 16;
/// Length of the common response header (`struct output`).
pub const RESP_HEADER_LEN: usize = 8;
/// Largest request the direct window takes before VER_GET says otherwise (`HWRM_MAX_REQ_LEN`).
pub const MAX_REQ_LEN: usize = 128;
/// Largest response (`HWRM_MAX_RESP_LEN`).
pub const MAX_RESP_LEN: usize = 704;
/// `hwrm_short_input.signature` marking a short command (`SHORT_REQ_SIGNATURE_SHORT_CMD`).
pub const SHORT_REQ_SIGNATURE: u16 = 0x4321;
/// Value of a response's last byte once the firmware has written all of it (`HWRM_RESP_VALID_KEY`).
pub const RESP_VALID_KEY: u8 = 1;
/// `cmpl_ring` meaning "no completion-ring notification" (`BNXT_HWRM_NO_CMPL_RING`, -1).
pub const NO_CMPL_RING: u16 = 0xffff;
/// `target_id` addressing the HWRM firmware itself (`BNXT_HWRM_TARGET`).
pub const TARGET_HWRM: u16 = 0xffff;
/// `fid` meaning "this function" in FUNC_QCAPS/QCFG/CFG.
pub const FID_SELF: u16 = 0xffff;
/// Default request timeout before VER_GET reports one (`DFLT_HWRM_CMD_TIMEOUT`, 500 ms).
pub const DEFAULT_CMD_TIMEOUT_MS: u64 = 500;
/// Ceiling of any request timeout (`HWRM_CMD_MAX_TIMEOUT`, 40 s).
pub const MAX_CMD_TIMEOUT_MS: u64 = 40_000;
/// FUNC_RESET waits this many times the request timeout (`HWRM_RESET_TIMEOUT`).
pub const RESET_TIMEOUT_FACTOR: u64 = 4;
/// HWRM interface version this crate's layouts follow (`HWRM_VERSION_MAJOR/MINOR/UPDATE`).
pub const INTF_VERSION: (u8, u8, u8) = (1, 10, 3);

/// The name of a `req_type` (`FUNC_QCAPS`), if the interface defines it.
pub fn req_name(req_type: u16) -> Option<&'static str> {
    req_type::REQ_TYPES.iter().find(|(_, v)| *v == req_type).map(|(n, _)| *n)
}

/// The `req_type` of a request named as [`req_name`] names it; an `HWRM_` prefix is accepted.
pub fn req_type_by_name(name: &str) -> Option<u16> {
    let name = name.strip_prefix("HWRM_").unwrap_or(name);
    req_type::REQ_TYPES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| *v)
}

#[cfg(test)]
mod tests {
    use super::layouts::*;
    use super::*;

    #[test]
    fn names_and_types_round_trip() {
        assert_eq!(req_type_by_name("FUNC_DRV_RGTR"), Some(0x1d));
        assert_eq!(req_type_by_name("HWRM_VER_GET"), Some(0));
        assert_eq!(req_name(0x1a3), Some("FUNC_BACKING_STORE_CFG_V2"));
        assert_eq!(req_type_by_name("NO_SUCH_REQUEST"), None);
    }

    #[test]
    fn request_pairs_carry_their_req_type() {
        assert_eq!(<HwrmVerGetInput as Request>::REQ_TYPE, 0x0);
        assert_eq!(<HwrmFuncQcapsInput as Request>::REQ_TYPE, 0x15);
        assert_eq!(<HwrmFuncBackingStoreQcapsV2Input as Request>::REQ_TYPE, 0x1a8);
        assert_eq!(<HwrmRingAllocInput as Request>::NAME, "RING_ALLOC");
    }

    #[test]
    fn key_offsets_match_the_hardware_map() {
        use core::mem::offset_of;
        assert_eq!(offset_of!(HwrmVerGetOutput, chip_num), 0x70);
        assert_eq!(offset_of!(HwrmVerGetOutput, max_req_timeout), 0xaa);
        assert_eq!(offset_of!(HwrmFuncQcapsOutput, flags_ext), 0x50);
        assert_eq!(offset_of!(HwrmFuncQcfgOutput, legacy_l2_db_size_kb), 0x54);
        assert_eq!(offset_of!(HwrmFuncBackingStoreCfgV2Input, page_size_pbl_level), 0x26);
        assert_eq!(HwrmVerGetOutput::DEV_CAPS_CFG_SHORT_CMD_REQUIRED, 0x8);
        assert_eq!(HwrmFuncQcapsOutput::FLAGS_EXT_BS_V2_SUPPORTED, 0x400_0000);
    }
}
