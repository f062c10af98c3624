//! The fault entries of the language as Rust types.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use super::scalars::{self, one_of};
use crate::scenario::WireFaultKind;

/// `firmware`: the firmware misbehaves on one HWRM request, or one RoCE firmware command, of one
/// NIC.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Firmware {
    /// The NIC's index.
    #[schemars(schema_with = "scalars::nic_index")]
    pub nic: u32,
    /// The HWRM request, by its name in bnxt_hsi.h without `HWRM_` (`FUNC_DRV_RGTR`), or the RoCE
    /// firmware command, by its name in roce_hsi.h without `CMDQ_BASE_OPCODE_` (`CREATE_QP`).
    /// No name is both; with its prefix a name is only the one.
    #[schemars(schema_with = "scalars::text")]
    pub request: String,
    /// `no-response`, `error` (answer with `code`) or `delay` (answer `by` later).
    #[schemars(schema_with = "firmware_action")]
    pub action: String,
    /// With `action: error`: for an HWRM request, the HWRM error code's name
    /// (`RESOURCE_ALLOC_ERROR`); for a RoCE command, the CREQ status's name in roce_hsi.h without
    /// `CREQ_QP_EVENT_STATUS_` (`RESOURCES`).
    #[schemars(default, schema_with = "scalars::text")]
    pub code: Option<String>,
    /// With `action: delay`: how much later.
    #[schemars(default, schema_with = "scalars::duration")]
    pub by: Option<String>,
    /// Which occurrence of the request or command on the NIC (1 is the first); every one when
    /// absent.
    #[schemars(default, schema_with = "scalars::positive")]
    pub nth: Option<u32>,
}

/// The firmware fault actions.
pub const FIRMWARE_ACTIONS: &[&str] = &["no-response", "error", "delay"];

fn firmware_action(_: &mut SchemaGenerator) -> Schema {
    one_of(FIRMWARE_ACTIONS)
}

/// `wire`: the wire between the NICs loses, duplicates, reorders, corrupts or delays frames,
/// by chance (drawn from the scenario's seed) or by rule.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Wire {
    /// Chance a frame is lost (0 to 1).
    #[schemars(default, schema_with = "scalars::probability")]
    pub drop: Option<f64>,
    /// Chance a frame arrives twice.
    #[schemars(default, schema_with = "scalars::probability")]
    pub duplicate: Option<f64>,
    /// Chance a frame is held back and goes after the next one.
    #[schemars(default, schema_with = "scalars::probability")]
    pub reorder: Option<f64>,
    /// Chance a frame has one bit flipped (its ICRC then fails).
    #[schemars(default, schema_with = "scalars::probability")]
    pub corrupt: Option<f64>,
    /// Chance a frame arrives late.
    #[schemars(default, schema_with = "scalars::probability")]
    pub delay: Option<f64>,
    /// How much later a delayed frame arrives (100us when absent).
    #[schemars(default, schema_with = "scalars::duration")]
    pub delay_by: Option<String>,
    /// Longest a reordered frame waits for a next one (50us when absent).
    #[schemars(default, schema_with = "scalars::duration")]
    pub reorder_hold: Option<String>,
    /// Rules for chosen frames, looked at before the chances; the first that fires wins.
    pub rules: Option<Vec<WireRule>>,
}

/// A wire fault on chosen frames; every condition left out matches every frame.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct WireRule {
    /// Frames this NIC sends (its index).
    #[schemars(default, schema_with = "scalars::nic_index")]
    pub nic: Option<u32>,
    /// Frames with this BTH opcode: a number or a name (`SEND_ONLY`, `ACKNOWLEDGE`).
    #[schemars(default, schema_with = "opcode")]
    pub opcode: Option<String>,
    /// Frames with this PSN.
    #[schemars(default, schema_with = "psn")]
    pub psn: Option<u32>,
    /// Only the nth matching frame (1 is the first); every one when absent.
    #[schemars(default, schema_with = "scalars::positive")]
    pub nth: Option<u64>,
    /// What happens to the frame.
    #[schemars(schema_with = "wire_kind")]
    pub kind: String,
    /// For `delay`: by how much (`delay_by` when absent).
    #[schemars(default, schema_with = "scalars::duration")]
    pub delay: Option<String>,
}

fn wire_kind(_: &mut SchemaGenerator) -> Schema {
    one_of(&WireFaultKind::ALL.map(|(_, n)| n))
}

fn opcode(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = crate::scenario::opcodes::RC_OPCODES.iter().map(|(_, n)| *n).collect();
    json_schema!({
        "anyOf": [
            { "type": "integer", "minimum": 0, "maximum": 255 },
            { "type": "string", "enum": names },
            { "type": "string", "pattern": r"\$\{[A-Za-z][A-Za-z0-9_-]*\}" }
        ]
    })
}

fn psn(_: &mut SchemaGenerator) -> Schema {
    scalars::integer(0, 0xff_ffff)
}
