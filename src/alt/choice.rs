//! A choice over several operations: the engine of `Select` (and of `alt!`), on one
//! claim flag shared by every arm (DESIGN.md, "Channels and alt").
//!
//! A poll of an idle choice tries the arms in the plan's order (uniformly random for a
//! fair choice, written order for a biased one), each under its own channel's lock; the
//! first that can complete fires. An arm whose channel's readiness (a lock-free hint,
//! `chan/core.rs`) says it would fail is skipped without taking its lock. If none can
//! complete, it locks the distinct channels of its enabled arms in address order, tries
//! them all once more, and registers every arm under those locks, so no counterpart sees
//! half a registration and none slips in between the last try and the registration;
//! then it waits for a counterpart to claim the flag for one arm. The poll after that claim
//! unlinks the other arms' entries and takes the fired arm's outcome. Dropping a waiting
//! choice cancels the flag under all its locks: either nobody claimed it (and nobody can
//! now), or one arm fired and only that arm's operation took effect (a received value
//! goes back to its channel).

use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use crate::alt::rng;
use crate::task::panic::discard;
use crate::time::{Sleep, sleep, sleep_until};
use crate::tuning::INLINE_ARMS;
use crate::wait::WaitOn;
use crate::wait::claim::{Claim, Owner, Panic, Seen, Wakes, resume};
use crate::wait::operation::{Held, Operation};

/// The arms of a choice, by index.
pub(crate) trait ArmSet {
    /// How many arms there are, enabled or not.
    fn count(&self) -> usize;

    /// Arm `i`, or `None` if it is disabled (a false guard, a spent send).
    fn arm(&self, i: usize) -> Option<&dyn Operation>;

    /// True if arm `i` is enabled (what [`arm`](Self::arm) says, for a set that can tell
    /// more cheaply).
    #[inline]
    fn is_enabled(&self, i: usize) -> bool {
        self.arm(i).is_some()
    }

    /// True if an arm as written spans several operations (a `recv_any` or `send_any`
    /// arm: one operation per channel, with consecutive indices). A fair choice then
    /// draws among the arms, not the operations ([`try_in_groups`]).
    #[inline]
    fn has_multi_arms(&self) -> bool {
        false
    }

    /// The arm as written that operation `i` belongs to (`i` itself unless
    /// [`has_multi_arms`](Self::has_multi_arms)); non-decreasing in `i`.
    #[inline]
    fn arm_of(&self, i: usize) -> usize {
        i
    }
}

/// A list of arm indices, kept inline up to [`INLINE_ARMS`] (so a choice of a fixed,
/// small set of arms allocates nothing), on the heap beyond. Stored as `u32`, which
/// halves the `alt!` future's two lists (a choice of 2^32 operations would need
/// hundreds of GiB for their entries alone).
#[derive(Debug, Default)]
struct Indices {
    inline: [u32; INLINE_ARMS],
    /// Indices inline (while `heap` is empty).
    len: u32,
    heap: Vec<u32>,
}

impl Indices {
    #[inline]
    fn fill(&mut self, items: impl Iterator<Item = usize>) {
        self.heap.clear();
        let mut len = 0;
        for item in items {
            let item = u32::try_from(item).expect("csp: a choice of over 2^32 operations");
            if len < INLINE_ARMS {
                self.inline[len] = item;
                len += 1;
            } else {
                if self.heap.is_empty() {
                    self.heap.extend_from_slice(&self.inline);
                }
                self.heap.push(item);
            }
        }
        self.len = len as u32;
    }

    /// Fills with the indices below `count` that `keep` keeps, in order.
    #[inline]
    fn fill_kept(&mut self, count: usize, mut keep: impl FnMut(usize) -> bool) {
        if count > INLINE_ARMS {
            self.fill((0..count).filter(|&i| keep(i)));
            return;
        }
        // Few enough to fit inline whatever is kept: each index is written, and kept by
        // moving past it (no branch on `keep`).
        self.heap.clear();
        let mut len = 0;
        for i in 0..count {
            // `len <= i < count <= INLINE_ARMS`, and `i < 2^32`.
            self.inline[len] = i as u32;
            len += usize::from(keep(i));
        }
        self.len = len as u32;
    }

