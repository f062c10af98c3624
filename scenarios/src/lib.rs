//! `bnxt-rig`: runs YAML scenarios against the BCM57608 model (and later real cards), with the
//! same driver code on every target.
//!
//! - [`scenario`]: the scenario language: its types (read by serde, described by schemars, run
//!   by the runner), loading, checks before running.
//! - [`yaml`]: scenario files as a positioned tree, and the serde deserializer over it.
//! - [`target`]: what scenarios run against (the in-process model now).
//! - [`run`]: the runner: steps in order, verdicts, panics caught.
//! - [`report`]: what a person (the console) and a machine (JUnit, JSON) read after a run.
//! - [`transcript`]: the record of a run, event by event; comparing two; the ladder diagram.
//! - [`cli`]: the `bnxt-rig` command.
//!
//! docs/scenarios.md is the reference of the language.
#![deny(missing_docs)]
#![warn(unreachable_pub)]
#![forbid(unsafe_code)]

pub mod cli;
pub mod report;
pub mod run;
pub mod scenario;
pub mod suggest;
pub mod target;
pub mod transcript;
pub mod yaml;
