//! A choice of one operation: the engine of the plain `send`, `recv` and `closed`
//! futures, on the same claim flag and `Operation` interface as `alt!`.
//!
//! The poll after a wake is lock-free: the claimer has already moved the value and
//! unlinked the entry, so the owner only reads its flag and its slot.

use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use crate::wait::claim::{Claim, Owner, Seen, Wakes, resume};
use crate::wait::operation::{Held, Operation};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Not tried yet.
    Start,
    /// Registered: the entry is linked, or fired and not yet read.
    Waiting,
    /// Completed; the outcome is in the operation.
    Done,
    /// Completed, and the outcome taken: nothing left to give back.
    Taken,
}

pin_project! {
    /// One operation and its claim flag, pinned together.
    pub(crate) struct Single<O: Operation> {
        #[pin]
        claim: Claim,
        #[pin]
        op: O,
        stage: Stage,
    }

    impl<O: Operation> PinnedDrop for Single<O> {
        fn drop(this: Pin<&mut Self>) {
            // Most futures drop completed and read (or never polled): a test, inline.
            if matches!(this.stage, Stage::Start | Stage::Taken) {
                return;
            }
            this.drop_unfinished();
        }
    }
}

/// A poll of a future whose operation completed: out of line, as the hot paths never
/// come here. `Done` is an outcome stored by a poll that a waker's panic unwound out of
/// after the operation completed: the outcome is this poll's. `Taken` is a misuse.
#[cold]
#[inline(never)]
fn polled_again(stage: Stage) -> Poll<()> {
    if stage == Stage::Taken {
        panic!("csp: a channel future was polled after it completed");
    }
    Poll::Ready(())
}

impl<O: Operation> Single<O> {
    /// The drop of a future that waited or completed without being read: unlinks its
    /// entry, or gives back what its operation took.
    #[inline(never)]
    fn drop_unfinished(self: Pin<&mut Self>) {
        let this = self.project();
        let op = this.op.as_ref().get_ref();
        let claim = this.claim.into_ref().get_ref();
        match *this.stage {
            Stage::Start | Stage::Taken => {}
            Stage::Done => op.abandon(),
            Stage::Waiting => {
                if claim.seen() == Seen::Pending {
                    let held = Held::lock(op);
                    match claim.cancel() {
                        Ok(owner) => {
                            // SAFETY: the lock is held; the entry is unlinked before
                            // the op's memory goes.
                            unsafe { op.unregister() };
                            drop(held);
                            drop(owner);
                            return;
                        }
                        // Fired while we waited for the lock.
                        Err(_) => drop(held),
                    }
                }
                // SAFETY: the claim fired this (only) arm.
                unsafe { op.take_fired() };
                op.abandon();
            }
        }
    }
}

/// Records, for dumps and deadlock detection, what `owner` now waits on. Inline and on
/// the concrete operation: every wait that blocks records one.
#[inline]
fn record_wait<O: Operation>(owner: &Owner, op: &O) {
    crate::wait::record::record_for(owner, op.describe(), op.is_foreign());
}

impl<O: Operation> Single<O> {
    pub(crate) fn new(op: O) -> Self {
        Single {
            claim: Claim::new(),
            op,
            stage: Stage::Start,
        }
    }

    pub(crate) fn op(self: Pin<&Self>) -> &O {
        self.project_ref().op.get_ref()
    }

    pub(crate) fn is_terminated(&self) -> bool {
        matches!(self.stage, Stage::Done | Stage::Taken)
    }

    /// Marks the outcome as taken by the future's output, for good.
    #[inline]
    pub(crate) fn taken(self: Pin<&mut Self>) {
        debug_assert_eq!(self.stage, Stage::Done);
        *self.project().stage = Stage::Taken;
    }

    /// Marks the outcome as read (so a drop does not give it back), with the operation
    /// ready to serve again (a `Receiver`'s `poll_recv` node).
    pub(crate) fn consumed(self: Pin<&mut Self>) {
        debug_assert_eq!(self.stage, Stage::Done);
        *self.project().stage = Stage::Start;
    }

    /// Drives the operation; `Ready` once its outcome is stored in the op.
    #[inline]
    pub(crate) fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        let op = this.op.as_ref().get_ref();
        let claim = this.claim.into_ref().get_ref();
        match *this.stage {
            Stage::Start => {
                let held = Held::lock(op);
                let mut wakes = Wakes::default();
                // SAFETY: the lock is held.
                if unsafe { op.try_now(claim, &mut wakes) } {
                    drop(held);
                    // Done before the wakes run: should a waker panic, the drop of this
                    // future finds the outcome and gives a received value back.
                    *this.stage = Stage::Done;
                    wakes.run();
                    return Poll::Ready(());
                }
                let (owner, held) = match Owner::internal(cx.waker()) {
                    Some(owner) => {
                        record_wait(&owner, op);
                        (owner, held)
                    }
                    // A foreign owner records no wait.
                    None => {
                        // A foreign waker is cloned with the lock dropped: no foreign code
                        // runs under it. Then try again, as the channel may have changed.
                        drop(held);
                        let owner = Owner::foreign(cx.waker());
                        let held = Held::lock(op);
                        // SAFETY: the lock is held.
                        if unsafe { op.try_now(claim, &mut wakes) } {
                            drop(held);
                            *this.stage = Stage::Done;
                            // The wakes first: the owner's drop is foreign code too, and
                            // must not unwind past them.
                            let woken = wakes.run_catching();
                            drop(owner);
                            if let Err(panic) = woken {
                                resume(panic);
                            }
                            return Poll::Ready(());
                        }
                        (owner, held)
                    }
                };
                // One entry in one channel: its lock orders every change to the flag.
                claim.begin_wait_on_one(owner);
                // SAFETY: the lock is held; the op is pinned and `Drop` unregisters it;
                // the claim lives beside it in this pinned struct.
                unsafe { op.register(NonNull::from(claim), 0, &mut wakes) };
                drop(held);
                // Waiting before the wakes run: should a waker panic, the drop of this
                // future unlinks the entry.
                *this.stage = Stage::Waiting;
                wakes.run();
                Poll::Pending
            }
            Stage::Waiting => {
                if claim.seen() == Seen::Pending {
                    // Polled again while still waiting: the dump must still say on what
                    // (each poll of a process starts with a blank wait word).
                    let fresh = Owner::from_waker(cx.waker());
                    record_wait(&fresh, op);
                    let held = Held::lock(op);
                    if claim.seen() == Seen::Pending {
                        let old = claim.replace_owner(fresh);
                        drop(held);
                        drop(old);
                        return Poll::Pending;
                    }
                    drop(held);
                }
                // SAFETY: the claim fired this (only) arm.
                unsafe { op.take_fired() };
                claim.reset();
                *this.stage = Stage::Done;
                Poll::Ready(())
            }
            Stage::Done | Stage::Taken => polled_again(*this.stage),
        }
    }
}
