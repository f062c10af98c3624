//! The words of a transcript line's text (docs/transcripts.md): an event's name, then words and
//! named fields (`qp=1088`), in the order its writer put them.
//!
//! Every writer of transcript lines (the runner's steps, the driver's record, the model's events,
//! the QEMU trace plugin) names its fields with [`Field`], and `bnxt-rig diff` reads lines back
//! with [`tokens`]: so which values may differ between two runs of one scenario (ids the
//! firmware hands out, PSNs, sequence numbers, addresses, durations) is said once, by the field
//! that holds the value or by the value's type, not guessed from the text.
#![deny(missing_docs)]
#![warn(unreachable_pub)]
#![forbid(unsafe_code)]

mod field;
mod token;

pub use field::{Field, Named};
pub use token::{Token, Varies, tokens};
