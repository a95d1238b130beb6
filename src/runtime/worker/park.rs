//! How a worker with nothing to do sleeps: on the idle event (`idle.rs`), until it is
//! notified or the timer wheel's earliest deadline passes. [`run`] is the worker loop:
//! rounds of `Local::step`, and a sleep whenever one says `Park`.
//!
//! With the `io` feature, the whole loop runs inside `async_io::block_on`, as smol's own
//! executors do, and so the worker drives smol's I/O reactor (`async-io`):
//!
//! - a parked worker waits on the event's listener (raced with an `async_io::Timer` at
//!   the deadline) as a future of that `block_on`, which waits inside the reactor if no
//!   other thread does. Sockets' wakers then run on this worker: a process they wake
//!   goes to this worker's own queue, and the worker comes out of the reactor to run it
//!   ([`Sleep::woke_self`]) instead of waking another worker to steal it;
//! - a busy worker looks at the reactor without blocking every
//!   [`REACTOR_POLL_PERIOD`] (checking the clock every [`REACTOR_POLL_INTERVAL`]
//!   rounds), so sockets are served while every worker is busy. Since that is longer
//!   than async-io's fallback thread lets the reactor go undriven (50 µs), a runtime
//!   that stays busy soon has that thread in the reactor, serving sockets from there,
//!   and a busy worker's look finds the reactor locked and costs nothing.
//!
//! Staying inside `block_on` also keeps async-io's fallback thread out of the way: that
//! thread drives the reactor only while no `block_on` is running, or once the reactor
//! has not been driven for a while; entering and leaving `block_on` at every park would
//! wake it each time, and hand it the reactor.
//!
//! The watcher (`idle.rs`) sleeps off the reactor, on the listener alone: it wakes every
//! few tens of microseconds, and a timer in the reactor for each of those sleeps would
//! wake whichever thread waits in the reactor (to re-arm its timeout) and take the
//! reactor from it. Busy workers then found the reactor free and polled it themselves,
//! several system calls each time (this was measured when they polled every
//! [`REACTOR_POLL_INTERVAL`] rounds, before [`REACTOR_POLL_PERIOD`]): yield_many took
//! 36 ms a sample, against 21 with the reactor held by a sleeping thread (whose lock
//! makes a busy worker's poll of it a failed `try_lock`). A worker that parks untimed
//! still sleeps in the reactor and drives it.
//!
//! Without the feature (or under loom), the worker blocks on the listener itself, and
//! async-io (if the program uses it at all) drives its reactor from its own thread. The
//! spinning and stealing before a park are the same either way.

use std::future::Future;
use std::time::Instant;

use event_listener::{Listener, listener};

use crate::runtime::worker::{Local, Step};

#[cfg(all(feature = "io", not(loom)))]
pub(super) use reactor::{Sleep, run};

#[cfg(not(all(feature = "io", not(loom))))]
pub(super) use plain::{Sleep, run};

#[cfg(not(all(feature = "io", not(loom))))]
mod plain {
    use super::*;

    /// Runs `local`'s loop until shutdown, blocking on the idle event to park.
    pub(crate) fn run(local: &Local) {
        loop {
            match local.run_rounds(u32::MAX) {
                Step::Ran => continue,
                Step::Exit => return,
                Step::Park => {}
            }
            local.shared().idle().begin_park();
            listener!(local.shared().idle().event() => listener);
            if let Some(park) = local.prepare_park() {
                local.sleep.wait(listener, local.deadline(park));
                local.finish_park(park);
            }
        }
    }

    /// Sleeping on the listener alone.
    pub(crate) struct Sleep;

    impl Sleep {
        pub(crate) fn new() -> Sleep {
            Sleep
        }

