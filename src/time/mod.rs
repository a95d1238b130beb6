//! Timers as users see them (DESIGN.md, "Timers"), on the wheel of the runtime's timer
//! driver (`runtime/timer/`):
//!
//! - `sleep.rs`, `timeout.rs`: the futures;
//! - `channel.rs`: `after` and `tick`, channels fed by the wheel;
//! - `loom_models.rs`: loom models of a sleep polled again by the process it wakes,
//!   racing its firing and its runtime's shutdown.
//!
//! May use: `runtime` (the driver), `chan` (the channels it feeds), `wait`, `task` and
//! below. Reached into by `alt` (the `after` arm) and the crate root only.

mod channel;
#[cfg(all(test, loom))]
mod loom_models;
mod sleep;
mod timeout;

pub use channel::{after, tick};
pub use sleep::{Sleep, sleep, sleep_until};
pub use timeout::{Elapsed, Timeout, timeout};
