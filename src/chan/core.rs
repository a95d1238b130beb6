//! The channel core: an optional ring buffer, a queue of values handed back by dropped
//! receivers, and the wait lists of senders, receivers and close-watchers, all under one
//! lock (DESIGN.md, "Channels and alt").
//!
//! A counterpart that finds a waiting entry claims the entry's flag, moves the value
//! slot-to-slot, unlinks the entry, and wakes the owner after dropping the lock. A
//! process woken that way by another process of its runtime runs next on the same worker
//! (the handoff slot), with the message hot in cache.
//!
//! No user code runs under the lock: owners to wake are carried out of the critical
//! section in [`Wakes`] and woken after unlocking, and values to drop are dropped after
//! unlocking by whoever holds them.
//!
//! A channel a choice has looked at publishes its *readiness* at every unlock:
//! whether a receive, and a send, would complete now. A choice's quick pass reads it
//! without the lock and skips an arm that would only fail, instead of taking a lock
//! (often one a counterpart on another core is using) to find that out. It is a hint and
//! nothing relies on more: the pass that registers a choice tries every arm under its
//! lock. It is never stale for a reader ordered after an operation (a thread that saw a
//! send complete sees the receive ready), since the operation stored it before its
//! unlock. A choice's first look at a channel turns the bookkeeping on, under the lock,
//! so every later unlock sees it on; channels never chosen among skip it.

use std::collections::VecDeque;
use std::panic::Location;
use std::ptr::NonNull;

use crate::chan::home::Home;
use crate::chan::lock::RawLock;
use crate::chan::site::Users;
use crate::chan::waiter::{WaitList, Waiter};
use crate::id::next_channel_id;
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use crate::runtime::context;
use crate::task::panic::FirstPanic;
use crate::tuning::CHANNEL_PREALLOCATED;
use crate::wait::census::{Enrolment, Op};
use crate::wait::claim::{Claim, Wakes};

pub(crate) struct State<T> {
    /// Buffered values (at most `cap` of them, if bounded).
    buffer: VecDeque<T>,
    /// Values a receiver was handed but dropped before taking: received before the
    /// buffer, not counted against the capacity.
    returned: VecDeque<T>,
    /// Waiting senders; each entry's slot holds its value.
    senders: WaitList<T>,
    /// Waiting receivers; a claimer puts the value in the entry's slot.
    receivers: WaitList<T>,
    /// Waiting `closed()` futures and `closed` arms.
    watchers: WaitList<()>,
    /// Receivers waiting through `poll_recv` (the `Stream`): woken, never handed a
    /// value, so one that stops polling hides nothing from the others.
    readers: WaitList<()>,
    /// Closed, and from which side: `Send` for the senders' end (the last sender's drop,
    /// a sender's `close`, the runtime closing a channel it feeds), `Recv` for the
    /// receivers' (the last receiver's drop, a receiver's `close`). Set once, by the
    /// first close.
    closed_by: Option<Side>,
    /// Run once the last receiver is gone (after the close): how an `after`/`tick`
    /// channel unlinks its timer, and a pipeline's producer hears its output is unread.
    on_receivers_gone: Option<ReceiversGone>,
}

/// What runs once a channel's last receiver is gone. It is told whether the senders'
/// side had ended the stream by then (`true`: the channel was closed by the last
/// sender's drop or a sender's `close`), as against a close from the receivers' side
/// (the last receiver's drop itself, or a receiver's `close` before it).
pub(crate) type ReceiversGone = Box<dyn FnOnce(bool) + Send>;

