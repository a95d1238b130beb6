//! Type-erased access to a process: the vtable, an unowned pointer, and the run queue
//! entry that owns one reference.

use std::future::Future;
use std::ptr::NonNull;
use std::task::Waker;

use crate::task::harness;
use crate::task::header::Header;
use crate::task::loan::{self, PollRef};
use crate::task::scheduler::Scheduler;
use crate::task::state::{Notify, NotifyByVal, Shutdown, State, ToIdle};

/// The operations that depend on the future's type.
pub(crate) struct Vtable {
    /// Runs one scheduled step (poll, cancel, or discard a stale entry), consuming the
    /// run queue entry's reference; with `handed` (the first flag), of a process handed
    /// to a worker's slot, `Running` already, consuming the slot's reference. With
    /// `rest` (the second), a `Pending` poll leaves the process `Running` and returns
    /// what became of the reference, for a [`Resting`] to hold.
    pub(crate) run: unsafe fn(NonNull<Header>, bool, bool) -> Option<PollRef>,
    /// Finishes the transition a [`Resting`] process put off, when it did not end in
    /// `Sleeping`: re-queues the process, or drops its future if cancelled meanwhile.
    pub(crate) not_slept: unsafe fn(NonNull<Header>, PollRef, ToIdle),
    /// Frees the allocation once the last reference is gone.
    pub(crate) dealloc: unsafe fn(NonNull<Header>),
    /// `JoinHandle::poll`: writes `Poll::Ready(output)` through the `*mut ()` (a
    /// `*mut Poll<Result<F::Output, JoinError>>`) if complete, else registers the waker.
    pub(crate) try_read_output: unsafe fn(NonNull<Header>, *mut (), &Waker),
    /// Drops the `JoinHandle`'s interest and its reference.
    pub(crate) drop_join_handle: unsafe fn(NonNull<Header>),
    /// Runtime shutdown: drops the future of a process whose shutdown transition gave it
    /// to the caller, and completes it as cancelled. The caller keeps (and then releases)
    /// the registry entry's reference.
    pub(crate) cancel_at_shutdown: unsafe fn(NonNull<Header>),
    /// Puts a run queue entry of a woken (or aborted) process on its scheduler's queues,
    /// as [`Schedule::Wake`](crate::task::Schedule::Wake): wakes are its only callers,
    /// so the scheduler's wake path is compiled into it with nothing left to decide.
    pub(crate) schedule: unsafe fn(NonNull<Header>, Notified),
    /// The id of the runtime the process belongs to.
    pub(crate) runtime_id: unsafe fn(NonNull<Header>) -> u64,
    /// Wakes the process, consuming a reference, through its scheduler's
    /// [`Scheduler::wake`]: to the waking worker's handoff slot if it can take it.
    pub(crate) wake: unsafe fn(NonNull<Header>),
    /// Wakes the process, keeping the caller's reference, through its scheduler's
    /// [`Scheduler::wake_by_ref`]: the waking worker's resting process goes to its
    /// handoff slot.
    pub(crate) wake_by_ref: unsafe fn(NonNull<Header>),
}

/// The vtable for futures of type `F` run by schedulers of type `S`.
pub(crate) fn vtable<F: Future + Send + 'static, S: Scheduler>() -> &'static Vtable
where
    F::Output: Send + 'static,
{
    &Vtable {
        run: harness::run::<F, S>,
        not_slept: harness::not_slept::<F, S>,
        dealloc: harness::dealloc::<F, S>,
        try_read_output: harness::try_read_output::<F, S>,
        drop_join_handle: harness::drop_join_handle::<F, S>,
        cancel_at_shutdown: harness::cancel_at_shutdown::<F, S>,
        schedule: harness::schedule::<S>,
        runtime_id: harness::runtime_id::<S>,
        wake: harness::wake::<S>,
        wake_by_ref: harness::wake_by_ref::<S>,
    }
}

