//! The worker's put-off transitions and its drain at exit, driven by hand: a future they
//! drop is dropped as in a poll, with the thread marked as polling, so a blocking call in
//! its `Drop` panics with advice (`context::assert_may_block`) rather than blocking the
//! worker.

use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use super::Local;
use crate::runtime::{Shared, context};
use crate::wait::JoinHandle;
use crate::wait::claim::Owner;

/// Never completes; leaves an internal reference to its process where the test can take
/// it, as a channel wait does, and records, when dropped, whether csp marked the thread
/// as polling.
struct Victim {
    owner: Slot,
    dropped_polling: Arc<Mutex<Option<bool>>>,
    /// Woken by the drop.
    wakes_on_drop: Vec<Slot>,
}

impl Future for Victim {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        *self.owner.lock().unwrap() = Owner::internal(cx.waker());
        Poll::Pending
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        *self.dropped_polling.lock().unwrap() = Some(context::is_polling());
        for owner in &self.wakes_on_drop {
            if let Some(owner) = owner.lock().unwrap().take() {
                owner.wake();
            }
        }
    }
}

/// Where a process leaves an internal reference to itself for the test to take.
type Slot = Arc<Mutex<Option<Owner>>>;

/// A [`Victim`] that leaves its reference in `owner` and wakes nobody when dropped.
fn sleeper(owner: &Slot) -> Victim {
    Victim {
        owner: owner.clone(),
        dropped_polling: Arc::new(Mutex::new(None)),
        wakes_on_drop: Vec::new(),
    }
}

/// Shuts a runtime whose workers a test drives by hand down as `Runtime::drop` does:
/// its processes cancelled, the worker on this thread (`guard`'s) exiting its loop, each
/// of `locals` draining what it holds. Then drops the references left in `owners`.
fn shut_down<'a>(
    shared: &Shared,
    guard: context::WorkerGuard,
    locals: &[&Local],
    owners: impl IntoIterator<Item = &'a Slot>,
) {
    assert!(shared.begin_shutdown());
    shared.registry().close_and_shutdown_all();
    drop(guard);
    for local in locals {
        local.drain();
    }
    shared.drain_injector();
    for owner in owners {
        drop(owner.lock().unwrap().take());
    }
}

/// Completes at once, after waking every owner it holds: the first into the handoff
/// slot, each later one pushing the one before out of it, toward the queue.
struct WakeAll(Vec<Slot>);

impl Future for WakeAll {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        for owner in &self.0 {
            owner
                .lock()
                .unwrap()
                .take()
                .expect("its reference left")
                .wake();
        }
        Poll::Ready(())
    }
}

/// A one-worker runtime with its worker on this thread, a spawned [`Victim`] polled
/// once and resting on the worker, and what the victim records.
struct Rig {
    shared: Arc<Shared>,
    local: Local,
    guard: Option<context::WorkerGuard>,
    victim: JoinHandle<()>,
    owner: Slot,
    dropped_polling: Arc<Mutex<Option<bool>>>,
    /// Processes asleep, each with the internal reference it left, and its handle.
    sleepers: Vec<(Slot, JoinHandle<()>)>,
}

impl Rig {
    fn new() -> Box<Rig> {
        Rig::with_sleepers(0)
    }

    /// As [`new`](Self::new), with `sleepers` processes asleep before the victim is
    /// spawned, which the victim's drop wakes (through the internal references they
    /// left in [`Rig::sleepers`]).
    fn with_sleepers(sleepers: usize) -> Box<Rig> {
        let (shared, mut queues) = Shared::new(1, "test".to_owned(), None, Default::default());
        let local = Local::new(shared.clone(), 0, queues.pop().unwrap());
        let owner = Arc::new(Mutex::new(None));
        let dropped_polling = Arc::new(Mutex::new(None));
        let sleepers: Vec<_> = (0..sleepers)
            .map(|_| {
                let owner = Arc::new(Mutex::new(None));
                let handle = Shared::spawn(&shared, sleeper(&owner), Location::caller());
                (owner, handle)
            })
            .collect();
        let victim = Victim {
            owner: owner.clone(),
            dropped_polling: dropped_polling.clone(),
            wakes_on_drop: sleepers.iter().map(|(owner, _)| owner.clone()).collect(),
        };
        // Spawned last, so polled last: the injector hands out in order.
        let victim = Shared::spawn(&shared, victim, Location::caller());
        let mut rig = Box::new(Rig {
            shared,
            local,
            guard: None,
            victim,
            owner,
            dropped_polling,
            sleepers,
        });
        // SAFETY: `local` lives in the box, on this thread, until after the guard goes
        // (`Drop for Rig`).
        rig.guard = Some(unsafe { context::WorkerGuard::new(&rig.local) });
        // Each poll puts the process resting before it to sleep.
        for _ in 0..=rig.sleepers.len() {
            rig.run_next();
        }
        assert!(rig.is_resting(), "the victim rests after its first poll");
        rig
    }

