//! loom models of the run queues and of parking, driven through the real worker code:
//! processes pushed to the injector are taken by one worker's `next_task` (local queue,
//! handoff slot and injector batches) and by another's `steal` (injector and
//! steal-half), and every one is run exactly once; a worker going to sleep never misses
//! work that it alone can still run; a process handed to
//! the slot `Running` by a wake races an abort or a shutdown and still ends exactly
//! once; so does a resting process (its poll's transition to `Sleeping` put off) that
//! the worker's next poll wakes, raced by an abort, a shutdown or a wake from another
//! thread; the I/O driver passes between parking workers and a socket's event still
//! runs the process waiting on it.

use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use loom::future::block_on;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use super::{Found, Local};
use crate::loom::sync::Mutex;
use crate::runtime::driver::ModelSource;
use crate::runtime::driver::readiness::{Direction, READABLE};
use crate::runtime::driver::scheduled_io::ScheduledIo;
use crate::runtime::process_loom_models::{
    Counters, JoinWatch, Output, Overlaps, Race, finisher, lender,
};
use crate::runtime::{Shared, context};
use crate::task::JoinError;
use crate::wait::JoinHandle;
use crate::wait::claim::Owner;

/// Completes on its first poll, counting polls in its own slot of `polls`.
struct Once {
    polls: Arc<Vec<AtomicUsize>>,
    index: usize,
}

impl Future for Once {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        self.polls[self.index].fetch_add(1, Ordering::SeqCst);
        Poll::Ready(())
    }
}

/// Spawns `n` processes of `Once` from outside the pool (into the injector): their poll
/// counts, and their handles.
fn spawn_from_outside(
    shared: &Arc<Shared>,
    n: usize,
) -> (Arc<Vec<AtomicUsize>>, Vec<JoinHandle<()>>) {
    let polls: Arc<Vec<AtomicUsize>> = Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect());
    let joins = (0..n)
        .map(|index| {
            let future = Once {
                polls: polls.clone(),
                index,
            };
            Shared::spawn(shared, future, Location::caller())
        })
        .collect();
    (polls, joins)
}

#[test]
fn loom_run_queue_conservation() {
    const PROCESSES: usize = 3;
    loom::model(|| {
        let (shared, mut queues) = Shared::new(2, "loom".to_owned(), None, Default::default());
        let (polls, joins) = spawn_from_outside(&shared, PROCESSES);

        let thief = {
            let local = Local::new(shared.clone(), 1, queues.pop().unwrap());
            thread::spawn(move || {
                if let Found::Process(entry) = local.steal() {
                    local.run_task(entry);
                }
                local.run_at_hand();
                local
            })
        };
        let owner = Local::new(shared.clone(), 0, queues.pop().unwrap());
        owner.run_at_hand();
        let thief = thief.join().unwrap();
        owner.run_at_hand();
        thief.run_at_hand();

        for p in polls.iter() {
            assert_eq!(
                p.load(Ordering::SeqCst),
                1,
                "every process runs exactly once"
            );
        }
        for join in joins {
            assert!(join.is_finished());
        }
        assert!(!shared.has_work());
        assert_eq!(shared.registry().processes(), 0);
        drop(owner);
        assert!(shared.begin_shutdown());
    });
}

/// A worker going to sleep races a spawn from outside the pool: either its last look
/// sees the new process, or the spawn's notification wakes it. A lost wake-up leaves the
/// worker parked forever, which loom reports as a deadlock.
#[test]
fn loom_park_racing_remote_spawn() {
    loom::model(|| {
        let (shared, mut queues) = Shared::new(1, "loom".to_owned(), None, Default::default());
        let polls: Arc<Vec<AtomicUsize>> = Arc::new(vec![AtomicUsize::new(0)]);
        let worker = {
            let local = Local::new(shared.clone(), 0, queues.pop().unwrap());
            thread::spawn(move || {
                local.park();
                local.run_at_hand();
                local
            })
        };
        let join = Shared::spawn(
            &shared,
            Once {
                polls: polls.clone(),
                index: 0,
            },
            Location::caller(),
        );
        let worker = worker.join().unwrap();
        worker.run_at_hand();
        assert_eq!(polls[0].load(Ordering::SeqCst), 1);
        assert!(join.is_finished());
        assert!(shared.begin_shutdown());
    });
}