/// An unowned pointer to a process. Whoever copies it must hold, or be lent, one of the
/// process's references for as long as it uses the copy.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawTask {
    ptr: NonNull<Header>,
}

// SAFETY: a process may be touched from any thread: its state word is atomic, and every
// other field is either immutable or owned through that word (state.rs). Its future and
// output are `Send` (the spawn functions require it).
unsafe impl Send for RawTask {}
// SAFETY: as for `Send`; `RawTask` itself is a plain pointer.
unsafe impl Sync for RawTask {}

impl RawTask {
    /// Wraps a header pointer.
    ///
    /// # Safety
    /// `ptr` must point to a live process allocation.
    pub(crate) unsafe fn from_raw(ptr: NonNull<Header>) -> RawTask {
        RawTask { ptr }
    }

    pub(crate) fn as_ptr(self) -> NonNull<Header> {
        self.ptr
    }

    pub(crate) fn header<'a>(self) -> &'a Header {
        // SAFETY: whoever copied this pointer holds a reference (type invariant), so the
        // allocation is live; the header's fields are atomic or immutable.
        unsafe { self.ptr.as_ref() }
    }

    pub(crate) fn state<'a>(self) -> &'a State {
        &self.header().state
    }

    pub(crate) fn id(self) -> u64 {
        self.header().id
    }

    /// The console's figures of the process (feature `console`).
    #[cfg(feature = "console")]
    pub(crate) fn stats<'a>(self) -> &'a crate::task::stats::ProcessStats {
        // SAFETY: whoever copied this pointer holds a reference (type invariant), so the
        // allocation is live.
        unsafe { Header::stats(self.ptr) }
    }

    /// The id of the runtime the process belongs to.
    pub(crate) fn runtime_id(self) -> u64 {
        // SAFETY: the caller's reference keeps the process live (type invariant).
        unsafe { (self.header().vtable.runtime_id)(self.ptr) }
    }

    /// Adds a reference (for a new waker or entry).
    #[inline]
    pub(crate) fn ref_inc(self) {
        self.state().ref_inc();
    }

    /// Releases one reference the caller holds, freeing the process if it was the last.
    ///
    /// # Safety
    /// The caller must own the reference it releases and not use this pointer after.
    #[inline]
    pub(crate) unsafe fn drop_reference(self) {
        // SAFETY: per the caller.
        unsafe { self.drop_references(1) }
    }

    /// Releases `n` references the caller holds in one step, freeing the process if
    /// they were the last.
    ///
    /// # Safety
    /// The caller must own the `n` references and not use this pointer after.
    #[inline]
    pub(crate) unsafe fn drop_references(self, n: usize) {
        if self.state().ref_sub(n) {
            // SAFETY: those were the last references; nobody else can reach the process.
            unsafe { (self.header().vtable.dealloc)(self.ptr) }
        }
    }

    /// Releases the reference of a waker held outside csp, which stops counting as one
    /// in the same step; frees the process if it was the last.
    ///
    /// # Safety
    /// As [`drop_reference`](Self::drop_reference).
    pub(crate) unsafe fn drop_foreign_reference(self) {
        if self.state().foreign_waker_release() {
            // SAFETY: that was the last reference; nobody else can reach the process.
            unsafe { (self.header().vtable.dealloc)(self.ptr) }
        }
    }

    /// Wakes the process, consuming one reference the caller holds (a `Waker`'s, or an
    /// internal one such as a channel entry's).
    #[inline]
    pub(crate) fn wake_by_val(self) {
        self.finish_wake_by_val(self.state().transition_to_notified_by_val());
    }

    /// As [`wake_by_val`](Self::wake_by_val), consuming the reference of a waker held
    /// outside csp, which stops counting as one in the same step.
    pub(crate) fn wake_foreign_by_val(self) {
        self.finish_wake_by_val(self.state().transition_to_notified_by_foreign_val());
    }

