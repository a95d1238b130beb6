//! The channel operations as choice arms: recv, send, and waiting for the close.
//!
//! Who used a side last (`site.rs`): a `send` or `recv` future records its owner when
//! it completes, from the waker it is polled with (`future.rs`). An arm of a choice
//! (`alt!`, `Select`) is never given that waker, so it records the owner of its claim
//! flag when it links its entry to wait (the arm that later fires among them; one that
//! fires without waiting records nothing). Which of the two an op is, is its type's
//! `ARM` parameter, so that a future pays no test for the arms' recording.

use std::ops::Deref;
use std::ptr::NonNull;
use std::task::Waker;

use crate::chan::core::{Chan, Side};
use crate::chan::error::{RecvError, SendError};
use crate::chan::future::Outcome;
use crate::chan::waiter::{LazyWaiter, Waiter};
use crate::loom::cell::UnsafeCell;
use crate::wait::WaitOn;
use crate::wait::claim::{Claim, Wakes};
use crate::wait::operation::{Held, Operation};

/// Receiving one value. `C` is how the op reaches its channel: a borrow (the futures)
/// or an `Arc` (the node a `Receiver` keeps for `poll_recv`). `ARM`: an arm of a choice,
/// which records its side's last user when it waits (module docs); false for the
/// future's.
pub(crate) struct RecvOp<T, C: Deref<Target = Chan<T>>, const ARM: bool = true> {
    chan: C,
    /// Built when the receive first waits.
    waiter: LazyWaiter<T>,
    result: ResultCell<Result<T, RecvError>>,
}

/// Sending one value; the value waits in the entry's slot. `ARM` as for [`RecvOp`].
pub(crate) struct SendOp<'a, T, const ARM: bool = true> {
    chan: &'a Chan<T>,
    waiter: Waiter<T>,
    result: ResultCell<Result<(), SendError<T>>>,
}

/// Receiving for `poll_recv` and the `Stream`: takes a value if one is there, else
/// waits as a reader, which is woken when a value may have arrived but is never handed
/// one (a `Receiver` that stops polling must not keep a value from the others).
pub(crate) struct ReadOp<T, C: Deref<Target = Chan<T>>> {
    chan: C,
    waiter: Waiter<()>,
    result: ResultCell<Result<T, RecvError>>,
}

/// An operation's outcome: written under the channel lock by the try, or by the owner
/// once its claim fired, and read by the owner; never by anyone else.
struct ResultCell<R>(UnsafeCell<Option<R>>);

impl<R> ResultCell<R> {
    fn new() -> Self {
        ResultCell(UnsafeCell::new(None))
    }

    fn set(&self, result: R) {
        // SAFETY: owner-only (see the type's docs).
        self.0.with_mut(|r| unsafe { *r = Some(result) });
    }

    fn take(&self) -> Option<R> {
        // SAFETY: owner-only.
        self.0.with_mut(|r| unsafe { (*r).take() })
    }

    fn is_empty(&self) -> bool {
        // SAFETY: owner-only.
        self.0.with(|r| unsafe { (*r).is_none() })
    }
}

/// Waiting for the channel to close.
pub(crate) struct ClosedOp<'a, T> {
    chan: &'a Chan<T>,
    /// Built when the watch first waits.
    waiter: LazyWaiter<()>,
}

impl<T, C: Deref<Target = Chan<T>>> RecvOp<T, C> {
    /// A receive as an arm of a choice.
    pub(crate) fn new(chan: C) -> Self {
        RecvOp::make(chan)
    }
}

impl<T, C: Deref<Target = Chan<T>>> RecvOp<T, C, false> {
    /// A receive for a `recv` future, which records its own use (module docs).
    pub(crate) fn for_future(chan: C) -> Self {
        RecvOp::make(chan)
    }
}

impl<T, C: Deref<Target = Chan<T>>, const ARM: bool> RecvOp<T, C, ARM> {
    #[inline]
    fn make(chan: C) -> Self {
        chan.note_use();
        RecvOp {
            chan,
            waiter: LazyWaiter::new(),
            result: ResultCell::new(),
        }
    }

    pub(crate) fn chan(&self) -> &Chan<T> {
        &self.chan
    }

    /// The outcome, once the choice completed this arm.
    pub(crate) fn take_result(&self) -> Option<Result<T, RecvError>> {
        self.result.take()
    }

