//! Timers: `sleep`, `sleep_until`, `timeout`, `after` and `tick`, on a csp runtime, on
//! the default runtime from plain threads, and inside tokio; never early, removed from
//! the wheel when dropped, cancelled or aborted.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

mod common;

use common::{CountingWaker, bounded, runtime};

const MS: Duration = Duration::from_millis(1);

/// Polls `future` once with a waker that counts its wakes.
fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    let (_, waker) = CountingWaker::new();
    future.poll(&mut std::task::Context::from_waker(&waker))
}

/// A sleep's length that keeps it pending through a test's next few polls and steps,
/// even on a loaded machine or under valgrind.
fn pending_through_a_few_polls() -> Duration {
    Duration::from_secs(common::scaled_secs(1))
}

#[test]
fn sleep_never_completes_early() {
    bounded(20, || {
        let rt = runtime(2, "sleep-early");
        rt.block_on(async {
            let mut sleepers = Vec::new();
            for i in 0..50u64 {
                sleepers.push(csp::spawn(async move {
                    let wanted = Duration::from_micros(300 * (i % 17));
                    let start = Instant::now();
                    csp::sleep(wanted).await;
                    start.elapsed() >= wanted
                }));
            }
            for sleeper in sleepers {
                assert!(sleeper.await.unwrap(), "a sleep completed early");
            }
        });
    });
}

#[test]
fn sleep_until_a_past_deadline_is_ready_at_once() {
    bounded(10, || {
        let rt = runtime(1, "sleep-past");
        rt.block_on(async {
            let mut sleep = pin!(csp::sleep_until(Instant::now() - MS));
            assert_eq!(poll_once(sleep.as_mut()), Poll::Ready(()));
            assert!(sleep.is_elapsed());
            assert_eq!(rt.metrics().timers_armed, 0);
        });
        assert_eq!(rt.metrics().timers_armed, 0);
    });
}

#[test]
fn sleeps_fire_while_every_worker_is_busy() {
    // One worker, kept busy by a process that yields forever: the wheel is advanced at
    // its periodic checks.
    bounded(20, || {
        let rt = runtime(1, "sleep-busy");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinner = {
            let stop = stop.clone();
            rt.spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    csp::yield_now().await;
                }
            })
        };
        let woke = rt.spawn(async {
            csp::sleep(5 * MS).await;
            "woke"
        });
        assert_eq!(rt.block_on(woke).unwrap(), "woke");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        rt.block_on(spinner).unwrap();
    });
}

#[test]
fn sleep_works_on_the_default_runtime_from_plain_threads_and_tokio() {
    bounded(20, || {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    let start = Instant::now();
                    csp::block_on(csp::sleep(3 * MS));
                    start.elapsed() >= 3 * MS
                })
            })
            .collect();
        for t in threads {
            assert!(t.join().unwrap());
        }
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let elapsed = tokio.block_on(async {
            let tasks: Vec<_> = (0..20)
                .map(|i| {
                    tokio::spawn(async move {
                        let start = Instant::now();
                        csp::sleep(MS * (i % 5)).await;
                        start.elapsed() >= MS * (i % 5)
                    })
                })
                .collect();
            let mut all = true;
            for t in tasks {
                all &= t.await.unwrap();
            }
            all
        });
        assert!(elapsed, "a sleep in tokio completed early");
    });
}