/// Work a busy worker puts in its own queue must reach a worker gone to sleep: either its
/// last look sees the work, or the work's notification wakes it. The owner here takes a
/// batch from the injector (which puts the rest in its own queue and notifies as fresh
/// work does), runs one process, and never comes back, like a worker stuck in a long
/// poll: only the other worker can run the rest. (Under loom the queues' ages are off,
/// so no work is fresh and the sleeper never watches: it sleeps until woken.) A lost
/// wake-up leaves it asleep for good with a process left, which loom reports as a
/// deadlock. (Once every process has run, the sleeper may rightly sleep for good: the
/// shutdown then wakes it.)
#[test]
fn loom_sleeper_never_misses_a_busy_workers_work() {
    const PROCESSES: usize = 2;
    loom::model(|| {
        let (shared, mut queues) = Shared::new(2, "loom".to_owned(), None, Default::default());
        let (polls, joins) = spawn_from_outside(&shared, PROCESSES);
        let all_ran = move || polls.iter().all(|p| p.load(Ordering::SeqCst) == 1);

        let sleeper = {
            let local = Local::new(shared.clone(), 1, queues.pop().unwrap());
            let all_ran = all_ran.clone();
            thread::spawn(move || {
                while !all_ran() && !local.shared.is_shutdown() {
                    local.park();
                    while let Found::Process(entry) = local.steal() {
                        local.run_task(entry);
                    }
                    local.run_at_hand();
                }
                local
            })
        };
        let owner = Local::new(shared.clone(), 0, queues.pop().unwrap());
        if let Some(entry) = owner.next_task() {
            owner.run_task(entry);
        }
        // The owner is done for good. With every process run, nothing is left for the
        // sleeper to miss: let it out. Otherwise it must run the rest by itself.
        let done = all_ran();
        if done {
            assert!(shared.begin_shutdown());
        }
        let sleeper = sleeper.join().unwrap();

        assert!(all_ran(), "every process runs once");
        for join in joins {
            assert!(join.is_finished());
        }
        drop((owner, sleeper));
        assert_eq!(shared.begin_shutdown(), !done);
    });
}

/// A process that wakes whoever left a reference in each of `owners`, in order, then
/// completes.
struct Waking {
    owners: Vec<Arc<Mutex<Option<Owner>>>>,
}

impl Future for Waking {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        for owner in &self.owners {
            let owner = owner.lock().take();
            if let Some(owner) = owner {
                owner.wake();
            }
        }
        Poll::Ready(())
    }
}

/// What races the hand-off in [`hand_off_racing`] and [`resting_racing`].
#[derive(Clone, Copy)]
enum Racer {
    Abort,
    Shutdown,
    /// Another thread takes the sleeper's reference, if the waking process has not,
    /// and wakes it.
    Wake,
}

/// Starts `racer` on another thread against `sleeper`, whose process left its internal
/// reference in `owner`.
fn race(
    racer: Racer,
    shared: &Arc<Shared>,
    sleeper: &Arc<JoinHandle<usize>>,
    owner: &Arc<Mutex<Option<Owner>>>,
) -> thread::JoinHandle<()> {
    let (shared, sleeper, owner) = (shared.clone(), sleeper.clone(), owner.clone());
    thread::spawn(move || match racer {
        Racer::Abort => sleeper.abort(),
        Racer::Shutdown => {
            assert!(shared.begin_shutdown());
            shared.registry().close_and_shutdown_all();
        }
        Racer::Wake => {
            let owner = owner.lock().take();
            if let Some(owner) = owner {
                owner.wake();
            }
        }
    })
}

/// Ends a worker driven by hand, as its thread does at exit, and drops what is left of
/// the sleeper's reference in `owner`.
fn retire(local: &Local, guard: context::WorkerGuard, owner: &Mutex<Option<Owner>>) {
    retire_worker(local, guard);
    drop(owner.lock().take());
}

