//! How a worker with nothing to do sleeps: on the idle event (`idle.rs`,
//! `idle_event.rs`), until it is notified or the timer wheel's earliest deadline passes.
//! [`run`] is the worker loop: rounds of `Local::step`, and a sleep whenever one says
//! `Park`.
//!
//! With the `io` feature, a worker that parks holds the runtime's I/O driver if no other
//! worker does (`runtime/driver/`), and sleeps in its poll instead of on the event:
//!
//! - the event's listener, polled with a waker that wakes the driver's poll, ends that
//!   sleep as it would end a sleep on the event, and so does the timer wheel's deadline
//!   (the poll's timeout). Sockets' wakers run on this worker meanwhile: a process they
//!   wake goes to this worker's own queue, and the worker comes out of the poll to run it
//!   ([`Sleep::woke_self`]) instead of waking another worker to steal it; a batch of more
//!   than one tells one sleeping sibling, which may take some at once (what a socket's
//!   waker wakes is no batch: `queue_age.rs`).
//!   That word goes out once the worker's own listener is gone: sent while it was still
//!   registered, it could reach that listener (always, with no sibling asleep) and woke
//!   the poll the worker had just left, one write to the driver's waker for nothing; a
//!   sibling heard of it only when the listener was dropped, which passes on a
//!   notification nobody took. Like any worker that wakes, it then searches, and the word
//!   it passes on when it finds its work wakes a sleeping sibling, which takes the driver
//!   over;
//! - a busy worker polls the driver without blocking every [`DRIVER_POLL_PERIOD`]
//!   (checking the clock every [`DRIVER_POLL_INTERVAL`] rounds), unless a parked worker
//!   holds it, so sockets are served while every worker is busy. No thread of the
//!   driver's own.
//!
//! The watcher (`idle.rs`) sleeps off the driver, on the listener alone: it wakes every
//! few tens of microseconds, and holding the driver for those sleeps would keep it from a
//! worker that sleeps long.
//!
//! Without the feature, the worker blocks on the listener itself. The spinning and
//! stealing before a park are the same either way. Under loom the driver polls a model
//! of the operating system's poll (`driver/selector.rs`), and a timed sleep ends at once.

use std::time::Instant;

use crate::runtime::idle_event::Listener;
use crate::runtime::worker::{Local, Step};

#[cfg(all(test, loom, feature = "io"))]
pub(super) use driven::park;
#[cfg(feature = "io")]
pub(super) use driven::{Sleep, run};

#[cfg(all(test, loom, not(feature = "io")))]
pub(super) use plain::park;
#[cfg(not(feature = "io"))]
pub(super) use plain::{Sleep, run};

#[cfg(not(feature = "io"))]
mod plain {
    use super::*;

    /// Runs `local`'s loop until shutdown, blocking on the idle event to park.
    pub(crate) fn run(local: &Local) {
        loop {
            match local.run_rounds(u32::MAX) {
                Step::Ran => continue,
                Step::Exit => return,
                Step::Park => park(local),
            }
        }
    }

    /// Sleeps until notified or the timer wheel's next deadline, unless the last look
    /// finds work.
    pub(crate) fn park(local: &Local) {
        local.shared().idle().begin_park();
        let listener = local.shared().idle().event().listen(local.index());
        if let Some(park) = local.prepare_park() {
            local.sleep.wait(listener, local.deadline(park));
            local.finish_park(park);
        }
    }

    /// Sleeping on the listener alone.
    pub(crate) struct Sleep;

    impl Sleep {
        pub(crate) fn new() -> Sleep {
            Sleep
        }

        /// Blocks until `listener` is notified or `deadline` passes.
        pub(crate) fn wait(&self, listener: Listener<'_>, deadline: Option<Instant>) {
            wait_on_listener(listener, deadline);
        }

        /// Never: no waker runs on a worker while it sleeps.
        #[inline]
        pub(crate) fn woke_self(&self) -> bool {
            false
        }
    }
}

/// Blocks the thread until `listener` is notified or `deadline` passes.
fn wait_on_listener(listener: Listener<'_>, deadline: Option<Instant>) {
    match deadline {
        // loom has no clock: a timed sleep ends at once, the earliest it may.
        #[cfg(loom)]
        Some(_) => drop(listener),
        #[cfg(not(loom))]
        Some(deadline) => {
            listener.wait_deadline(deadline);
        }
        None => listener.wait(),
    }
}

#[cfg(all(test, not(loom), feature = "io", unix))]
mod tests;

#[cfg(feature = "io")]
mod driven {
    use std::cell::Cell;
    use std::task::Context;
    use std::time::Duration;

    use super::*;
    use crate::runtime::Shared;
    use crate::tuning::{DRIVER_POLL_INTERVAL, DRIVER_POLL_PERIOD};

