//! The watchdog: a thread of the runtime's own that takes the held processes of a
//! worker stuck in a long poll and puts them where any worker finds them (`held.rs`),
//! as Go's sysmon takes back a processor from a goroutine stuck in a system call.
//!
//! While any worker is awake it looks every [`LONG_POLL_TAKEOVER`]: a worker whose poll
//! word has been the same, with `OUT` set, since a look at least that long ago has been
//! in one poll for at least that long, and its slots are taken over. The processes go
//! to the injector, and one parked worker is woken to run them; a resting process makes
//! its put-off transition here (re-queued if a wake came meanwhile, its future dropped
//! if it was cancelled). A parked worker is woken too for what waits in the stuck
//! worker's own queue, which thieves can take but nobody may have been woken for. A
//! poll that goes on running is looked at again a period later: what it woke meanwhile
//! waits at most that long.
//!
//! The period is a trade: on the 2-core machine the tables come from, its looks alone
//! cost `fan_in` 12% at 2 ms and 5% at 5 ms (`tuning.rs`). The thread keeps the normal
//! scheduling class: in Linux's `SCHED_IDLE` it cost the same, and a worker whose poll
//! ends while the watchdog moves its slots' contents out waits for it (`Held::end_poll`),
//! which a thread starved by busy cores would make long. (It does not wait out the
//! take's heavy fence: it cancels a take that has not begun to move them, `held.rs`.)
//!
//! When every worker is asleep nothing can be stuck in a poll, and the watchdog sleeps
//! until a worker wakes up (`Shared::worker_awake`): a runtime with nothing to do costs
//! no wake-ups. Only with two workers or more (a lone worker stuck in a poll has nobody
//! to hand its processes to), and only where heavy fences work (`loom.rs`).

use std::thread;
use std::time::Instant;

use crate::loom::sync::Arc;
use crate::loom::sync::atomic::Ordering;
use crate::runtime::held::{OUT, Slots};
use crate::runtime::{Shared, context};
use crate::tuning::LONG_POLL_TAKEOVER;

/// The watchdog's loop, until the runtime shuts down.
pub(crate) fn run(shared: Arc<Shared>) {
    // Set here rather than by the builder, so that it is set before this thread can
    // sleep: a worker that wakes up after that finds the thread to unpark.
    let _ = shared.sysmon.set(thread::current());
    let mut seen: Vec<Seen> = (0..shared.workers()).map(|_| Seen::default()).collect();
    loop {
        if shared.is_shutdown() {
            return;
        }
        if shared.idle().all_asleep() {
            shared.sysmon_sleep();
            seen.iter_mut().for_each(|s| *s = Seen::default());
            continue;
        }
        thread::park_timeout(LONG_POLL_TAKEOVER);
        look(&shared, &mut seen, Instant::now());
    }
}

/// What the watchdog last saw of a worker: its poll word, and since when.
#[derive(Clone, Copy, Default)]
struct Seen {
    word: u64,
    since: Option<Instant>,
}

/// One look at every worker's poll word: takes over the slots of a worker that has
/// been in one poll for [`LONG_POLL_TAKEOVER`] or longer. A poll shorter than that is
/// never taken over, however the looks fall (a park may end early).
fn look(shared: &Arc<Shared>, seen: &mut [Seen], now: Instant) {
    for (index, seen) in seen.iter_mut().enumerate() {
        let held = shared.held(index);
        let word = held.observe();
        if word & OUT == 0 || word != seen.word {
            *seen = Seen {
                word,
                since: Some(now),
            };
            continue;
        }
        let long = seen
            .since
            .is_some_and(|since| now.saturating_duration_since(since) >= LONG_POLL_TAKEOVER);
        if long {
            if let Some(slots) = held.try_take(word) {
                #[cfg(feature = "console")]
                log(shared, index, word >> 1, &slots);
                rehome(shared, slots);
            }
            // The worker's queue is stealable, but a process put there with nobody
            // woken for it (one that yielded, re-queued as the next poll ended) would
            // wait for this poll while the other workers sleep.
            if !shared.stealers()[index].is_empty() {
                shared.idle().notify_work();
            }
        }
    }
}

/// Keeps the ids of what the take-over moves, for the console (the last
/// [`TAKEOVERS_LOGGED`](crate::tuning::TAKEOVERS_LOGGED)).
#[cfg(feature = "console")]
fn log(shared: &Shared, worker: usize, poll: u64, slots: &Slots) {
    if slots.is_empty() {
        return;
    }
    let processes = slots
        .handoff
        .iter()
        .map(|next| next.raw().id())
        .chain(slots.displaced.iter().map(|entry| entry.raw().id()))
        .chain(slots.resting.iter().map(|resting| resting.raw().id()))
        .collect();
    let mut log = shared
        .takeover_log
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if log.len() == crate::tuning::TAKEOVERS_LOGGED {
        log.pop_front();
    }
    log.push_back(crate::runtime::shared::TakeOver {
        worker,
        poll,
        processes,
    });
}

/// Puts what a long poll held where any worker finds it.
pub(crate) fn rehome(shared: &Arc<Shared>, slots: Slots) {
    if slots.is_empty() {
        return;
    }
    // Counted first: a process it moves may run, and its runner read the count, before
    // this returns.
    // Relaxed: a counter, read only for metrics.
    shared.takeovers.fetch_add(1, Ordering::Relaxed);
    let Slots {
        handoff,
        displaced,
        resting,
    } = slots;
    // `push_remote` wakes a worker for each and, should the runtime be shutting down
    // (this thread may be the one that shuts it down, in a future's drop), drains it.
    for entry in handoff
        .map(|next| next.into_queued())
        .into_iter()
        .chain(displaced)
    {
        shared.push_remote(entry);
    }
    if let Some(resting) = resting
        && let Some(unslept) = resting.sleep()
    {
        // A re-queue goes to the injector (this is no worker); a cancellation drops
        // the future here, marked as a poll as a worker marks it.
        let _polling = context::polling(shared.id());
        unslept.finish();
    }
}
