//! Queue-pair values of MODIFY_QP and QUERY_QP: states, path MTU codes, and the two access-flag
//! orders (roce_hsi.h `cmdq_modify_qp`, `cmdq_register_mr`; hardware-map §4.5).

use super::layouts::{CmdqModifyQp as M, CmdqRegisterMr as R};

/// A QP state (`CMDQ_MODIFY_QP_NEW_STATE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QpState {
    /// Reset (0).
    Reset,
    /// Initialised (1).
    Init,
    /// Ready to receive (2).
    Rtr,
    /// Ready to send (3).
    Rts,
    /// Send queue drained (4).
    Sqd,
    /// Send queue error (5).
    Sqe,
    /// Error (6).
    Err,
}

impl QpState {
    /// The state for the 4-bit field.
    pub fn from_field(v: u8) -> Option<QpState> {
        Some(match v {
            M::NEW_STATE_RESET => QpState::Reset,
            M::NEW_STATE_INIT => QpState::Init,
            M::NEW_STATE_RTR => QpState::Rtr,
            M::NEW_STATE_RTS => QpState::Rts,
            M::NEW_STATE_SQD => QpState::Sqd,
            M::NEW_STATE_SQE => QpState::Sqe,
            M::NEW_STATE_ERR => QpState::Err,
            _ => return None,
        })
    }

    /// The 4-bit field value.
    pub fn field(self) -> u8 {
        match self {
            QpState::Reset => M::NEW_STATE_RESET,
            QpState::Init => M::NEW_STATE_INIT,
            QpState::Rtr => M::NEW_STATE_RTR,
            QpState::Rts => M::NEW_STATE_RTS,
            QpState::Sqd => M::NEW_STATE_SQD,
            QpState::Sqe => M::NEW_STATE_SQE,
            QpState::Err => M::NEW_STATE_ERR,
        }
    }

    /// The header's name (`RTS`).
    pub fn name(self) -> &'static str {
        match self {
            QpState::Reset => "RESET",
            QpState::Init => "INIT",
            QpState::Rtr => "RTR",
            QpState::Rts => "RTS",
            QpState::Sqd => "SQD",
            QpState::Sqe => "SQE",
            QpState::Err => "ERR",
        }
    }
}

/// Bytes of a path MTU code (bits 7:4 of `path_mtu_pingpong_push_enable`, already shifted
/// down): 0 = 256 ... 5 = 8192 (`CMDQ_MODIFY_QP_PATH_MTU_MTU_*`).
pub fn mtu_bytes(code: u8) -> Option<u32> {
    (code <= 5).then(|| 256u32 << code)
}

/// The path MTU code of `bytes`, if it is one of the defined sizes.
pub fn mtu_code(bytes: u32) -> Option<u8> {
    (0..=5u8).find(|&c| 256u32 << c == bytes)
}

/// Shift of the path MTU in `path_mtu_pingpong_push_enable` (`CMDQ_MODIFY_QP_PATH_MTU_SFT`).
pub const PATH_MTU_SHIFT: u8 = 4;

/// Access rights of a region or a QP, independent of the command's bit order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Access {
    /// Local write.
    pub local_write: bool,
    /// Remote write.
    pub remote_write: bool,
    /// Remote read.
    pub remote_read: bool,
    /// Remote atomic.
    pub remote_atomic: bool,
}

impl Access {
    /// MODIFY_QP `access` (0x1 LOCAL_WRITE, 0x2 REMOTE_WRITE, 0x4 REMOTE_READ, 0x8 REMOTE_ATOMIC).
    pub fn from_modify_qp(v: u8) -> Access {
        Access {
            local_write: v & M::ACCESS_LOCAL_WRITE != 0,
            remote_write: v & M::ACCESS_REMOTE_WRITE != 0,
            remote_read: v & M::ACCESS_REMOTE_READ != 0,
            remote_atomic: v & M::ACCESS_REMOTE_ATOMIC != 0,
        }
    }

    /// The MODIFY_QP `access` byte.
    pub fn modify_qp(self) -> u8 {
        (if self.local_write { M::ACCESS_LOCAL_WRITE } else { 0 })
            | (if self.remote_write { M::ACCESS_REMOTE_WRITE } else { 0 })
            | (if self.remote_read { M::ACCESS_REMOTE_READ } else { 0 })
            | (if self.remote_atomic { M::ACCESS_REMOTE_ATOMIC } else { 0 })
    }

    /// REGISTER_MR `access` (0x1 LOCAL_WRITE, 0x2 REMOTE_READ, 0x4 REMOTE_WRITE, 0x8
    /// REMOTE_ATOMIC; MW_BIND and ZERO_BASED are not access rights and are ignored here).
    pub fn from_register_mr(v: u8) -> Access {
        Access {
            local_write: v & R::ACCESS_LOCAL_WRITE != 0,
            remote_write: v & R::ACCESS_REMOTE_WRITE != 0,
            remote_read: v & R::ACCESS_REMOTE_READ != 0,
            remote_atomic: v & R::ACCESS_REMOTE_ATOMIC != 0,
        }
    }

    /// The REGISTER_MR `access` bits.
    pub fn register_mr(self) -> u8 {
        (if self.local_write { R::ACCESS_LOCAL_WRITE } else { 0 })
            | (if self.remote_write { R::ACCESS_REMOTE_WRITE } else { 0 })
            | (if self.remote_read { R::ACCESS_REMOTE_READ } else { 0 })
            | (if self.remote_atomic { R::ACCESS_REMOTE_ATOMIC } else { 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_access_orders_differ_as_the_header_says() {
        let a = Access { remote_write: true, ..Access::default() };
        assert_eq!(a.modify_qp(), 0x2);
        assert_eq!(a.register_mr(), 0x4);
        assert!(Access::from_register_mr(0x2).remote_read);
        assert!(Access::from_modify_qp(0x4).remote_read);
        assert_eq!(mtu_bytes(4), Some(4096));
        assert_eq!(mtu_code(1024), Some(2));
        assert_eq!(mtu_bytes(6), None);
        for s in 0..7 {
            assert_eq!(QpState::from_field(s).unwrap().field(), s);
        }
        assert_eq!(QpState::from_field(7), None);
    }
}
