//! Deadlock reports for a runtime that no `block_on` waits on (the default runtime
//! driven from tokio or a plain thread, a server whose main thread does something
//! else): opted into with [`Builder::on_deadlock`](crate::Builder::on_deadlock).
//!
//! A thread of the runtime's own wakes once per grace period and makes the check
//! `block_on` makes (`deadlock.rs`), for the processes alone: nothing ran for the whole
//! period, every process sleeps on a wait only this runtime can complete, no timer, no
//! blocking task, no waker held outside csp. The rule is the same, so a report is never
//! false: a channel a plain thread or another executor has touched is foreign, and a
//! process waiting on it never counts as blocked. A deadlock is reported once: the next
//! report needs something to have run in between. The hook runs on the monitor thread;
//! a panic in it is caught and reported on standard error.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use crate::loom::sync::Arc;
use crate::runtime::Shared;
use crate::task::panic::discard;
use crate::tuning::DEADLOCK_MONITOR_MIN_PERIOD;

/// The user's deadlock callback.
#[derive(Clone)]
pub(crate) struct DeadlockHook(pub(crate) std::sync::Arc<dyn Fn(&str) + Send + Sync + 'static>);

impl fmt::Debug for DeadlockHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DeadlockHook")
    }
}

/// The monitor thread's loop: until the runtime shuts down, checks for a deadlock once
/// per `grace`, and hands each one found to `hook`.
pub(crate) fn run(shared: Arc<Shared>, grace: Duration, hook: DeadlockHook) {
    let grace = grace.max(DEADLOCK_MONITOR_MIN_PERIOD);
    let mut activity = shared.activity();
    // The activity at the last report: the same deadlock is not reported twice.
    let mut reported = None;
    loop {
        // A whole grace period, however early a park returns.
        let until = Instant::now() + grace;
        loop {
            if shared.is_shutdown() {
                return;
            }
            let now = Instant::now();
            if now >= until {
                break;
            }
            std::thread::park_timeout(until - now);
        }
        let now = shared.activity();
        if now == activity
            && reported != Some(activity)
            && let Some(report) = shared.deadlock_report(None, activity)
        {
            reported = Some(activity);
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| (hook.0)(&report))) {
                eprintln!("csp: the on_deadlock hook panicked; the runtime goes on");
                // The payload's drop is foreign code too.
                discard(payload);
            }
        }
        activity = now;
    }
}