#[test]
fn sleeps_moved_between_workers_fire_once_never_early_and_leave_the_wheels() {
    // Each worker arms in a wheel of its own: a sleep armed by a process on one worker
    // and then awaited, or dropped, by a process on another (or by a plain thread) is
    // fired or disarmed through the wheel it was armed in.
    bounded(60, || {
        let rt = runtime(4, "sleep-shards");
        let (tx, rx) = csp::bounded::<(std::pin::Pin<Box<csp::Sleep>>, Instant, Duration)>(16);
        let armers: Vec<_> = (0..8u64)
            .map(|p| {
                let tx = tx.clone();
                rt.spawn(async move {
                    for i in 0..200u64 {
                        let wanted = Duration::from_micros(100 * ((p * 7 + i) % 23));
                        let start = Instant::now();
                        let mut sleep = Box::pin(csp::sleep(wanted));
                        // Armed here (unless already due), on this worker.
                        let _ = futures::poll!(sleep.as_mut());
                        tx.send((sleep, start, wanted)).await.unwrap();
                    }
                })
            })
            .collect();
        drop(tx);
        let rx = std::sync::Arc::new(std::sync::Mutex::new(Some(rx)));
        let waiters: Vec<_> = (0..4)
            .map(|w| {
                let rx = rx.lock().unwrap().clone().unwrap();
                rt.spawn(async move {
                    let (mut fired, mut dropped) = (0, 0);
                    while let Ok((sleep, start, wanted)) = rx.recv().await {
                        if (fired + dropped + w) % 3 == 0 {
                            drop(sleep);
                            dropped += 1;
                        } else {
                            sleep.await;
                            assert!(start.elapsed() >= wanted, "a sleep completed early");
                            fired += 1;
                        }
                    }
                    (fired, dropped)
                })
            })
            .collect();
        drop(rx.lock().unwrap().take());
        for armer in armers {
            rt.block_on(armer).unwrap();
        }
        let mut total = 0;
        for waiter in waiters {
            let (fired, dropped) = rt.block_on(waiter).unwrap();
            total += fired + dropped;
        }
        assert_eq!(total, 8 * 200);
        // A plain thread's sleeps too, awaited by processes.
        let handle = rt.handle().clone();
        std::thread::spawn(move || {
            let sleeps: Vec<_> = (0..50u64)
                .map(|i| {
                    let mut sleep = Box::pin(csp::sleep(Duration::from_micros(200 * (i % 5))));
                    let _ = poll_once(sleep.as_mut());
                    sleep
                })
                .collect();
            for sleep in sleeps {
                csp::block_on(handle.spawn(sleep)).unwrap();
            }
        })
        .join()
        .unwrap();
        assert_eq!(rt.metrics().timers_armed, 0, "a timer was left in a wheel");
    });
}

#[test]
fn dropped_sleeps_leave_the_wheel() {
    bounded(30, || {
        let rt = runtime(1, "sleep-drop");
        rt.block_on(csp::spawn(async {
            for _ in 0..10_000 {
                let mut sleep = pin!(csp::sleep(Duration::from_secs(3600)));
                assert!(futures::poll!(sleep.as_mut()).is_pending());
            }
        }))
        .unwrap();
        assert_eq!(rt.metrics().timers_armed, 0);
    });
}

#[test]
fn aborted_and_cancelled_sleepers_leave_the_wheel() {
    bounded(30, || {
        let rt = runtime(2, "sleep-abort");
        let handles: Vec<_> = (0..100)
            .map(|_| rt.spawn(csp::sleep(Duration::from_secs(3600))))
            .collect();
        common::wait_until(10, "every sleep armed", || rt.metrics().timers_armed == 100);
        for h in &handles[..50] {
            h.abort();
        }
        for h in handles.into_iter().take(50) {
            assert!(rt.block_on(h).unwrap_err().is_cancelled());
        }
        assert_eq!(rt.metrics().timers_armed, 50);
        // The rest are cancelled by the runtime's drop.
        drop(rt);
    });
}

#[test]
fn a_sleep_bound_to_a_dropped_runtime_finishes_on_the_default_one() {
    bounded(20, || {
        let rt = runtime(1, "sleep-moved");
        let (_counter, waker) = CountingWaker::new();
        let long = pending_through_a_few_polls();
        let mut sleep = Box::pin(csp::sleep(long));
        // Armed in `rt`'s wheel (polled inside it)...
        rt.block_on(async {
            let mut cx = std::task::Context::from_waker(&waker);
            assert!(sleep.as_mut().poll(&mut cx).is_pending());
        });
        assert_eq!(rt.metrics().timers_armed, 1);
        // ...which goes away: the sleep still completes, no earlier than asked.
        drop(rt);
        csp::block_on(sleep.as_mut());
        assert!(sleep.deadline() <= Instant::now());
    });
}