        /// Blocks until `listener` is notified or `deadline` passes.
        pub(crate) fn wait<L>(&self, listener: L, deadline: Option<Instant>)
        where
            L: Listener<()> + Future<Output = ()> + Unpin,
        {
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
fn wait_on_listener<L>(listener: L, deadline: Option<Instant>)
where
    L: Listener<()> + Future<Output = ()> + Unpin,
{
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

#[cfg(all(feature = "io", not(loom)))]
mod reactor {
    use std::cell::Cell;
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};

    use async_io::Timer;

    use super::*;
    use crate::tuning::{REACTOR_POLL_INTERVAL, REACTOR_POLL_PERIOD};

    /// Runs `local`'s loop until shutdown inside `async_io::block_on`, sleeping in the
    /// reactor to park (module docs).
    pub(crate) fn run(local: &Local) {
        async_io::block_on(async {
            let mut reactor_polled = Instant::now();
            loop {
                match local.run_rounds(REACTOR_POLL_INTERVAL) {
                    Step::Ran => {
                        let now = Instant::now();
                        if now.duration_since(reactor_polled) >= REACTOR_POLL_PERIOD {
                            reactor_polled = now;
                            // `block_on` polls the reactor without blocking before it
                            // polls this future again.
                            YieldOnce(false).await;
                        }
                        continue;
                    }
                    Step::Exit => return,
                    Step::Park => {}
                }
                local.shared().idle().begin_park();
                listener!(local.shared().idle().event() => listener);
                if let Some(park) = local.prepare_park() {
                    let deadline = local.deadline(park);
                    if park.is_watch() {
                        // Off the reactor (module docs).
                        wait_on_listener(listener, deadline);
                    } else {
                        local.sleep.wait(listener, deadline).await;
                    }
                    local.finish_park(park);
                }
            }
        });
    }

    /// Pending once (having woken itself), then ready.
    struct YieldOnce(bool);

    impl Future for YieldOnce {
        type Output = ();

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                return Poll::Ready(());
            }
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    /// What a waker run by the reactor on a sleeping worker needs to bring the worker
    /// out of it.
    #[derive(Default)]
    pub(crate) struct Sleep {
        /// The worker is inside `wait`.
        asleep: Cell<bool>,
        /// A process was put on this worker's queue while it slept.
        woken: Cell<bool>,
        /// The waker of the `block_on` the worker sleeps in, until first used.
        waker: Cell<Option<Waker>>,
    }

    impl Sleep {
        pub(crate) fn new() -> Sleep {
            Sleep::default()
        }

        /// Waits, inside the reactor, until `listener` is notified, `deadline` passes,
        /// or a waker run by the reactor on this thread scheduled a process on this
        /// worker.
        pub(crate) async fn wait<L>(&self, listener: L, deadline: Option<Instant>)
        where
            L: Listener<()> + Future<Output = ()> + Unpin,
        {
            let _awake = Awake(self);
            self.asleep.set(true);
            Wait {
                sleep: self,
                listener,
                timer: deadline.map(Timer::at),
            }
            .await;
        }

        /// Called when a process of this worker's runtime was put on its queue from its
        /// own thread outside a poll: true if that happened while the worker sleeps in
        /// the reactor (a socket's waker), in which case the worker is on its way out to
        /// run it and no other worker needs waking.
        #[inline]
        pub(crate) fn woke_self(&self) -> bool {
            if !self.asleep.get() {
                return false;
            }
            self.woken.set(true);
            if let Some(waker) = self.waker.take() {
                waker.wake();
            }
            true
        }
    }

    /// Resets the sleep state however `wait` ends.
    struct Awake<'a>(&'a Sleep);

    impl Drop for Awake<'_> {
        fn drop(&mut self) {
            self.0.asleep.set(false);
            self.0.woken.set(false);
            drop(self.0.waker.take());
        }
    }

    /// What a sleeping worker waits for.
    struct Wait<'a, L> {
        sleep: &'a Sleep,
        listener: L,
        timer: Option<Timer>,
    }

    impl<L: Future<Output = ()> + Unpin> Future for Wait<'_, L> {
        type Output = ();

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            let this = &mut *self;
            if this.sleep.woken.get() {
                return Poll::Ready(());
            }
            // The same `block_on` polls with the same waker: keep the first.
            let waker = this.sleep.waker.take();
            this.sleep
                .waker
                .set(Some(waker.unwrap_or_else(|| cx.waker().clone())));
            if Pin::new(&mut this.listener).poll(cx).is_ready() {
                return Poll::Ready(());
            }
            match &mut this.timer {
                Some(timer) => Pin::new(timer).poll(cx).map(drop),
                None => Poll::Pending,
            }
        }
    }
}
