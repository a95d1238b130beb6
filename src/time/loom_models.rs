//! loom models of a sleep polled again by the process it wakes, the poll that takes no
//! lock (`sleep.rs`, `Sleep::poll`), driven through a real runtime: a worker driven by
//! hand runs the process, whose sleep arms in that runtime's wheel, and another thread
//! fires the wheel or shuts the runtime down while the process is woken and polled
//! again. The firing is never lost (the process completes, polled at most once more),
//! and a shutdown ends it cancelled, its future dropped exactly once.
//! A sleep armed in one runtime's wheel and awaited by a process of another is armed
//! again in the poller's runtime when its own shuts down under that second poll, and
//! completes there.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --lib loom`.

use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use loom::future::block_on;
use loom::sync::Arc;
use loom::sync::atomic::Ordering;
use loom::thread;

use super::sleep::{Sleep, sleep};
use crate::loom::sync::Mutex;
use crate::runtime::process_loom_models::Counters;
use crate::runtime::worker::Local;
use crate::runtime::worker::loom_models::retire_worker;
use crate::runtime::{Handle, Shared, context};

/// The sleep's length: it never comes by the clock while a model runs, however slowly
/// loom explores it.
const SLEEP: Duration = Duration::from_secs(100);

/// A tick (a millisecond each) past [`SLEEP`]'s deadline: firing the wheel at it fires
/// the sleep.
const PAST_THE_DEADLINE: u64 = 1_000_000;

/// A process's future: awaits a sleep it may share with the model, counting polls and
/// drops, and keeps the waker of its first poll for the model to wake it by (or to arm
/// the sleep with elsewhere, when the first poll leaves the sleep alone).
struct Sleeper {
    sleep: Arc<Mutex<Pin<Box<Sleep>>>>,
    /// Whether the first poll polls the sleep (arming it in the poller's runtime).
    arms_on_first_poll: bool,
    counters: Counters,
}

impl Sleeper {
    fn new(sleep: Arc<Mutex<Pin<Box<Sleep>>>>, arms_on_first_poll: bool) -> (Sleeper, Counters) {
        let counters = Counters::new();
        let sleeper = Sleeper {
            sleep,
            arms_on_first_poll,
            counters: counters.clone(),
        };
        (sleeper, counters)
    }
}

