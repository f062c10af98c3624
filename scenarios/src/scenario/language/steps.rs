//! The steps of the language as Rust types, one per step keyword that takes a mapping. Their
//! doc comments are the descriptions editors show.

use schemars::{JsonSchema, Schema, SchemaGenerator};

use super::StepEntry;
use super::scalars::{self, one_of};
use crate::scenario::{Fill, RegionMemory};

/// `open`: open a NIC and name it.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Open {
    /// The NIC's index (0 to `nics` - 1).
    #[schemars(schema_with = "scalars::nic_index")]
    pub nic: u32,
    /// The name later steps use for it.
    #[schemars(rename = "as", schema_with = "scalars::alias")]
    pub alias: String,
}

/// `config`: the NIC's PCI config-space state (at least one of the switches).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Config {
    /// A NIC index or alias (also of a closed NIC, or of one whose open failed).
    #[schemars(schema_with = "scalars::nic_ref")]
    pub nic: String,
    /// PCIe Device Control: relaxed ordering enabled.
    #[schemars(default, schema_with = "scalars::switch")]
    pub relaxed_ordering: Option<bool>,
    /// Command register: bus master enabled.
    #[schemars(default, schema_with = "scalars::switch")]
    pub bus_master: Option<bool>,
    /// Command register: memory space enabled.
    #[schemars(default, schema_with = "scalars::switch")]
    pub memory: Option<bool>,
}

/// `identity`: who an open NIC is, checked against the contract and the values given.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Identity {
    /// The NIC's alias.
    #[schemars(schema_with = "scalars::alias")]
    pub nic: String,
    /// Its name (`BNXT:1`).
    pub name: Option<String>,
    /// Its bus address (`0000:02:00.0`).
    pub bus: Option<String>,
    /// Its MAC address (`02:00:00:00:00:01`).
    pub mac: Option<String>,
    /// Its IPv4 address.
    pub ipv4: Option<String>,
    /// Its GID, as an IPv6 address.
    pub gid: Option<String>,
    /// Open NICs whose MAC and IPv4 must differ from this one's.
    #[schemars(default, schema_with = "scalars::aliases")]
    pub differs_from: Option<Vec<String>>,
}

/// `limits`: an open NIC's queue-pair and region limits.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Limits {
    /// The NIC's alias.
    #[schemars(schema_with = "scalars::alias")]
    pub nic: String,
    /// Exact number of queue pairs.
    #[schemars(default, schema_with = "scalars::count")]
    pub qps: Option<u32>,
    /// Exact number of regions.
    #[schemars(default, schema_with = "scalars::count")]
    pub regions: Option<u32>,
}

/// `count`: how many NICs the machine has (one of the two).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Count {
    /// Exactly this many.
    #[schemars(default, schema_with = "scalars::count")]
    pub equals: Option<u32>,
    /// At least this many.
    #[schemars(default, schema_with = "scalars::count")]
    pub at_least: Option<u32>,
}

/// `repeat`: steps several times.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Repeat {
    /// How many times (1 to 1,000,000).
    #[schemars(schema_with = "repeat_times")]
    pub times: u32,
    /// The steps.
    #[schemars(schema_with = "step_list")]
    pub steps: Vec<()>,
}

fn repeat_times(_: &mut SchemaGenerator) -> Schema {
    scalars::integer(1, crate::scenario::decode_step::MAX_REPEAT)
}

/// A non-empty list of steps.
pub fn step_list(g: &mut SchemaGenerator) -> Schema {
    let step = g.subschema_for::<StepEntry>().to_value();
    schemars::json_schema!({ "type": "array", "minItems": 1, "items": step })
}

/// `inspect`: what the model sees of a NIC (at least one check).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Inspect {
    /// A NIC index or alias.
    #[schemars(schema_with = "scalars::nic_ref")]
    pub nic: String,
    /// DMA mappings the host gave the NIC.
    #[schemars(default, schema_with = "scalars::count")]
    pub dma_mappings: Option<u32>,
    /// Whether a driver is registered with the firmware.
    #[schemars(default, schema_with = "scalars::switch")]
    pub driver_registered: Option<bool>,
    /// Objects the function holds in the firmware and the RoCE engine: rings, statistics
    /// contexts, VNICs, RSS contexts, L2 filters, GIDs, CQs, QPs, SRQs, memory keys, address
    /// handles (0 once a driver closed cleanly).
    #[schemars(default, schema_with = "scalars::count")]
    pub firmware_objects: Option<u32>,
    /// RoCE frames no L2 filter of the function passed to its RoCE engine.
    #[schemars(default, schema_with = "scalars::count")]
    pub rx_no_l2_filter: Option<u32>,
}

/// `region`: memory on a NIC, registered, filled as said.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Region {
    /// The NIC's alias.
    #[schemars(schema_with = "scalars::alias")]
    pub on: String,
    /// The region's name.
    #[schemars(rename = "as", schema_with = "scalars::alias")]
    pub alias: String,
    /// Its size (`4096`, `64KiB`, `2MiB`).
    #[schemars(schema_with = "scalars::size")]
    pub bytes: u64,
    /// What it holds at first: `zero` (the default), `random` (from the seed) or `pattern`.
    #[schemars(default, schema_with = "fill")]
    pub fill: Option<String>,
    /// Whose memory: `host` (the default: the driver allocates it), `pages` (the process's
    /// memory, pinned and registered) or `device` (another device's, named by `device` and `bar`).
    #[schemars(default, schema_with = "region_memory")]
    pub memory: Option<String>,
    /// With `memory: device`: the device's bus address (`0000:81:00.0`).
    #[schemars(default)]
    pub device: Option<String>,
    /// With `memory: device`: its BAR (0 to 5; 0 when absent).
    #[schemars(default, range(max = 5))]
    pub bar: Option<u8>,
}