    #[inline]
    fn finish_wake_by_val(self, how: NotifyByVal) {
        match how {
            // SAFETY: the caller's reference became the run queue entry's.
            NotifyByVal::Submit => unsafe { self.submit() },
            NotifyByVal::DoNothing => {}
            // SAFETY: the caller's reference was the last.
            NotifyByVal::Dealloc => unsafe { (self.header().vtable.dealloc)(self.ptr) },
        }
    }

    /// Wakes the process for its scheduler's handoff slot, consuming one reference the
    /// caller holds: `Some` with the slot's entry if the process was asleep (now
    /// `Running`, state.rs), `None` if the wake had nothing to schedule.
    #[inline]
    pub(crate) fn hand_off_by_val(self) -> Option<Handed> {
        match self.state().transition_to_handed_by_val() {
            NotifyByVal::Submit => Some(Handed(self)),
            // Nothing to schedule: released, or freed if it was the last reference.
            nothing => {
                self.finish_wake_by_val(nothing);
                None
            }
        }
    }

    /// One scheduled step through the vtable's `run` (its flags as there); a `Pending`
    /// poll with `rest` comes back as the [`Resting`] process.
    ///
    /// # Safety
    /// The caller gives up a run queue entry's reference or, with `handed`, a handoff
    /// slot's, for which the process is `Running`; `run` releases it or, on `Some`,
    /// leaves it (unless lent) to the `Resting`.
    #[inline(always)]
    unsafe fn run_step(self, handed: bool, rest: bool) -> Option<Resting> {
        // SAFETY: per the caller.
        let poll_ref = unsafe { (self.header().vtable.run)(self.ptr, handed, rest) }?;
        Some(Resting {
            raw: self,
            poll_ref,
        })
    }

    /// Wakes the process without consuming a reference, through its scheduler, for a
    /// waker csp keeps (the join-waker slot's): the waking worker's resting process
    /// goes to its handoff slot ([`Resting`]).
    ///
    /// # Safety
    /// The caller holds a reference for the call.
    #[inline]
    pub(crate) unsafe fn wake_internal_by_ref(self) {
        // SAFETY: the caller's reference keeps the process alive for the call.
        unsafe { (self.header().vtable.wake_by_ref)(self.ptr) }
    }

    /// Wakes the process without consuming a reference.
    pub(crate) fn wake_by_ref(self) {
        if self.state().transition_to_notified_by_ref() == Notify::Submit {
            // SAFETY: the transition added the reference the entry owns.
            unsafe { self.submit() }
        }
    }

    /// Puts the process on a run queue after a transition to `Queued` (a wake or an
    /// abort).
    ///
    /// # Safety
    /// The caller gives up one reference, which becomes the run queue entry's.
    #[inline]
    pub(crate) unsafe fn submit(self) {
        // SAFETY: per the caller.
        let entry = unsafe { Notified::from_raw(self) };
        // SAFETY: the entry holds a reference: the process is live.
        unsafe { (self.header().vtable.schedule)(self.ptr, entry) }
    }

    /// Runtime shutdown of one process whose registry reference the caller holds: takes
    /// the future of an idle process, or leaves a running one cancelled to its poller,
    /// together with the registry's reference (state.rs, [`REGISTRY_LEFT`]). What
    /// follows is [`finish_shutdown`](Self::finish_shutdown)'s.
    ///
    /// A caller that unlinked the process from the registry makes this transition under
    /// the lock it unlinked it under, so that the process's poller, which takes that
    /// lock to leave the registry before it completes the process, either unlinked the
    /// process itself or finds the reference left to it (`loan.rs`, invariant I2).
    ///
    /// [`REGISTRY_LEFT`]: crate::task::state::REGISTRY_LEFT
    pub(crate) fn transition_to_shutdown(self) -> Shutdown {
        self.state().transition_to_shutdown()
    }

