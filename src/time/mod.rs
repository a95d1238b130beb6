//! Timers (DESIGN.md, "Timers"): one hierarchical timing wheel per runtime, driven by
//! its workers, with no timer thread.
//!
//! - `wheel.rs`: the wheel itself, a plain data structure over intrusive entries;
//! - `entry.rs`: a timer's entry, living inside the future or channel it serves;
//! - `timers.rs`: a runtime's wheel behind its lock, and how workers drive it;
//! - `sleep.rs`, `timeout.rs`: the futures;
//! - `channel.rs`: `after` and `tick`, channels fed by the wheel.

mod channel;
pub(crate) mod entry;
mod sleep;
mod timeout;
pub(crate) mod timers;
mod wheel;

pub use channel::{after, tick};
pub use sleep::{Sleep, sleep, sleep_until};
pub use timeout::{Elapsed, Timeout, timeout};
pub(crate) use timers::Timers;
