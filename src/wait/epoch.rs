//! The foreign epoch of each runtime: bumped when a channel the runtime used turns
//! foreign (`chan/home.rs`), and carried by every recorded wait (`record.rs`), so that a
//! wait recorded before the bump reads as stale, and deadlock detection has its owner
//! polled again to record it afresh before it counts.

use std::sync::atomic::{AtomicU64, Ordering};

/// Foreign epochs, one per runtime id modulo their number (runtimes that share a slot
/// only see each other's bumps as stale waits to refresh). Std's atomics, not the
/// facade's: process-wide counters outside every model.
static FOREIGN_EPOCHS: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];

fn epoch_of(runtime: u64) -> &'static AtomicU64 {
    &FOREIGN_EPOCHS[(runtime % FOREIGN_EPOCHS.len() as u64) as usize]
}

/// The foreign epoch of runtime `runtime` now.
#[inline]
pub(crate) fn foreign_epoch(runtime: u64) -> u64 {
    // SeqCst: pairs with the bump in `Home::mark`, so detection reading the epoch after
    // the wait words sees a bump that preceded them.
    epoch_of(runtime).load(Ordering::SeqCst)
}

/// Bumps the foreign epoch of runtime `runtime`: a channel it used turned foreign.
pub(crate) fn bump(runtime: u64) {
    // SeqCst: see `foreign_epoch`.
    epoch_of(runtime).fetch_add(1, Ordering::SeqCst);
}
