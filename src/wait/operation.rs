//! The per-operation interface every kind of choice arm implements (recv, send, closed;
//! timers later), so that the plain `send`/`recv` futures, `alt!` and `Select` run the
//! same code: try now, register, unregister, take the result.

use std::ptr::NonNull;

use crate::wait::claim::{Claim, Wakes};

/// One communication on one channel, as an arm of a choice.
///
/// The choice locks the channel (`lock`/`unlock`; in `lock_key` order when it has
/// several), then calls `try_now` on each arm, or `register` on every arm; later, when
/// its claim fired arm `i`, `unregister` on the others and `take_fired` on arm `i`.
/// Every method but `take_fired` and `abandon` runs under the arm's channel lock.
pub(crate) trait Operation {
    /// Where the channel comes in the one order in which choices lock channels (and
    /// each once): the address of its lock (DESIGN.md). Under loom, the channel's id
    /// instead: a model must take the same locks in the same order in every execution
    /// it replays, and addresses can change between executions when another model in
    /// the same process allocates meanwhile; ids follow the order the model made its
    /// channels in. Either is one total order over all channels, all a choice needs.
    fn lock_key(&self) -> u64;

    /// Locks the channel.
    fn lock(&self);

    /// Unlocks the channel.
    ///
    /// # Safety
    /// The caller must hold the lock (from `lock`).
    unsafe fn unlock(&self);

    /// False if `try_now` would surely fail: a lock-free hint (it may say true
    /// wrongly, and false wrongly only while an operation not ordered before this call
    /// changes the channel), so a choice's quick pass skips the arm without its lock.
    fn may_be_ready(&self) -> bool;

    /// Completes the operation now if the channel allows it, storing the outcome in the
    /// operation; `own` is the choice's flag, never paired with itself.
    ///
    /// # Safety
    /// The channel lock is held.
    unsafe fn try_now(&self, own: &Claim, wakes: &mut Wakes) -> bool;

    /// Links the operation's entry as arm `arm` of the choice whose flag is `claim`
    /// (waking, after the unlock, whoever that makes ready: a sender starting to wait
    /// wakes `poll_recv` readers).
    ///
    /// # Safety
    /// The channel lock is held; the operation is pinned and unregistered before it is
    /// dropped; `claim` outlives the registration.
    unsafe fn register(&self, claim: NonNull<Claim>, arm: usize, wakes: &mut Wakes);

    /// Unlinks the entry if it is linked.
    ///
    /// # Safety
    /// The channel lock is held.
    unsafe fn unregister(&self);

    /// Moves the outcome of a fired entry into the operation's result. Called by the
    /// owner, without the lock, once the claim says this arm fired.
    ///
    /// # Safety
    /// The claim fired this arm (so no claimer touches the entry any more).
    unsafe fn take_fired(&self);

    /// The operation completed (by `try_now` or `take_fired`) but its choice is being
    /// dropped without reading the result: undo what can be undone (a received value
    /// goes back to its channel). Takes the lock itself.
    fn abandon(&self);

    /// Records, for process dumps, what a process blocked on this arm waits on.
    fn describe(&self) -> crate::wait::WaitOn;

    /// True if something outside the runtime may complete this operation (its channel
    /// is foreign): deadlock detection then never counts its waiter as blocked.
    fn is_foreign(&self) -> bool;
}

/// An operation's channel lock, held until this is dropped: a panic that slips in under
/// it (none should) releases the lock as it unwinds instead of wedging the channel.
pub(crate) struct Held<'a, O: Operation + ?Sized>(&'a O);

impl<'a, O: Operation + ?Sized> Held<'a, O> {
    /// Locks `op`'s channel.
    #[inline]
    pub(crate) fn lock(op: &'a O) -> Self {
        op.lock();
        Held(op)
    }
}

impl<O: Operation + ?Sized> Drop for Held<'_, O> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: a `Held` exists only while its lock is held (taken in `lock`).
        unsafe { self.0.unlock() }
    }
}
