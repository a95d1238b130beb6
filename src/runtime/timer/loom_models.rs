//! loom models of how workers keep a timer's deadline covered (`timers.rs`, module
//! docs), driving the real `Timers` with two shards: a timer armed while a worker parks,
//! while the worker that armed the earliest deadline wakes up and parks again, or while
//! a timer is armed in the other shard. In each, a worker is left to wake up for every
//! deadline: either a parking worker armed it (or an earlier one, after which it looks
//! again), or the arm told its caller to wake one.

use std::pin::Pin;
use std::ptr::NonNull;

use loom::sync::Arc;
use loom::thread;

use crate::runtime::timer::entry::{Action, Entry};
use crate::runtime::timer::timers::{Armed, ParkTimeout, Timers};

/// Ticks far enough ahead (a tick is a millisecond) that nothing expires while a model
/// runs, however slowly loom explores it.
const FAR: u64 = 1_000_000;

/// Shards in every model: two workers' wheels.
const SHARDS: usize = 2;

/// Arms `entry` at `tick` in shard `shard`: whether the caller must wake a worker.
fn arm(timers: &Timers, shard: usize, entry: &Pin<Box<Entry>>, tick: u64) -> bool {
    // SAFETY: the entry is pinned, unlinked, and disarmed by `disarm` before its drop.
    let (armed, rest) = unsafe { timers.arm(shard, NonNull::from(&**entry), tick, Action::None) };
    drop(rest);
    match armed {
        Armed::Waiting { wake_a_worker } => wake_a_worker,
        other => panic!("a far deadline was armed: {other:?}"),
    }
}

fn disarm(timers: &Timers, entry: &Pin<Box<Entry>>) {
    // SAFETY: the entry is pinned and alive; it was armed in this wheel only.
    drop(unsafe { timers.disarm(NonNull::from(&**entry)) });
}

/// The deadline `tick` is covered: the arm asked for a worker, or a parked worker
/// sleeps until `tick` or earlier.
fn assert_covered(tick: u64, woke_a_worker: bool, parked: ParkTimeout) {
    let parked_until = match parked {
        ParkTimeout::Until(until) => Some(until),
        ParkTimeout::Forever => None,
        ParkTimeout::Fired => panic!("nothing was due"),
    };
    assert!(
        woke_a_worker || parked_until.is_some_and(|until| until <= tick),
        "the deadline {tick} is left with no worker to fire it (parked until \
         {parked_until:?}, no wake asked)"
    );
}

/// Arms `first` at `tick` in an idle runtime's wheels, and parks a worker until it:
/// the deadline the worker armed.
fn park_until(timers: &Timers, first: &Pin<Box<Entry>>, tick: u64) -> u64 {
    let woke = arm(timers, 0, first, tick);
    assert!(woke, "the first timer of an idle runtime asks for a worker");
    let ParkTimeout::Until(armed) = timers.before_park() else {
        panic!("the worker parks until the first deadline");
    };
    armed
}

/// The worker parked until `armed` wakes up and parks again, on a thread of its own:
/// how long it then sleeps.
fn wake_and_park_again(timers: &Arc<Timers>, armed: u64) -> thread::JoinHandle<ParkTimeout> {
    let timers = timers.clone();
    thread::spawn(move || {
        timers.after_park(armed);
        timers.before_park()
    })
}

/// A worker parks (looks at the wheels, arms their next deadline) while a process arms
/// a timer in an empty wheel, its own or the other worker's.
#[test]
fn loom_timer_armed_while_a_worker_parks() {
    for shard in 0..SHARDS {
        loom::model(move || {
            let timers = Arc::new(Timers::new(SHARDS));
            let worker = {
                let timers = timers.clone();
                thread::spawn(move || timers.before_park())
            };
            let entry = Box::pin(Entry::new());
            let woke_a_worker = arm(&timers, shard, &entry, FAR);
            let parked = worker.join().unwrap();
            assert_covered(FAR, woke_a_worker, parked);
            disarm(&timers, &entry);
        });
    }
}

/// Two processes arm timers in the two wheels at once while a worker parks: both
/// deadlines are covered, whichever is earlier.
#[test]
fn loom_timers_armed_in_two_wheels_while_a_worker_parks() {
    for (first, second) in [(FAR, 2 * FAR), (2 * FAR, FAR)] {
        loom::model(move || {
            let timers = Arc::new(Timers::new(SHARDS));
            let worker = {
                let timers = timers.clone();
                thread::spawn(move || timers.before_park())
            };
            let other = {
                let timers = timers.clone();
                thread::spawn(move || {
                    let entry = Box::pin(Entry::new());
                    let woke = arm(&timers, 1, &entry, second);
                    (entry, woke)
                })
            };
            let entry = Box::pin(Entry::new());
            let woke_first = arm(&timers, 0, &entry, first);
            let parked = worker.join().unwrap();
            let (other_entry, woke_second) = other.join().unwrap();
            assert_covered(first, woke_first, parked);
            assert_covered(second, woke_second, parked);
            disarm(&timers, &entry);
            disarm(&timers, &other_entry);
        });
    }
}

/// The worker that armed the earliest deadline wakes up (`after_park`) and parks again,
/// while a process arms a timer before that deadline, or after it, in the same wheel
/// or the other.
#[test]
fn loom_timer_armed_while_the_armed_worker_wakes_and_parks() {
    for (tick, shard) in [(FAR, 0), (3 * FAR, 0), (FAR, 1), (3 * FAR, 1)] {
        loom::model(move || {
            let timers = Arc::new(Timers::new(SHARDS));
            let first = Box::pin(Entry::new());
            // The wheels' earliest deadline, which the worker armed as it parked.
            let armed = park_until(&timers, &first, 2 * FAR);
            let worker = wake_and_park_again(&timers, armed);
            let entry = Box::pin(Entry::new());
            let woke_a_worker = arm(&timers, shard, &entry, tick);
            let parked = worker.join().unwrap();
            assert_covered(tick, woke_a_worker, parked);
            disarm(&timers, &entry);
            disarm(&timers, &first);
        });
    }
}

/// The worker that armed the earliest deadline wakes up because that timer fired
/// (the wheels hold nothing else), and parks again, while a process arms a later
/// timer, which read the armed deadline and so asks for no worker unless it came after
/// the wake: the parking worker must see it.
#[test]
fn loom_timer_armed_while_the_armed_worker_wakes_from_its_timer() {
    for shard in 0..SHARDS {
        loom::model(move || {
            let timers = Arc::new(Timers::new(SHARDS));
            let first = Box::pin(Entry::new());
            let armed = park_until(&timers, &first, FAR);
            // It fired: out of the wheel before the worker wakes.
            disarm(&timers, &first);
            let worker = wake_and_park_again(&timers, armed);
            let entry = Box::pin(Entry::new());
            let woke_a_worker = arm(&timers, shard, &entry, 2 * FAR);
            let parked = worker.join().unwrap();
            assert_covered(2 * FAR, woke_a_worker, parked);
            disarm(&timers, &entry);
        });
    }
}
