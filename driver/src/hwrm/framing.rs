//! How one HWRM request is put on the wire: its common header, and the choice between writing it
//! into the BAR0 window and sending the short-command form that points at it in DMA memory.
//!
//! Sources: bnxt_en bnxt_hwrm.c `__hwrm_req_init` (header defaults) and `__hwrm_send` (seq_id,
//! the short-command decision, the `-E2BIG` check, zero-filling the window); bnxt.c
//! `bnxt_hwrm_ver_get` (window sizes, `BNXT_FW_CAP_SHORT_CMD` needs both SHORT_CMD bits);
//! bnxt_hsi.h `struct input`, `struct hwrm_short_input`.

use bnxt_hsi::bar0;
use bnxt_hsi::hwrm::layouts::{HwrmShortInput, HwrmVerGetOutput, Input};
use bnxt_hsi::hwrm::{MAX_REQ_LEN, NO_CMPL_RING, SHORT_REQ_SIGNATURE, TARGET_HWRM};
use zerocopy::{FromBytes, IntoBytes};

/// What the firmware said (in VER_GET) about the requests it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WindowLimits {
    /// Longest request written into the BAR0 window (`bp->hwrm_max_req_len`).
    pub max_req_len: usize,
    /// Longest request at all, sent as a short command (`bp->hwrm_max_ext_req_len`).
    pub max_ext_req_len: usize,
    /// Every request goes as a short command (`BNXT_FW_CAP_SHORT_CMD`).
    pub short_cmd: bool,
}

impl Default for WindowLimits {
    /// Before VER_GET: a 128-byte window (`HWRM_MAX_REQ_LEN`), no longer requests, no short
    /// commands.
    fn default() -> WindowLimits {
        WindowLimits { max_req_len: MAX_REQ_LEN, max_ext_req_len: 0, short_cmd: false }
    }
}

impl WindowLimits {
    /// The limits VER_GET's answer sets, as `bnxt_hwrm_ver_get` reads them.
    pub(crate) fn from_ver_get(resp: &HwrmVerGetOutput) -> WindowLimits {
        let mut limits = WindowLimits::default();
        if resp.hwrm_intf_maj_8b >= 1 {
            limits.max_req_len = usize::from(resp.max_req_win_len.get());
            limits.max_ext_req_len = usize::from(resp.max_ext_req_len.get());
        }
        limits.max_ext_req_len = limits.max_ext_req_len.max(MAX_REQ_LEN);
        let caps = resp.dev_caps_cfg.get();
        limits.short_cmd = caps & HwrmVerGetOutput::DEV_CAPS_CFG_SHORT_CMD_SUPPORTED != 0
            && caps & HwrmVerGetOutput::DEV_CAPS_CFG_SHORT_CMD_REQUIRED != 0;
        limits
    }
}

/// How a request of a given length is submitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Written into the window, which is zero-filled up to `window_len` bytes.
    Direct { window_len: usize },
    /// A 16-byte `hwrm_short_input` in the window, pointing at the request in DMA memory.
    Short,
}

/// The request is longer than the firmware takes; `max` is the longest it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLong {
    pub max: usize,
}

/// Decide how to submit a request of `len` bytes.
pub(crate) fn mode(len: usize, limits: &WindowLimits) -> Result<Mode, TooLong> {
    if len > limits.max_req_len && len > limits.max_ext_req_len {
        return Err(TooLong { max: limits.max_req_len.max(limits.max_ext_req_len) });
    }
    if limits.short_cmd || len > limits.max_req_len {
        return Ok(Mode::Short);
    }
    // The window ends where the trigger register begins; a firmware claiming a larger window
    // would have the zero-fill write the trigger, so it is cut there.
    let window_len = limits.max_req_len.min(bar0::HWRM_TRIGGER as usize);
    Ok(Mode::Direct { window_len })
}

