//! The console's warnings, in the manner of tokio-console's lints: a poll that held its
//! worker too long, a process woken again and again inside its own polls, a channel with
//! a long queue of waiters.

use std::time::Instant;

use crate::runtime::Shared;
use crate::tuning::{LONG_POLL_TAKEOVER, LONG_POLL_WARNING, LONG_QUEUE_WAITERS};
use crate::wait::census;

use super::sampler::Sampler;
use super::snapshot::{Row, human};

/// What a warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    LongPoll,
    BusyWaking,
    LongQueue,
}

impl Kind {
    /// The CSS class and JSON name of the kind.
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::LongPoll => "long-poll",
            Kind::BusyWaking => "busy-waking",
            Kind::LongQueue => "long-queue",
        }
    }
}

/// One warning.
#[derive(Debug, Clone)]
pub(super) struct Warning {
    pub(super) kind: Kind,
    pub(super) text: String,
}

/// The warnings now, most urgent first: polls still running, then the rest.
pub(super) fn warnings(
    shared: &Shared,
    rows: &[Row],
    sampler: &Sampler,
    now: Instant,
) -> Vec<Warning> {
    let mut out = Vec::new();
    let takeovers: Vec<_> = shared
        .takeover_log
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .cloned()
        .collect();
    // One warning per process, from its newest long poll: the console keeps the last
    // few, and a process that blocks now and then would fill the list alone.
    let mut seen: Vec<u64> = Vec::new();
    for long in sampler.long_polls() {
        if seen.contains(&long.process) {
            continue;
        }
        seen.push(long.process);
        let theirs: Vec<_> = sampler
            .long_polls()
            .filter(|l| l.process == long.process)
            .collect();
        let longest = theirs.iter().map(|l| l.length).max().unwrap_or(long.length);
        let site = rows
            .iter()
            .find(|r| r.id == long.process)
            .map(|r| r.spawned_at)
            .or(long.spawned_at)
            .map_or_else(|| "an ended process".to_owned(), |s| s.to_string());
        let mut text = if long.ongoing {
            format!(
                "process #{} (spawned at {site}) has held worker {} in one poll for {} and \
                 counting: a poll should return within about {}; move blocking work to \
                 spawn_blocking",
                long.process,
                long.worker,
                human(long.length),
                human(LONG_POLL_WARNING),
            )
        } else {
            format!(
                "process #{} (spawned at {site}) held worker {} in one poll for {}, {} ago",
                long.process,
                long.worker,
                human(long.length),
                human(now.saturating_duration_since(long.started)),
            )
        };
        // What the watchdog moved off the worker during this poll: the processes it
        // held up (`runtime/held.rs`).
        let mut held_up: Vec<u64> = takeovers
            .iter()
            .filter(|t| t.worker == long.worker && t.poll == long.polls)
            .flat_map(|t| t.processes.iter().copied())
            .collect();
        held_up.sort_unstable();
        held_up.dedup();
        if !held_up.is_empty() {
            let ids: Vec<String> = held_up.iter().map(|id| format!("#{id}")).collect();
            text.push_str(&format!(
                "; it held up process {}, moved to another worker after {}",
                ids.join(", "),
                human(LONG_POLL_TAKEOVER)
            ));
        }
        if theirs.len() > 1 {
            text.push_str(&format!(
                "; {} of the last {} long polls are its, the longest {}",
                theirs.len(),
                sampler.long_polls().count(),
                human(longest)
            ));
        }
        out.push(Warning {
            kind: Kind::LongPoll,
            text,
        });
    }
    for row in rows.iter().filter(|r| r.busy_waking) {
        out.push(Warning {
            kind: Kind::BusyWaking,
            text: format!(
                "process #{} (spawned at {}) was woken inside its own polls again and again \
                 in the last second: a spin on yield_now, or a future that wakes itself \
                 while nothing changes",
                row.id, row.spawned_at
            ),
        });
    }
    census::survey(|site| {
        if site.waiting.len() >= LONG_QUEUE_WAITERS {
            out.push(Warning {
                kind: Kind::LongQueue,
                text: format!(
                    "{} has {} waiting operations: its other side falls behind",
                    site.name(),
                    site.waiting.len()
                ),
            });
        }
    });
    out.sort_by_key(|w| w.kind != Kind::LongPoll);
    out
}
