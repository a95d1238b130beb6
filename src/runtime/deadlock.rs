//! Deadlock detection (API.md, DESIGN.md): `block_on` panics with a report when its
//! future and every live process of its runtime have been blocked on each other for a
//! whole grace period.
//!
//! What it takes for everything to count as blocked:
//! - the `block_on` thread stayed parked for the grace period and the runtime ran no
//!   poll meanwhile (the per-worker poll counters did not move);
//! - every worker is asleep and no run queue holds work; no timer is armed or being
//!   fired; no blocking-pool task is alive or still finishing (dropping an output nobody
//!   reads, after it left the registry); this is the only `block_on` future of the
//!   runtime (the others would be invisible);
//! - each process is `Sleeping`, none of its waker clones is held outside csp (the
//!   state word's foreign waker count), and its last poll recorded a wait that only this
//!   runtime can complete: a channel that is not foreign, or a join of a process of this
//!   runtime, recorded in the runtime's current foreign epoch (`chan/home.rs`; a wait
//!   recorded before a late turn to foreign is *stale*: its owner is woken to record it
//!   again, and the next grace period decides);
//! - the same holds for the `block_on` future, through its parker.
//!
//! So a process whose waker a foreign future keeps (tokio I/O, a `futures` oneshot) is
//! never reported, nor one blocked on a channel a plain thread uses: detection can miss
//! a deadlock, never report one where something outside csp could still make progress.
//! The check runs on the `block_on` thread, only after a grace period with nothing
//! happening, so the hot paths pay nothing beyond counting foreign waker clones.
//!
//! The report names each channel waited on by its id, its kind and where it was made
//! (`recv on channel #7 (rendezvous, made at src/main.rs:3:5)`, from the census of wait
//! sites, `wait/census.rs`). With `CSP_DEADLOCK_DOT=path` in the environment, it also
//! writes the runtime's wait graph (`wait_graph.rs`) to `path` and says so.

use std::collections::HashMap;
use std::fmt::Write;

use crate::loom::sync::atomic::Ordering;
use crate::runtime::{Shared, groups};
use crate::task::TaskRef;
use crate::wait::WaitOn;
use crate::wait::census;
use crate::wait::epoch::foreign_epoch;
use crate::wait::parker::Parker;
use crate::wait::record::Recorded;

/// The environment variable naming the file a deadlock report writes its wait graph to
/// (`wait_graph.rs`).
const DOT_PATH_VAR: &str = "CSP_DEADLOCK_DOT";

/// Counts a `block_on` future of a runtime while it lives.
pub(crate) struct MainFuture<'a>(&'a Shared);