    #[inline]
    fn as_slice(&self) -> &[u32] {
        if self.heap.is_empty() {
            &self.inline[..self.len as usize]
        } else {
            &self.heap
        }
    }

    #[inline]
    fn as_mut_slice(&mut self) -> &mut [u32] {
        if self.heap.is_empty() {
            &mut self.inline[..self.len as usize]
        } else {
            &mut self.heap
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// The indices, in order.
    #[inline]
    fn iter(&self) -> impl DoubleEndedIterator<Item = usize> + '_ {
        self.as_slice().iter().map(|&i| i as usize)
    }
}

/// The order to try the arms in and to lock their channels in; its buffers are reused
/// from one choice to the next.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Enabled arms, in the order they are tried.
    order: Indices,
    /// One arm per distinct channel, sorted by lock address (`Operation::lock_key`;
    /// filled by `plan_locks`, once the quick pass found no arm ready).
    locks: Indices,
    /// Try the arms in written order (`prialt!`), not shuffled.
    biased: bool,
    /// A fair plan over arms that span several operations: drawn by arm
    /// ([`try_in_groups`]).
    grouped: bool,
}

impl Plan {
    /// Plans a choice over the enabled arms of `arms`; false if none is enabled. A fair
    /// plan is shuffled as its quick pass goes ([`try_each`](Self::try_each)).
    #[inline]
    pub(crate) fn prepare<A: ArmSet + ?Sized>(&mut self, arms: &A, biased: bool) -> bool {
        self.order.fill_kept(arms.count(), |i| arms.is_enabled(i));
        self.biased = biased;
        self.grouped = !biased && arms.has_multi_arms();
        self.order.len() > 0
    }

    /// Orders the arms' channels for locking them all: needed only when no arm was
    /// ready in the quick pass, so not done for a choice that completes at once.
    fn plan_locks<A: ArmSet + ?Sized>(&mut self, arms: &A) {
        // Each arm's lock key, looked up once, then sorted and deduplicated.
        let order = &self.order;
        let key = |i: usize| Self::enabled(arms, i).lock_key();
        let mut inline = [(0, 0); INLINE_ARMS];
        let mut heap = Vec::new();
        let keyed: &mut [(u64, usize)] = if order.len() <= INLINE_ARMS {
            for (slot, i) in inline.iter_mut().zip(order.iter()) {
                *slot = (key(i), i);
            }
            &mut inline[..order.len()]
        } else {
            heap.extend(order.iter().map(|i| (key(i), i)));
            &mut heap
        };
        keyed.sort_unstable();
        self.locks.fill(
            keyed
                .iter()
                .enumerate()
                .filter(|&(k, &(a, _))| k == 0 || keyed[k - 1].0 != a)
                .map(|(_, &(_, i))| i),
        );
    }

    /// Distinct channels the choice spans.
    pub(crate) fn channels(&self) -> usize {
        self.locks.len()
    }

    #[inline]
    fn enabled<A: ArmSet + ?Sized>(arms: &A, i: usize) -> &dyn Operation {
        arms.arm(i)
            .expect("csp: an arm was disabled while its choice was in progress")
    }

    /// Locks the channels of every enabled arm, in address order; they stay locked
    /// until the returned guard drops.
    fn lock<'p, A: ArmSet + ?Sized>(&'p self, arms: &'p A) -> HeldAll<'p, A> {
        let mut held = HeldAll {
            plan: self,
            arms,
            count: 0,
        };
        for i in self.locks.iter() {
            Self::enabled(arms, i).lock();
            held.count += 1;
        }
        held
    }

    /// Tries the arms in order under the locks; the first that completes fires.
    ///
    /// # Safety
    /// The caller holds the locks.
    unsafe fn try_arms<A: ArmSet + ?Sized>(
        &self,
        arms: &A,
        claim: &Claim,
        wakes: &mut Wakes,
    ) -> Option<usize> {
        self.order.iter().find(|&i| {
            // SAFETY: per the caller.
            unsafe { Self::enabled(arms, i).try_now(claim, wakes) }
        })
    }