#[test]
fn reset_moves_the_deadline_both_ways() {
    bounded(20, || {
        let rt = runtime(1, "sleep-reset");
        rt.block_on(async {
            let mut sleep = pin!(csp::sleep(Duration::from_secs(3600)));
            assert!(futures::poll!(sleep.as_mut()).is_pending());
            let soon = Instant::now() + 2 * MS;
            sleep.as_mut().reset(soon);
            assert_eq!(sleep.deadline(), soon);
            sleep.as_mut().await;
            assert!(Instant::now() >= soon);
            // After completing, a reset arms it again.
            let later = Instant::now() + 3 * MS;
            sleep.as_mut().reset(later);
            assert!(!sleep.is_elapsed());
            sleep.as_mut().await;
            assert!(Instant::now() >= later);
        });
        assert_eq!(rt.metrics().timers_armed, 0);
    });
}

/// A waiting sleep's deadline moved later stays in the wheel where it was (no lock):
/// its first deadline wakes the owner, which finds the new one ahead and waits again;
/// it never completes before the new deadline, and leaves the wheel.
#[test]
fn reset_later_keeps_the_entry_and_never_completes_early() {
    bounded(20, || {
        let rt = runtime(1, "sleep-reset-later");
        let polls = std::sync::atomic::AtomicUsize::new(0);
        let first = pending_through_a_few_polls();
        rt.block_on(async {
            let start = Instant::now();
            let mut sleep = pin!(csp::sleep(first));
            assert!(futures::poll!(sleep.as_mut()).is_pending());
            assert_eq!(rt.metrics().timers_armed, 1);
            let later = start + 2 * first;
            sleep.as_mut().reset(later);
            assert_eq!(rt.metrics().timers_armed, 1, "the entry stays linked");
            assert_eq!(sleep.deadline(), later);
            std::future::poll_fn(|cx| {
                polls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                sleep.as_mut().poll(cx)
            })
            .await;
            assert!(Instant::now() >= later, "completed early");
        });
        // The poll that waits, the first deadline's wake, then the new one's; one fewer
        // if the first wake came late, past the new deadline.
        let polls = polls.into_inner();
        assert!((2..=3).contains(&polls), "{polls} polls after the reset");
        assert_eq!(rt.metrics().timers_armed, 0);
    });
}

/// A sleep dropped while a later `reset` left its entry linked where it was: the entry
/// leaves the wheel (it lives inside the sleep).
#[test]
fn a_sleep_dropped_after_a_later_reset_leaves_the_wheel() {
    bounded(20, || {
        let rt = runtime(1, "sleep-reset-drop");
        rt.block_on(async {
            let mut sleep = Box::pin(csp::sleep(Duration::from_secs(3600)));
            assert!(futures::poll!(sleep.as_mut()).is_pending());
            sleep
                .as_mut()
                .reset(Instant::now() + Duration::from_secs(7200));
            assert_eq!(rt.metrics().timers_armed, 1);
            drop(sleep);
            assert_eq!(rt.metrics().timers_armed, 0);
        });
    });
}

/// A sleep polled again and again by another executor's waker (each poll under the
/// wheel's lock: only a process's or `block_on`'s re-poll takes none) stays pending;
/// polled by another such waker, that one is woken when it fires, once, and the first
/// not at all.
#[test]
fn a_sleep_polled_again_wakes_its_latest_waker_once() {
    bounded(20, || {
        let rt = runtime(1, "sleep-repoll");
        let (first_count, first) = CountingWaker::new();
        let (latest_count, latest) = CountingWaker::new();
        let long = pending_through_a_few_polls();
        let mut sleep = foreign_sleep_on(&rt, long, first.clone());
        let mut poll = |waker: &std::task::Waker| {
            sleep
                .as_mut()
                .poll(&mut std::task::Context::from_waker(waker))
        };
        for _ in 0..3 {
            assert!(poll(&first).is_pending());
        }
        assert!(poll(&latest).is_pending());
        assert!(poll(&latest).is_pending());
        common::wait_until(10, "the sleep fired", || latest_count.wakes() == 1);
        assert_eq!(poll(&latest), Poll::Ready(()));
        assert_eq!(first_count.wakes(), 0, "the replaced waker is not woken");
        assert_eq!(latest_count.wakes(), 1);
        drop(sleep);
        drop(rt);
    });
}

/// A waker whose data is a `Waker` on the caller's stack (woken through it) and whose
/// clones are boxed copies of that one: a clone is a different raw waker than the
/// waker, as the `Waker` contract allows.
mod stack_waker {
    use std::task::{RawWaker, RawWakerVTable, Waker};