impl Drop for MainFuture<'_> {
    fn drop(&mut self) {
        // Relaxed: a count read by the detector of the same runtime's other `block_on`
        // threads, which only needs to see it eventually (a stale value makes it skip one
        // check, or check once with two main futures for one grace period).
        self.0.main_futures.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Shared {
    /// Registers a `block_on` future for as long as the guard lives.
    pub(crate) fn main_future(&self) -> MainFuture<'_> {
        // Relaxed: see `MainFuture::drop`.
        self.main_futures.fetch_add(1, Ordering::Relaxed);
        MainFuture(self)
    }

    /// Polls of processes so far (moves whenever anything runs).
    pub(crate) fn activity(&self) -> u64 {
        // Relaxed (inside `polls`): the detector compares two reads a grace period apart.
        (0..self.workers()).map(|w| self.held(w).polls()).sum()
    }

    /// The report of a deadlock between `main` (the `block_on` future, whose thread has
    /// been parked for a grace period that started at `activity_before`) and every
    /// process of the runtime; `None` if anything may still make progress. With no
    /// `main` (the monitor of `deadlock_monitor.rs`), the runtime must have no `block_on`
    /// future at all, and the report covers its processes alone.
    pub(crate) fn deadlock_report(
        &self,
        main: Option<&Parker>,
        activity_before: u64,
    ) -> Option<String> {
        let epoch = foreign_epoch(self.id());
        let main_wait = main.map(|main| WaitOn::classify(main.wait_word(), self.id()));
        let main_foreign = || main.is_some_and(|main| main.foreign_wakers() > 0);
        // Relaxed: see `MainFuture::drop`.
        if self.main_futures.load(Ordering::Relaxed) != usize::from(main.is_some())
            || self.is_shutdown()
            // Before the looks at the queues: what a finished blocking task woke is
            // in one by now (`BlockingPool::has_unfinished_work`).
            || self.blocking().has_unfinished_work()
            || self.activity() != activity_before
            || !self.idle().all_asleep()
            || self.has_work()
            || self.timers().len() > 0
            || self.timers().is_firing()
            || main_foreign()
            || main_wait == Some(Recorded::Open)
        {
            return None;
        }
        let mut blocked = Vec::new();
        let mut stale = Vec::new();
        let mut all_blocked = true;
        self.registry().for_each(|raw| {
            if !all_blocked {
                return;
            }
            let state = raw.state().load();
            if state.is_complete() {
                return;
            }
            let header = raw.header();
            // Relaxed: see the module docs of `wait/record.rs`.
            let wait = header.wait.load(Ordering::Relaxed);
            let recorded = WaitOn::classify(wait, self.id());
            if state.is_blocking()
                || state.process_state() != crate::ProcessState::Sleeping
                || state.foreign_wakers() > 0
                || recorded == Recorded::Open
            {
                all_blocked = false;
                return;
            }
            if recorded == Recorded::Stale {
                stale.push(TaskRef::new(raw));
            }
            blocked.push((header.id, header.spawned_at, WaitOn::decode(wait)));
        });
        if !all_blocked || (main.is_none() && blocked.is_empty()) {
            return None;
        }
        if !stale.is_empty() || main_wait == Some(Recorded::Stale) {
            // Waits recorded before a channel of this runtime turned foreign: have their
            // owners polled again (a spurious wake, which every future tolerates), so
            // that the next grace period judges them afresh.
            stale.into_iter().for_each(TaskRef::wake);
            if let (Some(main), Some(Recorded::Stale)) = (main, main_wait) {
                main.unpark();
            }
            return None;
        }
        // Nothing moved while we looked: no poll, no late turn to foreign, no timer
        // firing, no wake of the main future (a foreign waker's wake unparks before it
        // stops counting).
        if self.activity() != activity_before
            || foreign_epoch(self.id()) != epoch
            || self.timers().is_firing()
            || main.is_some_and(Parker::is_notified)
            || main_foreign()
        {
            return None;
        }
        blocked.sort_by_key(|&(id, ..)| id);
        let main_wait = main.and_then(|main| WaitOn::decode(main.wait_word()));
        let channels: Vec<u64> = blocked
            .iter()
            .filter_map(|&(.., wait)| wait)
            .chain(main_wait)
            .filter_map(WaitOn::channel)
            .collect();
        let names = census::names(&channels);
        let describe = |wait: Option<WaitOn>| wait.map(|w| w.describe(&names));
        let mut report = String::from("csp: deadlock: all processes are asleep");
        if main.is_some() {
            let _ = write!(
                report,
                "\n  the block_on future: waiting on {}",
                describe(main_wait).as_deref().unwrap_or("?")
            );
        }
        let groups = groups::of(blocked.iter().map(|&(id, ..)| id));
        for (id, spawned_at, wait) in blocked {
            let wait = describe(wait);
            let group = groups
                .get(&id)
                .map(|g| format!(" in JoinSet #{} (made at {})", g.id, g.made_at))
                .unwrap_or_default();
            let _ = write!(
                report,
                "\n  process #{id} (Sleeping), spawned at {spawned_at}{group}: waiting on {}",
                wait.as_deref().unwrap_or("?")
            );
        }
        if let Some(path) = std::env::var_os(DOT_PATH_VAR) {
            let path = std::path::PathBuf::from(path);
            let _ = match std::fs::write(&path, self.wait_graph(main)) {
                Ok(()) => write!(
                    report,
                    "\n  the wait graph (Graphviz DOT) is in {} ({DOT_PATH_VAR})",
                    path.display()
                ),
                Err(e) => write!(
                    report,
                    "\n  the wait graph could not be written to {} ({DOT_PATH_VAR}): {e}",
                    path.display()
                ),
            };
        }
        report.push_str(
            "\n(nothing can wake any of them; if something outside csp will, mark its \
             channel with mark_foreign(), or turn detection off with \
             Builder::deadlock_detection(false))",
        );
        Some(report)
    }
}

impl WaitOn {
    /// The channel of a wait on one channel (a send, a receive, a close).
    fn channel(self) -> Option<u64> {
        match self {
            WaitOn::Recv { channel } | WaitOn::Send { channel } | WaitOn::Closed { channel } => {
                Some(channel)
            }
            // An alt, a join, anything else: no one channel to name.
            _ => None,
        }
    }

    /// The wait in a report: as displayed (`record.rs`), with its channel, if `names`
    /// (from the census, by id) has it, named by its kind and where it was made.
    fn describe(self, names: &HashMap<u64, String>) -> String {
        let name = self.channel().and_then(|channel| names.get(&channel));
        match (self, name) {
            (WaitOn::Recv { .. }, Some(name)) => format!("recv on {name}"),
            (WaitOn::Send { .. }, Some(name)) => format!("send on {name}"),
            (WaitOn::Closed { .. }, Some(name)) => format!("close of {name}"),
            _ => self.to_string(),
        }
    }
}
