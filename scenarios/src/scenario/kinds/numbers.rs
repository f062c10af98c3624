//! Kinds of number: whole numbers in a range, durations, sizes, switches, probabilities.

use super::*;
use crate::scenario::MAX_NICS;
use crate::scenario::steps::{MAX_COMPLETE_COUNT, MAX_REPEAT};

/// Reads a whole number from `lo` to `hi`, `what` saying what it is (`a NIC index`).
pub(super) struct Integer {
    pub(super) lo: u64,
    pub(super) hi: u64,
    pub(super) what: &'static str,
}

impl Integer {
    fn read<'de, D: Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_any(self)
    }
    fn out_of_range<E: de::Error>(&self, value: impl fmt::Display) -> E {
        refuse(value, self.what, format_args!("must be from {} to {}", self.lo, self.hi))
    }
}

impl<'de> Visitor<'de> for Integer {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        if (self.lo..=self.hi).contains(&v) { Ok(v) } else { Err(self.out_of_range(v)) }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| self.out_of_range(v)).and_then(|v| self.visit_u64(v))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<u64, E> {
        Err(self.out_of_range(v))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<u64, E> {
        Err(self.out_of_range(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        let range = format_args!("must be a whole number from {} to {}", self.lo, self.hi);
        Err(refuse(format_args!("a number ({v})"), self.what, range))
    }
}

/// A kind of whole number: its name, Rust type, range and what it is called in messages.
macro_rules! integer {
    ($(#[$doc:meta])* $name:ident: $t:ty, $lo:expr, $hi:expr, $what:literal) => {
        $(#[$doc])*
        pub struct $name;

        impl Kind for $name {
            type Value = $t;
            fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                let n = Integer { lo: $lo as u64, hi: $hi as u64, what: $what }.read(d)?;
                Ok(<$t>::try_from(n).expect("the range fits the type"))
            }
            fn serialize<S: Serializer>(value: &$t, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u64(*value as u64)
            }
        }

        schema!($name, |g| or_reference(json!({ "type": "integer", "minimum": $lo as u64, "maximum": $hi as u64 })));
    };
}

integer!(
    /// A NIC index: 0 to 63.
    NicIndex: usize, 0, MAX_NICS - 1, "a NIC index"
);
integer!(
    /// A number of NICs: 1 to 64.
    NicCount: usize, 1, MAX_NICS, "the number of NICs"
);
integer!(
    /// A number of NICs a `count` step expects: 0 to 64.
    NicsCounted: usize, 0, MAX_NICS, "a number of NICs"
);
integer!(
    /// A count from 0 (queue pairs, regions, DMA mappings, ring entries).
    Count: u32, 0, u32::MAX, "a count"
);
integer!(
    /// A number of DMA mappings.
    DmaMappings: u32, 0, u32::MAX, "a number of DMA mappings"
);
integer!(
    /// A number of objects a function holds in the firmware and the RoCE engine.
    FirmwareObjects: u32, 0, u32::MAX, "a number of firmware objects"
);
integer!(
    /// A number of frames (a counter of the model's).
    Frames: u32, 0, u32::MAX, "a number of frames"
);
integer!(
    /// Queue pairs the firmware destroys fast (the QP context type's third split entry; at most
    /// 65,535, as the driver's sizing takes them).
    FastDestroyQps: u32, 0, u16::MAX, "a number of queue pairs"
);
integer!(
    /// The MRAV context type's most entries (regions and address vectors) a NIC's firmware
    /// offers: from 1,024 to 1,048,576 (the model's bounds; the model's default is 262,144).
    MravEntries: u32, 1024, 1 << 20, "a number of MRAV entries"
);
integer!(
    /// A number of entries of a ring.
    RingEntries: u32, 0, u32::MAX, "a number of ring entries"
);
integer!(
    /// Which occurrence of a request (1 is the first).
    Nth: u32, 1, u32::MAX, "which occurrence (1 is the first)"
);
integer!(
    /// Which matching frame (1 is the first).
    NthFrame: u64, 1, u64::MAX, "which matching frame (1 is the first)"
);
integer!(
    /// How many times a `repeat` runs its steps.
    RepeatTimes: u32, 1, MAX_REPEAT, "a repeat count"
);
integer!(
    /// How many completions a `complete` step takes.
    CompleteCount: u32, 1, MAX_COMPLETE_COUNT, "how many completions"
);
integer!(
    /// A BTH PSN (24 bits).
    Psn: u32, 0, 0xff_ffff, "a PSN (24 bits)"
);
integer!(
    /// A BAR of a PCI device: 0 to 5.
    Bar: u8, 0, 5, "a BAR number"
);
integer!(
    /// A seed of the model's random choices.
    Seed: u64, 0, u64::MAX, "a seed (an integer)"
);

/// A duration: a number and a unit (`300ms`, `2s`, `1.5s`).
pub struct Time;

impl Kind for Time {
    type Value = Duration;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        d.deserialize_any(TimeVisitor)
    }
    fn serialize<S: Serializer>(value: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&values::format_duration(*value))
    }
}

/// The pattern of a duration.
pub const DURATION_PATTERN: &str = r"^\s*[0-9]+(\.[0-9]+)?\s*(ns|us|µs|ms|s|m|min|h)\s*$";

schema!(Time, |g| or_reference(json!({ "type": "string", "pattern": DURATION_PATTERN })));

struct TimeVisitor;

const A_DURATION: &str = "a duration such as 300ms, 2s or 1.5s";
const NEEDS_A_UNIT: &str = "a duration needs a unit (ns, us, ms, s, m or h)";

impl<'de> Visitor<'de> for TimeVisitor {
    type Value = Duration;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(A_DURATION)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
        parse_duration(v).map_err(|reason| refuse(quote_short(v), A_DURATION, reason))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
        Err(refuse(v, A_DURATION, NEEDS_A_UNIT))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
        Err(refuse(v, A_DURATION, NEEDS_A_UNIT))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
        Err(refuse(format_args!("a number ({v})"), A_DURATION, NEEDS_A_UNIT))
    }
}