    static STACK: RawWakerVTable = RawWakerVTable::new(clone, wake_by_ref, wake_by_ref, noop);
    static HEAP: RawWakerVTable = RawWakerVTable::new(clone, wake_boxed, wake_by_ref, drop_boxed);

    /// A waker that wakes `target`, with `target`'s address as its data.
    ///
    /// # Safety
    /// `target` outlives the waker (not its clones, which own copies).
    pub unsafe fn on(target: &Waker) -> Waker {
        let data = std::ptr::from_ref(target).cast::<()>();
        // SAFETY: the functions uphold the contract for a live `*const Waker`, which the
        // caller keeps alive as long as this waker.
        unsafe { Waker::from_raw(RawWaker::new(data, &STACK)) }
    }

    fn clone(data: *const ()) -> RawWaker {
        // SAFETY: `data` points at a live `Waker` (the stack one, or a boxed copy).
        let target = unsafe { &*data.cast::<Waker>() };
        let boxed = Box::into_raw(Box::new(target.clone()));
        RawWaker::new(boxed.cast::<()>().cast_const(), &HEAP)
    }

    fn wake_by_ref(data: *const ()) {
        // SAFETY: as in `clone`.
        unsafe { &*data.cast::<Waker>() }.wake_by_ref();
    }

    fn wake_boxed(data: *const ()) {
        // SAFETY: a boxed copy, owned by the waker consumed here.
        unsafe { Box::from_raw(data.cast::<Waker>().cast_mut()) }.wake();
    }

    fn drop_boxed(data: *const ()) {
        // SAFETY: as in `wake_boxed`.
        drop(unsafe { Box::from_raw(data.cast::<Waker>().cast_mut()) });
    }

    fn noop(_: *const ()) {}
}

/// Another executor polls a sleep with a waker, then with another waker of another
/// task that has the same data and vtable (a waker on the stack, at the same address)
/// but whose clones differ: the sleep's timer must wake the second task, so the entry
/// (which holds a clone of the first) is updated, with no lock-free shortcut on the
/// pointers of the waker polled with.
#[test]
fn a_foreign_waker_at_the_address_of_the_last_one_still_takes_over() {
    bounded(20, || {
        let rt = runtime(1, "sleep-stack-waker");
        let (first_count, first) = CountingWaker::new();
        let (latest_count, latest) = CountingWaker::new();
        let mut sleep = std::pin::pin!(csp::sleep(pending_through_a_few_polls()));
        let mut target = first;
        rt.block_on(async {
            // SAFETY: `target` outlives `waker`, dropped at the end of the block.
            let waker = unsafe { stack_waker::on(&target) };
            let mut cx = std::task::Context::from_waker(&waker);
            assert!(sleep.as_mut().poll(&mut cx).is_pending());
        });
        target = latest;
        // SAFETY: as above.
        let waker = unsafe { stack_waker::on(&target) };
        assert!(
            sleep
                .as_mut()
                .poll(&mut std::task::Context::from_waker(&waker))
                .is_pending()
        );
        drop(waker);
        common::wait_until(10, "the second task was woken", || {
            latest_count.wakes() == 1
        });
        assert_eq!(first_count.wakes(), 0);
        drop(rt);
    });
}

/// A process's sleep, polled again by its process (no lock), then handed to another
/// process: that one's poll takes the entry over, and the sleep wakes it when it fires.
#[test]
fn a_sleep_polled_again_by_its_process_then_handed_on_wakes_the_new_owner() {
    bounded(20, || {
        let rt = runtime(2, "sleep-handed-on");
        let long = pending_through_a_few_polls();
        let start = Instant::now();
        let (sleep,) = rt
            .block_on(rt.spawn(async move {
                let mut sleep = Box::pin(csp::sleep(long));
                for _ in 0..3 {
                    assert!(futures::poll!(sleep.as_mut()).is_pending());
                }
                (sleep,)
            }))
            .unwrap();
        let woke = rt.block_on(rt.spawn(async move {
            sleep.await;
            Instant::now()
        }));
        assert!(woke.unwrap() >= start + long, "completed early");
        assert_eq!(rt.metrics().timers_armed, 0);
    });
}