    /// What follows [`transition_to_shutdown`](Self::transition_to_shutdown), outside
    /// any registry lock (dropping a future and completing its process may touch the
    /// registry): drops the future if the transition gave it to the caller, and releases
    /// the registry's reference unless it passed to the poller.
    ///
    /// # Safety
    /// The caller holds the registry's reference, and `outcome` is what this process's
    /// `transition_to_shutdown` returned to it; it does not use this pointer after.
    pub(crate) unsafe fn finish_shutdown(self, outcome: Shutdown) {
        match outcome {
            // The poller completes the process and releases the registry's reference.
            Shutdown::Running => return,
            // SAFETY: the transition gave the caller the future; its reference keeps the
            // process alive for the call.
            Shutdown::Cancel => unsafe { (self.header().vtable.cancel_at_shutdown)(self.ptr) },
            Shutdown::Done => {}
        }
        // SAFETY: the registry's reference, the caller's to release.
        unsafe { self.drop_reference() }
    }
}

impl std::fmt::Debug for RawTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "process #{} ({:?})", self.id(), self.state())
    }
}

/// An owned reference to a process (an internal one: a channel entry's owner, not a
/// `Waker`).
pub(crate) struct TaskRef(RawTask);

impl TaskRef {
    /// Takes a new reference to `raw`: the one a poll of `raw` on this thread lends,
    /// if it still does (`loan.rs`), else one more.
    #[inline]
    pub(crate) fn new(raw: RawTask) -> TaskRef {
        TaskRef(loan::take_reference(raw))
    }

    /// The process referred to.
    #[inline]
    pub(crate) fn raw(&self) -> RawTask {
        self.0
    }

    /// Wakes the process, consuming the reference: through its scheduler, which puts
    /// it in the waking worker's handoff slot if it can ([`Scheduler::wake`]).
    ///
    /// [`Scheduler::wake`]: crate::task::Scheduler::wake
    #[inline]
    pub(crate) fn wake(self) {
        let raw = self.0;
        std::mem::forget(self);
        // SAFETY: the reference, given up above, keeps the process alive for the call,
        // which consumes it.
        unsafe { (raw.header().vtable.wake)(raw.as_ptr()) }
    }
}

impl Drop for TaskRef {
    fn drop(&mut self) {
        // SAFETY: this holds one reference, released here.
        unsafe { self.0.drop_reference() }
    }
}

/// A run queue entry: owns one reference to a process that is `Queued` (or was, if a
/// shutdown completed it meanwhile).
pub(crate) struct Notified(RawTask);

impl Notified {
    /// Takes over one reference the caller owns as a run queue entry.
    ///
    /// # Safety
    /// The caller must own a reference to the process and give it up.
    pub(crate) unsafe fn from_raw(raw: RawTask) -> Notified {
        Notified(raw)
    }

    /// The process (for the console's poll sampling, feature `console`).
    #[cfg(feature = "console")]
    pub(crate) fn raw(&self) -> RawTask {
        self.0
    }

    /// Cancels the process of this entry, which nobody will run: it is marked cancelled
    /// and run here, which drops its future (user code, on this thread) and completes
    /// it as cancelled, as an abort would.
    pub(crate) fn cancel(self) {
        // `Queued` while this entry exists: the abort only marks it, and submits nothing.
        let outcome = self.0.state().transition_to_aborted();
        debug_assert!(outcome == Notify::DoNothing);
        self.run();
    }

    /// Runs one step of the process: poll it, cancel it, or discard the entry if stale.
    pub(crate) fn run(self) {
        let raw = self.0;
        std::mem::forget(self);
        // SAFETY: the entry's reference, given up above.
        let rested = unsafe { raw.run_step(false, false) };
        debug_assert!(rested.is_none());
    }