/// Ends a worker driven by hand, as its thread does at exit: what its slots and queue
/// and the injector still hold is dropped.
pub(crate) fn retire_worker(local: &Local, guard: context::WorkerGuard) {
    drop(guard);
    local.drain();
    local.shared.drain_injector();
}

/// Runs the worker on this thread against `racing` (started by [`race`]) until both
/// are done, then retires it: its count of processes run from the handoff slot so far.
fn run_race(
    local: &Local,
    guard: context::WorkerGuard,
    racing: thread::JoinHandle<()>,
    owner: &Mutex<Option<Owner>>,
) -> u64 {
    local.run_at_hand();
    racing.join().unwrap();
    local.run_at_hand();
    let handoffs = local.counters().handoffs.load(Ordering::Relaxed);
    retire(local, guard, owner);
    handoffs
}

/// The sleeper's result, once the racer is done with its handle, after checking that
/// its future was dropped exactly once; and how often it was polled.
fn sleeper_result(
    counters: &Counters,
    sleeper: Arc<JoinHandle<usize>>,
) -> (Result<usize, JoinError>, usize) {
    assert_eq!(counters.drops(), 1, "dropped exactly once");
    let polls = counters.polls();
    let sleeper = Arc::try_unwrap(sleeper).expect("the racer is done with the handle");
    (block_on(sleeper), polls)
}

/// A process polled on a worker wakes two sleeping ones, each going straight to Running
/// in that worker's handoff slot (`task/state.rs`), the first pushed out of it by the
/// second and so back to Queued, while another thread aborts the first sleeper or shuts
/// the runtime down. Whichever way it goes, each sleeper's future is dropped exactly
/// once, it is polled at most once more, the handle's result says which, and every
/// reference is released exactly once (loom reports the runtime reference a leaked
/// process holds).
fn hand_off_racing(racer: Racer) {
    // Executions in which a sleeper went through the slot (std's atomic: counted across
    // executions, outside the model).
    static HANDED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    HANDED.store(0, std::sync::atomic::Ordering::Relaxed);
    loom::model(move || {
        let (shared, mut queues) = Shared::new(1, "loom".to_owned(), None, Default::default());
        let local = Local::new(shared.clone(), 0, queues.pop().unwrap());
        // SAFETY: `local` outlives the guard, on this thread.
        let guard = unsafe { context::WorkerGuard::new(&local) };
        // Sleepers: each leaves an internal reference to itself in its `owner`, as a
        // channel wait does, and completes on its second poll.
        let sleepers: Vec<_> = (0..2)
            .map(|_| {
                let counters = Counters::new();
                let owner = Arc::new(Mutex::new(None));
                let join = Shared::spawn(&shared, lender(&counters, &owner, 2), Location::caller());
                (counters, owner, join)
            })
            .collect();
        local.run_at_hand();
        let owners = sleepers.iter().map(|s| s.1.clone()).collect();
        drop(Shared::spawn(
            &shared,
            Waking { owners },
            Location::caller(),
        ));
        let handoffs_before = local.counters().handoffs.load(Ordering::Relaxed);
        let mut sleepers = sleepers.into_iter();
        let (counters, owner, sleeper) = sleepers.next().unwrap();
        let sleeper = Arc::new(sleeper);

        let racing = race(racer, &shared, &sleeper, &owner);
        if run_race(&local, guard, racing, &owner) > handoffs_before {
            HANDED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }

        let (other_counters, other_owner, other) = sleepers.next().unwrap();
        drop(other_owner.lock().take());
        assert_eq!(other_counters.drops(), 1);
        match block_on(other) {
            Ok(n) => assert_eq!((n, other_counters.polls()), (2, 2)),
            Err(err) => assert!(err.is_cancelled()),
        }
        match sleeper_result(&counters, sleeper) {
            (Ok(n), polls) => assert_eq!((n, polls), (2, 2)),
            (Err(err), polls) => {
                assert!(err.is_cancelled());
                assert_eq!(polls, 1, "no poll after the cancellation");
            }
        }
        drop(local);
        let _ = shared.begin_shutdown();
    });
    assert!(
        HANDED.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "the model reached the handoff slot"
    );
}

