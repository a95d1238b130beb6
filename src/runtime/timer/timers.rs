//! A runtime's timers: its wheel, the clock the wheel counts in, and the protocol by
//! which its workers drive it (DESIGN.md, "Timers").
//!
//! There is no timer thread. A worker advances the wheel when it finds it due: every
//! `GLOBAL_QUEUE_INTERVAL` scheduling ticks, when it runs out of work, and before it
//! parks. The parking worker that sees the earliest deadline *arms* it: it parks with a
//! timeout to that deadline, and records it, so later workers park without one. A
//! timer inserted earlier than the armed deadline (or with none armed) asks the caller
//! to wake a worker, which then arms the earlier deadline as it parks again.
//!
//! Expired entries are taken out under the lock in batches and fired after unlocking,
//! so no waker and no channel operation runs under the wheel's lock.

use std::ptr::NonNull;
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::loom::sync::Mutex;
use crate::loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use crate::runtime::timer::entry::{Action, Entry, FedChannel, Position};
use crate::runtime::timer::wheel::Wheel;
use crate::task::panic::catching;
use crate::tuning::TIMER_FIRE_BATCH;
use crate::wait::claim::Owner;

/// Nanoseconds per wheel tick (1 ms, DESIGN.md).
const TICK_NANOS: u128 = 1_000_000;

/// No deadline: an empty wheel, or no worker armed.
const NEVER: u64 = u64::MAX;

/// What arming a timer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum Armed {
    /// Linked. If `wake_a_worker`, it is earlier than any deadline a parked worker
    /// waits for: the caller must wake one (`Idle::notify_work`) to re-arm.
    Waiting { wake_a_worker: bool },
    /// The deadline has passed: nothing was linked.
    Expired,
    /// The runtime has shut down: nothing was linked; bind to another runtime.
    Shutdown,
}

/// What a re-poll of an armed entry found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum Rewake {
    /// Still armed, now waking the latest waker.
    Waiting,
    /// Expired.
    Fired,
    /// Unlinked without firing: its runtime shut down.
    Unlinked,
}

/// How long a parking worker may sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum ParkTimeout {
    /// There may be work (timers fired on the way, or work came): do not park.
    Fired,
    /// Until this tick, which the worker has armed (pass it back to `after_park`).
    Until(u64),
    /// Until woken: no timer needs this worker.
    Forever,
}

struct Inner {
    wheel: Wheel,
    /// The deadline a parked worker will wake up for (`NEVER`: none).
    armed: u64,
    shutdown: bool,
}

pub(crate) struct Timers {
    /// Tick 0 of the wheel's clock.
    origin: Instant,
    inner: Mutex<Inner>,
    /// The wheel's next deadline, mirrored for the lock-free check in `fire_due`.
    next: AtomicU64,
    /// Threads inside `fire_all`: expired timers may be out of the wheel and not yet
    /// fired (deadlock detection must not mistake that for nothing armed).
    firing: AtomicUsize,
}

impl Timers {
    pub(crate) fn new() -> Timers {
        Timers {
            origin: Instant::now(),
            inner: Mutex::new(Inner {
                wheel: Wheel::new(),
                armed: NEVER,
                shutdown: false,
            }),
            next: AtomicU64::new(NEVER),
            firing: AtomicUsize::new(0),
        }
    }

    /// The tick `now` falls in (rounded down).
    pub(crate) fn tick_at(&self, now: Instant) -> u64 {
        let nanos = now.saturating_duration_since(self.origin).as_nanos() / TICK_NANOS;
        u64::try_from(nanos).unwrap_or(NEVER - 1)
    }

    /// The current tick.
    pub(crate) fn now(&self) -> u64 {
        self.tick_at(Instant::now())
    }

    /// The first tick at or after `deadline` (rounded up, so a timer expiring at that
    /// tick never fires early).
    pub(crate) fn deadline_tick(&self, deadline: Instant) -> u64 {
        let nanos = deadline.saturating_duration_since(self.origin).as_nanos();
        u64::try_from(nanos.div_ceil(TICK_NANOS)).unwrap_or(NEVER)
    }

    /// The instant tick `tick` starts at.
    pub(crate) fn instant_of(&self, tick: u64) -> Option<Instant> {
        let nanos = u128::from(tick) * TICK_NANOS;
        self.origin
            .checked_add(Duration::from_nanos(u64::try_from(nanos).ok()?))
    }

    fn publish_next(&self, inner: &Inner) {
        let next = inner.wheel.next_deadline().unwrap_or(NEVER);
        // Relaxed: see `fire_due`.
        self.next.store(next, Ordering::Relaxed);
    }