/// What a channel end points to. It must have no `Drop` of its own: the census
/// (`site.rs`) relies on its first field dropping before anything else of it goes.
pub(crate) struct Chan<T> {
    /// Its place in the wait-graph census (`site.rs`). The first field, so that it
    /// leaves the census before any other field drops.
    pub(super) enrolment: Enrolment,
    id: u64,
    /// `None`: unbounded; `Some(0)`: rendezvous.
    cap: Option<usize>,
    lock: RawLock,
    /// Who last used each side, for the wait graph (`site.rs`): in the channel itself,
    /// among the lines an operation touches anyway (the lock, the wait lists).
    pub(super) users: Users,
    state: UnsafeCell<State<T>>,
    /// Mirrors `State::closed`, for lock-free reads.
    closed: AtomicBool,
    /// [`RECV_READY`] and [`SEND_READY`], as the last unlock left the state, with
    /// [`READINESS_KEPT`] once unlocks keep them (module docs). The kept bit is only
    /// ever set, and only under the lock.
    readiness: AtomicU8,
    /// The runtime it belongs to, or foreign (deadlock detection).
    home: Home,
    /// Where it was made: the caller of the public function that made it
    /// (`#[track_caller]` all the way down), which names it in the wait graph and in
    /// deadlock reports.
    made_at: &'static Location<'static>,
    senders: AtomicUsize,
    receivers: AtomicUsize,
}

// SAFETY: the state is only touched under `lock`, and moves `T: Send` values between
// threads.
unsafe impl<T: Send> Send for Chan<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Chan<T> {}

/// The locked channel; unlocks on drop.
pub(crate) struct Locked<'a, T> {
    chan: &'a Chan<T>,
}

impl<T> Drop for Locked<'_, T> {
    fn drop(&mut self) {
        // SAFETY: a `Locked` exists only while its lock is held.
        unsafe { self.chan.unlock() }
    }
}

/// Readiness bit: a receive would complete now (a value, a waiting sender, or the close).
const RECV_READY: u8 = 1;
/// Readiness bit: a send would complete now (a waiting receiver, room, or the close).
const SEND_READY: u8 = 2;
/// Readiness bit: the other two are kept up to date; without it they mean nothing.
const READINESS_KEPT: u8 = 4;

impl<T> std::ops::Deref for Locked<'_, T> {
    type Target = State<T>;

    fn deref(&self) -> &State<T> {
        // SAFETY: the lock is held.
        self.chan.state.with(|s| unsafe { &*s })
    }
}

impl<T> std::ops::DerefMut for Locked<'_, T> {
    fn deref_mut(&mut self) -> &mut State<T> {
        // SAFETY: the lock is held, and `&mut self` makes this the only access.
        self.chan.state.with_mut(|s| unsafe { &mut *s })
    }
}

/// Where a value sent now goes ([`State::room`]).
pub(crate) enum Room<T> {
    /// To this waiting receiver, claimed and unlinked.
    Receiver(NonNull<Waiter<T>>),
    /// To the back of the buffer.
    Buffer,
}

/// Claims the first entry of `list` whose flag is not `own` and can be claimed, and
/// unlinks it. Entries whose choice already fired elsewhere are skipped (their owner
/// unlinks them).
///
/// # Safety
/// The channel lock must be held.
#[inline]
unsafe fn claim_first<U>(
    list: &mut WaitList<U>,
    own: Option<&Claim>,
) -> Option<NonNull<Waiter<U>>> {
    let mut cursor = list.front();
    while let Some(entry) = cursor {
        // SAFETY: linked entries are alive while the lock is held.
        let waiter = unsafe { entry.as_ref() };
        let is_own = own.is_some_and(|own| std::ptr::eq(own, waiter.claim()));
        if !is_own && waiter.claim().try_claim() {
            // SAFETY: lock held; the entry is linked in `list`.
            unsafe { list.remove(entry) };
            return Some(entry);
        }
        // SAFETY: lock held; `entry` is linked.
        cursor = unsafe { list.next(entry) };
    }
    None
}

impl<T> State<T> {
    /// The next value for a receiver: a returned one, a buffered one (refilling the
    /// buffer from a waiting sender), or a waiting sender's (rendezvous).
    #[inline]
    pub(crate) fn take(&mut self, own: Option<&Claim>, wakes: &mut Wakes) -> Option<T> {
        if let Some(value) = self.returned.pop_front() {
            return Some(value);
        }
        if let Some(value) = self.buffer.pop_front() {
            // SAFETY: the lock is held (`State` is only reached through `Locked`).
            if let Some(sender) = unsafe { claim_first(&mut self.senders, own) } {
                // SAFETY: claimed: the entry is ours to complete.
                let waiter = unsafe { sender.as_ref() };
                let moved = unsafe { waiter.with_slot(Option::take) };
                self.buffer.extend(moved);
                wakes.push(waiter.claim().finish(waiter.arm()));
            }
            return Some(value);
        }
        // SAFETY: the lock is held.
        let sender = unsafe { claim_first(&mut self.senders, own) }?;
        // SAFETY: claimed: the entry is ours to complete.
        let waiter = unsafe { sender.as_ref() };
        let value = unsafe { waiter.with_slot(Option::take) };
        wakes.push(waiter.claim().finish(waiter.arm()));
        debug_assert!(value.is_some(), "a waiting sender without a value");
        value
    }

