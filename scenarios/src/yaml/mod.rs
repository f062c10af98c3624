//! YAML as scenarios are read: a positioned tree ([`node`], parsed by serde-saphyr), a serde
//! deserializer over it ([`de`]) whose errors ([`error`]) name the field and where it is, and
//! the wrappers that keep positions ([`located`]).

pub mod de;
pub mod error;
pub mod introspect;
pub mod located;
pub mod node;

pub use de::NodeDeserializer;
pub use error::{DecodeError, Problem};
pub use located::{Located, LocatedSeed, NAME, OneOrMany};
pub use node::{Entry, Node, Pos, SyntaxError, Value};
