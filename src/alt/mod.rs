//! Choice: the engine of a choice over several arms (`choice.rs`) behind [`Select`] and
//! `alt!`/`prialt!` (`macro_support.rs`), on the claim flag and operation interface of
//! the waiting layer (`wait/`); and the quick pass an `alt!` of receives runs before it
//! builds its arms (`quick.rs`).
//!
//! May use: `wait`, `chan`, `time`, `runtime`, `task` and below. Nothing but `par`,
//! `pipe` and the crate root reaches into it.

pub(crate) mod choice;
#[cfg(all(test, loom))]
mod loom_models;
pub mod macro_support;
mod quick;
mod rng;
mod select;

pub use quick::{quick_pass, quick_recv};
pub use select::{Select, SelectFuture, Selected};