    /// Tries the arms in order, each under its own channel's lock only: the quick pass
    /// of an idle choice. Sound without holding every lock, because the choice's flag
    /// is idle (registered nowhere), so no counterpart can reach it: each try is an
    /// independent attempt, and the first to complete is the one arm that fires. Only
    /// that arm can have anyone to wake: into `wakes`, for the caller to run.
    ///
    /// A fair plan is shuffled here, one arm at a time ([`try_in_order`]). A pass that
    /// finds no arm ready has drawn a whole uniform permutation, which the locked pass
    /// then follows.
    fn try_each<A: ArmSet + ?Sized>(
        &mut self,
        arms: &A,
        claim: &Claim,
        wakes: &mut Wakes,
    ) -> Option<usize> {
        if self.grouped {
            return try_in_groups(
                self.order.as_mut_slice(),
                |i| arms.arm_of(i),
                |i| Self::try_arm(arms, i, claim, wakes),
            );
        }
        try_in_order(self.order.as_mut_slice(), self.biased, |i| {
            Self::try_arm(arms, i, claim, wakes)
        })
    }

    /// One try of the quick pass: arm `i` completes now if it can, under its channel's
    /// lock.
    #[inline(always)]
    fn try_arm<A: ArmSet + ?Sized>(arms: &A, i: usize, claim: &Claim, wakes: &mut Wakes) -> bool {
        let arm = Self::enabled(arms, i);
        // An arm that would only fail is skipped unlocked: should the hint be wrong,
        // the locked pass that follows tries it again.
        if !arm.may_be_ready() {
            return false;
        }
        let _held = Held::lock(arm);
        // SAFETY: the arm's lock is held.
        unsafe { arm.try_now(claim, wakes) }
    }

    /// Unlinks every arm's entry (the fired one's is already unlinked).
    ///
    /// # Safety
    /// The caller holds the locks.
    unsafe fn unregister_all<A: ArmSet + ?Sized>(&self, arms: &A) {
        for i in self.order.iter() {
            // SAFETY: per the caller.
            unsafe { Self::enabled(arms, i).unregister() };
        }
    }
}

/// Calls `try_arm` on the arms of `order` until one says it fired, and returns that one:
/// in `order`'s order if `biased`, else in an order drawn as it goes (Fisher-Yates,
/// front to back, leaving `order` shuffled so far): each arm tried is drawn uniformly
/// from those not tried yet, so the first ready arm found is uniform among the ready
/// ones, and a pass whose first try succeeds draws one number rather than one per arm.
#[inline]
pub(crate) fn try_in_order(
    order: &mut [u32],
    biased: bool,
    mut try_arm: impl FnMut(usize) -> bool,
) -> Option<usize> {
    if biased || order.len() < 2 {
        return order.iter().map(|&i| i as usize).find(|&i| try_arm(i));
    }
    let mut random = rng::Stream::start();
    let n = order.len();
    let mut fired = None;
    for k in 0..n {
        order.swap(k, k + random.below(n - k));
        let i = order[k] as usize;
        if try_arm(i) {
            fired = Some(i);
            break;
        }
    }
    random.end();
    fired
}

/// As [`try_in_order`] for a fair choice whose arms span several operations each (a
/// `recv_any` or `send_any` arm; `arm_of` maps an operation to its arm, and `order`
/// comes sorted): the arm tried next is drawn uniformly from the arms not tried yet, and
/// its operations are all tried, in an order drawn the same way, before any other arm's.
/// So the first arm found ready is uniform among the ready arms (API.md), however many
/// channels each spans, not weighted by them; and `order` is left grouped by arm, so the
/// locked pass that tries it in that order keeps the property.
#[cold]
#[inline(never)]
pub(crate) fn try_in_groups(
    order: &mut [u32],
    arm_of: impl Fn(usize) -> usize,
    mut try_arm: impl FnMut(usize) -> bool,
) -> Option<usize> {
    let arm = |k: usize, order: &[u32]| arm_of(order[k] as usize);
    let n = order.len();
    // The arms not tried yet fill `order[k..]`, each one's operations together.
    let mut arms_left = (1..n)
        .filter(|&k| arm(k, order) != arm(k - 1, order))
        .count()
        + 1;
    let mut random = rng::Stream::start();
    let mut fired = None;
    let mut k = 0;
    'arms: while k < n {
        // The `pick`-th arm left, moved to the front of what is left.
        let pick = random.below(arms_left);
        let mut start = k;
        for _ in 0..pick {
            let this = arm(start, order);
            while arm(start, order) == this {
                start += 1;
            }
        }
        let this = arm(start, order);
        let mut end = start + 1;
        while end < n && arm(end, order) == this {
            end += 1;
        }
        let len = end - start;
        order[k..end].rotate_right(len);
        for j in 0..len {
            order.swap(k + j, k + j + random.below(len - j));
            let i = order[k + j] as usize;
            if try_arm(i) {
                fired = Some(i);
                break 'arms;
            }
        }
        k += len;
        arms_left -= 1;
    }
    random.end();
    fired
}