#[test]
fn loom_hand_off_racing_abort() {
    hand_off_racing(Racer::Abort);
}

#[test]
fn loom_hand_off_racing_shutdown() {
    hand_off_racing(Racer::Shutdown);
}

/// A process polled on a worker rests there (`Running`, its transition to `Sleeping`
/// put off, `task/raw.rs`, `Resting`), leaving an internal reference to itself as a
/// channel wait does; the worker's next poll, of another process, wakes it through
/// that reference, which hands it to the handoff slot with no transition, while another
/// thread aborts it, shuts the runtime down, or takes the reference first and wakes it
/// from there (which marks it `Yielding`, for the put-off transition to act on).
/// Whichever way it goes, its future is dropped exactly once, it is never polled after
/// a cancellation or lost without its second poll, the handle's result says which, and
/// every reference is released exactly once (loom reports the runtime reference a
/// leaked process holds).
fn resting_racing(racer: Racer) {
    // Executions in which the waking poll found the sleeper resting (std's atomic:
    // counted across executions, outside the model).
    static WOKEN_RESTING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    WOKEN_RESTING.store(0, std::sync::atomic::Ordering::Relaxed);
    loom::model(move || {
        let (shared, mut queues) = Shared::new(1, "loom".to_owned(), None, Default::default());
        let local = Local::new(shared.clone(), 0, queues.pop().unwrap());
        // SAFETY: `local` outlives the guard, on this thread.
        let guard = unsafe { context::WorkerGuard::new(&local) };
        let counters = Counters::new();
        let owner = Arc::new(Mutex::new(None));
        let sleeper = Arc::new(Shared::spawn(
            &shared,
            lender(&counters, &owner, 2),
            Location::caller(),
        ));
        drop(Shared::spawn(
            &shared,
            Waking {
                owners: vec![owner.clone()],
            },
            Location::caller(),
        ));

        let racing = race(racer, &shared, &sleeper, &owner);
        // The sleeper's first poll (it rests), then the waking process's poll, then
        // whatever that left in the slot, with no look elsewhere in between:
        // `run_at_hand` puts a resting process to sleep only once the worker finds
        // nothing. The slot is reached only through the resting sleeper's wake by the
        // waking poll: the racer's wake, or a cancellation before the first poll,
        // leaves the waking process nothing to wake.
        if run_race(&local, guard, racing, &owner) > 0 {
            WOKEN_RESTING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }

        match sleeper_result(&counters, sleeper) {
            (Ok(n), polls) => assert_eq!((n, polls), (2, 2)),
            (Err(err), polls) => {
                assert!(err.is_cancelled());
                assert!(!matches!(racer, Racer::Wake), "a wake cancels nothing");
                assert!(polls <= 1, "no poll after the cancellation");
            }
        }
        drop(local);
        let _ = shared.begin_shutdown();
    });
    assert!(
        WOKEN_RESTING.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "the model reached a resting process woken into the handoff slot"
    );
}

#[test]
fn loom_resting_racing_abort() {
    resting_racing(Racer::Abort);
}

#[test]
fn loom_resting_racing_shutdown() {
    resting_racing(Racer::Shutdown);
}

#[test]
fn loom_resting_racing_remote_wake() {
    resting_racing(Racer::Wake);
}

/// Starts, on another thread, the registry walker of a shutdown (`race.walk`); with a
/// `JoinHandle` (and the waker it stored in the slot), that thread then resolves the
/// handle and drops it, with its waker, as soon as the walk is done.
fn walker<T: Send + 'static>(
    shared: &Arc<Shared>,
    race: &Race,
    join: Option<(JoinHandle<T>, Waker)>,
) -> thread::JoinHandle<Option<Result<T, JoinError>>> {
    let (shared, race) = (shared.clone(), race.clone());
    thread::spawn(move || {
        race.walk(&shared);
        join.map(JoinWatch::resolve)
    })
}

