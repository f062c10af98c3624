//! The named fields of transcript lines.

use std::fmt;

/// Declares [`Field`]: each field's name in the text and whether its value may differ between
/// two runs of one scenario.
macro_rules! fields {
    ($($(#[$doc:meta])* $variant:ident = $name:literal, $varies:literal;)*) => {
        /// A named field of a transcript line (`name=value`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Field {
            $($(#[$doc])* $variant,)*
        }

        impl Field {
            /// Every field.
            pub const ALL: &[Field] = &[$(Field::$variant),*];

            /// The field's name in the text.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Field::$variant => $name,)*
                }
            }

            /// Whether two runs of one scenario may hold different values in this field for the
            /// same event: numbers the firmware hands out, numbers chosen per NIC or per run, how
            /// long something took.
            pub const fn varies(self) -> bool {
                match self {
                    $(Field::$variant => $varies,)*
                }
            }
        }
    };
}

fields! {
    /// An HWRM request's sequence number (a driver counts them: one request more or less
    /// shifts all that follow).
    Seq = "seq", true;
    /// A RoCE firmware command's cookie.
    Cookie = "cookie", false;
    /// The firmware's id of a queue, ring or object (a CREQ entry's `xid`, a doorbell's).
    Xid = "xid", true;
    /// A producer or consumer index.
    Index = "index", true;
    /// A completion queue's id.
    Cq = "cq", true;
    /// A queue pair's number.
    Qp = "qp", true;
    /// A notification queue's id.
    Nq = "nq", true;
    /// A packet sequence number (chosen per NIC).
    Psn = "psn", true;
    /// A memory key.
    Key = "key", true;
    /// A local memory key.
    Lkey = "lkey", true;
    /// A remote memory key.
    Rkey = "rkey", true;
    /// A completion's or a command's status.
    Status = "status", false;
    /// A CQ notification's toggle bit.
    Toggle = "toggle", false;
    /// An MSI-X vector.
    Vector = "vector", false;
    /// What an acknowledgement's AETH says (`ack`, `rnr-nak`, ...).
    Aeth = "aeth", false;
    /// Which match of a fault's rule fired.
    Nth = "nth", false;
    /// How long a step took.
    Took = "took", true;
    /// A byte count.
    Bytes = "bytes", false;
    /// A length in bytes.
    Len = "len", false;
    /// The PCI command register's memory-space enable.
    Memory = "memory", false;
    /// The PCI command register's bus-master enable.
    BusMaster = "bus_master", false;
    /// Whether the device may use relaxed ordering.
    RelaxedOrdering = "relaxed_ordering", false;
    /// An MSI-X table entry.
    Entry = "entry", false;
    /// An address on the bus (an MSI-X message's); one of eight hex digits or more varies by
    /// its type.
    Address = "address", false;
    /// An MSI-X message's data.
    Data = "data", false;
    /// A GRC window's base.
    Base = "base", false;
    /// A short-form HWRM request's target function.
    Target = "target", false;
    /// The completion ring an HWRM request names.
    CmplRing = "cmpl_ring", false;
    /// A RoCE channel trigger's producer index.
    Prod = "prod", false;
    /// Which frame of the wire's stream (1 = the first).
    Frame = "frame", false;
    /// A switch port.
    Port = "port", false;
}

impl Field {
    /// The field named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Field> {
        Field::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// `value` in this field, to write into a line's text: `Field::Qp.is(5)` prints `qp=5`.
    pub fn is<T: fmt::Display>(self, value: T) -> Named<T> {
        Named(self, value)
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A value in a named field, as a line's text holds it (`qp=5`).
#[derive(Debug, Clone, Copy)]
pub struct Named<T>(pub Field, pub T);

impl<T: fmt::Display> fmt::Display for Named<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.0.name(), self.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_has_a_name_of_its_own_that_reads_back() {
        for (i, f) in Field::ALL.iter().enumerate() {
            assert_eq!(Field::from_name(f.name()), Some(*f));
            assert!(Field::ALL[..i].iter().all(|g| g.name() != f.name()), "{f:?} shares its name");
            assert!(!f.name().is_empty() && !f.name().contains(['=', ' ']), "{f:?}");
        }
        assert_eq!(Field::Qp.is(5).to_string(), "qp=5");
        assert_eq!(Field::from_name("nonsense"), None);
    }
}
