//! What a worker does with one process: poll it, cancel it, complete it, hand its output
//! to the `JoinHandle`. Generic over the future; reached through the vtable (raw.rs).
//!
//! Panics from the future's `poll`, from dropping the future and from dropping an output
//! nobody will read are all caught: a process never takes its worker down.

use std::future::Future;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};

use crate::loom::sync::atomic::Ordering;
use crate::task::JoinError;
use crate::task::cell::{Cell, Stage};
use crate::task::header::Header;
use crate::task::join_waiter::JoinWaiter;
use crate::task::loan::{Offer, PollRef};
use crate::task::panic::{catching, discard, drop_foreign};
use crate::task::raw::{Notified, RawTask};
use crate::task::scheduler::{self, Schedule, Scheduler};
use crate::task::state::{JoinDrop, ToIdle, ToRunning};
use crate::task::waker::waker_ref;

struct Harness<F: Future, S: Scheduler> {
    cell: NonNull<Cell<F>>,
    _scheduler: PhantomData<S>,
}

impl<F: Future, S: Scheduler> Harness<F, S> {
    /// # Safety
    /// `ptr` must point to a live `Cell<F>`.
    unsafe fn from_raw(ptr: NonNull<Header>) -> Self {
        Harness {
            cell: ptr.cast(),
            _scheduler: PhantomData,
        }
    }

    fn cell(&self) -> &Cell<F> {
        // SAFETY: the caller of `from_raw` keeps the allocation alive while we use it.
        unsafe { self.cell.as_ref() }
    }

    /// The console's figures of this process.
    #[cfg(feature = "console")]
    fn stats(&self) -> &crate::task::stats::ProcessStats {
        &self.cell().stats
    }

    fn raw(&self) -> RawTask {
        // SAFETY: as in `cell`.
        unsafe { RawTask::from_raw(self.cell.cast()) }
    }

