//! How long the driver waits for the firmware's answer to an HWRM request, as bnxt_en decides.
//!
//! Sources: bnxt_en bnxt_hwrm.c `__hwrm_req_init` (`ctx->timeout = bp->hwrm_cmd_timeout ?:
//! DFLT_HWRM_CMD_TIMEOUT`) and `__hwrm_send` (`min(ctx->timeout, bp->hwrm_cmd_max_timeout ?:
//! HWRM_CMD_MAX_TIMEOUT)`); bnxt.c `bnxt_hwrm_ver_get` (`def_req_timeout` in ms, 0 meaning the
//! default; `max_req_timeout` in seconds, 0 meaning 40 s); bnxt_hwrm.h `HWRM_RESET_TIMEOUT`
//! (4 × the command timeout, used by `bnxt_hwrm_func_reset`).

use std::time::Duration;

use bnxt_hsi::hwrm::{DEFAULT_CMD_TIMEOUT_MS, MAX_CMD_TIMEOUT_MS, RESET_TIMEOUT_FACTOR};

/// The firmware's timeouts as the driver knows them (before VER_GET: the defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Timeouts {
    /// `bp->hwrm_cmd_timeout` in ms; 0 until VER_GET reported one.
    cmd_ms: u64,
    /// `bp->hwrm_cmd_max_timeout` in ms; 0 until VER_GET reported one.
    max_ms: u64,
}

impl Timeouts {
    /// Take VER_GET's `def_req_timeout` (ms) and `max_req_timeout` (s), as `bnxt_hwrm_ver_get`
    /// does: a zero `def_req_timeout` means the 500 ms default, a zero `max_req_timeout` means
    /// 40 s. A larger `max_req_timeout` is used as given (bnxt_en only warns about it).
    pub(crate) fn from_ver_get(def_req_timeout_ms: u16, max_req_timeout_s: u16) -> Timeouts {
        let cmd_ms = match def_req_timeout_ms {
            0 => DEFAULT_CMD_TIMEOUT_MS,
            ms => u64::from(ms),
        };
        let max_ms = match max_req_timeout_s {
            0 => MAX_CMD_TIMEOUT_MS,
            s => u64::from(s) * 1000,
        };
        Timeouts { cmd_ms, max_ms }
    }

    /// The timeout a request carries unless it asks for another (`ctx->timeout`).
    fn request_ms(&self) -> u64 {
        if self.cmd_ms == 0 { DEFAULT_CMD_TIMEOUT_MS } else { self.cmd_ms }
    }

    /// The ceiling every wait is clipped to.
    fn ceiling_ms(&self) -> u64 {
        if self.max_ms == 0 { MAX_CMD_TIMEOUT_MS } else { self.max_ms }
    }

    /// How long an ordinary request is waited for.
    pub(crate) fn default_wait(&self) -> Duration {
        self.clip(self.request_ms())
    }

    /// How long FUNC_RESET is waited for (`HWRM_RESET_TIMEOUT`).
    pub(crate) fn reset_wait(&self) -> Duration {
        self.clip(self.request_ms() * RESET_TIMEOUT_FACTOR)
    }

    /// How long a RoCE firmware command is waited for: the firmware's ceiling itself, which
    /// bnxt_re takes as its RCFW timeout (main.c `bnxt_re_query_hwrm_intf_version`:
    /// `hwrm_cmd_max_timeout = max_req_timeout ?: RCFW_FW_STALL_MAX_TIMEOUT` (40 s);
    /// qplib_rcfw.c `__poll_for_resp` gives up after `max_timeout` seconds).
    pub(crate) fn rcfw_wait(&self) -> Duration {
        Duration::from_millis(self.ceiling_ms())
    }

    /// A request's own timeout, clipped to the ceiling as `__hwrm_send` clips it.
    pub(crate) fn clip(&self, ms: u64) -> Duration {
        Duration::from_millis(ms.min(self.ceiling_ms()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_ver_get_requests_wait_500_ms_and_func_reset_2_s() {
        let t = Timeouts::default();
        assert_eq!(t.default_wait(), Duration::from_millis(500));
        assert_eq!(t.reset_wait(), Duration::from_millis(2000));
    }

    #[test]
    fn ver_get_sets_the_timeout_and_its_ceiling() {
        let t = Timeouts::from_ver_get(1500, 10);
        assert_eq!(t.default_wait(), Duration::from_millis(1500));
        assert_eq!(t.reset_wait(), Duration::from_millis(6000));
        // A long default is clipped by the firmware's own ceiling.
        let t = Timeouts::from_ver_get(30_000, 10);
        assert_eq!(t.default_wait(), Duration::from_secs(10));
        assert_eq!(t.reset_wait(), Duration::from_secs(10));
    }

    #[test]
    fn zero_fields_mean_the_defaults_and_the_40_s_ceiling() {
        let t = Timeouts::from_ver_get(0, 0);
        assert_eq!(t.default_wait(), Duration::from_millis(500));
        let t = Timeouts::from_ver_get(20_000, 0);
        assert_eq!(t.default_wait(), Duration::from_secs(20));
        assert_eq!(t.reset_wait(), Duration::from_secs(40));
        // bnxt_en takes a firmware ceiling above 40 s as given (it only warns).
        assert_eq!(t.rcfw_wait(), Duration::from_secs(40), "bnxt_re's RCFW_FW_STALL_MAX_TIMEOUT");
        let t = Timeouts::from_ver_get(60_000, 90);
        assert_eq!(t.rcfw_wait(), Duration::from_secs(90));
        assert_eq!(t.default_wait(), Duration::from_secs(60));
        assert_eq!(t.reset_wait(), Duration::from_secs(90));
    }
}