    /// Gives `value` to a waiting receiver, or buffers it if there is room; gives it
    /// back if neither.
    pub(crate) fn give(
        &mut self,
        value: T,
        cap: Option<usize>,
        own: Option<&Claim>,
        wakes: &mut Wakes,
    ) -> Result<(), T> {
        match self.room(cap, own) {
            Some(room) => {
                self.put(room, value, wakes);
                Ok(())
            }
            None => Err(value),
        }
    }

    /// Where a value sent now would go, [`put`](Self::put) there next; `None` if a
    /// sender must wait. A waiting receiver it names is already claimed and unlinked.
    #[inline]
    pub(crate) fn room(&mut self, cap: Option<usize>, own: Option<&Claim>) -> Option<Room<T>> {
        // SAFETY: the lock is held (`State` is only reached through `Locked`).
        if let Some(receiver) = unsafe { claim_first(&mut self.receivers, own) } {
            return Some(Room::Receiver(receiver));
        }
        cap.is_none_or(|cap| self.buffer.len() < cap)
            .then_some(Room::Buffer)
    }

    /// Puts `value` where [`room`](Self::room) said, under the same lock.
    #[inline]
    pub(crate) fn put(&mut self, room: Room<T>, value: T, wakes: &mut Wakes) {
        match room {
            Room::Receiver(receiver) => {
                // SAFETY: claimed by `room`: the entry is ours to complete.
                let waiter = unsafe { receiver.as_ref() };
                unsafe { waiter.with_slot(|slot| *slot = Some(value)) };
                wakes.push(waiter.claim().finish(waiter.arm()));
            }
            Room::Buffer => {
                self.buffer.push_back(value);
                self.wake_readers(wakes);
                context::count_buffered();
            }
        }
    }

    /// Which operations would complete now, as [`RECV_READY`] and [`SEND_READY`] bits
    /// (an entry claimed elsewhere but not yet unlinked counts: a hint may say ready
    /// wrongly, never the other way).
    #[inline]
    fn readiness(&self, cap: Option<usize>) -> u8 {
        let closed = self.is_closed();
        let recv = closed
            || !self.buffer.is_empty()
            || !self.returned.is_empty()
            || self.senders.front().is_some();
        let send = closed
            || self.receivers.front().is_some()
            || cap.is_none_or(|cap| self.buffer.len() < cap);
        (u8::from(recv) * RECV_READY) | (u8::from(send) * SEND_READY) | READINESS_KEPT
    }

    /// A value became available to receivers: every `poll_recv` reader comes to look.
    /// All of them, since one that stopped polling would otherwise keep the news from
    /// the rest.
    #[inline]
    fn wake_readers(&mut self, wakes: &mut Wakes) {
        // Most channels have no `poll_recv` reader: one test, inline.
        if self.readers.front().is_some() {
            close_list(&mut self.readers, wakes);
        }
    }

    /// A value handed to a receiver that dropped it unread: to a waiting receiver, else
    /// ahead of the buffer.
    pub(crate) fn give_back(&mut self, value: T, wakes: &mut Wakes) {
        // Capacity `None`: never refused.
        if let Err(value) = self.give_to_receiver(value, wakes) {
            self.returned.push_back(value);
            self.wake_readers(wakes);
        }
    }

    fn give_to_receiver(&mut self, value: T, wakes: &mut Wakes) -> Result<(), T> {
        // SAFETY: the lock is held.
        match unsafe { claim_first(&mut self.receivers, None) } {
            Some(receiver) => {
                // SAFETY: claimed: the entry is ours to complete.
                let waiter = unsafe { receiver.as_ref() };
                unsafe { waiter.with_slot(|slot| *slot = Some(value)) };
                wakes.push(waiter.claim().finish(waiter.arm()));
                Ok(())
            }
            None => Err(value),
        }
    }