    /// Replaces the stage, dropping what was there; catches a panic of that drop.
    ///
    /// # Safety
    /// The caller must own the stage (state.rs: the `Running` owner, or the owner of the
    /// output once complete).
    unsafe fn set_stage(&self, stage: Stage<F>) -> std::thread::Result<()> {
        panic::catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the caller owns the stage.
            self.cell().stage.with_mut(|old| unsafe { *old = stage })
        }))
    }

    /// Drops an output that nobody will read (its `JoinHandle` is gone); a panic of
    /// its drop is nobody's to report (the panic hook has) and must not unwind into the
    /// caller, a worker or a `JoinHandle`'s drop.
    ///
    /// # Safety
    /// The caller must own the output (state.rs: complete, with `JOIN_INTEREST` its).
    unsafe fn drop_output(&self) {
        // SAFETY: per the caller.
        if let Err(payload) = unsafe { self.set_stage(Stage::Consumed) } {
            discard(payload);
        }
    }

    /// One scheduled step, consuming the reference of the run queue entry, or of the
    /// handoff slot if `handed` (the process is `Running` already). With `rest`, a poll
    /// that returns `Pending` leaves the process `Running` and returns what became of
    /// the reference, for the caller to hold as a [`Resting`](crate::task::Resting)
    /// process and put to sleep later (`Resting::sleep`, which leaves what follows a
    /// transition that did not end in `Sleeping` to its caller, through `Unslept` and
    /// [`not_slept`](Self::not_slept)).
    #[inline(always)]
    fn run(self, handed: bool, rest: bool) -> Option<PollRef> {
        // One function for both, with the step below made once: two copies of it each
        // inlined less of the poll (70 instructions more a ping_pong round trip).
        let state = &self.cell().header.state;
        let to_running = if handed {
            state.handed_to_running()
        } else {
            state.transition_to_running()
        };
        // The entry's reference, unless the poll lends it (`loan.rs`); and the
        // registry's, if completing the process handed it to this step.
        let mut poll_ref = PollRef::Held;
        let registry_ref = match to_running {
            ToRunning::Stale => false,
            // SAFETY: `transition_to_running` made this worker the owner of the future,
            // or the hand-off to its slot did (`transition_to_handed_by_val`).
            ToRunning::Cancel => unsafe { self.cancel() },
            // SAFETY: as above.
            ToRunning::Poll => {
                #[cfg(feature = "console")]
                self.stats().note_poll();
                // SAFETY: as above.
                let (polled, lent) = unsafe { self.poll_future() };
                poll_ref = lent;
                match polled {
                    // SAFETY: still the owner of the future (still `Running`).
                    Some(result) => unsafe { self.complete(result) },
                    None if rest => return Some(poll_ref),
                    None => {
                        self.sleep(poll_ref);
                        return None;
                    }
                }
            }
        };
        self.release(poll_ref, registry_ref);
        None
    }

    /// After a `Pending` poll: Running → Sleeping, or re-queued if woken meanwhile, or
    /// the future dropped if cancelled meanwhile. `poll_ref` says whether the poller
    /// still holds the entry's reference.
    #[inline(always)]
    fn sleep(self, poll_ref: PollRef) {
        let outcome = self.cell().header.state.transition_to_idle(poll_ref);
        // The entry's reference (if held) went with the transition.
        if outcome != ToIdle::Slept {
            self.not_slept(poll_ref, outcome);
        }
    }

    /// What follows a transition to idle that did not end in `Sleeping`: the process
    /// re-queued (woken during the poll), or its future dropped (cancelled).
    #[inline(always)]
    fn not_slept(self, poll_ref: PollRef, outcome: ToIdle) {
        let registry_ref = match outcome {
            // Nothing follows (and callers skip the call).
            ToIdle::Slept => return,
            ToIdle::Requeue => {
                #[cfg(feature = "console")]
                self.stats().note_requeue();
                let scheduler = self.cell().header.scheduler.as_ptr();
                // SAFETY: the transition left the poller one reference for the re-queued
                // entry.
                let entry = unsafe { Notified::from_raw(self.raw()) };
                // SAFETY: the vtable was made for `S` (`raw::vtable::<F, S>`); the
                // pointer was copied out of the header before the hand-over.
                unsafe { scheduler::schedule::<S>(scheduler, entry, Schedule::Yield) };
                return;
            }
            // SAFETY: `Cancel` leaves the poller the owner of the future.
            ToIdle::Cancel => unsafe { self.cancel() },
        };
        self.release(poll_ref, registry_ref);
    }

    /// Releases, once the step is done with the process, the references it holds: the
    /// entry's unless lent, and the registry's if it has it.
    #[inline(always)]
    fn release(self, poll_ref: PollRef, registry_ref: bool) {
        let held = usize::from(poll_ref == PollRef::Held) + usize::from(registry_ref);
        if held > 0 {
            // SAFETY: the references this step holds, given up here.
            unsafe { self.raw().drop_references(held) }
        }
    }

    /// Polls the future once, offering the entry's reference (`loan.rs`): `Some` with
    /// its result if it finished (or panicked), and what became of the reference.
    ///
    /// # Safety
    /// The caller must own the future (`Running`) and hold a run queue entry's reference.
    unsafe fn poll_future(&self) -> (Option<Result<F::Output, JoinError>>, PollRef) {
        let header = &self.cell().header;
        // SAFETY: the vtable was made for `S`.
        let blank = unsafe { header.scheduler.get::<S>() }.blank_wait();
        // Relaxed: the wait word is read only by dumps and deadlock detection; this poll
        // records afresh what the process blocks on.
        header.wait.store(blank, Ordering::Relaxed);
        let waker = waker_ref(self.cell.cast());
        let mut cx = Context::from_waker(&waker);
        let offer = Offer::new(self.cell.cast());
        // Nothing unwinds past the offer: the poll's panic is caught here.
        let polled = panic::catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the caller owns the future; it is never moved out of the cell.
            self.cell()
                .stage
                .with_mut(|stage| match unsafe { &mut *stage } {
                    Stage::Running(future) => unsafe { Pin::new_unchecked(future) }.poll(&mut cx),
                    _ => unreachable!("csp: a process was polled after it completed"),
                })
        }));
        let poll_ref = offer.settle();
        // SAFETY: still the owner of the future (the caller's contract).
        (unsafe { self.poll_result(polled) }, poll_ref)
    }

    /// What a poll came to: `None` if pending, else the output or the panic (of the
    /// poll, or of dropping the future, which happens here).
    ///
    /// # Safety
    /// The caller must own the future (`Running`).
    #[inline]
    unsafe fn poll_result(
        &self,
        polled: std::thread::Result<Poll<F::Output>>,
    ) -> Option<Result<F::Output, JoinError>> {
        let id = self.cell().header.id;
        let result = match polled {
            Ok(Poll::Pending) => return None,
            Ok(Poll::Ready(output)) => Ok(output),
            Err(payload) => Err(JoinError::panicked(id, payload)),
        };
        // SAFETY: still the owner of the future; drop it before publishing the output.
        match unsafe { self.set_stage(Stage::Consumed) } {
            Ok(()) => Some(result),
            Err(payload) => {
                // Dropping the future panicked: that panic is the result.
                catching(move || drop(result));
                Some(Err(JoinError::panicked(id, payload)))
            }
        }
    }

    /// Drops the future and completes with a cancellation (or with the panic of the
    /// future's drop). Returns whether the registry's reference is now the caller's, as
    /// [`complete`](Self::complete).
    ///
    /// # Safety
    /// The caller must own the future (`Running`).
    #[must_use]
    unsafe fn cancel(&self) -> bool {
        let id = self.cell().header.id;
        // SAFETY: the caller owns the future.
        let result = match unsafe { self.set_stage(Stage::Consumed) } {
            Ok(()) => JoinError::cancelled(id),
            Err(payload) => JoinError::panicked(id, payload),
        };
        // SAFETY: still the owner (`Running`).
        unsafe { self.complete(Err(result)) }
    }

    /// Stores the output, leaves the registry, publishes completion, and wakes or
    /// releases the `JoinHandle`'s side. Returns true if the registry's reference is
    /// now the caller's to release, once it is done with the process: it unlinked the
    /// process here, or a shutdown that unlinked it left the reference to this poller
    /// (state.rs). Until then that reference keeps the process alive, even if the
    /// caller lent its own: nobody else releases it before the process is complete, and
    /// the shutdown walker decides whose it is under the lock `release` takes here, so
    /// `before` says so (`loan.rs`, invariant I2). False only where the caller holds that
    /// reference itself: the shutdown walker's cancellation, or a spawn's at shutdown.
    ///
    /// # Safety
    /// The caller must own the future (`Running`), already dropped.
    #[must_use]
    unsafe fn complete(&self, result: Result<F::Output, JoinError>) -> bool {
        let header = &self.cell().header;
        // SAFETY: still the owner; the stage is `Consumed`, so nothing panics here.
        let _ = unsafe { self.set_stage(Stage::Finished(result)) };
        // Leave the registry before anyone can see the completion: once its JoinHandle
        // resolves, a process is no longer live (API.md).
        // SAFETY: the vtable was made for `S`.
        let unlinked = unsafe { header.scheduler.get::<S>() }.release(self.raw());
        let before = header.state.transition_to_complete();
        if !before.has_join_interest() {
            // Nobody will read the output: it is ours to drop. SAFETY: COMPLETE without
            // JOIN_INTEREST leaves the output with the completer.
            unsafe { self.drop_output() }
        } else if before.has_join_waker() {
            // The waker is the awaiting side's code (perhaps another executor's): a panic
            // in it must not unwind through this worker.
            catching(|| {
                // SAFETY: with COMPLETE and JOIN_WAKER both set, the slot is the
                // completer's to read and nobody writes it.
                header.join_waker.with(|slot| {
                    if let Some(waker) = unsafe { &*slot } {
                        waker.wake_by_ref();
                    }
                })
            });
        }
        unlinked || before.registry_left()
    }
}