    /// Runs the next process the worker finds at hand.
    fn run_next(&self) {
        let next = self.local.next_task().expect("a process to run");
        self.local.run_task(next);
    }

    fn is_resting(&self) -> bool {
        // SAFETY: the worker's slots, on its thread, between polls.
        unsafe {
            self.local
                .held()
                .with_slots(|slots| slots.resting.is_some())
        }
    }

    fn spawn(&self, future: impl Future<Output = ()> + Send + 'static) {
        drop(Shared::spawn(&self.shared, future, Location::caller()));
    }

    /// What the victim's drop recorded: `Some(true)` if it ran marked as polling.
    fn dropped_polling(&self) -> Option<bool> {
        *self.dropped_polling.lock().unwrap()
    }

    /// Shuts the runtime down as `Runtime::drop` does, the worker exiting its loop
    /// first: its drain at exit.
    fn shut_down(&mut self) {
        let guard = self.guard.take().expect("not shut down yet");
        let owners = self.sleepers.iter().map(|(owner, _)| owner);
        shut_down(
            &self.shared,
            guard,
            &[&self.local],
            std::iter::once(&self.owner).chain(owners),
        );
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if self.guard.is_some() {
            self.shut_down();
        }
    }
}

#[test]
fn the_next_poll_drops_a_cancelled_resting_future_marked_as_polling() {
    let rig = Rig::new();
    rig.victim.abort();
    rig.spawn(async {});
    rig.run_next();
    assert_eq!(rig.dropped_polling(), Some(true));
    assert!(!context::is_polling(), "the mark ends with the poll");
}

#[test]
fn a_cancelled_resting_future_put_to_sleep_between_polls_is_dropped_marked_as_polling() {
    let rig = Rig::new();
    rig.victim.abort();
    assert!(rig.local.put_resting_to_sleep());
    assert_eq!(rig.dropped_polling(), Some(true));
    assert!(!context::is_polling());
}

#[test]
fn the_drain_at_exit_drops_a_resting_future_marked_as_polling() {
    let mut rig = Rig::new();
    // The shutdown finds it `Running`, and leaves it to the worker.
    rig.shut_down();
    assert_eq!(rig.dropped_polling(), Some(true));
    assert!(rig.victim.is_finished());
    assert!(!context::is_polling());
}

#[test]
fn the_drain_at_exit_drops_a_future_in_the_handoff_slot_marked_as_polling() {
    let mut rig = Rig::new();
    assert!(rig.local.put_resting_to_sleep());
    // A poll on the worker wakes the victim into its handoff slot, `Running`, where the
    // shutdown finds it.
    rig.spawn(WakeAll(vec![rig.owner.clone()]));
    rig.run_next();
    // SAFETY: the worker's slots, on its thread, between polls.
    let handed = unsafe {
        rig.local
            .held()
            .with_slots(|slots| matches!(slots.handoff, Some(super::Next::Handed(_))))
    };
    assert!(handed, "the victim is in the handoff slot");
    assert_eq!(rig.dropped_polling(), None);
    rig.shut_down();
    assert_eq!(rig.dropped_polling(), Some(true));
    assert!(rig.victim.is_finished());
}

#[test]
fn what_a_future_dropped_between_polls_wakes_is_queued_before_the_next_poll() {
    // Two sleepers woken by the drop: the first into the handoff slot, pushed out of it
    // by the second into the entries held back from the queue, which must not stay
    // there between polls (a worker that then exits would lose them).
    let rig = Rig::with_sleepers(2);
    rig.victim.abort();
    assert!(rig.local.put_resting_to_sleep());
    assert_eq!(rig.dropped_polling(), Some(true));
    // SAFETY: the worker's slots, on its thread, between polls.
    let published = unsafe {
        rig.local
            .held()
            .with_slots(|slots| slots.displaced.is_empty())
    };
    assert!(published, "published");
    assert!(!rig.local.queue.is_empty(), "the first sleeper, queued");
    // SAFETY: the worker's slots, on its thread, between polls.
    let handed = unsafe {
        rig.local
            .held()
            .with_slots(|slots| matches!(slots.handoff, Some(super::Next::Handed(_))))
    };
    assert!(handed, "the victim is in the handoff slot");
    // Both run, and with them the worker has nothing left.
    rig.run_next();
    rig.run_next();
    assert!(rig.local.next_task().is_none());
}