    /// The entry to link, built now if this is the receive's first wait.
    ///
    /// # Safety
    /// Called by the owner, with the entry unlinked.
    unsafe fn entry(&self) -> NonNull<Waiter<T>> {
        // SAFETY: per the caller.
        unsafe { self.waiter.get_or_build() }
    }

    /// The entry, if the receive ever waited.
    ///
    /// # Safety
    /// Called by the owner.
    unsafe fn built_entry(&self) -> Option<NonNull<Waiter<T>>> {
        // SAFETY: per the caller.
        unsafe { self.waiter.get() }
    }
}

impl<'a, T> SendOp<'a, T, false> {
    /// A send for a `send` future, which records its own use (module docs).
    pub(crate) fn for_future(chan: &'a Chan<T>, value: T) -> Self {
        SendOp::make(chan, value)
    }
}

impl<'a, T> SendOp<'a, T> {
    /// A send as an arm of a choice.
    pub(crate) fn new(chan: &'a Chan<T>, value: T) -> Self {
        SendOp::make(chan, value)
    }

    /// A send of the value at `slot`, which other sends of the same choice may offer
    /// too (a `send_any` arm): whichever fires takes it.
    ///
    /// # Safety
    /// `slot` outlives the op and is touched by nothing else while the op's choice is
    /// in progress.
    pub(crate) unsafe fn with_shared_value(
        chan: &'a Chan<T>,
        slot: NonNull<UnsafeCell<Option<T>>>,
    ) -> Self {
        chan.note_use();
        SendOp {
            chan,
            // SAFETY: per the caller.
            waiter: unsafe { Waiter::with_shared_slot(slot) },
            result: ResultCell::new(),
        }
    }
}

impl<'a, T, const ARM: bool> SendOp<'a, T, ARM> {
    #[inline]
    fn make(chan: &'a Chan<T>, value: T) -> Self {
        chan.note_use();
        SendOp {
            chan,
            waiter: Waiter::new(Some(value)),
            result: ResultCell::new(),
        }
    }

    pub(crate) fn chan(&self) -> &Chan<T> {
        self.chan
    }

    /// The outcome, once the choice completed this arm.
    pub(crate) fn take_result(&self) -> Option<Result<(), SendError<T>>> {
        self.result.take()
    }

    /// True while the value is still the op's to send (not delivered, not handed back
    /// as the outcome).
    ///
    /// # Safety
    /// Called by the owner with no choice of the op in progress (so no claimer can
    /// reach the entry's slot).
    pub(crate) unsafe fn has_value(&self) -> bool {
        // SAFETY: per the caller, the slot is the owner's.
        unsafe { self.waiter.with_slot(|slot| slot.is_some()) }
    }

    /// The entry to link: a send's is built with it, holding the value.
    fn entry(&self) -> NonNull<Waiter<T>> {
        NonNull::from(&self.waiter)
    }

    /// The entry (always built).
    fn built_entry(&self) -> Option<NonNull<Waiter<T>>> {
        Some(self.entry())
    }
}

impl<T, C: Deref<Target = Chan<T>>> ReadOp<T, C> {
    pub(crate) fn new(chan: C) -> Self {
        chan.note_use();
        ReadOp {
            chan,
            waiter: Waiter::new(None),
            result: ResultCell::new(),
        }
    }

    /// The outcome: `None` if the op completed only by being woken (look again).
    pub(crate) fn take_result(&self) -> Option<Result<T, RecvError>> {
        self.result.take()
    }
}

impl<'a, T> ClosedOp<'a, T> {
    pub(crate) fn new(chan: &'a Chan<T>) -> Self {
        chan.note_use();
        ClosedOp {
            chan,
            waiter: LazyWaiter::new(),
        }
    }
}

/// A receive attempt under the lock: stores a value, or `Err(RecvError)` once the
/// channel is closed and drained, in `result`; false if the receiver must wait.
///
/// # Safety
/// The caller holds `chan`'s lock.
unsafe fn receive_now<T>(
    chan: &Chan<T>,
    own: &Claim,
    wakes: &mut Wakes,
    result: &ResultCell<Result<T, RecvError>>,
) -> bool {
    // SAFETY: per the caller.
    let state = unsafe { chan.state_mut() };
    match state.take(Some(own), wakes) {
        Some(value) => result.set(Ok(value)),
        None if state.is_closed() => result.set(Err(RecvError)),
        None => return false,
    }
    true
}

/// A received value nobody will read goes back to its channel, ahead of the others.
fn give_back_unread<T>(chan: &Chan<T>, result: &ResultCell<Result<T, RecvError>>) {
    if let Some(Ok(value)) = result.take() {
        let mut wakes = Wakes::default();
        chan.lock().give_back(value, &mut wakes);
        wakes.run();
    }
}