/// A sleep armed in one runtime's wheel and awaited by a process of another: when the
/// first runtime goes, its shutdown wakes the process, whose poll (by the same waker)
/// must not take the lock-free path, but arm the sleep in its own runtime.
#[test]
fn a_sleep_whose_runtime_went_moves_to_its_pollers_runtime() {
    bounded(20, || {
        let first = runtime(1, "sleep-first");
        let second = runtime(1, "sleep-second");
        // Pending through the first runtime's shutdown and the re-poll that follows.
        let long = 2 * pending_through_a_few_polls();
        let start = Instant::now();
        let (mut sleep,) = first
            .block_on(first.spawn(async move {
                let mut sleep = Box::pin(csp::sleep(long));
                assert!(futures::poll!(sleep.as_mut()).is_pending());
                (sleep,)
            }))
            .unwrap();
        let polled = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let awaiting = {
            let polled = polled.clone();
            second.spawn(async move {
                std::future::poll_fn(|cx| {
                    polled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    sleep.as_mut().poll(cx)
                })
                .await;
                Instant::now()
            })
        };
        common::wait_until(10, "the second runtime's process polled the sleep", || {
            polled.load(std::sync::atomic::Ordering::SeqCst) >= 1
        });
        drop(first);
        common::wait_until(10, "the sleep armed again in the second runtime", || {
            second.metrics().timers_armed == 1
        });
        let woke = second.block_on(awaiting).unwrap();
        assert!(woke >= start + long, "completed early");
        assert_eq!(second.metrics().timers_armed, 0);
    });
}

#[test]
fn timeout_gives_the_output_or_elapsed() {
    bounded(20, || {
        let rt = runtime(2, "timeout");
        rt.block_on(async {
            let (tx, rx) = csp::channel::<u32>();
            let start = Instant::now();
            assert_eq!(
                csp::timeout(5 * MS, rx.recv()).await,
                Err(csp::Elapsed),
                "nobody sends"
            );
            assert!(start.elapsed() >= 5 * MS);
            csp::spawn(async move { tx.send(9).await.unwrap() });
            assert_eq!(
                csp::timeout(Duration::from_secs(5), rx.recv()).await,
                Ok(Ok(9))
            );
        });
        assert_eq!(rt.metrics().timers_armed, 0);
        fn error_traits<E: std::error::Error + std::fmt::Display + Copy + Eq>() {}
        error_traits::<csp::Elapsed>();
    });
}

#[test]
fn a_tick_due_at_once_outside_the_workers_wakes_one_for_the_next() {
    // A period shorter than the time `tick` takes to arm fires the first tick at once,
    // on the calling thread, which links the next one in the wheel: the parked worker
    // must be asked to wake for it, or the second tick never comes.
    bounded(20, || {
        let rt = runtime(1, "tick-outside");
        // The only worker parks with no timer to wait for.
        std::thread::sleep(20 * MS);
        rt.block_on(async {
            let ticks = csp::tick(Duration::from_nanos(1));
            for _ in 0..3 {
                ticks.recv().await.unwrap();
            }
        });
    });
}

#[test]
fn after_sends_once_and_never_closes() {
    bounded(20, || {
        let rt = runtime(1, "after");
        rt.block_on(async {
            let start = Instant::now();
            let rx = csp::after(4 * MS);
            assert_eq!(rx.capacity(), Some(1));
            let fired = rx.recv().await.unwrap();
            assert!(fired >= start + 4 * MS, "fired early");
            assert!(start.elapsed() >= 4 * MS);
            csp::sleep(5 * MS).await;
            assert_eq!(rx.try_recv(), Err(csp::TryRecvError::Empty));
            assert!(!rx.is_closed());
        });
        assert_eq!(rt.metrics().timers_armed, 0);
    });
}

#[test]
fn after_zero_is_ready_at_once() {
    bounded(10, || {
        let rx = csp::after(Duration::ZERO);
        assert!(rx.try_recv().is_ok());
        assert_eq!(rx.try_recv(), Err(csp::TryRecvError::Empty));
    });
}

#[test]
fn dropping_the_last_receiver_removes_the_timer() {
    bounded(20, || {
        let rt = runtime(1, "after-drop");
        rt.block_on(async {
            let rx = csp::after(Duration::from_secs(3600));
            let ticks = csp::tick(Duration::from_secs(3600));
            let rx2 = rx.clone();
            assert_eq!(rt.metrics().timers_armed, 2);
            drop(rx);
            assert_eq!(rt.metrics().timers_armed, 2, "a receiver is left");
            drop(rx2);
            drop(ticks);
        });
        assert_eq!(rt.metrics().timers_armed, 0);
    });
}

