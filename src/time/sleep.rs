//! `sleep` and `sleep_until`: a future that completes at a deadline.

use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use pin_project_lite::pin_project;

use crate::runtime::Handle;
use crate::runtime::timer::entry::{Action, Entry};
use crate::runtime::timer::timers::{Armed, Rewake};
use crate::task::waker::process_of;
use crate::wait::WaitOn;
use crate::wait::claim::Owner;
use crate::wait::parker::parker_of;
use crate::wait::record::record_outside;

/// Waits until `duration` has elapsed.
///
/// The timer is armed in the wheel of the runtime the future is first polled on (or of
/// the default runtime, when polled outside any csp runtime: inside tokio, on a plain
/// thread), and removed from it when the future is dropped. When that runtime shuts
/// down, a sleep that a `block_on`, another executor or a process of another runtime
/// awaits moves to the runtime its next poll runs in (the default runtime outside any);
/// one of a process of the runtime stays pending until the shutdown drops the process.
/// It completes no earlier than asked and, on an idle machine, within about a
/// millisecond after.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// # csp::block_on(async {
/// let start = Instant::now();
/// csp::sleep(Duration::from_millis(5)).await;
/// assert!(start.elapsed() >= Duration::from_millis(5));
/// # });
/// ```
// Inlined (with `sleep_until`, `Sleep::new` and `Entry::new`) so that the caller's future
// builds the sleep in place: called across crates without LTO, the sleep was built here,
// then copied (in the release profile, 58 of `http_hello`'s instructions a request went
// to that copy, callgrind).
#[inline]
pub fn sleep(duration: Duration) -> Sleep {
    let now = Instant::now();
    Sleep::new(now.checked_add(duration))
}

/// Waits until `deadline`; see [`sleep`].
///
/// ```
/// use std::time::{Duration, Instant};
///
/// # csp::block_on(async {
/// let deadline = Instant::now() + Duration::from_millis(2);
/// csp::sleep_until(deadline).await;
/// assert!(Instant::now() >= deadline);
/// # });
/// ```
#[inline]
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep::new(Some(deadline))
}

pin_project! {
    /// The future of [`sleep`] and [`sleep_until`]: completes at its deadline.
    ///
    /// `!Unpin`: its wheel entry lives inside it. Pin it (`std::pin::pin!`, or
    /// `Box::pin`) to poll it by hand or to [`reset`](Sleep::reset) it.
    #[must_use = "futures do nothing unless polled"]
    pub struct Sleep {
        // `None`: a deadline beyond what `Instant` can represent (never fires).
        deadline: Option<Instant>,
        // The runtime whose wheel the entry is armed in.
        runtime: Option<Handle>,
        // While armed: the tick the entry is linked at.
        armed_tick: u64,
        // While armed: the waker the entry wakes, if a process's or `block_on`'s (a poll
        // with this one takes no lock).
        woken: Option<WakerId>,
        // While armed: a `reset` moved the deadline past `armed_tick`, so the entry's
        // firing does not complete the sleep.
        moved: bool,
        done: bool,
        #[pin]
        entry: Entry,
    }

    impl PinnedDrop for Sleep {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            disarm(this.runtime.take(), &this.entry);
        }
    }
}

/// A waker of a csp process or `block_on` future, as its data and vtable pointers: two
/// wakers with the same are the same raw waker, so either one's wake does what the
/// other's would (what `Waker::will_wake` compares).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WakerId(usize, usize);

impl WakerId {
    /// `waker`'s id if csp holds its owner by an internal reference (`Owner::internal`):
    /// the entry's owner then keeps the process or parker that the data points at alive,
    /// so while the entry is armed the id cannot come to stand for another waker. `None`
    /// for another executor's waker: the entry holds a clone of it, whose data may
    /// differ from the waker's (a waker on the stack, copied to the heap by its clone),
    /// and the address recorded could then be reused by a waker of another task.
    fn internal(waker: &Waker) -> Option<WakerId> {
        (process_of(waker).is_some() || parker_of(waker).is_some()).then(|| WakerId::of(waker))
    }