impl<T, C: Deref<Target = Chan<T>>, const ARM: bool> Outcome for RecvOp<T, C, ARM> {
    type Output = Result<T, RecvError>;

    fn outcome(&self) -> Self::Output {
        self.take_result()
            .expect("csp: a completed recv has an outcome")
    }

    #[inline]
    fn note_user(&self, waker: &Waker) {
        self.chan.note_user(Side::Recv, waker);
    }
}

impl<T, const ARM: bool> Outcome for SendOp<'_, T, ARM> {
    type Output = Result<(), SendError<T>>;

    fn outcome(&self) -> Self::Output {
        self.take_result()
            .expect("csp: a completed send has an outcome")
    }

    #[inline]
    fn note_user(&self, waker: &Waker) {
        self.chan.note_user(Side::Send, waker);
    }
}

impl<T> Outcome for ClosedOp<'_, T> {
    type Output = ();

    fn outcome(&self) -> Self::Output {}
}

/// The lock plumbing every channel operation shares.
macro_rules! channel_lock {
    () => {
        fn lock_key(&self) -> u64 {
            if cfg!(loom) {
                self.chan.id()
            } else {
                self.chan.lock_address() as u64
            }
        }

        fn lock(&self) {
            self.chan.lock_unguarded()
        }

        unsafe fn unlock(&self) {
            // SAFETY: the caller holds the lock.
            unsafe { self.chan.unlock() }
        }

        fn is_foreign(&self) -> bool {
            self.chan.is_foreign()
        }
    };
}

/// Linking a receive's or a send's entry in its side's wait list (its `entry` to link,
/// its `built_entry` if it has one).
macro_rules! wait_list_entry {
    ($side:expr) => {
        unsafe fn register(&self, claim: NonNull<Claim>, arm: usize, wakes: &mut Wakes) {
            // SAFETY: the caller holds the lock; the op is pinned and unregisters before
            // it is dropped (the choice's contract), and `claim` outlives the
            // registration. The owner registers, with the entry unlinked.
            unsafe {
                let entry = self.entry();
                entry.as_ref().set_choice(claim, arm);
                self.chan.state_mut().register($side, entry, wakes);
                self.chan.enrol();
                // An arm's owner, stored in the flag before its entries are linked,
                // is this side's last user now (module docs).
                if ARM {
                    self.chan.note_waiter($side, claim.as_ref().owner_tag());
                }
            }
        }

        unsafe fn unregister(&self) {
            // SAFETY: the caller holds the lock; only a built entry can be linked.
            unsafe {
                if let Some(entry) = self.built_entry() {
                    self.chan.state_mut().unregister($side, entry);
                    entry.as_ref().clear_choice();
                }
            }
        }
    };
}

impl<T, C: Deref<Target = Chan<T>>, const ARM: bool> Operation for RecvOp<T, C, ARM> {
    channel_lock!();
    wait_list_entry!(Side::Recv);

    fn may_be_ready(&self) -> bool {
        self.chan.may_recv()
    }

    unsafe fn try_now(&self, own: &Claim, wakes: &mut Wakes) -> bool {
        // SAFETY: the caller holds the lock.
        unsafe { receive_now(&self.chan, own, wakes, &self.result) }
    }

    unsafe fn take_fired(&self) {
        // SAFETY: owner-only; an entry that fired was built (to be linked).
        let entry = unsafe { self.built_entry() }.expect("csp: a receive fired unregistered");
        // SAFETY: the claim fired this arm: the slot is the owner's again.
        // SAFETY: as above; its claimer unlinked the entry.
        let value = unsafe {
            let entry = entry.as_ref();
            entry.clear_choice();
            entry.with_slot(Option::take)
        };
        self.result.set(value.ok_or(RecvError));
    }

    fn abandon(&self) {
        give_back_unread(&self.chan, &self.result);
    }

    fn describe(&self) -> WaitOn {
        WaitOn::Recv {
            channel: self.chan.id(),
        }
    }
}

