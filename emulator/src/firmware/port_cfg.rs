//! Port configuration: PORT_PHY_CFG (link settings, forcing the link down), the link state
//! PORT_PHY_QCFG reports from it, PORT_MAC_QCAPS, PORT_MAC_QCFG and PORT_LED_QCAPS.
//!
//! The virtual port always has a peer, so its link is up unless the driver forced it down
//! (bnxt.c `bnxt_hwrm_shutdown_link` sends FLAGS_FORCE_LINK_DWN at `ip link set down`); any
//! other PORT_PHY_CFG (`bnxt_hwrm_set_link_setting`: RESET_PHY with RESTART_AUTONEG or FORCE)
//! brings it back up. A change of link state sends LINK_STATUS_CHANGE to a driver that asked
//! for it ([`super::async_events`]). Autonegotiation settles on the fastest speed in the
//! advertised mask; a forced speed is taken as is. EEE, FEC choices, PHY loopback, wirespeed and
//! preemphasis are not modelled: a request enabling them is refused with INVALID_PARAMS naming
//! them, and counted.

use bnxt_hsi::hwrm::layouts::{
    HwrmPortLedQcapsInput, HwrmPortLedQcapsOutput, HwrmPortMacQcapsInput, HwrmPortMacQcapsOutput, HwrmPortMacQcfgInput,
    HwrmPortMacQcfgOutput, HwrmPortPhyCfgInput as P, HwrmPortPhyCfgOutput, HwrmPortPhyQcfgOutput as Q,
};

use super::Ctx;
use super::async_events;
use super::identity::PORT_ID;
use super::l2_config::PhyConfig;
use super::port::SPEEDS2;
use super::response::{Outcome, Reject, parse, reply};

/// One speed of the port: its `*_speeds2` mask bit, its `force_link_speeds2` code, its
/// PORT_PHY_QCFG `link_speed` (units of 100 Mb/s) and signal mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Speed {
    /// Bit in `support_speeds2` / `auto_link_speeds2`.
    pub mask: u16,
    /// `force_link_speeds2` value.
    pub force: u16,
    /// `link_speed` value.
    pub link_speed: u16,
    /// `active_fec_signal_mode` signal mode.
    pub signal: u8,
}

/// The port's speeds, slowest first (bnxt_hsi.h `PORT_PHY_CFG_REQ_FORCE_LINK_SPEEDS2_*`,
/// `PORT_PHY_QCFG_RESP_SUPPORT_SPEEDS2_*`, `..._LINK_SPEED_*`).
pub const SPEEDS: [Speed; 7] = [
    speed(Q::SUPPORT_SPEEDS2_50GB_PAM4_56, P::FORCE_LINK_SPEEDS2_50GB_PAM4_56, Q::LINK_SPEED_50GB, Q::SIGNAL_MODE_PAM4),
    speed(
        Q::SUPPORT_SPEEDS2_100GB_PAM4_56,
        P::FORCE_LINK_SPEEDS2_100GB_PAM4_56,
        Q::LINK_SPEED_100GB,
        Q::SIGNAL_MODE_PAM4,
    ),
    speed(
        Q::SUPPORT_SPEEDS2_100GB_PAM4_112,
        P::FORCE_LINK_SPEEDS2_100GB_PAM4_112,
        Q::LINK_SPEED_100GB,
        Q::SIGNAL_MODE_PAM4_112,
    ),
    speed(
        Q::SUPPORT_SPEEDS2_200GB_PAM4_56,
        P::FORCE_LINK_SPEEDS2_200GB_PAM4_56,
        Q::LINK_SPEED_200GB,
        Q::SIGNAL_MODE_PAM4,
    ),
    speed(
        Q::SUPPORT_SPEEDS2_200GB_PAM4_112,
        P::FORCE_LINK_SPEEDS2_200GB_PAM4_112,
        Q::LINK_SPEED_200GB,
        Q::SIGNAL_MODE_PAM4_112,
    ),
    speed(
        Q::SUPPORT_SPEEDS2_400GB_PAM4_56,
        P::FORCE_LINK_SPEEDS2_400GB_PAM4_56,
        Q::LINK_SPEED_400GB,
        Q::SIGNAL_MODE_PAM4,
    ),
    speed(
        Q::SUPPORT_SPEEDS2_400GB_PAM4_112,
        P::FORCE_LINK_SPEEDS2_400GB_PAM4_112,
        Q::LINK_SPEED_400GB,
        Q::SIGNAL_MODE_PAM4_112,
    ),
];