    /// Links a waiting entry.
    ///
    /// # Safety
    /// The lock is held; `waiter` is pinned, unlinked, and unlinked before it is freed.
    pub(crate) unsafe fn register(
        &mut self,
        side: Side,
        waiter: NonNull<Waiter<T>>,
        wakes: &mut Wakes,
    ) {
        // SAFETY: per the caller.
        unsafe {
            match side {
                Side::Send => {
                    self.senders.push_back(waiter);
                    // A reader can take from a waiting sender.
                    self.wake_readers(wakes);
                }
                Side::Recv => self.receivers.push_back(waiter),
            }
        }
    }

    /// Unlinks an entry if linked.
    ///
    /// # Safety
    /// The lock is held; `waiter` is alive.
    pub(crate) unsafe fn unregister(&mut self, side: Side, waiter: NonNull<Waiter<T>>) {
        // SAFETY: per the caller.
        unsafe {
            match side {
                Side::Send => self.senders.remove(waiter),
                Side::Recv => self.receivers.remove(waiter),
            }
        }
    }

    /// Links a close-watcher.
    ///
    /// # Safety
    /// As [`register`](Self::register).
    pub(crate) unsafe fn watch(&mut self, waiter: NonNull<Waiter<()>>) {
        // SAFETY: per the caller.
        unsafe { self.watchers.push_back(waiter) }
    }

    /// Links a `poll_recv` reader.
    ///
    /// # Safety
    /// As [`register`](Self::register).
    pub(crate) unsafe fn add_reader(&mut self, waiter: NonNull<Waiter<()>>) {
        // SAFETY: per the caller.
        unsafe { self.readers.push_back(waiter) }
    }

    /// Unlinks a `poll_recv` reader if linked.
    ///
    /// # Safety
    /// As [`unregister`](Self::unregister).
    pub(crate) unsafe fn remove_reader(&mut self, waiter: NonNull<Waiter<()>>) {
        // SAFETY: per the caller.
        unsafe { self.readers.remove(waiter) }
    }

    /// Unlinks a close-watcher if linked.
    ///
    /// # Safety
    /// As [`unregister`](Self::unregister).
    pub(crate) unsafe fn unwatch(&mut self, waiter: NonNull<Waiter<()>>) {
        // SAFETY: per the caller.
        unsafe { self.watchers.remove(waiter) }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed_by.is_some()
    }

    /// Calls `f` with what each linked entry waits for and its claim flag (the census).
    pub(crate) fn for_each_entry(&self, f: &mut dyn FnMut(Op, &Claim)) {
        // SAFETY: `&self` is reached through the lock (`Locked`); linked entries' flags
        // outlive their linking.
        unsafe {
            self.senders.for_each(|w| f(Op::Send, w.claim()));
            self.receivers.for_each(|w| f(Op::Recv, w.claim()));
            self.watchers.for_each(|w| f(Op::Closed, w.claim()));
            self.readers.for_each(|w| f(Op::Read, w.claim()));
        }
    }

    /// Buffered values, returned ones included.
    pub(crate) fn len(&self) -> usize {
        self.buffer.len() + self.returned.len()
    }

    /// Values counted against the capacity (returned ones are exempt).
    pub(crate) fn buffered(&self) -> usize {
        self.buffer.len()
    }
}

/// Which wait list an entry goes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Send,
    Recv,
}

impl<T> Chan<T> {
    /// A channel, named by where the public function that makes it was called
    /// (`#[track_caller]` down to here).
    #[track_caller]
    pub(crate) fn new(cap: Option<usize>) -> Chan<T> {
        Chan::with_home(cap, Home::here())
    }

    /// A channel foreign from birth (`home.rs`): for one whose ends may be used from
    /// anywhere, made without bumping any runtime's foreign epoch.
    #[track_caller]
    pub(crate) fn new_foreign(cap: Option<usize>) -> Chan<T> {
        Chan::with_home(cap, Home::foreign())
    }

