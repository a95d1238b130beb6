//! A channel as a wait site of the census (`wait/census.rs`): it joins when its first
//! entry is linked, and a survey lists its entries' owners under its lock, with where
//! the channel was made and who last used each of its sides.
//!
//! # Who last used each side
//!
//! For the wait graph's dashed edges (who could end a wait), a channel keeps, per side,
//! the process that last used it ([`Users`]): the address of the process's header, the
//! number that [`OwnerTag::Process`] names it by. Recorded
//! - by a `send` or `recv` future when it completes, waited or not, from the waker it
//!   was polled with (a csp process's waker points at the process's header; a
//!   `block_on` future's, at its parker);
//! - by an alt arm (`alt!`, `Select`) when it links its entry to wait, from its claim
//!   flag's owner tag (an arm is never given the waker: `ops.rs`);
//! - by `poll_recv` (and so the `Stream`) and the `Sink`, from their wakers.
//!
//! Not recorded: `try_send`, `try_recv`, an alt arm that completes without waiting, the
//! creation of a channel and the clone of an end. None of them is given a waker, and the
//! thread-local context (`runtime/context.rs`) knows which runtime is being polled, not
//! which process.
//!
//! A wait that never completes is not recorded for a future: while it waits, nobody
//! waits on the other side of its channel (they would meet), so no dashed edge would
//! point at it; recording it would cost every wait a look at its flag.
//!
//! The cost on the hot path, once per completed future, is one load of the waker's data
//! pointer, one Relaxed load of the side's word and a compare; only a change goes out of
//! line, to check that the waker is csp's (anything else records 0, "unknown") and
//! store. No lock, no allocation. The words are std atomics, not loom's, as the census's
//! own flags and the claim flags' owner tags are: they order nothing, and only the wait
//! graph reads them.

use std::panic::Location;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Waker;

use crate::chan::core::{Chan, Side};
use crate::task::waker::process_of;
use crate::wait::census::{LastUsers, Site, Waiting};
use crate::wait::claim::OwnerTag;
use crate::wait::parker::parker_of;

impl<T> Chan<T> {
    /// Joins the census unless it already has (one load then). Called while linking an
    /// entry.
    #[inline]
    pub(crate) fn enrol(&self) {
        // SAFETY: the enrolment is the channel's first field, made with its id; `Chan`
        // has no `Drop` of its own, and lives in the `Arc` that `chan::pair` makes for
        // it, or in a cancellation token's `Box` (`cancel.rs`), from creation to drop.
        unsafe { self.enrolment.join(self) }
    }

    /// Records that whoever is polled with `waker` used side `side` (module docs).
    #[inline]
    pub(crate) fn note_user(&self, side: Side, waker: &Waker) {
        self.users.note(side, waker);
    }

    /// Records that the owner of a claim flag with tag `owner` links an entry to wait on
    /// side `side` (module docs).
    #[inline]
    pub(crate) fn note_waiter(&self, side: Side, owner: OwnerTag) {
        self.users.note_owner(side, owner);
    }
}

/// Who last used each side of a channel (module docs): header addresses of processes,
/// or parker addresses of `block_on` futures; 0 when unknown.
#[derive(Debug)]
pub(crate) struct Users {
    sender: AtomicUsize,
    receiver: AtomicUsize,
}

impl Users {
    /// Nobody yet.
    pub(crate) fn new() -> Users {
        Users {
            sender: AtomicUsize::new(0),
            receiver: AtomicUsize::new(0),
        }
    }

    #[inline(always)]
    fn word(&self, side: Side) -> &AtomicUsize {
        match side {
            Side::Send => &self.sender,
            Side::Recv => &self.receiver,
        }
    }

    /// Records the owner of `waker` as the last user of `side`: one load and a compare
    /// when it already is.
    #[inline(always)]
    fn note(&self, side: Side, waker: &Waker) {
        let word = self.word(side);
        // Relaxed: a diagnostic hint, read only by the wait graph; it orders nothing,
        // and a survey that reads an older value draws an older last user.
        if word.load(Ordering::Relaxed) != waker.data() as usize {
            note_changed(word, waker);
        }
    }

    /// Records `owner` (a process, else unknown) as the last user of `side`.
    #[inline]
    fn note_owner(&self, side: Side, owner: OwnerTag) {
        let user = match owner {
            OwnerTag::Process(address) => address,
            _ => 0,
        };
        store_if_changed(self.word(side), user);
    }

    /// A snapshot of both sides.
    fn get(&self) -> LastUsers {
        // Relaxed: hints, as in `note`.
        LastUsers {
            sender: self.sender.load(Ordering::Relaxed),
            receiver: self.receiver.load(Ordering::Relaxed),
        }
    }
}

/// [`Users::note`] when the side's user changes (or its last user is not csp's): the
/// waker's data pointer if the waker is a process's or a `block_on` future's, else 0.
#[cold]
#[inline(never)]
fn note_changed(word: &AtomicUsize, waker: &Waker) {
    let named = process_of(waker).is_some() || parker_of(waker).is_some();
    store_if_changed(word, if named { waker.data() as usize } else { 0 });
}

#[inline]
fn store_if_changed(word: &AtomicUsize, user: usize) {
    // Relaxed: a hint (see `Users::note`); unchanged, the cache line is left alone.
    if word.load(Ordering::Relaxed) != user {
        word.store(user, Ordering::Relaxed);
    }
}

impl<T> Site for Chan<T> {
    fn id(&self) -> u64 {
        Chan::id(self)
    }

    fn kind(&self) -> String {
        match self.cap() {
            None => "unbounded".to_owned(),
            Some(0) => "rendezvous".to_owned(),
            Some(cap) => format!("bounded({cap})"),
        }
    }

    fn is_foreign(&self) -> bool {
        Chan::is_foreign(self)
    }

    fn made_at(&self) -> &'static Location<'static> {
        Chan::made_at(self)
    }

    fn last_users(&self) -> LastUsers {
        self.users.get()
    }

    fn try_waiting(&self, out: &mut dyn FnMut(Waiting)) -> bool {
        let Some(state) = self.try_lock() else {
            return false;
        };
        state.for_each_entry(&mut |op, claim| {
            // An entry of a choice that fired on another channel stays linked until
            // its owner unlinks it: it no longer waits.
            if claim.is_waiting() {
                out(Waiting {
                    owner: claim.owner_tag(),
                    op,
                })
            }
        });
        true
    }
}
