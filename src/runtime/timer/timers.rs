//! A runtime's timers: its wheels, the clock they count in, and the protocol by which
//! its workers drive them (DESIGN.md, "Timers").
//!
//! The timers are split into one wheel per worker (a *shard*), each behind its own lock:
//! a process arms its timer in the wheel of the worker polling it (a thread outside the
//! workers in a shard of its own choosing, `context::timer_home`), so the workers of a
//! busy runtime do not take turns at one lock, nor write into each other's timers' links.
//! An entry records its shard; it is disarmed, re-armed and fired through that shard.
//!
//! There is no timer thread. A worker advances the wheels when it finds one due: every
//! `GLOBAL_QUEUE_INTERVAL` scheduling ticks, when it runs out of work, and before it
//! parks. The parking worker that sees the earliest deadline of all the wheels *arms*
//! it: it parks with a timeout to that deadline, and records it in `armed`, so later
//! workers park without one. A timer inserted earlier than the armed deadline (or with
//! none armed) asks the caller to wake a worker, which then arms the earlier deadline as
//! it parks again.
//!
//! No lock spans the wheels, so an insert and a park meet through `armed` and each
//! shard's mirror of its next deadline (`Shard::next`), ordered by a `SeqCst` fence on
//! each side (Dekker's pattern):
//!
//! - a timer that lowers its shard's next deadline stores the new one, fences, *then*
//!   reads `armed`, and asks for a worker if its deadline is earlier;
//! - a parking worker fences, reads every shard's next deadline, *then* lowers `armed`
//!   to their minimum by a compare-and-swap (and parks until it), or finds `armed` no
//!   later and parks without a timeout. The worker that parked until a deadline clears
//!   `armed` when it wakes, before that fence.
//!
//! Of the two fences, one comes first. If the insert's does, the park's reads see the
//! new deadline. If the park's does, the insert's read of `armed` sees the park's swap
//! or a later value: a deadline later than its own (then it wakes a worker) or one no
//! later, whose worker wakes in time (nothing cancels a parked worker's timeout), clears
//! `armed` and reads the shards again past another such fence. A timer that does not
//! lower its shard's next deadline needs neither store nor fence: while it is linked,
//! its shard's mirror stays at or before its deadline (only an arm lowers the mirror,
//! and a disarm or a firing raises it no further than the wheel's next deadline, which
//! this entry bounds), and that earlier value is covered by the argument above, or was
//! read by a parking worker already. The loom models in `loom_models.rs` drive these
//! races on the real code (loom models `SeqCst` fences, not `SeqCst` loads and stores,
//! hence the fences).
//!
//! Expired entries are taken out under a shard's lock in batches and fired after
//! unlocking, so no waker and no channel operation runs under a wheel's lock.

use std::ptr::NonNull;
use std::task::Waker;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::loom::sync::Mutex;
use crate::loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};
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

/// A shard's state under its lock.
struct Inner {
    wheel: Wheel,
    shutdown: bool,
}

/// One worker's wheel.
struct Shard {
    inner: Mutex<Inner>,
    /// The wheel's next deadline (`NEVER`: empty), mirrored for the lock-free looks of
    /// `fire_due` and `before_park`; written under the lock, only when it changes.
    next: AtomicU64,
}

pub(crate) struct Timers {
    /// Tick 0 of the wheels' clock.
    origin: Instant,
    /// A wheel per worker (module docs), each on cache lines of its own.
    shards: Box<[CachePadded<Shard>]>,
    /// The deadline a parked worker will wake up for (`NEVER`: none).
    armed: AtomicU64,
    /// Threads inside `fire_all`: expired timers may be out of a wheel and not yet
    /// fired (deadlock detection must not mistake that for nothing armed).
    firing: AtomicUsize,
}

