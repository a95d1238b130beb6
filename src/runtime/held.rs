//! What a worker holds where no thief can see it, and how it is taken over once a poll
//! runs long.
//!
//! A worker holds three kinds of process outside its stealable queue (`worker.rs`): the
//! one in its handoff slot, those a poll pushed out of the slot and holds back for a
//! batch, and its resting process (`Running`, its transition to sleep put off). Each
//! waits for the worker's current poll to return. A poll that blocks its thread (a
//! blocking call, a long computation) would strand them for as long as it runs, so once
//! a poll has run past [`LONG_POLL_TAKEOVER`](crate::tuning::LONG_POLL_TAKEOVER) the
//! runtime's watchdog (`sysmon.rs`) takes them over and puts them where any worker finds
//! them.
//!
//! # The gate
//!
//! The owner touches these slots millions of times a second: with no atomic
//! read-modify-write, no fence. The watchdog takes them rarely. An asymmetric fence
//! (`loom.rs`) lets the two agree at no cost to the owner:
//!
//! - the owner's *poll word* counts its polls, and its low bit, [`OUT`], is set while
//!   the poll runs the process's own code, when the owner touches no slot. A wake from
//!   inside the poll that would touch a slot passes the *gate*: it clears `OUT`, passes
//!   a light fence, then reads the *take word* ([`Held::take`]). After the poll the
//!   owner clears `OUT` the same way;
//! - a taker that saw the same poll word, `OUT` set, at two looks a period apart moves
//!   the take word from [`FREE`] to [`FENCING`], passes a heavy fence, and reads the
//!   poll word again: changed, it lets go. Unchanged, the owner is still in that poll,
//!   outside every gate, and the taker moves the take word on to [`TAKING`]: the slots
//!   are its own until it sets [`FREE`] again;
//! - a gate inside the poll that reads `FENCING` or `TAKING` keeps off the slots (the
//!   woken process goes to the injector): the poll may run long yet. The gate at the
//!   poll's end that reads `FENCING` *cancels* the take (`FENCING` to [`CANCELLED`])
//!   and keeps its slots: whichever of the two exchanges from `FENCING` comes first
//!   decides who has them. One that reads `TAKING` waits until the taker lets go, as
//!   soon as it has moved what the slots held out.
//!
//! The two fences order each side's store before its load as two `SeqCst` fences would:
//! either the taker reads the owner's cleared bit (and backs off), or the owner reads
//! `FENCING` or a later state (and cancels, or keeps off). A stale read of a word that
//! went from `OUT` to clear and back is harmless: the owner's gate in between finished
//! before the taker's read, its writes published by the `Release` store that set `OUT`
//! again, which the taker's `Acquire` read synchronises with. Where heavy fences are
//! unavailable (not Linux, or a seccomp filter that forbids `membarrier`) no watchdog
//! runs, and held processes wait for the poll as before.
//!
//! The cancel is what keeps a worker whose poll ended from waiting out the watchdog's
//! heavy fence, a `membarrier` that interrupts every core running one of the process's
//! threads, in a system call the watchdog can be preempted in. Under wrk at 50
//! connections on 2 cores (wrk on the same cores, so a worker preempted inside a poll
//! looks like one in a long poll), one 6 s run of the two-state protocol this replaced
//! began 62 takes, whose fences took from 1 µs to 31 ms; 24 found the poll over after
//! the fence, and the worker whose poll had ended waited each one out, yielding its
//! thread for 0.35 to 40 ms. In a 2 s run with the searchers' own yields turned off,
//! `perf` found some 19,000 `sched_yield` calls, all in that wait. Most runs fence in
//! microseconds and see a handful of takes, which commit as before (or are cancelled).

use crate::loom::asymmetric;
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use crate::loom::{spin_loop, thread};
use crate::runtime::worker::Next;
use crate::task::{Notified, Resting};

/// The poll word's bit for "in a poll, running the process's own code".
pub(crate) const OUT: u64 = 1;