const fn speed(mask: u16, force: u16, link_speed: u16, signal: u8) -> Speed {
    Speed { mask, force, link_speed, signal }
}

const _: () = {
    let mut all = 0;
    let mut i = 0;
    while i < SPEEDS.len() {
        all |= SPEEDS[i].mask;
        i += 1;
    }
    assert!(all == SPEEDS2);
};

/// The speed the link runs at under `phy`: the forced one, or the fastest advertised.
pub fn active_speed(phy: &PhyConfig) -> Option<Speed> {
    if phy.auto_mode == P::AUTO_MODE_NONE {
        SPEEDS.iter().copied().find(|s| s.force == phy.force_speeds2)
    } else {
        SPEEDS.iter().rev().copied().find(|s| s.mask & phy.auto_speeds2 != 0)
    }
}

/// Whether the link is up under `phy`.
pub fn link_up(phy: &PhyConfig) -> bool {
    !phy.forced_down && !phy.peer_down && active_speed(phy).is_some()
}

/// The port's peer comes or goes (the cable plugged in or pulled): the link follows unless the
/// driver keeps it down, and a change of link state sends LINK_STATUS_CHANGE, as a change the
/// driver asked for does. Whether the link state changed.
pub fn set_peer(state: &mut super::state::FwState, present: bool) -> bool {
    let was_up = link_up(&state.l2.phy);
    state.l2.phy.peer_down = !present;
    let now_up = link_up(&state.l2.phy);
    if now_up != was_up {
        tracing::debug!(up = now_up, "link state changed (peer)");
        async_events::link_status_change(state, PORT_ID, now_up);
    }
    now_up != was_up
}

/// Fill PORT_PHY_QCFG's link fields from the current settings (called by
/// [`super::port::phy_qcfg`]).
pub fn fill_link(o: &mut Q, phy: &PhyConfig) {
    let active = active_speed(phy).filter(|_| link_up(phy));
    o.link = if active.is_some() { Q::LINK_LINK } else { Q::LINK_NO_LINK };
    o.link_speed = active.map_or(0, |s| s.link_speed).into();
    let signal = active.map_or(Q::SIGNAL_MODE_NRZ, |s| s.signal);
    o.active_fec_signal_mode = (o.active_fec_signal_mode & !Q::SIGNAL_MODE_MASK) | signal;
    o.auto_mode = phy.auto_mode;
    o.auto_link_speeds2 = if phy.auto_mode == P::AUTO_MODE_NONE { 0 } else { phy.auto_speeds2 }.into();
    o.force_link_speeds2 = if phy.auto_mode == P::AUTO_MODE_NONE { phy.force_speeds2 } else { 0 }.into();
    o.auto_pause = phy.pause;
    o.force_pause = phy.pause;
    o.pause = if active.is_some() { phy.pause & (Q::PAUSE_TX | Q::PAUSE_RX) } else { 0 };
}

/// Refuse a port other than the function's.
pub fn check_port(port: u16) -> Result<(), Reject> {
    if port != PORT_ID {
        return Err(Reject::invalid(format!("port_id {port} does not exist (the function has port {PORT_ID})")));
    }
    Ok(())
}

/// Flags PORT_PHY_CFG may carry: link restarts, forcing, forcing down, EEE off.
const HANDLED_FLAGS: u32 =
    P::FLAGS_RESET_PHY | P::FLAGS_FORCE | P::FLAGS_RESTART_AUTONEG | P::FLAGS_FORCE_LINK_DWN | P::FLAGS_EEE_DISABLE;
