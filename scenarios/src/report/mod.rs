//! Reports of a run: the console report a person reads ([`console`]), and the files machines
//! read: JUnit XML ([`junit`]) and JSON ([`json`]).

pub mod console;
pub mod json;
pub mod junit;