    /// As [`run`](Self::run), on a worker: a process whose poll returns `Pending` is
    /// returned still `Running`, its transition to `Sleeping` put off ([`Resting`]).
    #[inline]
    pub(crate) fn run_resting(self) -> Option<Resting> {
        let raw = self.0;
        std::mem::forget(self);
        // SAFETY: the entry's reference, given up above.
        unsafe { raw.run_step(false, true) }
    }

    /// Drops an entry that will not be run, at shutdown. Shutdown cancels processes
    /// through the registry, but not one it found in a worker's handoff slot: that one
    /// went back to a queue cancelled, its registry reference left to whoever runs it
    /// (state.rs, `REGISTRY_LEFT`), so this entry runs it, which drops its future.
    pub(crate) fn discard(self) {
        if self.0.state().load().registry_left() {
            self.run();
        }
    }
}

impl Drop for Notified {
    fn drop(&mut self) {
        // SAFETY: the entry owns one reference and is going away.
        unsafe { self.0.drop_reference() }
    }
}

/// A process a wake moved straight from `Sleeping` to `Running` for the waking worker's
/// handoff slot (state.rs): owns one reference, and the future. It must be run
/// ([`run`](Self::run)), or turned back into a run queue entry
/// ([`into_queued`](Self::into_queued)); dropped, it is put back on its scheduler's
/// queues, so that the process is never left `Running` with nobody to poll it.
pub(crate) struct Handed(RawTask);

impl Handed {
    /// The process (for the console's poll sampling, feature `console`).
    #[cfg(feature = "console")]
    pub(crate) fn raw(&self) -> RawTask {
        self.0
    }

    /// Polls the process (or drops its future, if it was cancelled meanwhile); one whose
    /// poll returns `Pending` is returned still `Running` ([`Resting`]).
    #[inline]
    pub(crate) fn run(self) -> Option<Resting> {
        let raw = self.0;
        std::mem::forget(self);
        // SAFETY: the slot's reference, given up above; the process is `Running` for it.
        unsafe { raw.run_step(true, true) }
    }

    /// The process leaves the slot unpolled: back to `Queued`, with this entry's
    /// reference as the run queue entry's.
    pub(crate) fn into_queued(self) -> Notified {
        let raw = self.0;
        std::mem::forget(self);
        raw.state().transition_handed_to_queued();
        Notified(raw)
    }
}

impl Drop for Handed {
    fn drop(&mut self) {
        // Not on any normal path (a worker runs its slot or queues what leaves it), but
        // a process must not be left `Running` with no poller.
        let entry = Handed(self.0).into_queued();
        // SAFETY: the entry's reference keeps the process alive for the call.
        unsafe { (self.0.header().vtable.schedule)(self.0.as_ptr(), entry) }
    }
}

/// A process whose poll on a worker returned `Pending`, held by that worker still
/// `Running`, its transition to `Sleeping` put off (`runtime/worker.rs`, the resting
/// slot): woken by the worker's next poll, it goes to the handoff slot with no atomic
/// operation at all ([`woken`](Self::woken)); otherwise it is put to sleep
/// ([`sleep`](Self::sleep)). To everyone else it is a process being polled (state.rs):
/// a wake from elsewhere marks it `Yielding`, an abort or shutdown `CANCELLED`, and the
/// put-off transition acts on either. Holds the poll's reference, unless the poll lent
/// it (`loan.rs`); the registry's keeps the process alive meanwhile, as during the poll.
/// Dropped, it is put to sleep, so that it is never left `Running` with nobody to poll
/// it or put it to sleep.
pub(crate) struct Resting {
    raw: RawTask,
    poll_ref: PollRef,
}

impl Resting {
    /// The process.
    #[inline]
    pub(crate) fn raw(&self) -> RawTask {
        self.raw
    }