/// Enables PORT_PHY_CFG may carry.
const HANDLED_ENABLES: u32 = P::ENABLES_AUTO_MODE
    | P::ENABLES_AUTO_PAUSE
    | P::ENABLES_FORCE_PAUSE
    | P::ENABLES_AUTO_LINK_SPEEDS2_MASK
    | P::ENABLES_FORCE_LINK_SPEEDS2
    | P::ENABLES_AUTO_DUPLEX;

/// PORT_PHY_CFG.
pub fn phy_cfg(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: P = parse(bytes);
    let port = req.port_id.get();
    check_port(port)?;
    let (flags, enables) = (req.flags.get(), req.enables.get());
    if flags & !HANDLED_FLAGS != 0 || enables & !HANDLED_ENABLES != 0 {
        ctx.state.l2.unimplemented += 1;
        return Err(Reject::invalid(format!(
            "flags 0x{:x} / enables 0x{:x}: EEE, FEC, loopback, legacy speed fields and the like are not modelled",
            flags & !HANDLED_FLAGS,
            enables & !HANDLED_ENABLES
        )));
    }
    let was_up = link_up(&ctx.state.l2.phy);
    let mut phy = ctx.state.l2.phy;
    if flags & P::FLAGS_FORCE_LINK_DWN != 0 {
        phy.forced_down = true;
    } else {
        // BOTH lets the link run either way, and the port runs full duplex: DPDK's PMD sends it
        // with every speed but 10 and 100 Mb/s half duplex (drivers/net/bnxt/bnxt_hwrm.c
        // `bnxt_parse_eth_link_duplex`, `bnxt_hwrm_port_phy_cfg_v2`).
        if enables & P::ENABLES_AUTO_DUPLEX != 0
            && !matches!(req.auto_duplex, P::AUTO_DUPLEX_FULL | P::AUTO_DUPLEX_BOTH)
        {
            return Err(Reject::invalid(format!("auto_duplex {}: the port runs full duplex only", req.auto_duplex)));
        }
        if flags & P::FLAGS_FORCE != 0
            || (enables & P::ENABLES_FORCE_LINK_SPEEDS2 != 0 && flags & P::FLAGS_RESTART_AUTONEG == 0)
        {
            let code = req.force_link_speeds2.get();
            if !SPEEDS.iter().any(|s| s.force == code) {
                return Err(Reject::invalid(format!("force_link_speeds2 0x{code:x} is not a speed of the port")));
            }
            phy.auto_mode = P::AUTO_MODE_NONE;
            phy.force_speeds2 = code;
        } else if enables & P::ENABLES_AUTO_MODE != 0 {
            match req.auto_mode {
                P::AUTO_MODE_ALL_SPEEDS => phy.auto_speeds2 = SPEEDS2,
                P::AUTO_MODE_SPEED_MASK => {
                    if enables & P::ENABLES_AUTO_LINK_SPEEDS2_MASK != 0 {
                        let mask = req.auto_link_speeds2_mask.get();
                        if mask == 0 || mask & !SPEEDS2 != 0 {
                            return Err(Reject::invalid(format!(
                                "auto_link_speeds2_mask 0x{mask:x} is empty or has speeds the port lacks (0x{SPEEDS2:x})"
                            )));
                        }
                        phy.auto_speeds2 = mask;
                    }
                }
                other => {
                    return Err(Reject::invalid(format!(
                        "auto_mode {other} is not supported (ALL_SPEEDS or SPEED_MASK)"
                    )));
                }
            }
            phy.auto_mode = req.auto_mode;
        }
        if enables & P::ENABLES_AUTO_PAUSE != 0 {
            phy.pause = req.auto_pause;
        }
        if enables & P::ENABLES_FORCE_PAUSE != 0 {
            phy.pause = req.force_pause;
        }
        phy.forced_down = false;
    }
    ctx.state.l2.phy = phy;
    let now_up = link_up(&phy);
    if now_up != was_up {
        tracing::debug!(up = now_up, "link state changed");
        async_events::link_status_change(ctx.state, PORT_ID, now_up);
    }
    reply::<HwrmPortPhyCfgOutput>(|_| {})
}

