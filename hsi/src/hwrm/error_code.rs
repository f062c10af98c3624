//! HWRM error codes (`ret_codes`, bnxt_hsi.h `HWRM_ERR_CODE_*`).

macro_rules! error_codes {
    ($($variant:ident = $value:expr, $name:literal;)*) => {
        /// An HWRM `error_code`, as a response's first field carries it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $(
                #[doc = concat!("`HWRM_ERR_CODE_", $name, "`.")]
                $variant,
            )*
            /// A value the interface does not define.
            Other(u16),
        }

        impl ErrorCode {
            /// Every defined code, with its name.
            pub const ALL: &'static [(ErrorCode, &'static str)] = &[$((ErrorCode::$variant, $name),)*];

            /// The code's wire value.
            pub fn value(self) -> u16 {
                match self { $(ErrorCode::$variant => $value,)* ErrorCode::Other(v) => v }
            }

            /// The code for a wire value.
            pub fn from_value(v: u16) -> ErrorCode {
                match v { $($value => ErrorCode::$variant,)* other => ErrorCode::Other(other) }
            }

            /// The code's name (`CMD_NOT_SUPPORTED`), or `0x..` for an undefined value.
            pub fn name(self) -> std::borrow::Cow<'static, str> {
                match self {
                    $(ErrorCode::$variant => std::borrow::Cow::Borrowed($name),)*
                    ErrorCode::Other(v) => std::borrow::Cow::Owned(format!("0x{v:04x}")),
                }
            }

            /// The code named `name` (with or without the `HWRM_ERR_CODE_` prefix, any case).
            pub fn by_name(name: &str) -> Option<ErrorCode> {
                let prefix = "HWRM_ERR_CODE_";
                let name = match name.get(..prefix.len()) {
                    Some(head) if head.eq_ignore_ascii_case(prefix) => &name[prefix.len()..],
                    _ => name,
                };
                Self::ALL.iter().find(|(_, n)| n.eq_ignore_ascii_case(name)).map(|(c, _)| *c)
            }
        }
    };
}

error_codes! {
    Success = 0x0, "SUCCESS";
    Fail = 0x1, "FAIL";
    InvalidParams = 0x2, "INVALID_PARAMS";
    ResourceAccessDenied = 0x3, "RESOURCE_ACCESS_DENIED";
    ResourceAllocError = 0x4, "RESOURCE_ALLOC_ERROR";
    InvalidFlags = 0x5, "INVALID_FLAGS";
    InvalidEnables = 0x6, "INVALID_ENABLES";
    UnsupportedTlv = 0x7, "UNSUPPORTED_TLV";
    NoBuffer = 0x8, "NO_BUFFER";
    UnsupportedOption = 0x9, "UNSUPPORTED_OPTION_ERR";
    HotResetProgress = 0xa, "HOT_RESET_PROGRESS";
    HotResetFail = 0xb, "HOT_RESET_FAIL";
    NoFlowCounterDuringAlloc = 0xc, "NO_FLOW_COUNTER_DURING_ALLOC";
    KeyHashCollision = 0xd, "KEY_HASH_COLLISION";
    KeyAlreadyExists = 0xe, "KEY_ALREADY_EXISTS";
    HwrmError = 0xf, "HWRM_ERROR";
    Busy = 0x10, "BUSY";
    ResourceLocked = 0x11, "RESOURCE_LOCKED";
    PfUnavailable = 0x12, "PF_UNAVAILABLE";
    EntityNotPresent = 0x13, "ENTITY_NOT_PRESENT";
    SecureSocError = 0x14, "SECURE_SOC_ERROR";
    TlvEncapsulatedResponse = 0x8000, "TLV_ENCAPSULATED_RESPONSE";
    UnknownErr = 0xfffe, "UNKNOWN_ERR";
    CmdNotSupported = 0xffff, "CMD_NOT_SUPPORTED";
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn codes_round_trip_by_value_and_name() {
        for (code, name) in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_value(code.value()), *code);
            assert_eq!(ErrorCode::by_name(name), Some(*code));
        }
        assert_eq!(ErrorCode::from_value(0x77), ErrorCode::Other(0x77));
        assert_eq!(ErrorCode::by_name("hwrm_err_code_busy"), Some(ErrorCode::Busy));
        assert_eq!(ErrorCode::by_name("NOPE"), None);
    }
}