/// Vtable entry: one scheduled step; with `rest`, `Some` if the poll returned `Pending`
/// and left the process `Running` (`Harness::run`).
///
/// # Safety
/// `ptr` is a live `Cell<F>` and the caller gives up a run queue entry's reference, or,
/// if `handed`, the reference of a worker's handoff slot, for which the process is
/// `Running`. On `Some`, the caller holds the process `Running` with that reference
/// (unless lent), and must put it to sleep (`Resting::sleep`).
pub(crate) unsafe fn run<F: Future, S: Scheduler>(
    ptr: NonNull<Header>,
    handed: bool,
    rest: bool,
) -> Option<PollRef> {
    // SAFETY: the caller's reference keeps the cell alive.
    unsafe { Harness::<F, S>::from_raw(ptr) }.run(handed, rest)
}

/// Vtable entry: finishes the transition after a `Pending` poll that [`run`] put off,
/// when it did not end in `Sleeping` (`Resting::sleep` makes the transition itself).
///
/// # Safety
/// `ptr` is a live `Cell<F>`, left `Running` by [`run`] with `poll_ref`, whose holder
/// made `transition_to_idle(poll_ref)` with this `outcome` (not `Slept`) and gives up
/// what it left: the re-queued entry's reference, or the ownership of the future.
pub(crate) unsafe fn not_slept<F: Future, S: Scheduler>(
    ptr: NonNull<Header>,
    poll_ref: PollRef,
    outcome: ToIdle,
) {
    // SAFETY: the re-queued entry's reference keeps the cell alive, or, cancelled and
    // still `Running`, the registry's, which only the completer releases (`loan.rs`,
    // I2).
    unsafe { Harness::<F, S>::from_raw(ptr) }.not_slept(poll_ref, outcome)
}