fn fill(_: &mut SchemaGenerator) -> Schema {
    one_of(&Fill::ALL.map(|(_, n)| n))
}

fn region_memory(_: &mut SchemaGenerator) -> Schema {
    one_of(&RegionMemory::NAMES)
}

/// `qp`: a queue pair on a NIC.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Qp {
    /// The NIC's alias.
    #[schemars(schema_with = "scalars::alias")]
    pub on: String,
    /// The queue pair's name.
    #[schemars(rename = "as", schema_with = "scalars::alias")]
    pub alias: String,
}

/// `connect`: connect two queue pairs, each to the other.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Connect {
    /// One queue pair.
    #[schemars(schema_with = "scalars::alias")]
    pub qp: String,
    /// The other (on the same NIC or another).
    #[schemars(schema_with = "scalars::alias")]
    pub peer: String,
}

/// `send` or `receive`: post a range of a region on a queue pair.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Transfer {
    /// The queue pair.
    #[schemars(schema_with = "scalars::alias")]
    pub qp: String,
    /// The region (on the queue pair's NIC).
    #[schemars(schema_with = "scalars::alias")]
    pub region: String,
    /// Offset in the region (0 when absent).
    #[schemars(default, schema_with = "scalars::size")]
    pub at: Option<u64>,
    /// How many bytes.
    #[schemars(schema_with = "scalars::size")]
    pub bytes: u64,
}

/// `read`: RDMA READ between two regions of the queue pair's NIC.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Read {
    /// The queue pair (connected to another on the same NIC).
    #[schemars(schema_with = "scalars::alias")]
    pub qp: String,
    /// Where the bytes land.
    #[schemars(schema_with = "scalars::alias")]
    pub region: String,
    /// Offset in `region` (0 when absent).
    #[schemars(default, schema_with = "scalars::size")]
    pub at: Option<u64>,
    /// The region read.
    #[schemars(schema_with = "scalars::alias")]
    pub from: String,
    /// Offset in `from` (0 when absent).
    #[schemars(default, schema_with = "scalars::size")]
    pub from_at: Option<u64>,
    /// How many bytes.
    #[schemars(schema_with = "scalars::size")]
    pub bytes: u64,
}

/// `complete`: the next completions of a ring.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Complete {
    /// The queue pair.
    #[schemars(schema_with = "scalars::alias")]
    pub qp: String,
    /// Which ring: `send` (sends and reads) or `receive`.
    #[schemars(schema_with = "side")]
    pub side: String,
    /// The status each must have (`ok` when absent).
    #[schemars(default, schema_with = "status")]
    pub status: Option<String>,
    /// The bytes each must report.
    #[schemars(default, schema_with = "scalars::size")]
    pub bytes: Option<u64>,
    /// How long to wait for each, on the target's clock (10s when absent).
    #[schemars(default, schema_with = "scalars::duration")]
    pub within: Option<String>,
    /// How many completions (1 when absent).
    #[schemars(default, schema_with = "scalars::positive")]
    pub count: Option<u32>,
}

fn side(_: &mut SchemaGenerator) -> Schema {
    one_of(&["send", "receive"])
}

fn status(_: &mut SchemaGenerator) -> Schema {
    one_of(&bnxt::Status::ALL.map(|(_, n)| n))
}

/// `compare`: two ranges hold the same bytes.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Compare {
    /// One region.
    #[schemars(schema_with = "scalars::alias")]
    pub region: String,
    /// Offset in it (0 when absent).
    #[schemars(default, schema_with = "scalars::size")]
    pub at: Option<u64>,
    /// The other region.
    #[schemars(schema_with = "scalars::alias")]
    pub with: String,
    /// Offset in it (0 when absent).
    #[schemars(default, schema_with = "scalars::size")]
    pub with_at: Option<u64>,
    /// How many bytes.
    #[schemars(schema_with = "scalars::size")]
    pub bytes: u64,
}

/// `room`: how many more entries a ring takes (one of the two checks).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Room {
    /// The queue pair.
    #[schemars(schema_with = "scalars::alias")]
    pub qp: String,
    /// Which ring.
    #[schemars(schema_with = "side")]
    pub side: String,
    /// Exactly this many.
    #[schemars(default, schema_with = "scalars::count")]
    pub equals: Option<u32>,
    /// At least this many.
    #[schemars(default, schema_with = "scalars::count")]
    pub at_least: Option<u32>,
}

/// `expect`: what must happen when the step runs (at least one).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Expect {
    /// The step fails with an error whose message matches this regular expression.
    #[schemars(default, schema_with = "scalars::text")]
    pub error: Option<String>,
    /// The step is misuse the driver refuses (it panics) with a message matching this.
    #[schemars(default, schema_with = "scalars::text")]
    pub misuse: Option<String>,
    /// The step takes at least this long on the target's clock.
    #[schemars(default, schema_with = "scalars::duration")]
    pub takes_at_least: Option<String>,
    /// The step takes at most this long on the target's clock.
    #[schemars(default, schema_with = "scalars::duration")]
    pub takes_at_most: Option<String>,
}
