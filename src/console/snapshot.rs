//! The processes as the console shows them: `Runtime::processes`'s table joined with
//! the figures only the console reads (`task/stats.rs`) and with what the sampler has
//! learnt over time.

use std::collections::HashMap;
use std::fmt::Write;
use std::panic::Location;
use std::time::{Duration, Instant};

use crate::loom::sync::atomic::Ordering;
use crate::runtime::{ProcessState, Shared};

use super::sampler::Sampler;

/// A process's counts, read from its allocation.
pub(super) struct Counts {
    pub(super) polls: u64,
    pub(super) requeues: u64,
    /// Its wait word (`wait/record.rs`): what it last blocked on.
    pub(super) wait_word: u64,
}

/// The counts of every live process, by id.
pub(super) fn counts(shared: &Shared) -> HashMap<u64, Counts> {
    let mut out = HashMap::new();
    shared.registry().for_each(|raw| {
        let stats = raw.stats();
        out.insert(
            raw.id(),
            Counts {
                polls: stats.polls(),
                requeues: stats.requeues(),
                // Relaxed: a hint for a dump, at most one poll old.
                wait_word: raw.header().wait.load(Ordering::Relaxed),
            },
        );
    });
    out
}

/// One row of the process table.
#[derive(Debug, Clone)]
pub(super) struct Row {
    pub(super) id: u64,
    pub(super) state: ProcessState,
    pub(super) spawned_at: &'static Location<'static>,
    pub(super) waiting_on: Option<String>,
    /// How long it has waited on that, as far as the console has seen.
    pub(super) waiting_for: Option<Duration>,
    pub(super) group: Option<u64>,
    pub(super) polls: u64,
    pub(super) requeues: u64,
    pub(super) busy: Duration,
    pub(super) longest_poll: Duration,
    /// Woken inside its own polls again and again (`Figures::is_busy_waking`).
    pub(super) busy_waking: bool,
}

/// The process table now.
pub(super) fn rows(shared: &Shared, sampler: &Sampler, now: Instant) -> Vec<Row> {
    let counts = counts(shared);
    shared
        .processes()
        .into_iter()
        .map(|p| {
            let figures = sampler.figures(p.id);
            let count = counts.get(&p.id);
            Row {
                id: p.id,
                state: p.state,
                spawned_at: p.spawned_at,
                waiting_for: p
                    .waiting_on
                    .as_ref()
                    .and(figures.and_then(|f| f.waiting_since))
                    .map(|since| now.saturating_duration_since(since)),
                waiting_on: p.waiting_on,
                group: p.group,
                polls: count.map_or(0, |c| c.polls),
                requeues: count.map_or(0, |c| c.requeues),
                busy: figures.map_or(Duration::ZERO, |f| f.busy()),
                longest_poll: figures.map_or(Duration::ZERO, |f| f.longest_poll),
                busy_waking: figures.is_some_and(|f| f.is_busy_waking()),
            }
        })
        .collect()
}

/// A duration as a person reads it: `850 µs`, `12 ms`, `3.4 s`.
pub(super) fn human(d: Duration) -> String {
    let mut out = String::new();
    let micros = d.as_micros();
    let _ = match micros {
        0..1_000 => write!(out, "{micros} µs"),
        1_000..10_000_000 => write!(out, "{} ms", micros / 1_000),
        _ => write!(out, "{:.1} s", d.as_secs_f64()),
    };
    out
}