    /// The transition its poll put off (state.rs, `transition_to_idle`), made here
    /// rather than through the vtable: only a re-queue or a cancellation needs the
    /// future's type, and what follows those is left to the caller ([`Unslept`]), which
    /// finishes it as it finishes a poll (a cancellation drops the future: user code).
    #[inline]
    #[must_use = "a process that did not go to sleep must be re-queued or cancelled"]
    pub(crate) fn sleep(self) -> Option<Unslept> {
        let (raw, poll_ref) = (self.raw, self.poll_ref);
        std::mem::forget(self);
        match raw.state().transition_to_idle(poll_ref) {
            ToIdle::Slept => None,
            outcome => Some(Unslept {
                raw,
                poll_ref,
                outcome,
            }),
        }
    }

    /// Woken by a poll on the worker that holds it: it stays `Running`, and goes to the
    /// handoff slot with one reference, the waker's (if the poll lent its own, the
    /// waker's is the one it lent) or its own (the waker's is then released, never the
    /// last).
    ///
    /// # Safety
    /// `reference` is one reference to the same process, which the caller gives up.
    #[inline]
    pub(crate) unsafe fn woken(self, reference: RawTask) -> Handed {
        debug_assert!(reference == self.raw);
        let poll_ref = self.poll_ref;
        let raw = self.raw;
        std::mem::forget(self);
        if poll_ref == PollRef::Held {
            // SAFETY: the caller's reference, given up; this one's keeps the process.
            unsafe { reference.drop_reference() }
        }
        Handed(raw)
    }

    /// As [`woken`](Self::woken), by a waker that keeps its reference: the slot gets
    /// this one's, or a new one if the poll lent its own.
    #[inline]
    pub(crate) fn woken_by_ref(self) -> Handed {
        let (raw, poll_ref) = (self.raw, self.poll_ref);
        std::mem::forget(self);
        if poll_ref == PollRef::Lent {
            raw.ref_inc();
        }
        Handed(raw)
    }
}

impl Drop for Resting {
    fn drop(&mut self) {
        // Not on any normal path (a worker puts its resting process to sleep or hands it
        // on), but a process must not be left `Running` with nobody to finish its poll.
        let resting = Resting {
            raw: self.raw,
            poll_ref: self.poll_ref,
        };
        if let Some(unslept) = resting.sleep() {
            unslept.finish();
        }
    }
}

/// A resting process whose put-off transition did not end in `Sleeping`
/// ([`Resting::sleep`]): woken meanwhile (now `Queued`, with a reference for its new run
/// queue entry) or cancelled (still `Running`, its future to drop). Holds what the
/// transition left; [`finish`](Self::finish) re-queues the process or drops its future
/// and completes it. Dropped, it finishes, so that the process is never left without an
/// entry or a poller.
#[must_use = "a process that did not go to sleep must be re-queued or cancelled"]
pub(crate) struct Unslept {
    raw: RawTask,
    poll_ref: PollRef,
    outcome: ToIdle,
}

impl Unslept {
    /// True if it was cancelled: [`finish`](Self::finish) drops its future.
    #[inline]
    pub(crate) fn drops_future(&self) -> bool {
        self.outcome == ToIdle::Cancel
    }

    /// Re-queues the process, or drops its future (user code) and completes it.
    #[inline]
    pub(crate) fn finish(self) {
        let (raw, poll_ref, outcome) = (self.raw, self.poll_ref, self.outcome);
        std::mem::forget(self);
        // SAFETY: `Running`, left so by its poll with `poll_ref`, until the transition
        // with this outcome (not `Slept`); what that left this holder is given up here.
        unsafe { (raw.header().vtable.not_slept)(raw.as_ptr(), poll_ref, outcome) }
    }
}

impl Drop for Unslept {
    fn drop(&mut self) {
        // Not on any normal path (the worker finishes it).
        Unslept { ..*self }.finish();
    }
}

impl std::fmt::Debug for Resting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Resting").field(&self.raw).finish()
    }
}

impl std::fmt::Debug for Handed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Handed").field(&self.0).finish()
    }
}

impl std::fmt::Debug for Notified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Notified").field(&self.0).finish()
    }
}
