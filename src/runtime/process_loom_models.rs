//! loom models of a process's state word (`task/state.rs`), driven through the real
//! vtable and a real runtime's shared state: `Shared::spawn`
//! allocates the process, `Notified::run` is the worker's poll step, and the wakes, aborts
//! and drops go through the real `Waker`, `JoinHandle` and reference count.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --lib loom`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use loom::future::block_on;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use crate::loom::sync::Mutex;
use crate::runtime::Shared;
use crate::runtime::queue::Steal;
use crate::wait::JoinHandle;
use crate::wait::claim::Owner;

/// A future that counts its polls and drops, keeps its latest waker where a test thread
/// can take it, and completes on the poll numbered `ready_at` (1-based).
struct Probe {
    polls: Arc<AtomicUsize>,
    drops: Arc<AtomicUsize>,
    waker: Arc<Mutex<Option<Waker>>>,
    ready_at: usize,
}

#[derive(Clone)]
pub(super) struct Counters {
    polls: Arc<AtomicUsize>,
    drops: Arc<AtomicUsize>,
    waker: Arc<Mutex<Option<Waker>>>,
}

impl Counters {
    pub(super) fn new() -> Counters {
        Counters {
            polls: Arc::new(AtomicUsize::new(0)),
            drops: Arc::new(AtomicUsize::new(0)),
            waker: Arc::new(Mutex::new(None)),
        }
    }

    fn probe(&self, ready_at: usize) -> Probe {
        Probe {
            polls: self.polls.clone(),
            drops: self.drops.clone(),
            waker: self.waker.clone(),
            ready_at,
        }
    }

    pub(super) fn polls(&self) -> usize {
        self.polls.load(Ordering::SeqCst)
    }

    pub(super) fn drops(&self) -> usize {
        self.drops.load(Ordering::SeqCst)
    }

    fn take_waker(&self) -> Option<Waker> {
        self.waker.lock().take()
    }
}