impl Timers {
    /// Timers in `shards` wheels (one per worker; at least one).
    pub(crate) fn new(shards: usize) -> Timers {
        let shards = (0..shards.max(1))
            .map(|_| {
                CachePadded::new(Shard {
                    inner: Mutex::new(Inner {
                        wheel: Wheel::new(),
                        shutdown: false,
                    }),
                    next: AtomicU64::new(NEVER),
                })
            })
            .collect();
        Timers {
            origin: Instant::now(),
            shards,
            armed: AtomicU64::new(NEVER),
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

    /// The shard `entry` was last armed in (shard 0 if never).
    ///
    /// # Safety
    /// `entry` is alive.
    unsafe fn shard_of(&self, entry: NonNull<Entry>) -> &Shard {
        // SAFETY: per the caller.
        let index = unsafe { entry.as_ref().shard() };
        &self.shards[index]
    }

    /// Mirrors the wheel's next deadline in `shard.next` if it changed; true if it is
    /// earlier than before.
    fn publish_next(shard: &Shard, inner: &Inner) -> bool {
        let next = inner.wheel.next_deadline().unwrap_or(NEVER);
        // Relaxed: written only under the lock this caller holds, so this reads the last
        // value written.
        let old = shard.next.load(Ordering::Relaxed);
        if old != next {
            // Relaxed: a reader that must see a lowered deadline is ordered after this
            // store by the fences of `arm_locked` and `before_park` (module docs); one
            // that reads a stale, earlier deadline only looks early.
            shard.next.store(next, Ordering::Relaxed);
        }
        next < old
    }

    /// Arms `entry` to run `action` at tick `deadline` in the wheel of shard `shard`
    /// (taken modulo the number of shards: a worker's index, or any number for a thread
    /// outside the workers), replacing its previous action (returned, to drop after the
    /// call; so is `action` itself if nothing was linked).
    ///
    /// # Safety
    /// `entry` is alive, pinned and unlinked, and is disarmed or fired before it is
    /// freed. No other thread arms or disarms it meanwhile.
    pub(crate) unsafe fn arm(
        &self,
        shard: usize,
        entry: NonNull<Entry>,
        deadline: u64,
        action: Action,
    ) -> (Armed, Action) {
        let index = shard % self.shards.len();
        // SAFETY: per the caller, nobody else reads or writes the entry's shard now.
        unsafe { entry.as_ref().set_shard(index) };
        let shard = &self.shards[index];
        let mut inner = shard.inner.lock();
        // SAFETY: per the caller; the lock of the entry's shard is held.
        unsafe { self.arm_locked(shard, &mut inner, entry, deadline, action) }
    }

    /// `arm`, under the lock of the entry's shard.
    ///
    /// # Safety
    /// As [`arm`](Self::arm); `inner` is the locked state of `shard`, the entry's.
    unsafe fn arm_locked(
        &self,
        shard: &Shard,
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
            debug_assert_eq!(entry.as_ref().position(), Position::Unlinked);
            if !inner.wheel.insert(entry, deadline) {
                // Its previous action stays, for the owner's `disarm` to drop.
                return (Armed::Expired, action);
            }
            entry.as_ref().set_fired(false);
            let old = entry.as_ref().replace_action(action);
            if Self::publish_next(shard, inner) {
                // The shard's deadline, then `armed` (module docs): the fence orders the
                // two against a parking worker's swap of `armed`, then its reads of the
                // shards, on the other side of its own fence.
                fence(Ordering::SeqCst);
            }
            // Relaxed: ordered by the fence where the shard's deadline moved earlier;
            // where it did not, an earlier deadline, covered already, stands before this
            // one (module docs).
            let wake_a_worker = deadline < self.armed.load(Ordering::Relaxed);
            (Armed::Waiting { wake_a_worker }, old)
        }
    }

    /// Refreshes the waker of an armed entry, unless it has fired or was unlinked
    /// without firing (by a shutdown).
    ///
    /// # Safety
    /// As [`arm`](Self::arm), with the entry armed here.
    pub(crate) unsafe fn rewake(&self, entry: NonNull<Entry>, waker: &Waker) -> Rewake {
        // SAFETY: per the caller.
        let shard = unsafe { self.shard_of(entry) };
        // Made before locking: cloning a foreign waker runs foreign code.
        let mut owner = None;
        loop {
            let inner = shard.inner.lock();
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
    /// `entry` is alive and armed in no other runtime's wheels; nobody arms it meanwhile.
    pub(crate) unsafe fn disarm(&self, entry: NonNull<Entry>) -> Action {
        // SAFETY: per the caller.
        let shard = unsafe { self.shard_of(entry) };
        let mut inner = shard.inner.lock();
        // SAFETY: per the caller; the lock is held.
        unsafe {
            if inner.wheel.remove(entry) {
                let _ = Self::publish_next(shard, &inner);
            }
            entry.as_ref().replace_action(Action::None)
        }
    }

    /// Re-arms a `tick` channel's entry in the shard it fired from, unless its channel
    /// closed or the runtime shut down (then the timer reference is dropped). True if
    /// the caller must wake a worker (`Idle::notify_work`), as after [`arm`](Self::arm):
    /// the tick may have fired on a thread that is no worker, while every worker sleeps
    /// with no deadline to wake for.
    #[must_use]
    pub(crate) fn rearm_channel(
        &self,
        timer: std::sync::Arc<dyn FedChannel>,
        deadline: u64,
    ) -> bool {
        let entry = timer.entry();
        // SAFETY: the entry lives inside `timer`, kept alive by this reference.
        let shard = unsafe { self.shard_of(entry) };
        let mut inner = shard.inner.lock();
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
            return false;
        }
        // SAFETY: the entry lives inside `timer`, which the action keeps alive while the
        // entry is linked; it is unlinked (it just fired) and stays in its shard, whose
        // lock is held.
        let (armed, rest) =
            unsafe { self.arm_locked(shard, &mut inner, entry, deadline, Action::Channel(timer)) };
        drop(inner);
        match (armed, rest) {
            (Armed::Waiting { wake_a_worker }, rest) => {
                drop(rest);
                wake_a_worker
            }
            // The next deadline is after `now`, which is after the wheel's tick: never
            // refused. Should it be, fire at once rather than lose the tick.
            (Armed::Expired, Action::Channel(timer)) => {
                timer.fire(self, Instant::now());
                false
            }
            (_, rest) => {
                drop(rest);
                false
            }
        }
    }

    /// True while a thread fires expired timers.
    pub(crate) fn is_firing(&self) -> bool {
        // SeqCst: read by deadlock detection in the same total order as the increment
        // below, which precedes taking any entry out of a wheel.
        self.firing.load(Ordering::SeqCst) > 0
    }

    /// Fires every entry due by tick `now`, in every wheel; true if any fired.
    pub(crate) fn fire_all(&self, now: u64) -> bool {
        // SeqCst: see `is_firing`.
        self.firing.fetch_add(1, Ordering::SeqCst);
        let mut fired_any = false;
        for shard in self.shards.iter() {
            // Relaxed: a stale, later deadline (one that an arm just lowered) only leaves
            // that wheel to a later look: the arm's fence and the parking worker's order
            // it (module docs), or the arm asked for a worker.
            if shard.next.load(Ordering::Relaxed) <= now {
                fired_any |= self.fire_batches(shard, now);
            }
        }
        // SeqCst: see `is_firing`; every owner is woken by now.
        self.firing.fetch_sub(1, Ordering::SeqCst);
        fired_any
    }

    fn fire_batches(&self, shard: &Shard, now: u64) -> bool {
        let mut fired_any = false;
        loop {
            let mut batch: [Action; TIMER_FIRE_BATCH] = std::array::from_fn(|_| Action::None);
            let mut taken = 0;
            {
                let mut inner = shard.inner.lock();
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
                let _ = Self::publish_next(shard, &inner);
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

    /// The earliest of the wheels' next deadlines, as mirrored (`NEVER`: all empty).
    fn earliest(&self) -> u64 {
        self.shards
            .iter()
            // Relaxed: see the callers.
            .map(|shard| shard.next.load(Ordering::Relaxed))
            .min()
            .unwrap_or(NEVER)
    }

    /// Fires the timers that are due now, if the wheels say any may be; true if any
    /// fired.
    pub(crate) fn fire_due(&self) -> bool {
        // Relaxed: a stale value only delays the advance to the next check, and the
        // wheels are read under their locks.
        let next = self.earliest();
        if next == NEVER {
            return false;
        }
        let now = self.now();
        next <= now && self.fire_all(now)
    }

    /// A worker is about to park: fires what is due, then decides how long it may sleep,
    /// arming the wheels' next deadline if no parked worker waits for it already.
    pub(crate) fn before_park(&self) -> ParkTimeout {
        if self.fire_due() {
            return ParkTimeout::Fired;
        }
        // After this worker's last swap of `armed` (in `after_park`, or this loop as it
        // parked last), then the reads of the shards: against an arm's store of its
        // shard's deadline, then its fence, then its read of `armed` (module docs).
        fence(Ordering::SeqCst);
        // Relaxed, here and below: ordered by the fence.
        let next = self.earliest();
        let mut armed = self.armed.load(Ordering::Relaxed);
        while next < armed {
            match self
                .armed
                .compare_exchange(armed, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return ParkTimeout::Until(next),
                Err(now_armed) => armed = now_armed,
            }
        }
        ParkTimeout::Forever
    }

    /// A worker that armed `tick` is awake again.
    pub(crate) fn after_park(&self, tick: u64) {
        // Relaxed: ordered before this worker's next reads of the shards by the fence in
        // `before_park`, so that an arm which read `tick` here, and so asked for no
        // worker, is seen then (module docs). A failure means another worker swapped
        // `armed` since (to an earlier deadline, or, once awake, to a later one): the
        // value now there is that worker's to clear, and it reads the shards after its
        // own fence.
        let _ = self
            .armed
            .compare_exchange(tick, NEVER, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// The runtime is shutting down: no timer is armed from now on. Waiting sleeps are
    /// woken (without firing: their next poll binds them elsewhere) and `after`/`tick`
    /// channels close.
    pub(crate) fn shutdown(&self) {
        let mut actions = Vec::new();
        for shard in self.shards.iter() {
            let mut inner = shard.inner.lock();
            inner.shutdown = true;
            // SAFETY: the lock is held. Polling to the end of time unlinks every entry.
            while let Some(entry) = unsafe { inner.wheel.poll(NEVER) } {
                // SAFETY: a linked entry is alive; the lock is held.
                actions.push(unsafe { entry.as_ref().replace_action(Action::None) });
            }
            let _ = Self::publish_next(shard, &inner);
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

    /// Timers linked in the wheels.
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.inner.lock().wheel.len())
            .sum()
    }
}

impl std::fmt::Debug for Timers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timers")
            .field("origin", &self.origin)
            .field("shards", &self.shards.len())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::pin::Pin;

    use super::*;
    use crate::runtime::timer::wheel::tests::{entries, ptr};
    use crate::task::test_wakers::counting;

    /// Arms `entry` to wake `waker` at `tick` in `shard`: whether a worker was asked for.
    fn arm(
        timers: &Timers,
        shard: usize,
        entry: &Pin<Box<Entry>>,
        tick: u64,
        waker: &Waker,
    ) -> bool {
        let owner = Owner::from_waker(waker);
        // SAFETY: the entry is pinned, unlinked, and outlives the wheel's use of it (the
        // tests disarm or fire every entry before dropping it).
        let (armed, rest) = unsafe { timers.arm(shard, ptr(entry), tick, Action::Wake(owner)) };
        drop(rest);
        match armed {
            Armed::Waiting { wake_a_worker } => wake_a_worker,
            other => panic!("a future deadline was not armed: {other:?}"),
        }
    }

    #[test]
    fn each_shard_fires_its_own_entries_once_at_their_tick() {
        let timers = Timers::new(3);
        let (count, waker) = counting();
        let es = entries(6);
        for (i, entry) in es.iter().enumerate() {
            // Shards 0, 1, 2, then 3..5 taken modulo the three.
            let _ = arm(&timers, i, entry, 10 + i as u64, &waker);
            assert_eq!(entry.shard(), i % 3);
        }
        assert_eq!(timers.len(), 6);
        assert!(!timers.fire_all(9), "nothing is due before tick 10");
        assert_eq!(count.wakes(), 0);
        assert!(timers.fire_all(12));
        assert_eq!(count.wakes(), 3, "ticks 10 to 12, one shard each");
        assert!(es[..3].iter().all(|e| e.has_fired()));
        assert!(es[3..].iter().all(|e| !e.has_fired()));
        assert!(timers.fire_all(100));
        assert_eq!(count.wakes(), 6);
        assert!(!timers.fire_all(1000), "each entry fires once");
        assert_eq!(timers.len(), 0);
    }

    #[test]
    fn an_entry_is_disarmed_in_the_shard_it_was_armed_in() {
        let timers = Timers::new(2);
        let (count, waker) = counting();
        let es = entries(2);
        let _ = arm(&timers, 1, &es[0], 10, &waker);
        let _ = arm(&timers, 0, &es[1], 20, &waker);
        // SAFETY: both are alive and armed in `timers` only.
        unsafe {
            drop(timers.disarm(ptr(&es[0])));
        }
        assert_eq!(timers.len(), 1);
        assert!(
            !timers.fire_all(15),
            "the disarmed entry is gone from shard 1"
        );
        assert!(timers.fire_all(20));
        assert_eq!(count.wakes(), 1);
        // SAFETY: as above; a fired entry is unlinked already.
        unsafe {
            drop(timers.disarm(ptr(&es[1])));
        }
    }

    #[test]
    fn a_parking_worker_arms_the_earliest_deadline_of_all_shards() {
        let timers = Timers::new(2);
        let (count, waker) = counting();
        let es = entries(3);
        let far = timers.now() + 100_000;
        assert!(
            arm(&timers, 0, &es[0], far + 64, &waker),
            "nothing armed: ask for a worker"
        );
        // The entry is in a higher level: the deadline armed is its slot's start, a
        // lower bound.
        let ParkTimeout::Until(first) = timers.before_park() else {
            panic!("a worker parks until the only deadline");
        };
        assert!(first <= far + 64);
        assert_eq!(
            timers.before_park(),
            ParkTimeout::Forever,
            "one worker waits for it"
        );
        // Earlier, in the other shard: asks for a worker, who arms it.
        let near = timers.now() + 50;
        assert!(arm(&timers, 1, &es[1], near, &waker));
        let ParkTimeout::Until(second) = timers.before_park() else {
            panic!("the earlier deadline is armed by the next parking worker");
        };
        assert!(second <= near && second < first);
        // Later than the one armed: no worker needed.
        assert!(!arm(&timers, 1, &es[2], far + 1000, &waker));
        timers.after_park(first);
        timers.after_park(second);
        assert!(matches!(timers.before_park(), ParkTimeout::Until(t) if t == second));
        for entry in &es {
            // SAFETY: alive, armed in `timers` only.
            drop(unsafe { timers.disarm(ptr(entry)) });
        }
        assert_eq!(timers.len(), 0);
        assert_eq!(count.wakes(), 0);
    }
}