/// A process aborted while it rests on a worker (`Running`, its poll's reference lent
/// to a wait that then let it go) is completed by the worker's put-off transition
/// (`Unslept`, which drops the future) against the registry walker of a shutdown on
/// another thread: the process outlives its completion, its future is dropped exactly
/// once, and so is the payload of the panic of that drop (which the process's result
/// keeps), and a `JoinHandle`'s waker stored in the slot is never read from a freed
/// process. Detached, and with a `JoinHandle` the walker's thread resolves and drops.
#[test]
fn aborted_resting_completion_races_shutdown() {
    static DETACHED: Overlaps = Overlaps::new();
    static JOINED: Overlaps = Overlaps::new();
    DETACHED.model("detached", || aborted_resting_racing_walker(false));
    JOINED.model("joined", || aborted_resting_racing_walker(true));
}

/// One execution of [`aborted_resting_completion_races_shutdown`]: true if the
/// completion overlapped the walk.
fn aborted_resting_racing_walker(joined: bool) -> bool {
    let (shared, mut queues) = Shared::new(1, "loom".to_owned(), None, Default::default());
    let local = Local::new(shared.clone(), 0, queues.pop().unwrap());
    // SAFETY: `local` outlives the guard, on this thread.
    let guard = unsafe { context::WorkerGuard::new(&local) };
    let counters = Counters::new();
    let race = Race::new();
    let owner = Arc::new(Mutex::new(None));
    let finisher = finisher(&counters, &owner, &race, 2, true);
    let join = Shared::spawn(&shared, finisher, Location::caller());
    // Its first poll lends its reference to `owner` and rests.
    let entry = local.next_task().expect("the process is queued");
    local.run_task(entry);
    // SAFETY: the worker's slots, on its thread, between polls.
    let rests = unsafe { local.held().with_slots(|slots| slots.resting.is_some()) };
    assert!(rests, "the process rests on the worker");
    join.abort();
    // The wait lets the lent reference go: the process rests with none of its poller's.
    drop(owner.lock().take());
    let watch = JoinWatch::new();
    let walker = walker(&shared, &race, watch.keep_join(joined, join));
    // A free switch to the walker before the put-off transition completes the process.
    thread::yield_now();
    assert!(local.put_resting_to_sleep());
    let result = walker.join().unwrap();
    retire(&local, guard, &owner);

    assert!(
        !watch.woken_dead(),
        "the completer read the join waker of a process freed under it"
    );
    if let Some(result) = result {
        assert!(
            result.unwrap_err().is_panic(),
            "the drop's panic is the result"
        );
    }
    assert_eq!((counters.polls(), counters.drops()), (1, 1));
    assert_eq!(
        race.outputs(),
        1,
        "the drop's payload is dropped exactly once"
    );
    drop(local);
    race.overlapped()
}

/// A process woken into a worker's handoff slot (`Running` already) lends its poll's
/// reference from there and completes, against the registry walker of a shutdown on
/// another thread: the process outlives its completion, its future and its output are
/// each dropped exactly once, and a `JoinHandle`'s waker stored in the slot is never
/// read from a freed process. Detached, and with a `JoinHandle` the walker's thread
/// resolves and drops.
#[test]
fn handed_completion_races_shutdown() {
    static DETACHED: Overlaps = Overlaps::new();
    static JOINED: Overlaps = Overlaps::new();
    DETACHED.model("detached", || handed_completion_racing_walker(false));
    JOINED.model("joined", || handed_completion_racing_walker(true));
}

