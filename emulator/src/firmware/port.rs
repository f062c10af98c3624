//! PORT_PHY_QCAPS and PORT_PHY_QCFG: a 400G port with its link up.
//!
//! bnxt_en (bnxt.c `bnxt_hwrm_phy_qcaps`, `bnxt_update_link`) treats a port reporting no speed
//! at all as disabled, takes `flags2 & SPEEDS2_SUPPORTED` to use the `*_speeds2` fields (as P7
//! ports do), and reads `link`, `link_speed` (units of 100 Mb/s), `duplex_state`,
//! `active_lanes`, `support_speeds2` and `auto_link_speeds2`. The model's port links at
//! 400 Gb/s over four PAM4-112 lanes with RS544 FEC, autonegotiating among the PAM4 speeds.

use bnxt_hsi::hwrm::layouts::{
    HwrmPortPhyQcapsInput, HwrmPortPhyQcapsOutput, HwrmPortPhyQcfgInput, HwrmPortPhyQcfgOutput,
};

use super::identity::PORT_ID;
use super::response::{Outcome, Reject, name_field, parse, reply};

/// Speeds the port supports, as the `*_speeds2` masks encode them (the same bit values in
/// PORT_PHY_QCAPS `supported_speeds2_*` and PORT_PHY_QCFG `support_speeds2`/`auto_link_speeds2`).
pub const SPEEDS2: u16 = HwrmPortPhyQcfgOutput::SUPPORT_SPEEDS2_50GB_PAM4_56
    | HwrmPortPhyQcfgOutput::SUPPORT_SPEEDS2_100GB_PAM4_56
    | HwrmPortPhyQcfgOutput::SUPPORT_SPEEDS2_200GB_PAM4_56
    | HwrmPortPhyQcfgOutput::SUPPORT_SPEEDS2_400GB_PAM4_56
    | HwrmPortPhyQcfgOutput::SUPPORT_SPEEDS2_100GB_PAM4_112
    | HwrmPortPhyQcfgOutput::SUPPORT_SPEEDS2_200GB_PAM4_112
    | HwrmPortPhyQcfgOutput::SUPPORT_SPEEDS2_400GB_PAM4_112;

fn check_port(port: u16) -> Result<(), Reject> {
    if port == PORT_ID {
        Ok(())
    } else {
        Err(Reject::invalid(format!("port_id {port} does not exist (the function has port {PORT_ID})")))
    }
}

/// PORT_PHY_QCAPS.
pub fn phy_qcaps(bytes: &[u8]) -> Outcome {
    let req: HwrmPortPhyQcapsInput = parse(bytes);
    check_port(req.port_id.get())?;
    reply::<HwrmPortPhyQcapsOutput>(|o| {
        o.port_cnt = HwrmPortPhyQcapsOutput::PORT_CNT_1;
        o.flags2 = HwrmPortPhyQcapsOutput::FLAGS2_SPEEDS2_SUPPORTED.into();
        o.supported_speeds2_force_mode = SPEEDS2.into();
        o.supported_speeds2_auto_mode = SPEEDS2.into();
    })
}

/// PORT_PHY_QCFG.
pub fn phy_qcfg(bytes: &[u8], ctx: &mut super::Ctx<'_>) -> Outcome {
    let req: HwrmPortPhyQcfgInput = parse(bytes);
    let phy = ctx.state.l2.phy;
    check_port(req.port_id.get())?;
    type Q = HwrmPortPhyQcfgOutput;
    reply::<Q>(|o| {
        o.link = Q::LINK_LINK;
        o.active_fec_signal_mode = Q::SIGNAL_MODE_PAM4_112 | Q::ACTIVE_FEC_FEC_RS544_IEEE_ACTIVE;
        o.link_speed = Q::LINK_SPEED_400GB.into();
        o.duplex_cfg = Q::DUPLEX_CFG_FULL;
        o.duplex_state = Q::DUPLEX_STATE_FULL;
        o.auto_mode = Q::AUTO_MODE_SPEED_MASK;
        o.module_status = Q::MODULE_STATUS_NONE;
        o.media_type = Q::MEDIA_TYPE_DAC;
        o.fec_cfg = (Q::FEC_CFG_FEC_AUTONEG_SUPPORTED
            | Q::FEC_CFG_FEC_AUTONEG_ENABLED
            | Q::FEC_CFG_FEC_RS544_IEEE_SUPPORTED
            | Q::FEC_CFG_FEC_RS544_IEEE_ENABLED)
            .into();
        o.option_flags = Q::OPTION_FLAGS_SIGNAL_MODE_KNOWN | Q::OPTION_FLAGS_SPEEDS2_SUPPORTED;
        o.phy_vendor_name = name_field("bnxt-model");
        o.phy_vendor_partnumber = name_field("virtual 400G");
        o.support_speeds2 = SPEEDS2.into();
        o.auto_link_speeds2 = SPEEDS2.into();
        o.active_lanes = 4;
        // The link state and speed the driver's PORT_PHY_CFG settings give.
        super::port_cfg::fill_link(o, &phy);
    })
}
