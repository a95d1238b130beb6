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
//!   a light fence, then reads [`taken`](Held::taken); if a taker holds the slots it
//!   leaves them alone (the woken process goes to the injector) and sets `OUT` again.
//!   After the poll the owner clears `OUT` the same way, and if a taker holds the slots
//!   it waits until the taker lets go;
//! - a taker that saw the same poll word, `OUT` set, at two looks a period apart sets
//!   `taken`, passes a heavy fence, and reads the word again: unchanged, the owner is
//!   still in that poll, outside every gate, and every gate it passes from now on sees
//!   `taken`, so the slots are the taker's until it clears `taken`. Changed, it lets go.
//!
//! The two fences order each side's store before its load as two `SeqCst` fences would:
//! either the taker reads the owner's cleared bit (and backs off), or the owner reads
//! `taken` (and keeps off). A stale read of a word that went from `OUT` to clear and back
//! is harmless: the owner's gate in between finished before the taker's read, its
//! writes published by the `Release` store that set `OUT` again, which the taker's
//! `Acquire` read synchronises with. Where heavy fences are unavailable (not Linux, or a
//! seccomp filter that forbids `membarrier`) no watchdog runs, and held processes wait
//! for the poll as before.

use crate::loom::asymmetric;
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use crate::loom::{spin_loop, thread};
use crate::runtime::worker::Next;
use crate::task::{Notified, Resting};

/// The poll word's bit for "in a poll, running the process's own code".
pub(crate) const OUT: u64 = 1;

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
    /// A taker holds the slots. Only a taker writes it.
    taken: AtomicBool,
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
            taken: AtomicBool::new(false),
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

    /// The owner's poll returned: the slots are its own again, once a taker that holds
    /// them lets go.
    #[inline(always)]
    pub(crate) fn end_poll(&self) {
        if let Gate::Denied(_) = self.enter() {
            self.wait_for_taker();
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
        // Relaxed: the fence below orders it before the read of `taken`.
        self.word.store(word & !OUT, Ordering::Relaxed);
        asymmetric::light();
        // Acquire: a taker's release of the slots happens before what follows.
        if self.taken.load(Ordering::Acquire) {
            Gate::Denied(word)
        } else {
            Gate::Entered(word)
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

    /// Waits until a taker lets go of the slots (after `end_poll`'s gate was denied):
    /// a taker holds them only while it moves what they hold out.
    #[cold]
    #[inline(never)]
    fn wait_for_taker(&self) {
        let mut spins = 0u32;
        // Acquire: the taker's writes to the slots happen before what follows.
        while self.taken.load(Ordering::Acquire) {
            if spins < 64 {
                spin_loop();
                spins += 1;
            } else {
                thread::yield_now();
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
    /// in another one, or another taker is at work. Only where heavy fences are
    /// available.
    pub(crate) fn try_take(&self, observed: u64) -> Option<Slots> {
        if observed & OUT == 0 {
            return None;
        }
        // Acquire: pairs with the release of a previous taker. Relaxed on failure:
        // nothing is read.
        if self
            .taken
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        // Without the heavy fence (it failed), nothing stops the owner: let go.
        let fenced = asymmetric::heavy();
        // Acquire: the owner's writes to the slots, published by its `Release` store of
        // this word, happen before what follows.
        let taken = if fenced && self.word.load(Ordering::Acquire) == observed {
            // SAFETY: the gate is shut for the owner (module docs) and `taken` excludes
            // every other taker.
            Some(self.slots.with_mut(|slots| {
                let slots = unsafe { &mut *slots };
                Slots {
                    handoff: slots.handoff.take(),
                    displaced: slots.displaced.drain(..).collect(),
                    resting: slots.resting.take(),
                }
            }))
        } else {
            None
        };
        // Release: what was done to the slots happens before the owner's next gate.
        self.taken.store(false, Ordering::Release);
        taken
    }
}

#[cfg(all(test, not(loom), target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_take_whose_heavy_fence_fails_takes_nothing_and_leaves_the_gate_open() {
        let held = Held::new(0);
        held.begin_poll();
        let word = held.observe();
        crate::loom::asymmetric::FAIL_NEXT_HEAVY.with(|fail| fail.set(true));
        assert!(held.try_take(word).is_none());
        // The owner's gate opens (were `taken` left set, `end_poll` would spin for
        // ever), and a later take, its fence passed, takes the slots.
        let gate = held.enter();
        assert!(gate.is_open(), "the failed take kept the slots");
        held.leave(gate);
        held.end_poll();
        held.begin_poll();
        let word = held.observe();
        if crate::loom::asymmetric::available() {
            assert!(held.try_take(word).is_some());
        }
        held.end_poll();
    }
}