    /// Arms `entry` to run `action` at tick `deadline`, replacing its previous action
    /// (returned, to drop after the call; so is `action` itself if nothing was linked).
    ///
    /// # Safety
    /// `entry` is alive, pinned and unlinked (or linked in this wheel), and is disarmed
    /// or fired before it is freed.
    pub(crate) unsafe fn arm(
        &self,
        entry: NonNull<Entry>,
        deadline: u64,
        action: Action,
    ) -> (Armed, Action) {
        let mut inner = self.inner.lock();
        // SAFETY: per the caller; the lock is held.
        unsafe { self.arm_locked(&mut inner, entry, deadline, action) }
    }

    /// `arm`, under the lock.
    ///
    /// # Safety
    /// As [`arm`](Self::arm); `inner` is the locked state.
    unsafe fn arm_locked(
        &self,
        inner: &mut Inner,
        entry: NonNull<Entry>,
        deadline: u64,
        action: Action,
    ) -> (Armed, Action) {
        if inner.shutdown {
            return (Armed::Shutdown, action);
        }
        // SAFETY: per the caller; the lock is held.
        unsafe {
            inner.wheel.remove(entry);
            if !inner.wheel.insert(entry, deadline) {
                // Its previous action stays, for the owner's `disarm` to drop.
                self.publish_next(inner);
                return (Armed::Expired, action);
            }
            entry.as_ref().set_fired(false);
            let old = entry.as_ref().replace_action(action);
            let wake_a_worker = deadline < inner.armed;
            self.publish_next(inner);
            (Armed::Waiting { wake_a_worker }, old)
        }
    }

    /// Refreshes the waker of an armed entry, unless it has fired or was unlinked
    /// without firing (by a shutdown).
    ///
    /// # Safety
    /// As [`arm`](Self::arm).
    pub(crate) unsafe fn rewake(&self, entry: NonNull<Entry>, waker: &Waker) -> Rewake {
        // Made before locking: cloning a foreign waker runs foreign code.
        let mut owner = None;
        loop {
            let inner = self.inner.lock();
            // SAFETY: per the caller; the lock is held.
            let e = unsafe { entry.as_ref() };
            if e.has_fired() {
                return Rewake::Fired;
            }
            // SAFETY: the lock is held.
            if unsafe { e.position() } == Position::Unlinked {
                return Rewake::Unlinked;
            }
            // SAFETY: the lock is held.
            if unsafe { e.wakes(waker) } {
                return Rewake::Waiting;
            }
            let Some(fresh) = owner.take() else {
                drop(inner);
                owner = Some(Owner::from_waker(waker));
                continue;
            };
            // SAFETY: the lock is held.
            let old = unsafe { e.replace_action(Action::Wake(fresh)) };
            drop(inner);
            drop(old);
            return Rewake::Waiting;
        }
    }

    /// Unlinks `entry` if linked, returning its action (to drop after the call).
    ///
    /// # Safety
    /// `entry` is alive and not linked in any other wheel.
    pub(crate) unsafe fn disarm(&self, entry: NonNull<Entry>) -> Action {
        let mut inner = self.inner.lock();
        // SAFETY: per the caller; the lock is held.
        unsafe {
            if inner.wheel.remove(entry) {
                self.publish_next(&inner);
            }
            entry.as_ref().replace_action(Action::None)
        }
    }

    /// Re-arms a `tick` channel's entry, unless its channel closed or the runtime shut
    /// down (then the timer reference is dropped).
    pub(crate) fn rearm_channel(&self, timer: std::sync::Arc<dyn FedChannel>, deadline: u64) {
        let entry = timer.entry();
        let mut inner = self.inner.lock();
        // Checked under the lock: `ChannelTimer::receivers_gone` closes the channel, then
        // takes this lock to unlink the entry, so either it sees the entry linked or this
        // sees the channel closed.
        if inner.shutdown || timer.is_closed() {
            let shutdown = inner.shutdown;
            drop(inner);
            if shutdown {
                // Taken out of the wheel by `fire_all` while `shutdown` drained it: close
                // it as `shutdown` closes the others.
                timer.close();
            }
            drop(timer);
            return;
        }
        // SAFETY: the entry lives inside `timer`, which the action keeps alive while the
        // entry is linked; it is unlinked (it just fired); the lock is held.
        let (armed, rest) =
            unsafe { self.arm_locked(&mut inner, entry, deadline, Action::Channel(timer)) };
        drop(inner);
        match (armed, rest) {
            // The next deadline is after `now`, which is after the wheel's tick: never
            // refused. Should it be, fire at once rather than lose the tick.
            (Armed::Expired, Action::Channel(timer)) => timer.fire(self, Instant::now()),
            (_, rest) => drop(rest),
        }
    }