/// Vtable entry: wakes a process through its scheduler, consuming a reference.
///
/// # Safety
/// `ptr` is a live process made for a scheduler of type `S`; the caller gives up one of
/// its references.
pub(crate) unsafe fn wake<S: Scheduler>(ptr: NonNull<Header>) {
    // SAFETY: the caller's reference keeps the process alive while its scheduler pointer
    // is copied out.
    let scheduler = unsafe { ptr.as_ref() }.scheduler.as_ptr();
    // SAFETY: the vtable was made for `S`; the caller's reference passes to the call.
    unsafe { scheduler::wake::<S>(scheduler, RawTask::from_raw(ptr)) }
}

/// Vtable entry: wakes a process through its scheduler, keeping the caller's reference.
///
/// # Safety
/// `ptr` is a live process made for a scheduler of type `S`, which the caller keeps
/// alive for the call.
pub(crate) unsafe fn wake_by_ref<S: Scheduler>(ptr: NonNull<Header>) {
    // SAFETY: the caller keeps the process alive while its scheduler pointer is copied
    // out.
    let scheduler = unsafe { ptr.as_ref() }.scheduler.as_ptr();
    // SAFETY: the vtable was made for `S`; the process stays alive for the call.
    unsafe { scheduler::wake_by_ref::<S>(scheduler, RawTask::from_raw(ptr)) }
}

/// Vtable entry: frees the allocation.
///
/// # Safety
/// `ptr` is a `Cell<F>` made for a scheduler of type `S`, whose last reference is gone.
pub(crate) unsafe fn dealloc<F: Future, S: Scheduler>(ptr: NonNull<Header>) {
    // SAFETY: made by `Box::leak` in `Cell::allocate`; nobody else can reach it.
    let cell = unsafe { Box::from_raw(ptr.cast::<Cell<F>>().as_ptr()) };
    // SAFETY: the vtable was made for `S`; the process held this reference until now.
    unsafe { cell.header.scheduler.release::<S>() };
    // The stored join waker is foreign code whose drop may panic; the memory is freed
    // either way, and the panic must not unwind through a worker.
    catching(move || drop(cell));
}

/// Vtable entry: puts a run queue entry of a woken process on its scheduler's queues.
///
/// # Safety
/// `ptr` is a live process made for a scheduler of type `S`.
pub(crate) unsafe fn schedule<S: Scheduler>(ptr: NonNull<Header>, entry: Notified) {
    // SAFETY: the entry's reference keeps the process alive while its scheduler pointer
    // is copied out; the vtable was made for `S`.
    let scheduler = unsafe { ptr.as_ref() }.scheduler.as_ptr();
    // SAFETY: as above; nothing refers to the process once the entry is handed over.
    unsafe { scheduler::schedule::<S>(scheduler, entry, Schedule::Wake) }
}

/// Vtable entry: the id of the process's runtime.
///
/// # Safety
/// As [`schedule`].
pub(crate) unsafe fn runtime_id<S: Scheduler>(ptr: NonNull<Header>) -> u64 {
    // SAFETY: per the caller.
    unsafe { ptr.as_ref().scheduler.get::<S>() }.id()
}

/// Vtable entry: `JoinHandle::poll`.
///
/// # Safety
/// `ptr` is a live `Cell<F>` whose `JoinHandle` calls this, and `dst` points to a
/// `Poll<Result<F::Output, JoinError>>`.
pub(crate) unsafe fn try_read_output<F: Future, S: Scheduler>(
    ptr: NonNull<Header>,
    dst: *mut (),
    waker: &Waker,
) {
    // SAFETY: the JoinHandle's reference keeps the cell alive.
    let harness = unsafe { Harness::<F, S>::from_raw(ptr) };
    let header = &harness.cell().header;
    // SAFETY: the vtable was made for `S`.
    let runtime = unsafe { header.scheduler.get::<S>() }.id();
    if !can_read_output::<S::JoinWaiter>(header, runtime, waker) {
        return;
    }
    // SAFETY: complete with JOIN_INTEREST held by the caller: the output is the
    // JoinHandle's.
    let stage = harness
        .cell()
        .stage
        .with_mut(|stage| std::mem::replace(unsafe { &mut *stage }, Stage::Consumed));
    let Stage::Finished(result) = stage else {
        panic!("csp: a JoinHandle was polled again after it returned Ready");
    };
    // SAFETY: the caller passes a pointer to the output's `Poll`.
    unsafe { *dst.cast::<Poll<Result<F::Output, JoinError>>>() = Poll::Ready(result) };
}