/// The locks of every channel of a plan, held until this is dropped (in reverse order):
/// a panic that slips in under them (none should) releases them as it unwinds.
struct HeldAll<'p, A: ArmSet + ?Sized> {
    plan: &'p Plan,
    arms: &'p A,
    /// How many of the plan's locks, in order, are held.
    count: usize,
}

impl<A: ArmSet + ?Sized> Drop for HeldAll<'_, A> {
    fn drop(&mut self) {
        for &i in self.plan.locks.as_slice()[..self.count].iter().rev() {
            // An arm cannot be disabled while its lock is held; should it be, it is left
            // locked rather than panic in a drop.
            if let Some(arm) = self.arms.arm(i as usize) {
                // SAFETY: `Plan::lock` took this lock and counted it.
                unsafe { arm.unlock() };
            }
        }
    }
}

/// Runs the wakes of arm `fired`, which completed at once. Should a waker panic, the
/// arm's outcome is undone first (`Operation::abandon`: a received value goes back to
/// its channel), as for a choice dropped after its arm fired, so the unwinding poll
/// loses no value.
#[inline]
fn run_wakes_of<A: ArmSet + ?Sized>(arms: &A, fired: usize, wakes: Wakes) {
    if let Err(panic) = wakes.run_catching() {
        undo_then_resume(arms, fired, panic);
    }
}

/// As [`run_wakes_of`], then drops `owner`, the waker the choice made to wait with and no
/// longer needs: foreign code too, so only after the wakes (a panic of its drop must not
/// lose them), and with the arm's outcome undone should it panic.
fn run_wakes_then_drop<A: ArmSet + ?Sized>(arms: &A, fired: usize, wakes: Wakes, owner: Owner) {
    let woken = wakes.run_catching();
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(owner)));
    let panic = match (woken, dropped) {
        (Ok(()), Ok(())) => return,
        (Err(panic), Ok(())) | (Ok(()), Err(panic)) => panic,
        // The second is let go (its payload's drop may panic too) before the undo.
        (Err(panic), Err(again)) => {
            discard(again);
            panic
        }
    };
    undo_then_resume(arms, fired, panic);
}

/// Foreign code panicked after arm `fired` completed: its outcome is undone, then the
/// panic goes on.
#[cold]
fn undo_then_resume<A: ArmSet + ?Sized>(arms: &A, fired: usize, panic: Panic) {
    Plan::enabled(arms, fired).abandon();
    resume(panic);
}

/// What a choice waits for besides its arms: a [`Deadline`], or [`NoDeadline`] for a
/// choice that waits as long as it takes, which then carries no timer at all.
///
/// `pub` only so that the `alt!` future, public for the macros, can name it in its
/// bounds; the module is private, so nothing outside the crate implements it.
pub trait Timeout {
    /// True if the choice has a timeout.
    fn is_set(&self) -> bool;

    /// `Ready` once the time is up; never without a timeout.
    ///
    /// # Safety
    /// `self` stays pinned (a timer's wheel entry lives inside it).
    unsafe fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()>;
}

/// No timeout: zero-sized.
#[derive(Debug, Default)]
pub struct NoDeadline;

impl Timeout for NoDeadline {
    #[inline]
    fn is_set(&self) -> bool {
        false
    }

    #[inline]
    unsafe fn poll(&mut self, _cx: &mut Context<'_>) -> Poll<()> {
        Poll::Pending
    }
}