impl Future for Sleeper {
    /// The polls it took.
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        let polls = self.counters.polls.fetch_add(1, Ordering::SeqCst) + 1;
        if polls == 1 {
            *self.counters.waker.lock() = Some(cx.waker().clone());
            if !self.arms_on_first_poll {
                return Poll::Pending;
            }
        }
        self.sleep.lock().as_mut().poll(cx).map(|()| polls)
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.counters.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// The waker of the process's first poll.
fn first_waker(counters: &Counters) -> Waker {
    counters
        .take_waker()
        .expect("the first poll kept its waker")
}

/// The process ended, its future dropped exactly once: a lost wake, or a sleep left in
/// no wheel, would leave it waiting, its future alive.
fn assert_ended(counters: &Counters) {
    assert_eq!(
        counters.drops(),
        1,
        "the process ended and its future was dropped exactly once"
    );
}

/// A sleep of [`SLEEP`], to share.
fn shared_sleep() -> Arc<Mutex<Pin<Box<Sleep>>>> {
    Arc::new(Mutex::new(Box::pin(sleep(SLEEP))))
}

/// What the other thread does while the process is polled again.
#[derive(Clone, Copy)]
enum Racer {
    /// Fires the wheel past the sleep's deadline, as a worker's timer check does.
    Fire,
    /// Shuts the runtime down, as its drop does: the flag, the wheel's unlinking (and
    /// wake) of every entry, then the registry's walk that cancels every process.
    Shutdown,
}

#[test]
fn loom_sleep_polled_again_racing_its_firing() {
    polled_again_racing(Racer::Fire);
}

#[test]
fn loom_sleep_polled_again_racing_shutdown() {
    polled_again_racing(Racer::Shutdown);
}

/// The process's first poll arms its sleep (under the wheel's lock) and records its
/// waker; the model then wakes it, and the worker polls it again with the same waker,
/// which takes no lock, while `racer` runs on another thread. Fired: the process
/// completes, on that second poll or on one more that the firing's wake brings. Shut
/// down: it ends cancelled. Either way its future is dropped exactly once and every
/// reference is released (loom reports the runtime reference a leaked process holds).
fn polled_again_racing(racer: Racer) {
    // Executions in which the second poll found the sleep waiting, so the firing's
    // wake brought a third (std's atomic: counted across executions, outside the model).
    static WOKEN_AFTER_REPOLL: std::sync::atomic::AtomicUsize =
        std::sync::atomic::AtomicUsize::new(0);
    if let Racer::Fire = racer {
        WOKEN_AFTER_REPOLL.store(0, std::sync::atomic::Ordering::Relaxed);
    }
    loom::model(move || {
        let (shared, mut queues) = Shared::new(1, "loom".to_owned(), None, Default::default());
        let local = Local::new(shared.clone(), 0, queues.pop().unwrap());
        // SAFETY: `local` outlives the guard, on this thread.
        let guard = unsafe { context::WorkerGuard::new(&local) };
        let (sleeper, counters) = Sleeper::new(shared_sleep(), true);
        let join = Shared::spawn(&shared, sleeper, Location::caller());
        // The first poll: the sleep arms, under the wheel's lock.
        local.run_at_hand();
        assert_eq!(counters.polls(), 1, "the sleep is waiting");

        let racing = {
            let shared = shared.clone();
            thread::spawn(move || match racer {
                Racer::Fire => {
                    let _ = shared.timers().fire_all(PAST_THE_DEADLINE);
                }
                Racer::Shutdown => {
                    assert!(shared.begin_shutdown());
                    shared.registry().close_and_shutdown_all();
                }
            })
        };
        // The second poll, with the first one's waker.
        first_waker(&counters).wake();
        local.run_at_hand();
        racing.join().unwrap();
        local.run_at_hand();
        retire_worker(&local, guard);

        assert_ended(&counters);
        match (racer, block_on(join)) {
            (Racer::Fire, Ok(polls)) => {
                assert!(
                    polls == 2 || polls == 3,
                    "completed on the second poll, or on the one its firing brought: {polls}"
                );
                if polls == 3 {
                    WOKEN_AFTER_REPOLL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            (Racer::Fire, Err(err)) => panic!("the fired sleep's process did not complete: {err}"),
            (Racer::Shutdown, Err(err)) => assert!(err.is_cancelled()),
            (Racer::Shutdown, Ok(polls)) => panic!("a sleep of 100 s completed on poll {polls}"),
        }
        drop(local);
        let _ = shared.begin_shutdown();
    });
    if let Racer::Fire = racer {
        assert!(
            WOKEN_AFTER_REPOLL.load(std::sync::atomic::Ordering::Relaxed) > 0,
            "the model reached a second poll that found the sleep waiting"
        );
    }
}

/// A sleep armed in the wheel of runtime `home`, with the waker of a process of runtime
/// `poller`, is polled again by that process, which takes no lock while `home` is up,
/// while another thread shuts `home` down (which unlinks the entry without firing it and
/// wakes the process). The poll that follows the shutdown must see it and arm the sleep
/// in `poller`'s wheel: firing that wheel then completes the process. A re-poll that
/// ignored the shutdown would leave the sleep pending in no wheel, and the process
/// would never complete.
#[test]
fn loom_sleep_of_another_runtime_polled_again_racing_its_shutdown() {
    loom::model(|| {
        let (home, _) = Shared::new(1, "home".to_owned(), None, Default::default());
        let (poller, mut queues) = Shared::new(1, "poller".to_owned(), None, Default::default());
        let local = Local::new(poller.clone(), 0, queues.pop().unwrap());
        let sleep = shared_sleep();
        let (sleeper, counters) = Sleeper::new(sleep.clone(), false);
        let join = Shared::spawn(&poller, sleeper, Location::caller());
        {
            // SAFETY: `local` outlives the guard, on this thread.
            let _guard = unsafe { context::WorkerGuard::new(&local) };
            local.run_at_hand();
        }
        let process_waker = first_waker(&counters);
        {
            // Armed in `home`'s wheel, to wake the process.
            let _home = context::enter(Handle {
                shared: home.clone(),
            });
            let mut cx = Context::from_waker(&process_waker);
            assert!(sleep.lock().as_mut().poll(&mut cx).is_pending());
        }
        drop(sleep);

        let racing = {
            let home = home.clone();
            thread::spawn(move || {
                assert!(home.begin_shutdown());
                home.registry().close_and_shutdown_all();
            })
        };
        // SAFETY: `local` outlives the guard, on this thread.
        let guard = unsafe { context::WorkerGuard::new(&local) };
        process_waker.wake();
        local.run_at_hand();
        racing.join().unwrap();
        local.run_at_hand();
        // The sleep's deadline, in the wheel it is armed in now.
        let _ = poller.timers().fire_all(PAST_THE_DEADLINE);
        local.run_at_hand();
        retire_worker(&local, guard);

        assert_ended(&counters);
        match block_on(join) {
            Ok(polls) => assert!(polls <= 4, "polled {polls} times"),
            Err(err) => panic!("the sleep moved from a runtime that shut down was lost: {err}"),
        }
        drop(local);
        let _ = poller.begin_shutdown();
    });
}