/// One execution of [`handed_completion_races_shutdown`]: true if the completion
/// overlapped the walk.
fn handed_completion_racing_walker(joined: bool) -> bool {
    let (shared, mut queues) = Shared::new(1, "loom".to_owned(), None, Default::default());
    let local = Local::new(shared.clone(), 0, queues.pop().unwrap());
    // SAFETY: `local` outlives the guard, on this thread.
    let guard = unsafe { context::WorkerGuard::new(&local) };
    let counters = Counters::new();
    let race = Race::new();
    let owner = Arc::new(Mutex::new(None));
    let finisher = finisher(&counters, &owner, &race, 2, false);
    let join = Shared::spawn(&shared, finisher, Location::caller());
    // Its first poll leaves its reference in `owner`; it goes to sleep.
    local.run_at_hand();
    let watch = JoinWatch::new();
    let join = watch.keep_join(joined, join);
    drop(Shared::spawn(
        &shared,
        Waking {
            owners: vec![owner.clone()],
        },
        Location::caller(),
    ));
    let walker = walker(&shared, &race, join);
    // `Waking`'s poll hands the sleeper to the slot, and its second poll lends the
    // slot's reference and completes.
    local.run_at_hand();
    let result: Option<Result<Output, JoinError>> = walker.join().unwrap();
    retire(&local, guard, &owner);

    assert!(
        !watch.woken_dead(),
        "the completer read the join waker of a process freed under it"
    );
    let polls = counters.polls();
    if let Some(result) = &result {
        assert_eq!(result.is_ok(), polls == 2, "{result:?}");
    }
    drop(result);
    assert_eq!(counters.drops(), 1, "the future is dropped exactly once");
    assert_eq!(
        race.outputs(),
        usize::from(polls == 2),
        "an output is dropped exactly once, if the poll made one"
    );
    drop(local);
    race.overlapped()
}