    /// True while a thread fires expired timers.
    pub(crate) fn is_firing(&self) -> bool {
        // SeqCst: read by deadlock detection in the same total order as the increment
        // below, which precedes taking any entry out of the wheel.
        self.firing.load(Ordering::SeqCst) > 0
    }

    /// Fires every entry due by tick `now`; true if any fired.
    pub(crate) fn fire_all(&self, now: u64) -> bool {
        // SeqCst: see `is_firing`.
        self.firing.fetch_add(1, Ordering::SeqCst);
        let fired_any = self.fire_batches(now);
        // SeqCst: see `is_firing`; every owner is woken by now.
        self.firing.fetch_sub(1, Ordering::SeqCst);
        fired_any
    }

    fn fire_batches(&self, now: u64) -> bool {
        let mut fired_any = false;
        loop {
            let mut batch: [Action; TIMER_FIRE_BATCH] = std::array::from_fn(|_| Action::None);
            let mut taken = 0;
            {
                let mut inner = self.inner.lock();
                while taken < TIMER_FIRE_BATCH {
                    // SAFETY: the lock is held.
                    let Some(entry) = (unsafe { inner.wheel.poll(now) }) else {
                        break;
                    };
                    // SAFETY: a linked entry is alive; it was just unlinked, under the
                    // lock, so its owner sees it fired once it sees the flag.
                    unsafe {
                        batch[taken] = entry.as_ref().replace_action(Action::None);
                        entry.as_ref().set_fired(true);
                    }
                    taken += 1;
                }
                self.publish_next(&inner);
            }
            fired_any |= taken > 0;
            let at = Instant::now();
            for action in &mut batch[..taken] {
                let action = std::mem::replace(action, Action::None);
                // A worker never dies of a waker's panic (nor of its payload's drop):
                // the panic hook has reported it, and the rest of the batch still fires.
                catching(|| match action {
                    Action::None => {}
                    Action::Wake(owner) => owner.wake(),
                    Action::Channel(timer) => timer.fire(self, at),
                });
            }
            if taken < TIMER_FIRE_BATCH {
                return fired_any;
            }
        }
    }

    /// Fires the timers that are due now, if the wheel says any may be; true if any
    /// fired.
    pub(crate) fn fire_due(&self) -> bool {
        // Relaxed: a stale value only delays the advance to the next check, and the
        // wheel is read under its lock.
        let next = self.next.load(Ordering::Relaxed);
        if next == NEVER {
            return false;
        }
        let now = self.now();
        next <= now && self.fire_all(now)
    }

    /// A worker is about to park: fires what is due, then decides how long it may sleep,
    /// arming the wheel's next deadline if no parked worker waits for it already.
    pub(crate) fn before_park(&self) -> ParkTimeout {
        if self.fire_due() {
            return ParkTimeout::Fired;
        }
        let mut inner = self.inner.lock();
        match inner.wheel.next_deadline() {
            Some(next) if next < inner.armed && !inner.shutdown => {
                inner.armed = next;
                ParkTimeout::Until(next)
            }
            _ => ParkTimeout::Forever,
        }
    }

    /// A worker that armed `tick` is awake again.
    pub(crate) fn after_park(&self, tick: u64) {
        let mut inner = self.inner.lock();
        if inner.armed == tick {
            inner.armed = NEVER;
        }
    }

    /// The runtime is shutting down: no timer is armed from now on. Waiting sleeps are
    /// woken (without firing: their next poll binds them elsewhere) and `after`/`tick`
    /// channels close.
    pub(crate) fn shutdown(&self) {
        let mut actions = Vec::new();
        {
            let mut inner = self.inner.lock();
            inner.shutdown = true;
            // SAFETY: the lock is held. Polling to the end of time unlinks every entry.
            while let Some(entry) = unsafe { inner.wheel.poll(NEVER) } {
                // SAFETY: a linked entry is alive; the lock is held.
                actions.push(unsafe { entry.as_ref().replace_action(Action::None) });
            }
            self.publish_next(&inner);
        }
        for action in actions {
            // As in `fire_batches`: every timer is woken or closed whatever one waker
            // does, and the runtime's drop goes on.
            catching(|| match action {
                Action::None => {}
                Action::Wake(owner) => owner.wake(),
                Action::Channel(timer) => timer.close(),
            });
        }
    }

    /// Timers linked in the wheel.
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().wheel.len()
    }
}

impl std::fmt::Debug for Timers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timers")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}