/// Take word: no taker. Left only by a taker (to [`FENCING`]).
const FREE: u8 = 0;
/// Take word: a taker passes its heavy fence and has not touched the slots. Left by
/// that taker (to [`TAKING`], or back to [`FREE`]) or by the owner as a poll ends (to
/// [`CANCELLED`]), whichever exchanges first.
const FENCING: u8 = 1;
/// Take word: the owner cancelled the take and keeps its slots; the taker has not yet
/// noticed. Left only by that taker (to [`FREE`]).
const CANCELLED: u8 = 2;
/// Take word: the taker holds the slots, moving what they hold out. Left only by that
/// taker (to [`FREE`]).
const TAKING: u8 = 3;
/// The take word's bit that keeps a gate inside a poll off the slots: set in
/// [`FENCING`] and [`TAKING`], clear in [`FREE`] and [`CANCELLED`], so the gate's test
/// is one bit, as cheap as a flag's.
const KEEP_OFF: u8 = 1;
const _: () = assert!(
    FREE & KEEP_OFF == 0
        && CANCELLED & KEEP_OFF == 0
        && FENCING & KEEP_OFF != 0
        && TAKING & KEEP_OFF != 0
);

/// Takes the end of a poll cancelled, counted across a loom model's executions (std's
/// atomic, outside the model), so a model can show it reached one.
#[cfg(all(test, loom))]
pub(crate) static CANCELLED_TAKES: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// The processes a worker holds back (module docs).
#[derive(Default)]
pub(crate) struct Slots {
    /// The handoff slot.
    pub(crate) handoff: Option<Next>,
    /// Pushed out of the slot by the current poll, not yet in the queue.
    pub(crate) displaced: Vec<Notified>,
    /// The resting process.
    pub(crate) resting: Option<Resting>,
}

impl Slots {
    /// True if nothing is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.handoff.is_none() && self.displaced.is_empty() && self.resting.is_none()
    }
}

/// One worker's held processes and the gate to them (module docs).
pub(crate) struct Held {
    /// The owner's polls, shifted left once, with [`OUT`] (module docs): also the
    /// worker's poll count, for metrics. Only the owner writes it.
    word: AtomicU64,
    /// The take word: [`FREE`], [`FENCING`], [`TAKING`] or [`CANCELLED`] (module
    /// docs).
    take: AtomicU8,
    /// The capacity the list of displaced processes is made with, and remade with
    /// after a take.
    displaced_capacity: usize,
    /// Touched by the owner between polls and inside an open gate, by a taker between
    /// a successful [`try_take`](Held::try_take) and its return.
    slots: UnsafeCell<Slots>,
}

// SAFETY: the slots hold processes (raw pointers to their headers) that any thread may
// run or queue; who may touch them at a time is the gate's to say (module docs), and
// the gate's protocol makes every access exclusive.
unsafe impl Send for Held {}
// SAFETY: as above.
unsafe impl Sync for Held {}

/// What passing the gate found: whether the owner may touch its slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a gate entered must be left"]
pub(crate) enum Gate {
    /// Not inside a poll's own code (between polls, or a gate already open): the slots
    /// are the owner's without a gate.
    Inside,
    /// The gate opened: the slots are the owner's until [`Held::leave`].
    Entered(u64),
    /// A taker holds the slots: keep off, and [`Held::leave`].
    Denied(u64),
}

impl Gate {
    /// True if the owner may touch its slots.
    #[inline(always)]
    pub(crate) fn is_open(self) -> bool {
        !matches!(self, Gate::Denied(_))
    }
}

impl Held {
    pub(crate) fn new(capacity: usize) -> Held {
        Held {
            word: AtomicU64::new(0),
            take: AtomicU8::new(FREE),
            displaced_capacity: capacity,
            slots: UnsafeCell::new(Slots {
                displaced: Vec::with_capacity(capacity),
                ..Slots::default()
            }),
        }
    }

    /// The owner starts a poll: from now until [`end_poll`](Self::end_poll), it
    /// touches its slots only through the gate.
    #[inline(always)]
    pub(crate) fn begin_poll(&self) {
        // Relaxed: only this thread writes the word.
        let word = self.word.load(Ordering::Relaxed);
        // Release: publishes the slots as they are now to a taker whose `Acquire` read
        // of the word sees this poll.
        self.word
            .store(((word >> 1) + 1) << 1 | OUT, Ordering::Release);
    }

    /// The owner's poll returned: the slots are its own again, at once if a take is
    /// still fencing (it is cancelled), or once a taker moving them lets go.
    #[inline(always)]
    pub(crate) fn end_poll(&self) {
        if let Gate::Denied(_) = self.enter() {
            self.reclaim();
        }
    }