/// A choice's timeout (an `after` or `at` arm, `Select::timeout`, `Select::deadline`):
/// a duration is measured from the first poll that finds no arm ready, the one that
/// starts the timer, so a choice that completes at once never makes one; the timer goes
/// into the wheel only when the choice waits (DESIGN.md: a fixed `alt!` allocates nothing
/// per iteration). The timer never claims the flag; on expiry the choice withdraws
/// ([`Choice::poll_until`]).
#[derive(Debug)]
pub struct Deadline {
    expiry: Option<Expiry>,
    /// Started by the first `poll`; its wheel entry lives inside it, so it stays pinned.
    timer: Option<Sleep>,
}

/// When a choice's timeout fires.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Expiry {
    /// This long after the choice's first wait (`after`, `Select::timeout`).
    After(Duration),
    /// At this instant (`at`, `Select::deadline`).
    At(Instant),
}

impl Deadline {
    /// A timeout at `expiry` (`None`: none, as a guarded-off `after` or `at` arm).
    pub(crate) fn new(expiry: Option<Expiry>) -> Deadline {
        Deadline {
            expiry,
            timer: None,
        }
    }
}

impl Timeout for Deadline {
    fn is_set(&self) -> bool {
        self.expiry.is_some()
    }

    unsafe fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let (Some(expiry), None) = (self.expiry, &self.timer) {
            // Written only while `None`: no pinned timer is overwritten.
            self.timer = Some(match expiry {
                Expiry::After(after) => sleep(after),
                Expiry::At(at) => sleep_until(at),
            });
        }
        match &mut self.timer {
            // SAFETY: pinned, per the caller.
            Some(timer) => unsafe { Pin::new_unchecked(timer) }.poll(cx),
            None => Poll::Pending,
        }
    }
}

/// Records, for dumps and deadlock detection, that `owner` (a process or a `block_on`
/// future; a foreign owner records nothing) waits on this choice.
fn record_wait<A: ArmSet + ?Sized>(owner: &Owner, arms: &A, plan: &Plan) {
    let wait = WaitOn::Alt {
        channels: plan.channels() as u64,
    };
    let foreign = plan
        .locks
        .iter()
        .any(|i| Plan::enabled(arms, i).is_foreign());
    crate::wait::record::record_for(owner, wait, foreign);
}

/// The state of one choice in progress; must stay pinned while it waits (the arms'
/// entries point at its flag).
#[derive(Debug)]
pub(crate) struct Choice {
    claim: Claim,
    waiting: bool,
}

impl Choice {
    pub(crate) fn new() -> Choice {
        Choice {
            claim: Claim::new(),
            waiting: false,
        }
    }

    #[inline]
    pub(crate) fn is_waiting(&self) -> bool {
        self.waiting
    }

    /// Fires an arm that can complete now, without waiting; `None` only if there was a
    /// moment at which no arm could (linearizable, `alt/mod.rs`).
    ///
    /// The quick pass tries the arms one channel lock at a time, and an arm ready when
    /// tried fires: it could complete at that moment. A quick pass that fires nothing
    /// proves nothing, since the channels may change between its tries (an arm found
    /// empty, then filled while another is found emptied), so the answer "none" comes
    /// from one more pass under every lock at once, the pass a waiting choice makes
    /// before it registers: what it finds held at one moment, while it held them all.
    #[inline]
    pub(crate) fn try_now<A: ArmSet + ?Sized>(&self, arms: &A, plan: &mut Plan) -> Option<usize> {
        debug_assert!(!self.waiting);
        let mut wakes = Wakes::default();
        if let Some(fired) = plan.try_each(arms, &self.claim, &mut wakes) {
            run_wakes_of(arms, fired, wakes);
            return Some(fired);
        }
        self.try_locked(arms, plan)
    }

    /// The pass of [`try_now`](Self::try_now) under every lock, once its quick pass
    /// fired nothing.
    #[inline(never)]
    fn try_locked<A: ArmSet + ?Sized>(&self, arms: &A, plan: &mut Plan) -> Option<usize> {
        plan.plan_locks(arms);
        let mut wakes = Wakes::default();
        let held = plan.lock(arms);
        // SAFETY: the locks are held.
        let fired = unsafe { plan.try_arms(arms, &self.claim, &mut wakes) };
        drop(held);
        let fired = fired?;
        run_wakes_of(arms, fired, wakes);
        Some(fired)
    }

