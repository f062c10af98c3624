//! Building HWRM responses: the common header, the trailing valid byte, and error responses.
//!
//! A successful response is the request's own response layout with the `output` header filled
//! in (`error_code` 0, `req_type` and `seq_id` echoed, `resp_len` = the layout's length, which
//! includes the trailing `valid` byte). A refusal is `hwrm_err_output` (bnxt_hsi.h; 16 bytes:
//! header, `opaque_0`, `opaque_1`, `cmd_err`, `valid`), the HSI's generic error layout, whose
//! `cmd_err` carries the request's own `*_cmd_err` code where the HSI defines one
//! (e.g. `RING_ALLOC_CMD_ERR_CODE_BAD_PG_SIZE`).

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::hwrm::layouts::{HwrmErrOutput, Output};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

/// Why a request was refused: the error code, the HSI's command-specific code, and a sentence
/// for logs naming what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reject {
    /// The HWRM error code.
    pub code: ErrorCode,
    /// `cmd_err` (0 = unknown/unspecified).
    pub cmd_err: u8,
    /// What was wrong, for the event log.
    pub reason: String,
}

impl Reject {
    /// A refusal with `code`, no command-specific code.
    pub fn new(code: ErrorCode, reason: impl Into<String>) -> Reject {
        Reject { code, cmd_err: 0, reason: reason.into() }
    }

    /// `INVALID_PARAMS` with `reason`.
    pub fn invalid(reason: impl Into<String>) -> Reject {
        Reject::new(ErrorCode::InvalidParams, reason)
    }

    /// The same refusal with command-specific code `cmd_err`.
    pub fn cmd_err(mut self, cmd_err: u8) -> Reject {
        self.cmd_err = cmd_err;
        self
    }
}

/// What a handler produces: the response layout's bytes (header left zero), or a refusal.
pub type Outcome = Result<Vec<u8>, Reject>;

/// The bytes of a response layout `T` after `fill` set its fields.
pub fn reply<T: FromZeros + IntoBytes + Immutable>(fill: impl FnOnce(&mut T)) -> Outcome {
    let mut out = T::new_zeroed();
    fill(&mut out);
    Ok(out.as_bytes().to_vec())
}

/// Parse request layout `T` from `bytes`: shorter requests are zero-extended (older drivers send
/// shorter layouts), bytes beyond the layout are ignored.
pub fn parse<T: FromBytes + KnownLayout + Immutable>(bytes: &[u8]) -> T {
    let size = size_of::<T>();
    let mut buf = vec![0u8; size];
    let n = bytes.len().min(size);
    buf[..n].copy_from_slice(&bytes[..n]);
    T::read_from_bytes(&buf).expect("buffer has exactly the layout's size")
}

/// A finished response: the bytes to DMA, `valid` byte last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Every byte of the response, the last being the valid byte (1).
    pub bytes: Vec<u8>,
    /// The error code it carries.
    pub error_code: u16,
}

/// Fill the header of `body` (a response layout's bytes) and set its valid byte.
pub fn success(mut body: Vec<u8>, req_type: u16, seq_id: u16) -> Response {
    debug_assert!(body.len() > size_of::<Output>());
    let hdr = Output {
        error_code: 0.into(),
        req_type: req_type.into(),
        seq_id: seq_id.into(),
        resp_len: (body.len() as u16).into(),
    };
    body[..size_of::<Output>()].copy_from_slice(hdr.as_bytes());
    let last = body.len() - 1;
    body[last] = bnxt_hsi::hwrm::RESP_VALID_KEY;
    Response { bytes: body, error_code: 0 }
}

/// An `hwrm_err_output` refusing the request with `code` and `cmd_err`.
pub fn failure(code: u16, cmd_err: u8, req_type: u16, seq_id: u16) -> Response {
    let out = HwrmErrOutput {
        error_code: code.into(),
        req_type: req_type.into(),
        seq_id: seq_id.into(),
        resp_len: (size_of::<HwrmErrOutput>() as u16).into(),
        opaque_0: 0.into(),
        opaque_1: 0.into(),
        cmd_err,
        valid: bnxt_hsi::hwrm::RESP_VALID_KEY,
    };
    Response { bytes: out.as_bytes().to_vec(), error_code: code }
}

/// Copy `s` into a fixed, NUL-padded name field (truncated to leave a terminating NUL).
pub fn name_field<const N: usize>(s: &str) -> [u8; N] {
    let mut out = [0u8; N];
    let n = s.len().min(N - 1);
    out[..n].copy_from_slice(&s.as_bytes()[..n]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bnxt_hsi::hwrm::layouts::{HwrmFuncResetInput, HwrmStatCtxFreeOutput};

    #[test]
    fn short_requests_are_zero_extended_and_long_ones_truncated() {
        let mut bytes = vec![0xaa; 16];
        bytes.extend_from_slice(&[1, 0, 0, 0]);
        let req: HwrmFuncResetInput = parse(&bytes);
        assert_eq!(req.enables.get(), 1);
        assert_eq!(req.func_reset_level, 0);
        let long = vec![0x11; 300];
        let req: HwrmFuncResetInput = parse(&long);
        assert_eq!(req.func_reset_level, 0x11);
    }

    #[test]
    fn success_and_failure_put_the_valid_byte_last() {
        let body = reply::<HwrmStatCtxFreeOutput>(|o| o.stat_ctx_id = 9.into()).unwrap();
        let r = success(body, 0xb1, 5);
        assert_eq!(r.bytes.len(), 16);
        assert_eq!(u16::from_le_bytes([r.bytes[6], r.bytes[7]]), 16);
        assert_eq!(r.bytes[15], 1);
        let f = failure(2, 3, 0x50, 6);
        assert_eq!(f.bytes.len(), 16);
        assert_eq!((f.bytes[0], f.bytes[14], f.bytes[15]), (2, 3, 1));
        assert_eq!(name_field::<4>("abcdef"), *b"abc\0");
    }
}
