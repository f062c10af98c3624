//! The RoCE engine of the model.
//!
//! [`transport`] is the reliable-connected transport (requester, responder and completer), which
//! knows nothing of the BCM57608's work-queue or completion formats.

pub mod transport;