    /// Drives the choice: `Ready(i)` once arm `i` fired (its outcome is in the arm).
    ///
    /// # Safety
    /// `self` stays pinned, and `arms` and `plan` unchanged, until this returns `Ready`
    /// or [`cancel`](Self::cancel) is called.
    #[inline]
    unsafe fn poll<A: ArmSet + ?Sized>(
        &mut self,
        arms: &A,
        plan: &mut Plan,
        cx: &mut Context<'_>,
    ) -> Poll<usize> {
        if !self.waiting {
            return self.start(arms, plan, cx);
        }
        if self.claim.seen() == Seen::Pending {
            // Polled again while still waiting: record the wait again for dumps.
            let fresh = Owner::from_waker(cx.waker());
            record_wait(&fresh, arms, plan);
            let held = plan.lock(arms);
            if self.claim.seen() == Seen::Pending {
                let old = self.claim.replace_owner(fresh);
                drop(held);
                drop(old);
                return Poll::Pending;
            }
            drop(held);
        }
        Poll::Ready(self.finish(arms, plan))
    }

    /// As [`poll`](Self::poll), racing `deadline`: `Ready(Some(i))` once arm `i` fired,
    /// `Ready(None)` once the time was up first, in which case no arm took effect (an
    /// arm a counterpart claimed before the withdrawal fires instead).
    ///
    /// # Safety
    /// As [`poll`](Self::poll); `deadline` stays pinned too.
    #[inline]
    pub(crate) unsafe fn poll_until<A: ArmSet + ?Sized, D: Timeout>(
        &mut self,
        arms: &A,
        plan: &mut Plan,
        deadline: &mut D,
        cx: &mut Context<'_>,
    ) -> Poll<Option<usize>> {
        if self.waiting && self.claim.seen() == Seen::Pending {
            // Most likely woken by the timer: if the time is up, withdraw at once (one
            // pass over the locks, not two); a claim that beat the withdrawal still wins.
            // SAFETY: per the caller.
            if unsafe { deadline.poll(cx) }.is_ready() {
                return Poll::Ready(self.withdraw(arms, plan));
            }
            // SAFETY: per the caller.
            return unsafe { self.poll(arms, plan, cx) }.map(Some);
        }
        // SAFETY: per the caller.
        if let Poll::Ready(fired) = unsafe { self.poll(arms, plan, cx) } {
            return Poll::Ready(Some(fired));
        }
        // SAFETY: per the caller.
        ready!(unsafe { deadline.poll(cx) });
        Poll::Ready(self.withdraw(arms, plan))
    }

    fn start<A: ArmSet + ?Sized>(
        &mut self,
        arms: &A,
        plan: &mut Plan,
        cx: &mut Context<'_>,
    ) -> Poll<usize> {
        // The quick pass: an arm ready now fires with one channel locked at a time.
        let mut wakes = Wakes::default();
        if let Some(fired) = plan.try_each(arms, &self.claim, &mut wakes) {
            run_wakes_of(arms, fired, wakes);
            return Poll::Ready(fired);
        }
        plan.plan_locks(arms);
        // None was: under every lock, try once more (a counterpart may have come since)
        // and register all the arms, so none can be missed between the two.
        // Made before locking: a foreign waker's clone is foreign code.
        let owner = Owner::from_waker(cx.waker());
        let held = plan.lock(arms);
        // SAFETY: the locks are held.
        if let Some(fired) = unsafe { plan.try_arms(arms, &self.claim, &mut wakes) } {
            drop(held);
            run_wakes_then_drop(arms, fired, wakes, owner);
            return Poll::Ready(fired);
        }
        record_wait(&owner, arms, plan);
        self.claim.begin_wait(owner);
        let claim = NonNull::from(&self.claim);
        for i in plan.order.iter() {
            // SAFETY: the locks are held; the caller keeps `self` pinned (so `claim`
            // stays put) and unregisters every arm before the arms go (`finish` or
            // `cancel`).
            unsafe { Plan::enabled(arms, i).register(claim, i, &mut wakes) };
        }
        drop(held);
        // Waiting before the wakes run: should a waker panic, the drop of the choice's
        // owner unlinks every entry.
        self.waiting = true;
        wakes.run();
        Poll::Pending
    }