/// How many looks (`steal` calls, one random victim each) a search that finds nothing
/// makes before it gives up.
#[cfg(feature = "io")]
fn looks_before_giving_up(local: &Local) -> u32 {
    let before = local.rng.get();
    assert!(local.search().is_none(), "no work anywhere");
    let after = local.rng.get();
    local.rng.set(before);
    let mut looks = 0;
    while local.rng.get() != after {
        local.next_random();
        looks += 1;
        assert!(
            looks <= crate::tuning::SEARCH_ROUNDS,
            "more looks than rounds"
        );
    }
    looks
}

#[cfg(feature = "io")]
#[test]
fn a_search_that_finds_nothing_parks_after_its_spins_once_a_socket_is_registered() {
    use crate::tuning::{SEARCH_ROUNDS, TIGHT_SPIN_ROUNDS};

    let (shared, mut queues) = Shared::new(2, "search".to_owned(), None, Default::default());
    let local = Local::new(shared.clone(), 0, queues.remove(0));
    // SAFETY: `local` outlives the guard, on this thread.
    let guard = unsafe { context::WorkerGuard::new(&local) };
    // Channel work shows up in queues: the searcher spins, then yields, all its rounds.
    assert_eq!(looks_before_giving_up(&local), SEARCH_ROUNDS);
    // A server's shows up in the driver, where a parked worker waits for it.
    let mut listener = mio::net::TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let registration = crate::runtime::driver::Registration::new(&mut listener).unwrap();
    assert_eq!(looks_before_giving_up(&local), TIGHT_SPIN_ROUNDS);
    registration.deregister(&mut listener);
    assert_eq!(
        looks_before_giving_up(&local),
        SEARCH_ROUNDS,
        "none registered now"
    );
    local.shut_down_by_hand(guard);
}

#[test]
fn only_a_batch_waits_out_the_steal_grace() {
    // Ages are read against a clock reading taken before the step that sets them, so
    // "not ripe" holds however slowly the test runs; "ripe" holds for any reading.
    let (shared, mut queues) = Shared::new(2, "ages".to_owned(), None, Default::default());
    let local = Local::new(shared.clone(), 0, queues.remove(0));
    let thief = Local::new(shared.clone(), 1, queues.remove(0));
    // SAFETY: `local` outlives the guard, on this thread.
    let guard = unsafe { context::WorkerGuard::new(&local) };
    let ages = shared.queue_ages();
    let owners: Vec<Slot> = (0..5).map(|_| Arc::new(Mutex::new(None))).collect();

    // Spawned from the worker's thread between polls, as a socket's or a timer's waker
    // wakes: ripe at once, even where a race with a thief left an empty queue's clock
    // running.
    ages.start_clock(0);
    let before = ages.now();
    for owner in &owners {
        drop(Shared::spawn(&shared, sleeper(owner), Location::caller()));
    }
    assert!(!local.queue.is_empty(), "spawned onto this worker's queue");
    assert!(ages.is_ripe(0, before), "spawned between polls");
    for _ in &owners {
        let next = local.next_task().expect("a sleeper");
        local.run_task(next);
    }
    assert!(local.put_resting_to_sleep());
    assert!(local.queue.is_empty(), "all asleep");

    // A poll's batch starts the clock, also behind work woken between polls: the waker
    // spawned, then a sleeper woken, both ripe.
    drop(Shared::spawn(
        &shared,
        WakeAll(owners[1..].to_vec()),
        Location::caller(),
    ));
    let before = ages.now();
    owners[0].lock().unwrap().take().unwrap().wake();
    assert!(ages.is_ripe(0, before), "woken between polls");
    let next = local.next_task().expect("the waker");
    let before = ages.now();
    // Its wakes, but the last, are pushed out of the handoff slot and reach the queue
    // together when its poll ends.
    local.run_task(next);
    assert!(!ages.is_ripe(0, before), "a poll's batch");

    // Once the batch has waited out the grace, a thief takes half of the queue (the
    // sleeper woken first and three of the batch), and what it keeps of that is ripe on
    // its own queue, even where a race left the thief's empty queue's clock running.
    std::thread::sleep(crate::tuning::STEAL_GRACE * 2);
    let before = ages.now();
    ages.start_clock(1);
    let super::Found::Process(stolen) = thief.steal() else {
        panic!("the batch is ripe");
    };
    assert!(!thief.queue.is_empty(), "half of four, one run at once");
    assert!(ages.is_ripe(1, before), "stolen");
    thief.queue.push(stolen);

    shut_down(&shared, guard, &[&local, &thief], &owners);
}