    /// As [`internal`](Self::internal), for `waker` whose owner the entry is given
    /// (`Owner::from_waker`): internal exactly when that owner is.
    fn of_owner(owner: &Owner, waker: &Waker) -> Option<WakerId> {
        (!matches!(owner, Owner::Foreign(_))).then(|| WakerId::of(waker))
    }

    fn of(waker: &Waker) -> WakerId {
        WakerId(
            waker.data() as usize,
            std::ptr::from_ref(waker.vtable()) as usize,
        )
    }
}

/// Takes `entry` out of the wheel of `runtime`, the one it was armed in, if any; what it
/// would have done on firing is dropped.
fn disarm(runtime: Option<Handle>, entry: &Pin<&mut Entry>) {
    // A fired entry is unlinked and its action taken (both before `fired` was
    // published): nothing to undo, and no lock to take.
    if entry.has_fired() {
        return;
    }
    if let Some(runtime) = runtime {
        // SAFETY: the entry is pinned and was armed in this runtime's wheel.
        let action = unsafe { runtime.shared.timers().disarm(NonNull::from(&**entry)) };
        drop(action);
    }
}

impl Sleep {
    #[inline]
    fn new(deadline: Option<Instant>) -> Sleep {
        Sleep {
            deadline,
            runtime: None,
            armed_tick: 0,
            woken: None,
            moved: false,
            done: false,
            entry: Entry::new(),
        }
    }