    /// The owner, inside a poll, is about to touch its slots (module docs).
    #[inline(always)]
    pub(crate) fn enter(&self) -> Gate {
        // Relaxed: only this thread writes the word.
        let word = self.word.load(Ordering::Relaxed);
        if word & OUT == 0 {
            return Gate::Inside;
        }
        // Relaxed: the fence below orders it before the read of the take word.
        self.word.store(word & !OUT, Ordering::Relaxed);
        asymmetric::light();
        // Acquire: a taker's release of the slots happens before what follows.
        if self.take.load(Ordering::Acquire) & KEEP_OFF == 0 {
            Gate::Entered(word)
        } else {
            // Inside the poll, a fencing take is left to go on: the poll may run long
            // yet, and what it wakes meanwhile is for the taker to move.
            Gate::Denied(word)
        }
    }

    /// The owner is done with its slots for now (or kept off them): back to the
    /// process's own code.
    #[inline(always)]
    pub(crate) fn leave(&self, gate: Gate) {
        if let Gate::Entered(word) | Gate::Denied(word) = gate {
            // Release: publishes what the owner did to its slots to a taker that reads
            // this word (module docs).
            self.word.store(word, Ordering::Release);
        }
    }

    /// After `end_poll`'s gate was denied: cancels a take that is still fencing, or
    /// waits for a taker that moves what the slots hold to let go (it holds them for
    /// no system call and no allocation).
    #[cold]
    #[inline(never)]
    fn reclaim(&self) {
        let mut spins = 0u32;
        // Acquire: the taker's writes to the slots happen before what follows.
        let mut take = self.take.load(Ordering::Acquire);
        loop {
            match take {
                FREE | CANCELLED => return,
                FENCING => {
                    // Acquire, also on failure: the exchange may read the `FREE` a
                    // taker released the slots with (it took them since our read).
                    match self.take.compare_exchange(
                        FENCING,
                        CANCELLED,
                        Ordering::Acquire,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => {
                            #[cfg(all(test, loom))]
                            CANCELLED_TAKES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            return;
                        }
                        Err(now) => take = now,
                    }
                }
                _ => {
                    if spins < 64 {
                        spin_loop();
                        spins += 1;
                    } else {
                        thread::yield_now();
                    }
                    // Acquire: as above.
                    take = self.take.load(Ordering::Acquire);
                }
            }
        }
    }

    /// Runs `f` on the slots.
    ///
    /// # Safety
    /// The caller is the owner, between polls (after `end_poll`) or inside a gate that
    /// opened ([`Gate::is_open`]), and does not call this again from `f`.
    #[inline(always)]
    pub(crate) unsafe fn with_slots<R>(&self, f: impl FnOnce(&mut Slots) -> R) -> R {
        // SAFETY: the caller owns the slots now (above).
        self.slots.with_mut(|slots| f(unsafe { &mut *slots }))
    }

    /// The owner's polls so far (the worker's poll count: the word counts them).
    pub(crate) fn polls(&self) -> u64 {
        // Relaxed: a counter, for metrics and the worker's own bookkeeping.
        self.word.load(Ordering::Relaxed) >> 1
    }

    /// The owner's poll word, for a taker to compare with a later look.
    pub(crate) fn observe(&self) -> u64 {
        // Relaxed: a hint; `try_take` reads it again, in order.
        self.word.load(Ordering::Relaxed)
    }

    /// Takes the slots over if the owner is still in the poll `observed` (module
    /// docs): what they held, now the caller's. `None` if the owner is between polls or
    /// in another one, cancelled the take, or another taker is at work. Only where
    /// heavy fences are available.
    pub(crate) fn try_take(&self, observed: u64) -> Option<Slots> {
        if !self.begin_take(observed) {
            return None;
        }
        self.finish_take(observed, asymmetric::heavy())
    }