/// PORT_MAC_QCAPS: the MAC has no loopback the model could carry out.
pub fn mac_qcaps(bytes: &[u8]) -> Outcome {
    let req: HwrmPortMacQcapsInput = parse(bytes);
    let port = req.port_id.get();
    check_port(port)?;
    reply::<HwrmPortMacQcapsOutput>(|o| o.flags = HwrmPortMacQcapsOutput::FLAGS_LOCAL_LPBK_NOT_SUPPORTED)
}

/// The port's source virtual interface (PORT_MAC_QCFG `port_svif_info`): the model's choice; no
/// source gives a P7's numbering. DPDK's PMD keeps it for its flow rules
/// (drivers/net/bnxt/bnxt_hwrm.c `bnxt_hwrm_port_mac_qcfg`).
pub const PORT_SVIF: u16 = 0x10;
/// PORT_MAC_QCFG `ipg`: the standard 12-byte inter-packet gap (what the MAC keeps unless
/// PORT_MAC_CFG changes it).
pub const DEFAULT_IPG: u8 = 12;

/// PORT_MAC_QCFG: the MAC's settings: MTU and MRU as FUNC_CFG set them (or the default), the
/// inter-packet gap, no loopback, no priority mapping, and the port's SVIF.
pub fn mac_qcfg(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmPortMacQcfgInput = parse(bytes);
    // `port_id` is only meaningful to a VF's trusted host; the PF's own port is 0 anyway.
    check_port(req.port_id.get())?;
    let mtu = ctx.state.l2.mtu;
    let (_, ipg, lpbk) = ctx.state.l2.mac_cfg;
    reply::<HwrmPortMacQcfgOutput>(|o| {
        o.mtu = mtu.host.unwrap_or(super::func::ADMIN_MTU).into();
        o.mru = mtu.mru.unwrap_or(super::func::ADMIN_MTU).into();
        o.ipg = if ipg == 0 { DEFAULT_IPG } else { ipg };
        o.lpbk = lpbk;
        o.port_svif_info = (HwrmPortMacQcfgOutput::PORT_SVIF_INFO_PORT_SVIF_VALID | PORT_SVIF).into();
    })
}

/// PORT_LED_QCAPS: the virtual port has no LEDs.
pub fn led_qcaps(bytes: &[u8]) -> Outcome {
    let req: HwrmPortLedQcapsInput = parse(bytes);
    let port = req.port_id.get();
    check_port(port)?;
    reply::<HwrmPortLedQcapsOutput>(|o| o.num_leds = 0)
}

/// Key fields of a PORT_PHY_CFG request, for the event log.
pub fn phy_cfg_summary(bytes: &[u8]) -> String {
    let r: P = parse(bytes);
    format!(
        "flags=0x{:x} enables=0x{:x} auto_mode={} speeds2_mask=0x{:x} force_speeds2=0x{:x}",
        r.flags.get(),
        r.enables.get(),
        r.auto_mode,
        r.auto_link_speeds2_mask.get(),
        r.force_link_speeds2.get()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn autoneg_picks_the_fastest_advertised_speed_and_forcing_down_drops_the_link() {
        let mut phy = PhyConfig::default();
        assert_eq!(active_speed(&phy).map(|s| s.link_speed), Some(Q::LINK_SPEED_400GB));
        phy.auto_speeds2 = Q::SUPPORT_SPEEDS2_100GB_PAM4_56 | Q::SUPPORT_SPEEDS2_50GB_PAM4_56;
        assert_eq!(active_speed(&phy).map(|s| s.link_speed), Some(Q::LINK_SPEED_100GB));
        phy.auto_mode = P::AUTO_MODE_NONE;
        phy.force_speeds2 = P::FORCE_LINK_SPEEDS2_200GB_PAM4_112;
        assert_eq!(active_speed(&phy).map(|s| s.signal), Some(Q::SIGNAL_MODE_PAM4_112));
        assert!(link_up(&phy));
        phy.forced_down = true;
        assert!(!link_up(&phy));
        let mut o = <Q as zerocopy::FromZeros>::new_zeroed();
        fill_link(&mut o, &phy);
        assert_eq!((o.link, o.link_speed.get()), (Q::LINK_NO_LINK, 0));
    }
}