    #[track_caller]
    fn with_home(cap: Option<usize>, home: Home) -> Chan<T> {
        let id = next_channel_id();
        let state = State {
            buffer: VecDeque::with_capacity(cap.map_or(0, |cap| cap.min(CHANNEL_PREALLOCATED))),
            returned: VecDeque::new(),
            senders: WaitList::default(),
            receivers: WaitList::default(),
            watchers: WaitList::default(),
            readers: WaitList::default(),
            closed_by: None,
            on_receivers_gone: None,
        };
        Chan {
            enrolment: Enrolment::new(id),
            id,
            cap,
            lock: RawLock::new(),
            users: Users::new(),
            readiness: AtomicU8::new(0),
            state: UnsafeCell::new(state),
            closed: AtomicBool::new(false),
            home,
            made_at: Location::caller(),
            senders: AtomicUsize::new(1),
            receivers: AtomicUsize::new(1),
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn cap(&self) -> Option<usize> {
        self.cap
    }

    /// Where the channel was made.
    pub(crate) fn made_at(&self) -> &'static Location<'static> {
        self.made_at
    }

    pub(crate) fn lock(&self) -> Locked<'_, T> {
        self.lock.lock();
        Locked { chan: self }
    }

    /// The state, if the lock is free now.
    pub(crate) fn try_lock(&self) -> Option<Locked<'_, T>> {
        self.lock.try_lock().then_some(Locked { chan: self })
    }

    /// Locks the channel without a guard (a choice holding several locks at once):
    /// release it with [`unlock`](Self::unlock).
    pub(crate) fn lock_unguarded(&self) {
        self.lock.lock();
    }

    /// The address of the channel's lock: a choice over several channels locks them in
    /// this order.
    pub(crate) fn lock_address(&self) -> usize {
        std::ptr::from_ref(&self.lock) as usize
    }

    /// Publishes the readiness of the state if the channel keeps it (module docs), then
    /// unlocks.
    ///
    /// # Safety
    /// The caller holds the lock, and no reference to the state.
    #[inline]
    pub(crate) unsafe fn unlock(&self) {
        // Relaxed: the kept bit is set under the lock we hold, so it is seen here.
        if self.readiness.load(Ordering::Relaxed) & READINESS_KEPT != 0 {
            // SAFETY: per the caller.
            let readiness = unsafe { self.state_mut() }.readiness(self.cap);
            // Relaxed: a hint, read without the lock. A reader ordered after this
            // critical section reads this store or a later one (coherence); the unlock's
            // Release orders it before the next holder's.
            self.readiness.store(readiness, Ordering::Relaxed);
        }
        // SAFETY: per the caller.
        unsafe { self.lock.unlock() }
    }

    /// False if a receive would surely fail now, unless something not ordered before
    /// this call changed that meanwhile (module docs): a hint for a choice's quick pass.
    /// The first call on a channel turns the bookkeeping on and says true.
    #[inline]
    pub(crate) fn may_recv(&self) -> bool {
        self.may(RECV_READY)
    }

    /// As [`may_recv`](Self::may_recv), for a send.
    #[inline]
    pub(crate) fn may_send(&self) -> bool {
        self.may(SEND_READY)
    }

    #[inline]
    fn may(&self, ready: u8) -> bool {
        // Relaxed: a hint (see `unlock`). Seen kept, the bookkeeping was turned on under
        // the lock, which is all that matters; seen not kept, the lock decides.
        let readiness = self.readiness.load(Ordering::Relaxed);
        if readiness & READINESS_KEPT == 0 {
            self.keep_readiness();
            return true;
        }
        readiness & ready != 0
    }

    /// Makes unlocks keep the readiness from now on: under the lock, so every later
    /// unlock sees it on (and this one publishes the first).
    #[cold]
    fn keep_readiness(&self) {
        let locked = self.lock();
        // Relaxed: under the lock (see `unlock`); the unlock below fills in the rest.
        self.readiness.store(READINESS_KEPT, Ordering::Relaxed);
        drop(locked);
    }

    /// The state, under a lock taken through [`lock_unguarded`](Self::lock_unguarded).
    ///
    /// # Safety
    /// The caller holds the lock and makes no other reference to the state meanwhile.
    #[allow(clippy::mut_from_ref)] // the lock makes the access exclusive
    pub(crate) unsafe fn state_mut(&self) -> &mut State<T> {
        // SAFETY: per the caller.
        self.state.with_mut(|s| unsafe { &mut *s })
    }