/// A poll on a worker wakes a sleeping process into the worker's handoff slot (or, if
/// the first poll left it resting there, from the resting slot), while the watchdog, on
/// another thread, takes the worker's held processes over (`held.rs`): it reads the
/// poll word and, seeing a poll, takes the slots through the gate and puts what they
/// held on the injector (`sysmon::rehome`), unless the poll ends while the watchdog
/// fences, and cancels the take. Whichever way the gate goes, the sleeper is
/// polled exactly twice (never by two threads, never lost), its future is dropped once,
/// and every reference is released once (loom reports a leaked process's runtime
/// reference).
#[test]
fn loom_long_poll_takeover() {
    // Executions in which the watchdog took a process over (std's atomic: counted across
    // executions, outside the model).
    static TAKEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    TAKEN.store(0, std::sync::atomic::Ordering::Relaxed);
    let cancelled = &crate::runtime::held::CANCELLED_TAKES;
    cancelled.store(0, std::sync::atomic::Ordering::Relaxed);
    loom::model(|| {
        let (shared, mut queues) = Shared::new(2, "loom".to_owned(), None, Default::default());
        queues.truncate(1);
        let local = Local::new(shared.clone(), 0, queues.pop().unwrap());
        // SAFETY: `local` outlives the guard, on this thread.
        let guard = unsafe { context::WorkerGuard::new(&local) };
        let counters = Counters::new();
        let owner = Arc::new(Mutex::new(None));
        let sleeper = Shared::spawn(&shared, lender(&counters, &owner, 2), Location::caller());
        drop(Shared::spawn(
            &shared,
            Waking {
                owners: vec![owner.clone()],
            },
            Location::caller(),
        ));

        let watchdog = {
            let shared = shared.clone();
            thread::spawn(move || {
                let held = shared.held(0);
                // A look that finds a poll in progress takes its slots over (the real
                // watchdog wants two looks at the same poll: time, which loom lacks).
                for _ in 0..2 {
                    let word = held.observe();
                    if let Some(slots) = held.try_take(word) {
                        if !slots.is_empty() {
                            TAKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        crate::runtime::sysmon::rehome(&shared, slots);
                        return;
                    }
                    thread::yield_now();
                }
            })
        };
        // The sleeper's first poll (it rests, or sleeps), the waking poll, and whatever
        // is left in the slots, the queue and the injector.
        local.run_at_hand();
        watchdog.join().unwrap();
        local.run_at_hand();

        assert_eq!(counters.polls(), 2, "polled exactly twice");
        assert_eq!(counters.drops(), 1, "dropped exactly once");
        assert_eq!(block_on(sleeper).unwrap(), 2);
        retire(&local, guard, &owner);
        drop(local);
        let _ = shared.begin_shutdown();
    });
    assert!(
        TAKEN.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "the model reached a take-over of a held process"
    );
    assert!(
        cancelled.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "the model reached a take that the end of a poll cancelled"
    );
}

/// A process that waits until a source of the model's poll is readable, then completes,
/// counting into `done`.
struct ReadOnce {
    io: std::sync::Arc<ScheduledIo>,
    done: Arc<AtomicUsize>,
}

impl Future for ReadOnce {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.io.poll_ready(cx, Direction::Read) {
            Poll::Ready(_) => {
                self.done.fetch_add(1, Ordering::SeqCst);
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Two workers park, each in the I/O driver if the other does not hold it (else on the
/// idle event), while a socket a process waits on becomes readable (this thread is one
/// worker and the socket's peer) and a third thread spawns a process from outside. The
/// driver (a model of the operating system's poll in place of epoll,
/// `driver/selector.rs`) passes from worker to worker as they park and wake: its poll is
/// never used by two at once (loom checks the cell), and both processes run. The event
/// reaches the holder's poll, which wakes the reader onto the holder's own queue and the
/// holder out of its sleep to run it; the spawn's notification reaches a worker asleep
/// on the idle event, or the one asleep in the poll through the listener's waker. The
/// worker that sees both run shuts the runtime down, which wakes the other. A lost event
/// or notification leaves a worker asleep for good, which loom reports as a deadlock.
#[test]
fn loom_driver_handed_between_parking_workers() {
    loom::model(|| {
        let (shared, mut queues) = Shared::new(2, "loom".to_owned(), None, Default::default());
        let registered = shared
            .io_driver()
            .expect("the model's poll")
            .register(&mut ModelSource)
            .expect("registered");
        let done = Arc::new(AtomicUsize::new(0));
        let reader = Shared::spawn(
            &shared,
            ReadOnce {
                io: registered.io.clone(),
                done: done.clone(),
            },
            Location::caller(),
        );
        let mut locals: Vec<_> = (0..2)
            .map(|index| Local::new(shared.clone(), index, queues.remove(0)))
            .collect();
        // This thread is the second worker, and the socket's peer.
        let this = locals.pop().unwrap();
        // SAFETY: `this` outlives the guard, on this thread.
        let guard = unsafe { context::WorkerGuard::new(&this) };
        // The reader's first poll: it waits for the socket.
        this.run_at_hand();
        assert_eq!(done.load(Ordering::SeqCst), 0, "not readable yet");
        // Until both processes have run: park, then run what the park brought (no search:
        // the driver wakes the reader onto its holder's own queue, and the holder runs
        // it; the spawned process is in the injector, which every worker takes from).
        // The first to see both run shuts the runtime down, which wakes the other.
        let work = |local: &Local, done: &AtomicUsize| {
            while done.load(Ordering::SeqCst) < 2 && !local.shared.is_shutdown() {
                local.park();
                local.run_at_hand();
            }
            let _ = local.shared.begin_shutdown();
        };
        let other = {
            let local = locals.pop().unwrap();
            let done = done.clone();
            thread::spawn(move || {
                // SAFETY: `local` outlives the guard, on this thread.
                let guard = unsafe { context::WorkerGuard::new(&local) };
                work(&local, &done);
                drop(guard);
                local
            })
        };

        let spawner = {
            let (shared, done) = (shared.clone(), done.clone());
            thread::spawn(move || {
                Shared::spawn(
                    &shared,
                    async move {
                        done.fetch_add(1, Ordering::SeqCst);
                    },
                    Location::caller(),
                )
            })
        };

        shared
            .io()
            .expect("made above")
            .fire(registered.token, READABLE);
        work(&this, &done);
        let other = other.join().unwrap();
        let spawned = spawner.join().unwrap();
        assert_eq!(done.load(Ordering::SeqCst), 2, "both processes ran");
        assert!(reader.is_finished());
        assert!(spawned.is_finished());
        drop(guard);
        this.drain();
        other.drain();
        shared.drain_injector();
    });
}
