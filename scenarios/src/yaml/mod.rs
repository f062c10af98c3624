//! YAML as the scenario decoder reads it: a positioned tree ([`node`]) and typed reading of it
//! with errors that name the field and where it is ([`read`]).

pub mod node;
pub mod read;

pub use node::{Entry, Node, Pos, SyntaxError, Value};
pub use read::{DecodeError, Field, MapReader, Problem};