impl Future for Probe {
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        let n = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
        *self.waker.lock() = Some(cx.waker().clone());
        if n >= self.ready_at {
            Poll::Ready(n)
        } else {
            Poll::Pending
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn new_runtime() -> Arc<Shared> {
    Shared::new(1, "loom".to_owned(), None, Default::default()).0
}

/// Runs every entry in the injector, as a worker would; returns how many ran.
fn run_queued(shared: &Shared) -> usize {
    let mut ran = 0;
    loop {
        match shared.injector().steal() {
            Steal::Success(entry) => {
                entry.run();
                ran += 1;
            }
            Steal::Empty => return ran,
            Steal::Retry => thread::yield_now(),
        }
    }
}

/// Spawns a probe and runs its first poll, leaving it asleep with its waker stored.
fn spawn_asleep(shared: &Arc<Shared>, counters: &Counters, ready_at: usize) -> JoinHandle<usize> {
    let join = Shared::spawn(
        &shared,
        counters.probe(ready_at),
        std::panic::Location::caller(),
    );
    assert_eq!(run_queued(shared), 1);
    assert_eq!(counters.polls(), 1);
    join
}

fn shutdown(shared: &Arc<Shared>) {
    assert!(shared.begin_shutdown());
    shared.registry().close_and_shutdown_all();
    shared.drain_injector();
}

/// Spawns `future` (counting in `counters`, complete on its second poll) and runs its
/// first poll while another thread wakes it as soon as `wake` finds what to wake it by
/// (and says true): the process is polled exactly once more, and completes.
fn wake_racing_first_poll(
    future: impl Future<Output = usize> + Send + 'static,
    counters: &Counters,
    wake: impl Fn() -> bool + Send + 'static,
) {
    let shared = new_runtime();
    let join = Shared::spawn(&shared, future, std::panic::Location::caller());

    let waker_thread = thread::spawn(move || {
        while !wake() {
            thread::yield_now();
        }
    });
    run_queued(&shared);
    waker_thread.join().unwrap();
    run_queued(&shared);

    assert_eq!(counters.polls(), 2, "exactly one poll per wake, none lost");
    assert_eq!(block_on(join).unwrap(), 2);
    assert_eq!(counters.drops(), 1);
    shutdown(&shared);
}

/// A wake from another thread racing the poll that registered the waker: whether it
/// lands while Running (→ Yielding, requeued by the poller) or after (→ Queued by the
/// waker), the process is polled exactly once more.
#[test]
fn loom_wake_racing_poll() {
    loom::model(|| {
        let counters = Counters::new();
        let taker = counters.clone();
        wake_racing_first_poll(counters.probe(2), &counters, move || {
            taker.take_waker().map(Waker::wake).is_some()
        });
    });
}

/// A wake racing the poll that completes the process: the wake does nothing (or marks a
/// Yielding that completion overrides); there is one poll and the output is delivered.
#[test]
fn loom_wake_racing_completion() {
    loom::model(|| {
        let shared = new_runtime();
        let counters = Counters::new();
        let join = Shared::spawn(&shared, counters.probe(1), std::panic::Location::caller());

        let waker_thread = {
            let counters = counters.clone();
            thread::spawn(move || {
                loop {
                    if let Some(waker) = counters.take_waker() {
                        waker.wake_by_ref();
                        drop(waker);
                        return;
                    }
                    thread::yield_now();
                }
            })
        };
        run_queued(&shared);
        waker_thread.join().unwrap();
        assert_eq!(
            run_queued(&shared),
            0,
            "a completed process is never queued again"
        );

        assert_eq!(counters.polls(), 1);
        assert_eq!(counters.drops(), 1);
        assert_eq!(block_on(join).unwrap(), 1);
        shutdown(&shared);
    });
}

/// An abort racing a wake of a sleeping process, with a worker running the queue
/// meanwhile: the future is dropped exactly once, and the output is `Ok` exactly when
/// the process got its second poll before the abort took effect.
#[test]
fn loom_wake_racing_abort() {
    loom::model(|| {
        let shared = new_runtime();
        let counters = Counters::new();
        let join = Arc::new(spawn_asleep(&shared, &counters, 2));
        let waker = counters
            .take_waker()
            .expect("the first poll stored a waker");

        let aborter = {
            let join = join.clone();
            thread::spawn(move || join.abort())
        };
        let worker = {
            let shared = shared.clone();
            thread::spawn(move || {
                waker.wake();
                run_queued(&shared);
            })
        };
        aborter.join().unwrap();
        worker.join().unwrap();
        run_queued(&shared);

        let join = Arc::try_unwrap(join).expect("both threads are done with the handle");
        let result = block_on(join);
        assert_eq!(counters.drops(), 1, "the future is dropped exactly once");
        match result {
            Ok(n) => assert_eq!((n, counters.polls()), (2, 2)),
            Err(err) => {
                assert!(err.is_cancelled());
                assert_eq!(counters.polls(), 1, "no poll after the abort");
            }
        }
        shutdown(&shared);
    });
}

/// The `JoinHandle` registering its waker races the completion of the process: the
/// handle is always woken (a lost wake would leave `block_on` parked: loom reports it).
#[test]
fn loom_join_waker_racing_completion() {
    loom::model(|| {
        let shared = new_runtime();
        let counters = Counters::new();
        let join = Shared::spawn(&shared, counters.probe(1), std::panic::Location::caller());

        let worker = {
            let shared = shared.clone();
            thread::spawn(move || {
                while run_queued(&shared) == 0 {
                    thread::yield_now();
                }
            })
        };
        assert_eq!(block_on(join).unwrap(), 1);
        worker.join().unwrap();
        assert_eq!(counters.drops(), 1);
        shutdown(&shared);
    });
}

/// The last reference may go with the `JoinHandle`, with a waker, or with the worker
/// completing the process: whichever is last frees the process, exactly once (loom
/// reports a double free of the runtime reference it holds, or a leak).
#[test]
fn loom_last_reference_drop() {
    loom::model(|| {
        let shared = new_runtime();
        let counters = Counters::new();
        let join = spawn_asleep(&shared, &counters, 2);
        let waker = counters
            .take_waker()
            .expect("the first poll stored a waker");
        let extra = waker.clone();

        let dropper = thread::spawn(move || drop(join));
        let worker = {
            let shared = shared.clone();
            thread::spawn(move || {
                waker.wake();
                run_queued(&shared);
            })
        };
        drop(extra);
        dropper.join().unwrap();
        worker.join().unwrap();
        run_queued(&shared);

        assert_eq!(counters.polls(), 2);
        assert_eq!(counters.drops(), 1);
        drop(counters.take_waker());
        shutdown(&shared);
    });
}

/// Runtime shutdown racing a wake of a sleeping process: the future is dropped exactly
/// once, by shutdown or by a cancelled poll, and the handle resolves to cancelled.
#[test]
fn loom_shutdown_racing_wake() {
    loom::model(|| {
        let shared = new_runtime();
        let counters = Counters::new();
        let join = spawn_asleep(&shared, &counters, 3);
        let waker = counters
            .take_waker()
            .expect("the first poll stored a waker");

        let waker_thread = thread::spawn(move || waker.wake());
        shutdown(&shared);
        waker_thread.join().unwrap();
        shared.drain_injector();

        assert_eq!(counters.drops(), 1);
        assert!(block_on(join).unwrap_err().is_cancelled());
    });
}

/// A future that, on each poll before the one numbered `ready_at`, takes an internal
/// reference to its own process the way a channel wait does (`Owner::internal`, which
/// takes the poll's lent reference: `task/loan.rs`) and leaves it where a test thread
/// can wake it. It checks, after handing the reference out, that its process was not
/// freed under its own poll (the allocation's drop would have dropped it).
pub(super) struct Lender {
    polls: Arc<AtomicUsize>,
    drops: Arc<AtomicUsize>,
    owner: Arc<Mutex<Option<Owner>>>,
    ready_at: usize,
}

impl Future for Lender {
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        let n = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
        if n >= self.ready_at {
            return Poll::Ready(n);
        }
        let owner = Owner::internal(cx.waker()).expect("a process's waker");
        let previous = self.owner.lock().replace(owner);
        drop(previous);
        thread::yield_now();
        assert_eq!(
            self.drops.load(Ordering::SeqCst),
            0,
            "a process was freed while its poll ran"
        );
        Poll::Pending
    }
}

impl Drop for Lender {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

pub(super) fn lender(
    counters: &Counters,
    owner: &Arc<Mutex<Option<Owner>>>,
    ready_at: usize,
) -> Lender {
    Lender {
        polls: counters.polls.clone(),
        drops: counters.drops.clone(),
        owner: owner.clone(),
        ready_at,
    }
}

/// The reference a poll lends to its own wait is woken from another thread while the
/// poll is still running, or after: the process is polled exactly once more, and every
/// reference is released exactly once (loom reports the runtime reference a process
/// holds if it leaks, or a double release).
#[test]
fn loom_lent_reference_woken_racing_poll() {
    loom::model(|| {
        let counters = Counters::new();
        let owner = Arc::new(Mutex::new(None));
        let future = lender(&counters, &owner, 2);
        wake_racing_first_poll(future, &counters, move || {
            let lent = owner.lock().take();
            lent.map(Owner::wake).is_some()
        });
    });
}

/// Shutdown races the poll of a detached process that lent its reference, and the
/// lent reference is woken right after the shutdown: with the registry's reference
/// gone to shutdown, the process must still outlive its poll (shutdown leaves that
/// reference to the poller), and be freed exactly once.
#[test]
fn loom_shutdown_racing_lent_poll() {
    loom::model(|| {
        let shared = new_runtime();
        let counters = Counters::new();
        let owner = Arc::new(Mutex::new(None));
        drop(Shared::spawn(
            &shared,
            lender(&counters, &owner, 3),
            std::panic::Location::caller(),
        ));

        let shutdown_thread = {
            let shared = shared.clone();
            let owner = owner.clone();
            thread::spawn(move || {
                shutdown(&shared);
                let lent = owner.lock().take();
                if let Some(lent) = lent {
                    lent.wake();
                }
            })
        };
        run_queued(&shared);
        shutdown_thread.join().unwrap();
        run_queued(&shared);
        shared.drain_injector();
        drop(owner.lock().take());

        assert!(counters.polls() <= 1);
        assert_eq!(counters.drops(), 1, "the future is dropped exactly once");
    });
}