#[test]
fn tick_skips_missed_ticks_and_keeps_the_waiting_instant() {
    bounded(20, || {
        let rt = runtime(1, "tick");
        rt.block_on(async {
            let start = Instant::now();
            let ticks = csp::tick(2 * MS);
            let first = ticks.recv().await.unwrap();
            assert!(first >= start + 2 * MS);
            // Miss several periods: one value waits (the later ticks were dropped, not
            // queued), sent while we slept; the sleep's deadline, later than the first
            // missed tick's, expired in the same advance of the wheel or after it.
            csp::sleep(15 * MS).await;
            let woke = Instant::now();
            assert_eq!(ticks.len(), 1);
            let waiting = ticks.try_recv().unwrap();
            assert!(waiting > first && waiting <= woke);
            let next = ticks.recv().await.unwrap();
            assert!(next > waiting);
        });
    });
}

#[test]
#[should_panic(expected = "csp::tick: the period must be longer than zero")]
fn tick_zero_panics() {
    let _ = csp::tick(Duration::ZERO);
}

#[test]
fn runtime_shutdown_closes_its_timer_channels() {
    bounded(20, || {
        let rt = runtime(1, "tick-shutdown");
        let ticks = rt.block_on(async { csp::tick(Duration::from_secs(3600)) });
        let rx = rt.block_on(async { csp::after(Duration::from_secs(3600)) });
        drop(rt);
        assert_eq!(ticks.try_recv(), Err(csp::TryRecvError::Closed));
        assert_eq!(rx.try_recv(), Err(csp::TryRecvError::Closed));
    });
}

/// Arms, on `rt`'s wheel, a sleep of `duration` whose owner is `waker` (a foreign waker,
/// as when a csp timer is polled by another executor's combinator inside a process).
fn foreign_sleep_on(
    rt: &csp::Runtime,
    duration: Duration,
    waker: std::task::Waker,
) -> std::pin::Pin<Box<csp::Sleep>> {
    rt.block_on(rt.spawn(async move {
        let mut sleep = Box::pin(csp::sleep(duration));
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        // In a tuple: a process's output that is itself a future reads as a mistake.
        (sleep,)
    }))
    .unwrap()
    .0
}

/// A timer whose (foreign) waker panics when it fires: the worker that fired it lives on,
/// later timers of the same and later batches fire, and the runtime drops.
#[test]
fn a_panicking_waker_on_a_fired_timer_kills_no_worker() {
    bounded(20, || {
        let rt = runtime(1, "timer-waker-panic");
        let (probe, panicking) = CountingWaker::panicking();
        let (counting, waker) = CountingWaker::new();
        let first = foreign_sleep_on(&rt, 20 * MS, panicking);
        let second = foreign_sleep_on(&rt, 20 * MS, waker);
        let sleeper = rt.spawn(async {
            csp::sleep(20 * MS).await;
            7
        });
        assert_eq!(rt.block_on(sleeper).unwrap(), 7);
        common::wait_until(10, "both foreign sleeps fired", || {
            probe.wakes() == 1 && counting.wakes() == 1
        });
        let later = rt.spawn(async {
            csp::sleep(MS).await;
            8
        });
        assert_eq!(rt.block_on(later).unwrap(), 8);
        drop((first, second));
        drop(rt);
    });
}

/// The runtime shuts down while timers wait; the first one's waker panics: every other
/// waiting timer is still woken, and the drop of the runtime returns.
#[test]
fn a_panicking_waker_at_shutdown_still_wakes_every_other_timer() {
    bounded(20, || {
        let rt = runtime(1, "timer-shutdown-panic");
        let (probe, panicking) = CountingWaker::panicking();
        let (counting, waker) = CountingWaker::new();
        let hour = Duration::from_secs(3600);
        let first = foreign_sleep_on(&rt, hour, panicking);
        let second = foreign_sleep_on(&rt, hour, waker);
        drop(rt);
        assert_eq!(probe.wakes(), 1);
        assert_eq!(
            counting.wakes(),
            1,
            "the timer behind the panicking one was woken"
        );
        drop((first, second));
    });
}