/// True if the output can be read now; otherwise `waker` is stored for completion.
fn can_read_output<J: JoinWaiter>(header: &Header, runtime: u64, waker: &Waker) -> bool {
    let state = &header.state;
    let snapshot = state.load();
    if snapshot.is_complete() {
        return true;
    }
    // For dumps and deadlock detection.
    J::record(waker, header.id, runtime, snapshot.is_blocking());
    if snapshot.has_join_waker() {
        // SAFETY: JOIN_WAKER is set and only the completer reads the slot meanwhile;
        // reading it here as well is a shared access.
        let same = header.join_waker.with(|slot| {
            unsafe { &*slot }
                .as_ref()
                .is_some_and(|stored| J::same(stored, waker))
        });
        if same {
            return false;
        }
        if state.unset_join_waker().is_err() {
            return true;
        }
    }
    // csp keeps this waker: for its own wakers, an internal clone, not counted as held
    // outside csp.
    let stored = J::keep(waker);
    // SAFETY: JOIN_WAKER is clear and the process not complete: the slot is ours.
    header
        .join_waker
        .with_mut(|slot| unsafe { *slot = Some(stored) });
    state.set_join_waker().is_err()
}

/// Vtable entry: the `JoinHandle` is dropped.
///
/// # Safety
/// `ptr` is a live `Cell<F>`; the caller gives up the `JoinHandle`'s reference.
pub(crate) unsafe fn drop_join_handle<F: Future, S: Scheduler>(ptr: NonNull<Header>) {
    /// Gives up the `JoinHandle`'s reference when dropped: even if a drop before it
    /// panics (a stored waker's is its owner's code), so the process is still freed.
    struct Release(RawTask);

    impl Drop for Release {
        fn drop(&mut self) {
            // SAFETY: the JoinHandle's reference, given up by the caller, released once.
            unsafe { self.0.drop_reference() }
        }
    }

    // SAFETY: the JoinHandle's reference keeps the cell alive until released below.
    let harness = unsafe { Harness::<F, S>::from_raw(ptr) };
    let _release = Release(harness.raw());
    match harness.cell().header.state.unset_join_interest() {
        // SAFETY: complete, and JOIN_INTEREST was still ours: the output is ours.
        JoinDrop::DropOutput => unsafe { harness.drop_output() },
        JoinDrop::Detached { owns_waker: true } => {
            // SAFETY: JOIN_WAKER was cleared before completion: the slot is ours.
            let waker = harness
                .cell()
                .header
                .join_waker
                .with_mut(|slot| unsafe { (*slot).take() });
            // The awaiting side's code, dropped perhaps while the handle's owner unwinds.
            drop_foreign(waker);
        }
        JoinDrop::Detached { owns_waker: false } => {}
    }
}

/// Vtable entry: drops the future of a process that a shutdown's transition gave to the
/// caller ([`Shutdown::Cancel`](crate::task::state::Shutdown::Cancel)), completing it as
/// cancelled (or with the panic of that drop). The registry's reference stays with the
/// caller, who unlinked the process or never linked it.
///
/// # Safety
/// `ptr` is a live `Cell<F>`, made `Running` for the caller by
/// `State::transition_to_shutdown`; the caller holds a reference across the call.
pub(crate) unsafe fn cancel_at_shutdown<F: Future, S: Scheduler>(ptr: NonNull<Header>) {
    // SAFETY: the caller's reference keeps the cell alive.
    let harness = unsafe { Harness::<F, S>::from_raw(ptr) };
    // SAFETY: the shutdown transition made the caller the owner of the future.
    let registry_ref = unsafe { harness.cancel() };
    // Nobody but the caller could have unlinked the process, nor left it the
    // registry's reference.
    debug_assert!(!registry_ref);
}
