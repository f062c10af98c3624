//! SELFTEST_QLIST: the firmware's own self tests, for `ethtool -t`.
//!
//! bnxt_en asks at probe (bnxt_ethtool.c `bnxt_ethtool_init`, spec ≥ 1.7.4, PF only, silent, but a
//! failure other than EACCES is logged: "Expected firmware self tests unavailable"): `num_tests`
//! firmware tests come first in its list, named from `test_name[i]` and marked offline by
//! `offline_tests`, then its own four (MAC, PHY and external loopback, interrupt); `test_timeout`
//! (ms; 0 means bnxt_en's default) bounds SELFTEST_EXEC. The tests the HSI names
//! (`available_tests`: NVM, link, register, memory, PCIe SerDes, Ethernet SerDes) check hardware
//! the model does not have; it lists none rather than report tests that could not fail.

use bnxt_hsi::hwrm::layouts::{HwrmSelftestQlistInput, HwrmSelftestQlistOutput};

use super::response::{Outcome, parse, reply};

/// Answer SELFTEST_QLIST: no firmware self tests.
pub fn selftest_qlist(bytes: &[u8]) -> Outcome {
    let _req: HwrmSelftestQlistInput = parse(bytes);
    reply::<HwrmSelftestQlistOutput>(|o| {
        o.num_tests = 0;
        o.available_tests = 0;
        o.offline_tests = 0;
        o.test_timeout = 0.into();
    })
}
