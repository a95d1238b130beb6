//! The I/O driver: sockets and other file descriptors registered with the runtime's own
//! `mio::Poll`, whose readiness wakes the processes waiting on them (DESIGN.md, "I/O
//! driver").
//!
//! - `readiness.rs`: the readiness word of one source (start reading here);
//! - `read_ahead.rs`: whether a stream's read that emptied the socket leaves its
//!   readiness standing for the next read, learned per source;
//! - `waker_slot.rs`: the waker of the task waiting in one direction, taken by the driver
//!   with no lock;
//! - `scheduled_io.rs`: one source's readiness and waker slots;
//! - `selector.rs`: the operating system's poll (`mio`), or under loom a model of it;
//! - `driver.rs`: the poll, held by one worker at a time, and the registry of sources;
//! - `registration.rs`: what an I/O type holds: waiting for readiness and retrying its
//!   system call.
//!
//! A worker with nothing to do holds the driver, if no other worker does, and sleeps in
//! its poll until an event, the timer wheel's next deadline, or a notification
//! (`worker/park.rs`); a busy runtime polls it without waiting at a bounded interval,
//! while any source is registered.
//! The lock-free parts (readiness word, waker slot) are loom-modelled, and so is the
//! hand-over of the driver between parking workers, with a model of the poll in place of
//! the operating system's.

// Under loom the models use what the sockets (left out) would.
#![cfg_attr(loom, allow(dead_code))]

#[allow(clippy::module_inception)] // the file is named after the concept it holds
mod driver;
#[cfg(all(test, loom))]
mod loom_models;
mod read_ahead;
pub(crate) mod readiness;
#[cfg(not(loom))]
mod registration;
pub(crate) mod scheduled_io;
mod selector;
mod waker_slot;

pub(crate) use driver::Driver;
#[cfg(not(loom))]
pub(crate) use registration::{ReadyGuard, Registration};
#[cfg(all(test, loom))]
pub(crate) use selector::ModelSource;