/// Fill the common header of `request` (its first 16 bytes) as `__hwrm_req_init` and
/// `__hwrm_send` do: the request's type, no completion ring, the HWRM target, the sequence
/// number, and where the response goes.
pub(crate) fn fill_header(request: &mut [u8], req_type: u16, seq_id: u16, resp_addr: u64) {
    let (hdr, _) = Input::mut_from_prefix(request).expect("every request starts with the 16-byte header");
    hdr.req_type = req_type.into();
    hdr.cmpl_ring = NO_CMPL_RING.into();
    hdr.seq_id = seq_id.into();
    hdr.target_id = TARGET_HWRM.into();
    hdr.resp_addr = resp_addr.into();
}

/// The short-command form of a request of `len` bytes at bus address `req_addr`. Its
/// `target_id` stays 0 (`TARGET_ID_DEFAULT`), as bnxt_en leaves it.
pub(crate) fn short_input(req_type: u16, len: usize, req_addr: u64) -> [u8; 16] {
    let short = HwrmShortInput {
        req_type: req_type.into(),
        signature: SHORT_REQ_SIGNATURE.into(),
        target_id: HwrmShortInput::TARGET_ID_DEFAULT.into(),
        size: (len as u16).into(),
        req_addr: req_addr.into(),
    };
    let mut out = [0u8; 16];
    out.copy_from_slice(short.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::FromZeros;

    fn limits(max_req_len: usize, max_ext_req_len: usize, short_cmd: bool) -> WindowLimits {
        WindowLimits { max_req_len, max_ext_req_len, short_cmd }
    }

    #[test]
    fn short_requests_go_direct_and_long_ones_short_unless_too_long() {
        let l = limits(128, 256, false);
        assert_eq!(mode(24, &l), Ok(Mode::Direct { window_len: 128 }));
        assert_eq!(mode(128, &l), Ok(Mode::Direct { window_len: 128 }));
        assert_eq!(mode(160, &l), Ok(Mode::Short));
        assert_eq!(mode(264, &l), Err(TooLong { max: 256 }));
    }

    #[test]
    fn before_ver_get_nothing_longer_than_the_window_goes() {
        assert_eq!(mode(160, &WindowLimits::default()), Err(TooLong { max: 128 }));
    }

    #[test]
    fn short_command_capability_sends_everything_short() {
        assert_eq!(mode(24, &limits(128, 128, true)), Ok(Mode::Short));
    }

    #[test]
    fn the_window_never_reaches_the_trigger() {
        assert_eq!(mode(24, &limits(512, 512, false)), Ok(Mode::Direct { window_len: 0x100 }));
    }

    #[test]
    fn ver_get_needs_both_short_command_bits() {
        let mut resp = HwrmVerGetOutput::new_zeroed();
        resp.hwrm_intf_maj_8b = 1;
        resp.max_req_win_len = 96.into();
        resp.max_ext_req_len = 0.into();
        resp.dev_caps_cfg = HwrmVerGetOutput::DEV_CAPS_CFG_SHORT_CMD_SUPPORTED.into();
        let l = WindowLimits::from_ver_get(&resp);
        assert_eq!(l, limits(96, 128, false));
        resp.dev_caps_cfg = (HwrmVerGetOutput::DEV_CAPS_CFG_SHORT_CMD_SUPPORTED
            | HwrmVerGetOutput::DEV_CAPS_CFG_SHORT_CMD_REQUIRED)
            .into();
        assert!(WindowLimits::from_ver_get(&resp).short_cmd);
    }

    #[test]
    fn headers_and_short_inputs_are_laid_out_as_the_hsi_says() {
        let mut req = [0u8; 24];
        fill_header(&mut req, 0x15, 7, 0x1234_5000);
        assert_eq!(&req[..16], &[0x15, 0, 0xff, 0xff, 7, 0, 0xff, 0xff, 0x00, 0x50, 0x34, 0x12, 0, 0, 0, 0]);
        let s = short_input(0x1a3, 64, 0xabc0_0000);
        assert_eq!(&s, &[0xa3, 0x01, 0x21, 0x43, 0, 0, 64, 0, 0, 0, 0xc0, 0xab, 0, 0, 0, 0]);
    }
}