    /// The flag fired: unlink the other arms and take the fired arm's outcome.
    fn finish<A: ArmSet + ?Sized>(&mut self, arms: &A, plan: &Plan) -> usize {
        let Seen::Claimed(fired) = self.claim.seen() else {
            unreachable!("csp: finishing a choice whose flag did not fire")
        };
        let held = plan.lock(arms);
        // SAFETY: the locks are held.
        unsafe { plan.unregister_all(arms) };
        drop(held);
        // SAFETY: the flag fired this arm, and its claimer is done with it (it held a
        // lock we have since taken).
        unsafe { Plan::enabled(arms, fired).take_fired() };
        self.claim.reset();
        self.waiting = false;
        fired
    }

    /// Stops waiting: afterwards no arm can fire. Returns the arm that fired before
    /// that, if any, with its outcome taken (as `poll` would have returned it); `None`
    /// if none did (or the choice was not waiting).
    fn withdraw<A: ArmSet + ?Sized>(&mut self, arms: &A, plan: &Plan) -> Option<usize> {
        if !self.waiting {
            return None;
        }
        let held = plan.lock(arms);
        let outcome = self.claim.cancel();
        // SAFETY: the locks are held.
        unsafe { plan.unregister_all(arms) };
        drop(held);
        self.waiting = false;
        self.claim.reset();
        match outcome {
            Ok(owner) => {
                drop(owner);
                None
            }
            Err(fired) => {
                // SAFETY: the flag fired this arm; its claimer is done with it (it held
                // a lock we have since taken).
                unsafe { Plan::enabled(arms, fired).take_fired() };
                Some(fired)
            }
        }
    }

    /// Gives up a waiting choice: afterwards no arm can fire. Returns the arm that had
    /// fired already, if any, after undoing what it can (`Operation::abandon`).
    pub(crate) fn cancel<A: ArmSet + ?Sized>(&mut self, arms: &A, plan: &Plan) -> Option<usize> {
        let fired = self.withdraw(arms, plan)?;
        Plan::enabled(arms, fired).abandon();
        Some(fired)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::try_in_groups;

    /// Operation 0 is one arm; operations 1 to 9 are one `recv_any` arm.
    fn arm_of(i: usize) -> usize {
        usize::from(i > 0)
    }

    #[test]
    fn with_every_operation_ready_each_arm_fires_half_the_time() {
        let rounds = 20_000;
        let mut fired = [0usize; 10];
        for _ in 0..rounds {
            let mut order: Vec<u32> = (0..10).collect();
            let i = try_in_groups(&mut order, arm_of, |_| true).expect("all are ready");
            fired[i] += 1;
        }
        // Drawn by arm: 1/2 each (standard deviation 0.0035 of the share); by
        // operation it would be 1/10 for the single arm.
        let share = fired[0] as f64 / rounds as f64;
        assert!((share - 0.5).abs() < 0.03, "the single arm fired {share}");
        // Within the wide arm, each channel in turn: about 1/18 each.
        for (i, &n) in fired.iter().enumerate().skip(1) {
            assert!(n > rounds / 36, "channel {i} fired {n} times");
        }
    }

    #[test]
    fn with_none_ready_each_is_tried_once_and_the_order_stays_grouped_by_arm() {
        let arm_of = |i: usize| [0, 1, 1, 1, 2, 3, 3][i];
        for _ in 0..200 {
            let mut order: Vec<u32> = (0..7).collect();
            let mut tried = Vec::new();
            let fired = try_in_groups(&mut order, arm_of, |i| {
                tried.push(i as u32);
                false
            });
            assert_eq!(fired, None);
            assert_eq!(tried, order, "tried in the order left for the locked pass");
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..7).collect::<Vec<_>>(), "each once");
            let arms: Vec<usize> = order.iter().map(|&i| arm_of(i as usize)).collect();
            let changes = arms.windows(2).filter(|w| w[0] != w[1]).count();
            assert_eq!(changes, 3, "each arm's operations together: {arms:?}");
        }
    }
}
