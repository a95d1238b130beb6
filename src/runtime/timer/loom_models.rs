//! loom models of how workers keep a timer's deadline covered (`timers.rs`, module
//! docs), driving the real `Timers`: a timer armed while a worker parks, or while the
//! worker that armed the wheel's earliest deadline wakes up and parks again. In each, a
//! worker is left to wake up for the new deadline: either a parking worker armed it (or
//! an earlier one, after which it looks again), or the arm told its caller to wake one.

use std::pin::Pin;
use std::ptr::NonNull;

use loom::sync::Arc;
use loom::thread;

use crate::runtime::timer::entry::{Action, Entry};
use crate::runtime::timer::timers::{Armed, ParkTimeout, Timers};

/// Ticks far enough ahead (a tick is a millisecond) that nothing expires while a model
/// runs, however slowly loom explores it.
const FAR: u64 = 1_000_000;

/// Arms `entry` at `tick`: whether the caller must wake a worker.
fn arm(timers: &Timers, entry: &Pin<Box<Entry>>, tick: u64) -> bool {
    // SAFETY: the entry is pinned, unlinked, and disarmed by `disarm` before its drop.
    let (armed, rest) = unsafe { timers.arm(NonNull::from(&**entry), tick, Action::None) };
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

/// A worker parks (looks at the wheel, arms its next deadline) while a process arms a
/// timer in the empty wheel.
#[test]
fn loom_timer_armed_while_a_worker_parks() {
    loom::model(|| {
        let timers = Arc::new(Timers::new());
        let worker = {
            let timers = timers.clone();
            thread::spawn(move || timers.before_park())
        };
        let entry = Box::pin(Entry::new());
        let woke_a_worker = arm(&timers, &entry, FAR);
        let parked = worker.join().unwrap();
        assert_covered(FAR, woke_a_worker, parked);
        disarm(&timers, &entry);
    });
}

/// The worker that armed the earliest deadline wakes up (`after_park`) and parks again,
/// while a process arms a timer before that deadline, or after it.
#[test]
fn loom_timer_armed_while_the_armed_worker_wakes_and_parks() {
    for tick in [FAR, 3 * FAR] {
        loom::model(move || {
            let timers = Arc::new(Timers::new());
            let first = Box::pin(Entry::new());
            // The wheel's earliest deadline, which the worker armed as it parked.
            let woke = arm(&timers, &first, 2 * FAR);
            assert!(woke, "the first timer of an idle runtime asks for a worker");
            let ParkTimeout::Until(armed) = timers.before_park() else {
                panic!("the worker parks until the first deadline");
            };
            let worker = {
                let timers = timers.clone();
                thread::spawn(move || {
                    timers.after_park(armed);
                    timers.before_park()
                })
            };
            let entry = Box::pin(Entry::new());
            let woke_a_worker = arm(&timers, &entry, tick);
            let parked = worker.join().unwrap();
            assert_covered(tick, woke_a_worker, parked);
            disarm(&timers, &entry);
            disarm(&timers, &first);
        });
    }
}
