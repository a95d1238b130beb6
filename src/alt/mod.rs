//! Choice: the claim flag shared by every arm of one choice (`claim.rs`), the interface
//! each arm implements (`operation.rs`), the engine of a choice over several arms
//! (`choice.rs`) behind [`Select`], and the one-arm choice behind the plain channel
//! futures (`single.rs`).

pub(crate) mod choice;
pub(crate) mod claim;
#[cfg(all(test, loom))]
mod loom_models;
pub mod macro_support;
pub(crate) mod operation;
mod rng;
mod select;
pub(crate) mod single;

pub use select::{Select, SelectFuture, Selected};