/// Reads a size in bytes from `lo` to `hi`: a whole number (`4096`) or a number with a binary
/// suffix (`64KiB`, `2MiB`).
struct Bytes {
    lo: u64,
    hi: u64,
}

const A_SIZE: &str = "a size such as 4096, 64KiB or 2MiB";

impl Bytes {
    fn within<E: de::Error>(&self, value: impl fmt::Display, bytes: u64) -> Result<u64, E> {
        if (self.lo..=self.hi).contains(&bytes) {
            Ok(bytes)
        } else {
            Err(refuse(
                value,
                A_SIZE,
                format_args!("must be from {} to {}", format_size(self.lo), format_size(self.hi)),
            ))
        }
    }
}

impl<'de> Visitor<'de> for Bytes {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(A_SIZE)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        self.within(v, v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        match u64::try_from(v) {
            Ok(v) => self.within(v, v),
            Err(_) => Err(refuse(v, A_SIZE, "a size is not negative")),
        }
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<u64, E> {
        Err(refuse(v, A_SIZE, if v < 0 { "a size is not negative" } else { "too large" }))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<u64, E> {
        Err(refuse(v, A_SIZE, "too large"))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        Err(refuse(format_args!("a number ({v})"), A_SIZE, "a size is a whole number of bytes"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        let bytes = parse_size(v).map_err(|reason| refuse(quote_short(v), A_SIZE, reason))?;
        self.within(quote_short(v), bytes)
    }
}

/// The pattern of a size written with a unit.
pub const SIZE_PATTERN: &str = r"^\s*[0-9]+(\.[0-9]+)?\s*(B|KiB|MiB|GiB)?\s*$";

/// A kind of size: its name, range and what it is for.
macro_rules! size {
    ($(#[$doc:meta])* $name:ident, $lo:expr, $hi:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl Kind for $name {
            type Value = u64;
            fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
                d.deserialize_any(Bytes { lo: $lo, hi: $hi })
            }
            fn serialize<S: Serializer>(value: &u64, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u64(*value)
            }
        }

        schema!($name, |g| json_schema!({
            "anyOf": [
                { "type": "integer", "minimum": $lo, "maximum": $hi },
                { "type": "string", "pattern": SIZE_PATTERN },
                matrix_reference()
            ]
        }));
    };
}

/// The largest message: 2^31 bytes (the contract).
pub const MAX_MESSAGE: u64 = 1 << 31;

size!(
    /// The size of a region: 1 byte to [`MAX_SIZE`].
    RegionBytes, 1, MAX_SIZE
);
size!(
    /// The length of a message: 0 to 2^31 bytes.
    MessageBytes, 0, MAX_MESSAGE
);
size!(
    /// An offset into a region.
    Offset, 0, MAX_SIZE
);
size!(
    /// How many bytes two ranges compare: 1 byte to [`MAX_SIZE`].
    CompareBytes, 1, MAX_SIZE
);

/// A switch: `on`/`off` (also `true`/`false`, `yes`/`no`).
pub struct Switch;

impl Kind for Switch {
    type Value = bool;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        d.deserialize_any(SwitchVisitor)
    }
}

schema!(Switch, |g| or_reference(json!({
    "anyOf": [
        { "type": "boolean" },
        { "type": "string", "pattern": "^([Oo][Nn]|[Oo][Ff][Ff]|[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|[Yy][Ee][Ss]|[Nn][Oo])$" }
    ]
})));

struct SwitchVisitor;

impl<'de> Visitor<'de> for SwitchVisitor {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("on or off")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        Ok(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        match v.to_ascii_lowercase().as_str() {
            "on" | "true" | "yes" => Ok(true),
            "off" | "false" | "no" => Ok(false),
            _ => Err(E::invalid_type(de::Unexpected::Str(v), &self)),
        }
    }
}

/// A probability: a number from 0 to 1.
pub struct Probability;

const A_PROBABILITY: &str = "a probability from 0 to 1";

impl Kind for Probability {
    type Value = f64;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        d.deserialize_any(ProbabilityVisitor)
    }
    fn serialize<S: Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(*value)
    }
}

schema!(Probability, |g| or_reference(json!({ "type": "number", "minimum": 0, "maximum": 1 })));

struct ProbabilityVisitor;

impl<'de> Visitor<'de> for ProbabilityVisitor {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(A_PROBABILITY)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        if (0.0..=1.0).contains(&v) {
            Ok(v)
        } else {
            Err(refuse(format_args!("a number ({v})"), A_PROBABILITY, "must be from 0 to 1"))
        }
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        if v <= 1 { Ok(v as f64) } else { Err(refuse(v, A_PROBABILITY, "must be from 0 to 1")) }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Err(refuse(v, A_PROBABILITY, "must be from 0 to 1"))
    }
}