    pub(crate) fn is_closed(&self) -> bool {
        // Acquire: a caller that sees the close sees what preceded it.
        self.closed.load(Ordering::Acquire)
    }

    /// Closes the channel from the senders' side (see [`close_from`](Self::close_from)).
    pub(crate) fn close(&self) -> bool {
        self.close_from(Side::Send)
    }

    /// Closes the channel, from the side of `by`: every waiting entry fires (senders
    /// keep their values, to give back as `SendError`; receivers and watchers get
    /// nothing). True if this call closed it.
    pub(crate) fn close_from(&self, by: Side) -> bool {
        let mut wakes = Wakes::default();
        {
            let mut state = self.lock();
            if state.is_closed() {
                return false;
            }
            state.closed_by = Some(by);
            // Release: pairs with `is_closed`.
            self.closed.store(true, Ordering::Release);
            close_list(&mut state.senders, &mut wakes);
            close_list(&mut state.receivers, &mut wakes);
            close_list(&mut state.watchers, &mut wakes);
            close_list(&mut state.readers, &mut wakes);
        }
        wakes.run();
        true
    }

    pub(crate) fn add_sender(&self) {
        // Relaxed: a new count from an existing end, as `Arc::clone`.
        self.senders.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_receiver(&self) {
        // Relaxed: as in `add_sender`.
        self.receivers.fetch_add(1, Ordering::Relaxed);
    }

    /// A `Sender` is gone; the last one closes the channel.
    pub(crate) fn drop_sender(&self) {
        if self.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.close();
        }
    }

    /// A `Receiver` is gone; the last one closes the channel and drops the values no one
    /// can receive any more.
    pub(crate) fn drop_receiver(&self) {
        if self.receivers.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        // A waker that panics as the close wakes it (a sender's, a watcher's) must not
        // keep the values from going or the hook from running: its panic comes after.
        let mut panicked = FirstPanic::default();
        panicked.catch(|| {
            self.close_from(Side::Recv);
        });
        let (unreceivable, hook, senders_ended) = {
            let mut state = self.lock();
            let mut values = std::mem::take(&mut state.returned);
            values.append(&mut state.buffer);
            let senders_ended = state.closed_by == Some(Side::Send);
            (values, state.on_receivers_gone.take(), senders_ended)
        };
        if let Some(hook) = hook {
            panicked.catch(|| hook(senders_ended));
        }
        // The user's values: a panic of one's drop goes on, as from any container.
        drop(unreceivable);
        panicked.resume();
    }

    /// Sets what to run once the last receiver is gone (one hook per channel).
    pub(crate) fn on_receivers_gone(&self, hook: ReceiversGone) {
        let previous = self.lock().on_receivers_gone.replace(hook);
        debug_assert!(
            previous.is_none(),
            "a channel takes one receivers-gone hook"
        );
    }

    /// Something outside csp's view may use the channel (`home.rs`).
    pub(crate) fn mark_foreign(&self) {
        self.home.mark();
    }

    /// An end is used or cloned on this thread now (`home.rs`).
    #[inline]
    pub(crate) fn note_use(&self) {
        self.home.note_use();
    }

    pub(crate) fn is_foreign(&self) -> bool {
        self.home.is_foreign()
    }

    pub(crate) fn sender_count(&self) -> usize {
        // Relaxed: a snapshot for the caller, ordering nothing else.
        self.senders.load(Ordering::Relaxed)
    }

    pub(crate) fn receiver_count(&self) -> usize {
        // Relaxed: as in `sender_count`.
        self.receivers.load(Ordering::Relaxed)
    }
}

/// Fires every claimable entry of `list` with no value change.
fn close_list<U>(list: &mut WaitList<U>, wakes: &mut Wakes) {
    // SAFETY: called with the lock held (from `Chan::close`).
    while let Some(entry) = unsafe { claim_first(list, None) } {
        // SAFETY: claimed: ours to complete.
        let waiter = unsafe { entry.as_ref() };
        wakes.push(waiter.claim().finish(waiter.arm()));
    }
}