impl<T, const ARM: bool> Operation for SendOp<'_, T, ARM> {
    channel_lock!();
    wait_list_entry!(Side::Send);

    fn may_be_ready(&self) -> bool {
        self.chan.may_send()
    }

    unsafe fn try_now(&self, own: &Claim, wakes: &mut Wakes) -> bool {
        // SAFETY: the caller holds the lock.
        let state = unsafe { self.chan.state_mut() };
        // The value leaves the entry only once it has somewhere to go.
        let room = if state.is_closed() {
            None
        } else {
            let Some(room) = state.room(self.chan.cap(), Some(own)) else {
                return false;
            };
            Some(room)
        };
        // SAFETY: the entry is not linked: its slot is the owner's.
        let value = unsafe { self.waiter.with_slot(Option::take) }
            .expect("csp: a send operation lost its value");
        match room {
            Some(room) => {
                state.put(room, value, wakes);
                self.result.set(Ok(()));
            }
            None => self.result.set(Err(SendError(value))),
        }
        true
    }

    unsafe fn take_fired(&self) {
        // SAFETY: the claim fired this arm: the slot is the owner's again. A value still
        // there means the close fired it, not a receiver.
        // Its claimer unlinked the entry.
        let value = unsafe {
            self.waiter.clear_choice();
            self.waiter.with_slot(Option::take)
        };
        self.result.set(match value {
            None => Ok(()),
            Some(value) => Err(SendError(value)),
        });
    }

    fn abandon(&self) {
        // A delivered value stays delivered; an undelivered one drops with the op.
    }

    fn describe(&self) -> WaitOn {
        WaitOn::Send {
            channel: self.chan.id(),
        }
    }
}

impl<T, C: Deref<Target = Chan<T>>> Operation for ReadOp<T, C> {
    channel_lock!();

    fn may_be_ready(&self) -> bool {
        self.chan.may_recv()
    }

    unsafe fn try_now(&self, own: &Claim, wakes: &mut Wakes) -> bool {
        // SAFETY: the caller holds the lock.
        unsafe { receive_now(&self.chan, own, wakes, &self.result) }
    }

    unsafe fn register(&self, claim: NonNull<Claim>, arm: usize, _wakes: &mut Wakes) {
        // SAFETY: as for `wait_list_entry!`'s `register`.
        unsafe {
            self.waiter.set_choice(claim, arm);
            self.chan
                .state_mut()
                .add_reader(NonNull::from(&self.waiter));
            self.chan.enrol();
        }
    }

    unsafe fn unregister(&self) {
        // SAFETY: the caller holds the lock.
        unsafe {
            self.chan
                .state_mut()
                .remove_reader(NonNull::from(&self.waiter));
            self.waiter.clear_choice();
        }
    }

    unsafe fn take_fired(&self) {
        // SAFETY: the claim fired this arm: its claimer unlinked the entry.
        unsafe { self.waiter.clear_choice() };
    }

    fn abandon(&self) {
        give_back_unread(&self.chan, &self.result);
    }

    fn describe(&self) -> WaitOn {
        WaitOn::Recv {
            channel: self.chan.id(),
        }
    }
}

impl<T> Operation for ClosedOp<'_, T> {
    channel_lock!();

    fn may_be_ready(&self) -> bool {
        self.chan.is_closed()
    }

    unsafe fn try_now(&self, _own: &Claim, _wakes: &mut Wakes) -> bool {
        // SAFETY: the caller holds the lock.
        unsafe { self.chan.state_mut() }.is_closed()
    }

    unsafe fn register(&self, claim: NonNull<Claim>, arm: usize, _wakes: &mut Wakes) {
        // SAFETY: as for `wait_list_entry!`'s `register`.
        unsafe {
            let entry = self.waiter.get_or_build();
            entry.as_ref().set_choice(claim, arm);
            self.chan.state_mut().watch(entry);
            self.chan.enrol();
        }
    }

    unsafe fn unregister(&self) {
        // SAFETY: the caller holds the lock; only a built entry can be linked.
        unsafe {
            if let Some(entry) = self.waiter.get() {
                self.chan.state_mut().unwatch(entry);
                entry.as_ref().clear_choice();
            }
        }
    }

    unsafe fn take_fired(&self) {
        // SAFETY: the claim fired this arm: its claimer unlinked the entry. An entry
        // that fired was built.
        unsafe {
            if let Some(entry) = self.waiter.get() {
                entry.as_ref().clear_choice();
            }
        }
    }

    fn abandon(&self) {}

    fn describe(&self) -> WaitOn {
        WaitOn::Closed {
            channel: self.chan.id(),
        }
    }
}

// `may_be_linked`: whether an operation's entry may be linked in its channel, as it
// belongs to a choice (`Waiter::is_chosen`) from its registration until its owner learns
// it unlinked. Owner-only. An operation dropped with it true unlinks its own entry first
// (`Drop`), so the channel never reaches freed memory even when the choice that
// registered it was leaked (`mem::forget`) and never cancelled.

