//! Runtime counters: per-worker, written only by their worker, summed when read.

use crossbeam_utils::CachePadded;

use crate::loom::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of a runtime's counters, from [`Runtime::metrics`](crate::Runtime::metrics).
///
/// Counters only grow; read them twice and subtract to measure a stretch of work.
///
/// ```
/// let rt = csp::Runtime::builder().worker_threads(2).build().unwrap();
/// rt.block_on(async {
///     for _ in 0..10 {
///         csp::spawn(async {}).await.unwrap();
///     }
/// });
/// let m = rt.metrics();
/// assert_eq!(m.workers, 2);
/// assert_eq!(m.spawned, 10);
/// assert!(m.polls >= 10);
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Metrics {
    /// Worker threads.
    pub workers: usize,
    /// Processes spawned and not yet finished (completed, panicked or cancelled).
    pub processes_alive: u64,
    /// Processes spawned so far.
    pub spawned: u64,
    /// Polls of processes so far.
    pub polls: u64,
    /// Successful steals: times an idle worker took processes from another's queue.
    pub steals: u64,
    /// Processes run directly after, and on the same worker as, the process that woke
    /// or spawned them (the handoff slot).
    pub handoffs: u64,
    /// Times a worker went to sleep for lack of work.
    pub parks: u64,
    /// Timers armed in the runtime's wheel now: pending `sleep`s and `timeout`s that
    /// have been polled, `after` channels that have not fired and `tick` channels, each
    /// with a live receiver.
    pub timers_armed: u64,
    /// Times the runtime moved the processes a worker held (its handoff slot, those a
    /// poll pushed out of it, its resting process) off that worker because a poll had
    /// held it past 5 ms, so that another worker runs them.
    pub takeovers: u64,
}

/// One worker's counters. Only that worker writes them (spawns from outside any worker
/// go to the runtime's remote counter), so an increment is a plain load and store.
#[derive(Default)]
pub(crate) struct WorkerCounters {
    pub(crate) spawned: AtomicU64,
    pub(crate) steals: AtomicU64,
    pub(crate) handoffs: AtomicU64,
    pub(crate) parks: AtomicU64,
    /// The id of the process this worker is polling, 0 between polls: the console
    /// samples it to time polls (feature `console`).
    #[cfg(feature = "console")]
    pub(crate) polling: AtomicU64,
}

/// Adds one to a counter that only the calling thread writes.
#[inline]
pub(crate) fn bump(counter: &AtomicU64) {
    // Relaxed load and store, not an atomic add: there is a single writer, and readers
    // only need some recent value.
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// Sums the per-worker counters into `metrics`.
pub(crate) fn sum_into(metrics: &mut Metrics, workers: &[CachePadded<WorkerCounters>]) {
    let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
    for w in workers {
        metrics.spawned += read(&w.spawned);
        metrics.steals += read(&w.steals);
        metrics.handoffs += read(&w.handoffs);
        metrics.parks += read(&w.parks);
    }
}
