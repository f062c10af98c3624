//! Kinds of text: names and words checked as they are read, parsed addresses, and names from a
//! table (with the closest one suggested).

use super::*;

/// Reads a string, `what` saying what it should be, and makes a `T` of it with `make`, whose
/// error is the whole message. (The making happens while the node is read, so its error is
/// placed at the node.)
pub struct FromText<T> {
    /// What the string should be (for a string of the wrong type: "expected ...").
    pub what: &'static str,
    /// What the string becomes, or why it cannot.
    pub make: fn(&str) -> Result<T, String>,
}

impl<T> FromText<T> {
    /// Read one from `d`.
    pub fn read<'de, D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T> Visitor<'de> for FromText<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.make)(v).map_err(E::custom)
    }
}

/// "`"x"` is not `what`: `reason`" for text `v`.
fn not_text(v: &str, what: &str, reason: String) -> String {
    let article = what.split_once(", as").map_or(what, |(w, _)| w);
    format!("{} is not {article}: {reason}", quote_short(v))
}

/// A kind of text: its name, what it is called and how it is checked.
macro_rules! text {
    ($(#[$doc:meta])* $name:ident, $what:literal, $check:expr, |$g:ident| $schema:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl Kind for $name {
            type Value = String;
            fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
                let make: fn(&str) -> Result<String, String> =
                    |v| ($check)(v).map(|()| v.to_string()).map_err(|reason| not_text(v, $what, reason));
                FromText { what: $what, make }.read(d)
            }
        }

        schema!($name, |$g| $schema);
    };
}

/// The pattern of an alias or tag.
pub const WORD_PATTERN: &str = "^[A-Za-z][A-Za-z0-9_-]{0,39}$";

text!(
    /// A scenario's name: letters, digits, `-`, `_`, `.`.
    ScenarioName, "a scenario name", check_scenario_name,
    |g| json_schema!({ "type": "string", "pattern": r"^([A-Za-z0-9._-]|\$\{[A-Za-z][A-Za-z0-9_-]*\}){1,100}$" })
);
text!(
    /// A tag to select scenarios by.
    Tag, "a tag", check_word,
    |g| json_schema!({ "type": "string", "pattern": WORD_PATTERN })
);
text!(
    /// The name by which a repeat's steps refer to its iteration (`${i}`).
    IterationName, "an iteration's name", check_word,
    |g| json_schema!({ "type": "string", "pattern": WORD_PATTERN })
);
text!(
    /// A PCI bus address, as Linux writes it (`0000:81:00.0`).
    Bus, "a bus address, as 0000:81:00.0", parse_bus,
    |g| json_schema!({ "type": "string" })
);
/// A kind of target the scenario runs on (`model`).
pub struct TargetKind;

impl Kind for TargetKind {
    type Value = String;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        let make: fn(&str) -> Result<String, String> = |kind| {
            let kinds = crate::target::KINDS;
            match kinds.contains(&kind) {
                true => Ok(kind.to_string()),
                false => Err(unknown_name("target kind", kind, crate::suggest::closest(kind, kinds.iter().copied()))),
            }
        };
        FromText { what: "a target kind", make }.read(d)
    }
}

schema!(TargetKind, |g| one_of(crate::target::KINDS));

/// A sentence: text that says something (trimmed; not empty).
pub struct Sentence;

impl Kind for Sentence {
    type Value = String;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        let make: fn(&str) -> Result<String, String> = |text| match text.trim() {
            "" => Err("the text is empty: say it in a sentence".into()),
            trimmed => Ok(trimmed.to_string()),
        };
        FromText { what: "a sentence", make }.read(d)
    }
}

schema!(Sentence, |g| json_schema!({ "type": "string" }));

/// A parsed text value: its name, Rust type, what it is called and its parser.
macro_rules! parsed {
    ($(#[$doc:meta])* $name:ident: $t:ty, $what:literal, $parse:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl Kind for $name {
            type Value = $t;
            fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                let make: fn(&str) -> Result<$t, String> = |v| ($parse)(v).map_err(|reason| not_text(v, $what, reason));
                FromText { what: $what, make }.read(d)
            }
        }

        schema!($name, |g| json_schema!({ "type": "string" }));
    };
}

parsed!(
    /// A MAC address (`02:00:00:00:00:01`).
    Mac: [u8; 6], "a MAC address, as 02:00:00:00:00:01", parse_mac
);
parsed!(
    /// An IPv4 address.
    Ipv4: Ipv4Addr, "an IPv4 address, as 10.0.0.1", parse_ipv4
);
parsed!(
    /// A GID, as an IPv6 address (`::ffff:10.0.0.1`).
    Gid: [u8; 16], "a GID, as ::ffff:10.0.0.1", parse_gid
);