impl<T, C: Deref<Target = Chan<T>>, const ARM: bool> RecvOp<T, C, ARM> {
    /// See above.
    #[inline]
    fn may_be_linked(&self) -> bool {
        self.waiter.is_chosen()
    }

    /// True if a new choice may take the op as an arm: no entry linked for an earlier
    /// one, and no outcome left unread. For the owner.
    #[inline]
    pub(crate) fn can_serve(&self) -> bool {
        !self.may_be_linked() && self.result.is_empty()
    }
}

impl<T> ClosedOp<'_, T> {
    /// See above.
    #[inline]
    fn may_be_linked(&self) -> bool {
        self.waiter.is_chosen()
    }

    /// As [`RecvOp::can_serve`].
    #[inline]
    pub(crate) fn can_serve(&self) -> bool {
        !self.may_be_linked()
    }
}

impl<T, const ARM: bool> SendOp<'_, T, ARM> {
    /// See above.
    #[inline]
    fn may_be_linked(&self) -> bool {
        self.waiter.is_chosen()
    }

    /// As [`RecvOp::can_serve`], and the value still there to send.
    #[inline]
    pub(crate) fn can_serve(&self) -> bool {
        // SAFETY: nothing linked: no choice holds the op, so the slot is the owner's.
        !self.may_be_linked() && self.result.is_empty() && unsafe { self.has_value() }
    }
}

impl<T, C: Deref<Target = Chan<T>>> ReadOp<T, C> {
    /// See above.
    #[inline]
    fn may_be_linked(&self) -> bool {
        self.waiter.is_chosen()
    }
}

/// Unlinks the entry of an operation dropped while it may still be linked (its choice
/// was leaked, so never cancelled): the memory's owner unlinks it, under the channel's
/// lock. A value a sender handed to a receive's entry meanwhile goes back to the
/// channel; the rest (a send's undelivered value) drops with the operation, after the
/// lock.
fn unlink_orphan(op: &impl Operation, give_back: impl FnOnce(&mut Wakes)) {
    let mut wakes = Wakes::default();
    {
        let _held = Held::lock(op);
        // SAFETY: the lock is held.
        unsafe { op.unregister() };
        give_back(&mut wakes);
    }
    wakes.run();
}

impl<T, C: Deref<Target = Chan<T>>, const ARM: bool> Drop for RecvOp<T, C, ARM> {
    #[inline]
    fn drop(&mut self) {
        if self.may_be_linked() {
            self.unlink_orphan();
        }
    }
}

impl<T, C: Deref<Target = Chan<T>>, const ARM: bool> RecvOp<T, C, ARM> {
    /// `Drop`'s rare path: a value handed to the entry goes back to the channel.
    #[cold]
    #[inline(never)]
    fn unlink_orphan(&self) {
        let (chan, waiter) = (&*self.chan, &self.waiter);
        unlink_orphan(self, |wakes| {
            // SAFETY: owner-only, and the entry is unlinked under the channel's lock,
            // which every claimer of it holds: nobody else reaches its slot now.
            let handed = unsafe { waiter.get() }
                .and_then(|entry| unsafe { entry.as_ref().with_slot(Option::take) });
            if let Some(value) = handed {
                // SAFETY: the lock is held.
                unsafe { chan.state_mut() }.give_back(value, wakes);
            }
        });
    }
}

/// `Drop` for an operation with nothing to give back: unlinks its entry if it may be
/// linked (the check inline, the unlinking out of line).
macro_rules! unlink_on_drop {
    ($($ty:ty $(where $($bounds:tt)*)?),*) => {$(
        impl<T, $($($bounds)*)?> Drop for $ty {
            #[inline]
            fn drop(&mut self) {
                if self.may_be_linked() {
                    unlink_orphan_cold(self);
                }
            }
        }
    )*};
}

impl<T, const ARM: bool> Drop for SendOp<'_, T, ARM> {
    #[inline]
    fn drop(&mut self) {
        if self.may_be_linked() {
            unlink_orphan_cold(self);
        }
    }
}

/// `unlink_orphan` with nothing to give back, out of the way of the common drop.
#[cold]
#[inline(never)]
fn unlink_orphan_cold(op: &impl Operation) {
    unlink_orphan(op, |_| {});
}

unlink_on_drop!(
    ClosedOp<'_, T>,
    ReadOp<T, C> where C: Deref<Target = Chan<T>>
);