    /// A take's first step: `FREE` to `FENCING`. False if the owner is between polls or
    /// another take is under way.
    fn begin_take(&self, observed: u64) -> bool {
        // Relaxed, also on failure: the slots are not touched before the exchange in
        // `finish_take`, which acquires.
        observed & OUT != 0
            && self
                .take
                .compare_exchange(FREE, FENCING, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// A take's second step, after the heavy fence (`fenced`: it succeeded): the slots'
    /// contents if the owner is still in the poll `observed` and has not cancelled.
    /// Leaves the take word `FREE`.
    fn finish_take(&self, observed: u64, fenced: bool) -> Option<Slots> {
        // Acquire: the owner's writes to the slots, published by its `Release` store of
        // this word, happen before what follows. Without the fence (it failed), nothing
        // stops the owner: let go.
        let still = fenced && self.word.load(Ordering::Acquire) == observed;
        // The owner's list of displaced processes is swapped for this one, allocated
        // before `TAKING`, so the owner never waits on an allocation.
        let mut spare = still.then(|| Vec::with_capacity(self.displaced_capacity));
        // Acquire: through the release sequence of `begin_take`'s exchange, pairs with
        // the previous taker's release of the slots (a poll that ended since the word's
        // read cancelled, failing this). Relaxed on failure: the owner cancelled, and
        // nothing is read.
        let taking = still
            && self
                .take
                .compare_exchange(FENCING, TAKING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok();
        let taken = taking.then(|| {
            // SAFETY: `TAKING` shuts the owner's gates (module docs) and excludes every
            // other taker, until the store below.
            self.slots.with_mut(|slots| {
                let slots = unsafe { &mut *slots };
                Slots {
                    handoff: slots.handoff.take(),
                    displaced: std::mem::replace(
                        &mut slots.displaced,
                        spare.take().unwrap_or_default(),
                    ),
                    resting: slots.resting.take(),
                }
            })
        });
        // Release: what was done to the slots happens before the owner's next gate.
        // From `TAKING`, `CANCELLED` or `FENCING`: only this taker leaves the first two;
        // the owner may leave `FENCING` for `CANCELLED` at the same time, and the store
        // overwrites either (the take is over).
        self.take.store(FREE, Ordering::Release);
        taken
    }
}

#[cfg(all(test, not(loom), target_os = "linux"))]
mod tests {
    use super::*;

    /// Begins a poll on `held`: its poll word.
    fn poll(held: &Held) -> u64 {
        held.begin_poll();
        held.observe()
    }

    /// An owner in a poll, and a take of it passing its fence.
    fn fencing() -> (Held, u64) {
        let held = Held::new(0);
        let word = poll(&held);
        assert!(held.begin_take(word));
        (held, word)
    }

    /// Takes the slots of the poll `word` in full: the take begins (`why` if not) and
    /// commits.
    fn take_whole(held: &Held, word: u64, why: &str) {
        assert!(held.begin_take(word), "{why}");
        assert!(held.finish_take(word, true).is_some());
    }

    #[test]
    fn a_take_whose_heavy_fence_fails_takes_nothing_and_leaves_the_gate_open() {
        let held = Held::new(0);
        let word = poll(&held);
        crate::loom::asymmetric::FAIL_NEXT_HEAVY.with(|fail| fail.set(true));
        assert!(held.try_take(word).is_none());
        // The owner's gate opens, and a later take, its fence passed, takes the slots.
        let gate = held.enter();
        assert!(gate.is_open(), "the failed take kept the slots");
        held.leave(gate);
        take_whole(&held, word, "the failed take left the take word behind");
        held.end_poll();
    }

    #[test]
    fn a_gate_inside_the_poll_lets_a_fencing_take_go_on() {
        let (held, word) = fencing();
        // A wake inside the poll, while the taker passes its fence: kept off.
        let gate = held.enter();
        assert_eq!(gate, Gate::Denied(word), "a gate inside the poll cancelled");
        held.leave(gate);
        // The poll word is as the taker saw it, and the take goes through.
        assert!(
            held.finish_take(word, true).is_some(),
            "the take was called off"
        );
        held.end_poll();
    }

    #[test]
    fn a_poll_that_ends_while_a_take_is_fencing_cancels_it_without_waiting() {
        let (held, word) = fencing();
        let (done, ended) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                held.end_poll();
                done.send(()).unwrap();
            });
            let waited = ended
                .recv_timeout(std::time::Duration::from_secs(10))
                .is_err();
            let state = held.take.load(Ordering::Relaxed);
            // Lets a waiting owner go either way, so the test ends.
            assert!(held.finish_take(word, true).is_none());
            assert!(!waited, "the owner waited for the take's fence");
            assert_eq!(state, CANCELLED, "the ended poll did not cancel the take");
        });
        // Back to `FREE`: the next take begins, and takes.
        let word = poll(&held);
        take_whole(&held, word, "the cancelled take left the take word behind");
        held.end_poll();
    }
}