/// A reliable-connected BTH opcode: a number, or its name (`SEND_ONLY`, `ACKNOWLEDGE`).
pub struct Opcode;

impl Kind for Opcode {
    type Value = u8;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
        d.deserialize_any(OpcodeVisitor)
    }
}

schema!(Opcode, |g| {
    let names: Vec<&str> = crate::scenario::opcodes::RC_OPCODES.iter().map(|(_, n)| *n).collect();
    json_schema!({
        "anyOf": [
            { "type": "integer", "minimum": 0, "maximum": 255 },
            { "type": "string", "enum": names },
            matrix_reference()
        ]
    })
});

struct OpcodeVisitor;

impl<'de> Visitor<'de> for OpcodeVisitor {
    type Value = u8;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a BTH opcode: a number or a name as SEND_ONLY")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u8, E> {
        Integer { lo: 0, hi: 255, what: "a BTH opcode" }.visit_u64(v).map(|n| n as u8)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u8, E> {
        Integer { lo: 0, hi: 255, what: "a BTH opcode" }.visit_i64(v).map(|n| n as u8)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u8, E> {
        crate::scenario::opcodes::opcode_by_name(v).ok_or_else(|| {
            let names = crate::scenario::opcodes::RC_OPCODES.iter().map(|(_, n)| *n);
            E::custom(unknown_name("RC opcode", v, crate::suggest::closest(v, names)))
        })
    }
}

/// "unknown `what` `name` (did you mean ...?)".
pub fn unknown_name(what: &str, name: &str, suggestion: Option<&str>) -> String {
    let problem = crate::yaml::Problem::UnknownName {
        what: what.into(),
        name: name.into(),
        suggestion: suggestion.map(str::to_string),
    };
    problem.to_string()
}

/// One of a table of names (`Fill::ALL`), called `what` in messages.
pub fn by_name<'de, D: Deserializer<'de>, T: Copy>(
    d: D,
    what: &'static str,
    table: &'static [(T, &'static str)],
) -> Result<T, D::Error> {
    struct Names<T: 'static> {
        what: &'static str,
        table: &'static [(T, &'static str)],
    }
    impl<'de, T: Copy> Visitor<'de> for Names<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let names: Vec<&str> = self.table.iter().map(|(_, n)| *n).collect();
            write!(f, "a {}: {}", self.what, names.join(", "))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            self.table.iter().find(|(_, n)| *n == v).map(|(t, _)| *t).ok_or_else(|| {
                let suggestion = crate::suggest::closest(v, self.table.iter().map(|(_, n)| *n));
                E::custom(unknown_name(self.what, v, suggestion))
            })
        }
    }
    d.deserialize_str(Names { what, table })
}

/// The schema of one of a table of names.
pub fn names_schema<T>(table: &[(T, &str)]) -> Schema {
    let names: Vec<&str> = table.iter().map(|(_, n)| *n).collect();
    one_of(&names)
}

/// A completion status (`ok`, `retry-exceeded`): the driver's names.
pub struct CompletionStatus;

impl Kind for CompletionStatus {
    type Value = bnxt::Status;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<bnxt::Status, D::Error> {
        by_name(d, "completion status", &bnxt::Status::ALL)
    }
    fn serialize<S: Serializer>(value: &bnxt::Status, s: S) -> Result<S::Ok, S::Error> {
        let name = bnxt::Status::ALL.iter().find(|(v, _)| v == value).map(|(_, n)| *n);
        s.serialize_str(name.expect("every status is named"))
    }
}

schema!(CompletionStatus, |g| names_schema(&bnxt::Status::ALL));

/// The rings of a queue pair, by name.
pub const RINGS: [(bnxt::Side, &str); 2] = [(bnxt::Side::Send, "send"), (bnxt::Side::Receive, "receive")];

/// Which ring of a queue pair: `send` (sends and reads) or `receive`.
pub struct Ring;

impl Kind for Ring {
    type Value = bnxt::Side;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<bnxt::Side, D::Error> {
        by_name(d, "ring", &RINGS)
    }
}

schema!(Ring, |g| names_schema(&RINGS));

/// Free text (a regular expression, a name to compare).
pub fn text_schema() -> Schema {
    json_schema!({ "type": "string" })
}