    /// The instant the sleep completes at.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let deadline = Instant::now() + Duration::from_secs(1);
    /// assert_eq!(csp::sleep_until(deadline).deadline(), deadline);
    /// ```
    pub fn deadline(&self) -> Instant {
        // A deadline too far to represent reads as the farthest one that is.
        self.deadline
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(u64::MAX / 4))
    }

    /// True once the sleep has completed.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let mut sleep = std::pin::pin!(csp::sleep(std::time::Duration::ZERO));
    /// sleep.as_mut().await;
    /// assert!(sleep.is_elapsed());
    /// # });
    /// ```
    pub fn is_elapsed(&self) -> bool {
        self.done
    }

    /// Moves the deadline (earlier or later, elapsed or not): the sleep completes at the
    /// new one, when next polled.
    ///
    /// Moving a waiting sleep's deadline later takes no lock: its wheel entry stays where
    /// it is, and when the deadline it was armed for comes, the sleep's owner is woken
    /// once to find the new deadline still ahead, and the sleep is armed again (under
    /// the wheel's lock). So an idle timer pushed back at every message takes no lock for
    /// it, and costs one wake and one arm each time the deadline it was armed for passes.
    /// A waiting sleep polled again by the process (or `block_on`) it will wake takes no
    /// lock either, unless its runtime is shutting down.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// # csp::block_on(async {
    /// let mut sleep = std::pin::pin!(csp::sleep(Duration::from_secs(3600)));
    /// let soon = Instant::now() + Duration::from_millis(1);
    /// sleep.as_mut().reset(soon);
    /// sleep.as_mut().await;
    /// assert!(Instant::now() >= soon);
    /// # });
    /// ```
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        let this = self.project();
        *this.done = false;
        if let Some(runtime) = this.runtime.as_ref()
            && !this.entry.has_fired()
        {
            let tick = runtime.shared.timers().deadline_tick(deadline);
            if tick >= *this.armed_tick {
                // Later, or in the entry's own tick: the entry stays linked. Should it
                // fire meanwhile (it may be firing now), the next poll finds it fired;
                // with `moved` that poll arms it again, and without, the new deadline
                // is in the tick that fired, so it has come.
                *this.moved |= tick > *this.armed_tick;
                *this.deadline = Some(deadline);
                return;
            }
        }
        disarm(this.runtime.take(), &this.entry);
        *this.deadline = Some(deadline);
        *this.moved = false;
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        if *this.done {
            return Poll::Ready(());
        }
        let entry = NonNull::from(&*this.entry);
        if let Some(runtime) = this.runtime.as_ref() {
            // The common wake-up, fired: no lock needed to know.
            let fired = this.entry.has_fired() || {
                let waker = WakerId::internal(cx.waker());
                if waker.is_some() && *this.woken == waker && !runtime.shared.is_shutdown() {
                    // Polled again by the waker the entry wakes: the lock would find the
                    // entry linked (it has not fired; only a shutdown unlinks without
                    // firing, and it sets the flag read here before it unlinks, then wakes
                    // this waker, whose poll reads the flag) and waking this waker
                    // already, and change nothing. `time/loom_models.rs` races this poll
                    // against the firing and against the shutdown.
                    return still_waiting(cx, *this.deadline);
                }
                // Forgotten first: `rewake` may replace the entry's waker, then panic in
                // the old one's drop.
                *this.woken = None;
                // SAFETY: the entry is pinned and armed in this runtime's wheel.
                match unsafe { runtime.shared.timers().rewake(entry, cx.waker()) } {
                    Rewake::Waiting => {
                        *this.woken = waker;
                        return still_waiting(cx, *this.deadline);
                    }
                    Rewake::Fired => true,
                    Rewake::Unlinked => false,
                }
            };
            if fired && !*this.moved {
                *this.done = true;
                return Poll::Ready(());
            }
            // Fired before a deadline a `reset` moved later (arm it again), or unlinked
            // by its runtime's shutdown (arm it elsewhere): unlinked either way.
            *this.runtime = None;
        }
        let Some(deadline) = *this.deadline else {
            return Poll::Pending;
        };
        let now = Instant::now();
        if now >= deadline {
            *this.done = true;
            return Poll::Ready(());
        }
        let of_process = || process_of(cx.waker()).is_some();
        let Some((mut runtime, mut shard)) = Handle::for_sleep(of_process) else {
            // A process of a runtime that shuts down, and drops it: no wake to wait for.
            return Poll::Pending;
        };
        loop {
            let timers = runtime.shared.timers();
            let tick = timers.deadline_tick(deadline);
            let owner = Owner::from_waker(cx.waker());
            let woken = WakerId::of_owner(&owner, cx.waker());
            // SAFETY: the entry is pinned and unlinked; `PinnedDrop` disarms it; only this
            // future arms, disarms or re-polls it, through `&mut self`.
            let (armed, rest) = unsafe { timers.arm(shard, entry, tick, Action::Wake(owner)) };
            match armed {
                Armed::Waiting { wake_a_worker } => {
                    // Recorded first, before anything else runs (`rest` may run a
                    // foreign waker's drop): should it panic, `PinnedDrop` must know
                    // where to disarm.
                    let runtime = this.runtime.insert(runtime);
                    *this.armed_tick = tick;
                    *this.woken = woken;
                    *this.moved = false;
                    if wake_a_worker {
                        runtime.shared.idle().notify_work();
                    }
                    drop(rest);
                    // The time left as of the look above: no second clock reading.
                    record_timer(cx, || Some((deadline, now)));
                    return Poll::Pending;
                }
                Armed::Expired => {
                    *this.done = true;
                    return Poll::Ready(());
                }
                // Shutting down under our feet: elsewhere (the default runtime never
                // shuts down), unless this is a process of the runtime going.
                Armed::Shutdown => match Handle::for_sleep(of_process) {
                    Some(home) => (runtime, shard) = home,
                    None => return Poll::Pending,
                },
            }
        }
    }
}

/// `Pending`, for a sleep armed already (until `deadline`, if any): its wait recorded,
/// the clock read only if the record is made.
fn still_waiting(cx: &Context<'_>, deadline: Option<Instant>) -> Poll<()> {
    record_timer(cx, || deadline.map(|d| (d, Instant::now())));
    Poll::Pending
}

/// Records that the poller waits for a timer (for dumps and the console; never a
/// csp-only wait): `due` gives its deadline and the time now, if it has a deadline, and
/// is called only if the wait is recorded (a poll that recorded a wait already, a
/// socket's under `timeout`, keeps that one).
fn record_timer(cx: &Context<'_>, due: impl FnOnce() -> Option<(Instant, Instant)>) {
    record_outside(cx.waker(), || {
        let millis = due().map_or(0, |(deadline, now)| {
            let left = deadline.saturating_duration_since(now).as_millis();
            u64::try_from(left).unwrap_or(u64::MAX)
        });
        WaitOn::Timer { millis }
    });
}

impl futures::future::FusedFuture for Sleep {
    fn is_terminated(&self) -> bool {
        self.done
    }
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("elapsed", &self.done)
            .finish()
    }
}