    /// Runs `local`'s loop until shutdown, sleeping in the I/O driver to park when it can
    /// (module docs).
    pub(crate) fn run(local: &Local) {
        let mut driver_polled = Instant::now();
        loop {
            match local.run_rounds(DRIVER_POLL_INTERVAL) {
                Step::Ran => {
                    // No driver, or no source registered with it: a look would find
                    // nothing, and the clock need not be read (`DRIVER_POLL_INTERVAL`).
                    if !local.serves_sockets() {
                        continue;
                    }
                    let now = Instant::now();
                    if now.duration_since(driver_polled) >= DRIVER_POLL_PERIOD {
                        driver_polled = now;
                        poll_driver_now(local.shared());
                    }
                    continue;
                }
                Step::Exit => return,
                Step::Park => park(local),
            }
        }
    }

    /// Sleeps until notified, the timer wheel's next deadline or an event that wakes a
    /// process onto this worker, unless the last look finds work: in the driver if no
    /// other worker holds it and this one is not the watcher (module docs).
    pub(crate) fn park(local: &Local) {
        let (park, several) = {
            local.shared().idle().begin_park();
            let listener = local.shared().idle().event().listen(local.index());
            let Some(park) = local.prepare_park() else {
                return;
            };
            let deadline = local.deadline(park);
            let several = if park.is_watch() {
                // Off the driver (module docs).
                wait_on_listener(listener, deadline);
                false
            } else {
                local.sleep.wait(local.shared(), listener, deadline)
            };
            (park, several)
        };
        // Once this worker's listener is gone (module docs), and before `finish_park`
        // makes it a searcher, whose count would hold the word back. `found_work` passes
        // one on as well when this worker, the last searcher, finds its work: a sibling
        // is told at once here, and the second word mostly finds it told or searching.
        if several {
            // More than this worker runs at once, and ripe: a sibling may help now.
            local.shared().idle().notify_work();
        }
        local.finish_park(park);
    }

    /// A busy worker's look at the driver: what is ready now, unless a parked worker
    /// holds the driver (and serves it).
    fn poll_driver_now(shared: &Shared) {
        if let Some(held) = shared.io().and_then(|driver| driver.try_hold()) {
            // A failed poll is as if nothing were ready: the next park sleeps on the
            // event instead (`Sleep::wait`).
            let _ = held.poll(Some(Duration::ZERO));
        }
    }

    /// How a parked worker sleeps in the driver, and what a waker run by the driver on
    /// this worker needs to bring it out.
    #[derive(Default)]
    pub(crate) struct Sleep {
        /// The worker is inside `wait`, in the driver's poll.
        asleep: Cell<bool>,
        /// Processes put on this worker's queue from its own thread while it slept.
        woken: Cell<u32>,
    }

    impl Sleep {
        pub(crate) fn new() -> Sleep {
            Sleep::default()
        }

        /// Sleeps until `listener` is notified, `deadline` passes, or an event the
        /// driver reports wakes a process onto this worker: in the driver's poll if no
        /// other worker holds it, else on the listener. True if the events woke more
        /// than one process onto this worker, which a sibling should hear of once
        /// `listener` is gone (`park`).
        pub(crate) fn wait(
            &self,
            shared: &Shared,
            mut listener: Listener<'_>,
            deadline: Option<Instant>,
        ) -> bool {
            let Some((driver, held)) = shared
                .io()
                .and_then(|driver| Some((driver, driver.try_hold()?)))
            else {
                wait_on_listener(listener, deadline);
                return false;
            };
            // A notification now wakes the driver's poll.
            let cx = Context::from_waker(driver.waker());
            if listener.poll_notified(&cx).is_ready() {
                return false;
            }
            let _awake = Awake(self);
            self.asleep.set(true);
            let mut failed = false;
            loop {
                let timeout = match deadline {
                    Some(deadline) => {
                        let now = Instant::now();
                        if now >= deadline {
                            break;
                        }
                        Some(deadline - now)
                    }
                    None => None,
                };
                if held.poll(timeout).is_err() {
                    // The poll failed (not by a signal): sleep on the event instead,
                    // rather than try it again at once.
                    failed = true;
                    break;
                }
                if cfg!(loom) && deadline.is_some() {
                    // loom has no clock: the timed poll returned at once, the earliest a
                    // timed sleep may end.
                    break;
                }
                if self.woken.get() > 0
                    || listener.poll_notified(&cx).is_ready()
                    || driver.is_shut_down()
                {
                    break;
                }
                // Events for waiters elsewhere (a `block_on` future, another
                // executor's task), or none: sleep on.
            }
            drop(held);
            if failed {
                wait_on_listener(listener, deadline);
            }
            self.woken.get() > 1
        }

        /// Called when a process of this worker's runtime was put on its queue from its
        /// own thread outside a poll: true if that happened while the worker sleeps in
        /// the driver (a socket's waker), in which case the worker is on its way out to
        /// run it and no other worker needs waking.
        #[inline]
        pub(crate) fn woke_self(&self) -> bool {
            if !self.asleep.get() {
                return false;
            }
            self.woken.set(self.woken.get() + 1);
            true
        }
    }

    /// Resets the sleep state however `wait` ends.
    struct Awake<'a>(&'a Sleep);

    impl Drop for Awake<'_> {
        fn drop(&mut self) {
            self.0.asleep.set(false);
            self.0.woken.set(0);
        }
    }
}
