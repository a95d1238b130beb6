//! The runtime's timer driver (DESIGN.md, "Timers"): hierarchical timing wheels, one
//! per worker, driven by the workers, with no timer thread. The timers users see (`sleep`,
//! `timeout`, `after`, `tick`) are built on it, one layer up, in `time/`.
//!
//! - `wheel.rs`: the wheel itself, a plain data structure over intrusive entries;
//! - `entry.rs`: a timer's entry, living inside the future or channel it serves, and
//!   what it does on expiry (wake an owner, feed a channel);
//! - `timers.rs`: a runtime's wheels, each behind its own lock, and how workers drive
//!   them;
//! - `loom_models.rs`: loom models of how parking workers keep every deadline covered.

pub(crate) mod entry;
#[cfg(all(test, loom))]
mod loom_models;
pub(crate) mod timers;
mod wheel;

pub(crate) use timers::Timers;
