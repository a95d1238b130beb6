//! `after` and `tick`: channels fed by the wheel, so time composes with `alt!` like any
//! other communication.
//!
//! Each is a capacity-1 channel whose one `Sender` lives in a [`ChannelTimer`] together
//! with the timer's wheel entry. The channel's receivers-gone hook holds the timer, so
//! the channel never closes while anyone can receive from it; when the last `Receiver`
//! drops, the hook unlinks the entry and drops the timer, sender and all.

use std::panic::AssertUnwindSafe;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::chan::{Receiver, Sender, bounded};
use crate::runtime::Handle;
use crate::runtime::timer::Timers;
use crate::runtime::timer::entry::{Action, Entry, FedChannel};
use crate::runtime::timer::timers::Armed;

/// Sends one value, the instant it fired, once `duration` has passed.
///
/// The channel has capacity 1 and never closes while its runtime lives, so once its
/// value is taken, an `after` arm of an `alt!` is simply never ready again.
/// `after(Duration::ZERO)` is ready at once. The timer's wheel entry goes when the last
/// `Receiver` drops.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// # csp::block_on(async {
/// let (_tx, rx) = csp::channel::<u32>();
/// let start = Instant::now();
/// let timeout = csp::after(Duration::from_millis(5));
/// let timed_out = csp::alt! {
///     recv(rx) -> _msg => false,
///     recv(timeout) -> at => { assert!(at.unwrap() >= start); true },
/// };
/// assert!(timed_out);
/// # });
/// ```
#[track_caller]
pub fn after(duration: Duration) -> Receiver<Instant> {
    let now = Instant::now();
    ChannelTimer::start(now.checked_add(duration), None)
}

/// Sends the instant it fired at `start + k·period` for k = 1, 2, …; a tick that finds
/// the previous value still waiting is dropped (the waiting value keeps its instant),
/// so a slow receiver skips ticks rather than queueing them. Never closes while its
/// runtime lives; the timer's wheel entry goes when the last `Receiver` drops.
///
/// # Panics
/// If `period` is zero.
///
/// ```
/// use std::time::Duration;
///
/// # csp::block_on(async {
/// let ticks = csp::tick(Duration::from_millis(2));
/// let first = ticks.recv().await.unwrap();
/// let second = ticks.recv().await.unwrap();
/// assert!(second > first);
/// # });
/// ```
#[track_caller]
pub fn tick(period: Duration) -> Receiver<Instant> {
    assert!(
        !period.is_zero(),
        "csp::tick: the period must be longer than zero"
    );
    let now = Instant::now();
    ChannelTimer::start(now.checked_add(period), Some((now, period)))
}

/// The first deadline `origin + k·period` (k >= 1) after `now`: missed ticks are skipped,
/// not queued. In `u128` nanoseconds, so no count of periods overflows.
fn next_tick(origin: Instant, period: Duration, now: Instant) -> Option<Instant> {
    let period = period.as_nanos();
    let periods = now.saturating_duration_since(origin).as_nanos() / period;
    let offset = (periods + 1).checked_mul(period)?;
    let secs = u64::try_from(offset / 1_000_000_000).ok()?;
    let nanos = (offset % 1_000_000_000) as u32; // < 10^9: fits
    origin.checked_add(Duration::new(secs, nanos))
}

/// The sending side of an `after` or `tick` channel, with its wheel entry.
pub(crate) struct ChannelTimer {
    /// Linked in `runtime`'s wheel while the timer waits; its action then holds a
    /// reference to this timer.
    entry: Entry,
    sender: Sender<Instant>,
    /// `tick`'s origin and period (`None`: `after`).
    schedule: Option<(Instant, Duration)>,
    runtime: Handle,
}

impl ChannelTimer {
    /// Makes the channel and arms its first deadline (`None`: too far to represent,
    /// never fires).
    #[track_caller]
    fn start(first: Option<Instant>, schedule: Option<(Instant, Duration)>) -> Receiver<Instant> {
        let (sender, receiver) = bounded(1);
        // Never a process's own, as a sleep may be: a channel may be handed on, and one
        // made in a `Drop` on a worker may be awaited there. On a runtime that shuts down
        // it moves to the default runtime, which it may start.
        let (runtime, shard) = Handle::for_timer();
        let timer = Arc::new(ChannelTimer {
            entry: Entry::new(),
            sender,
            schedule,
            runtime: runtime.clone(),
        });
        let hook = Arc::clone(&timer);
        receiver
            .chan()
            .on_receivers_gone(Box::new(move |_| hook.receivers_gone()));
        let Some(first) = first else {
            return receiver;
        };
        let timers = runtime.shared.timers();
        let now = Instant::now();
        if first <= now {
            // `after(Duration::ZERO)`: ready at once, not at the next tick.
            timer.fire(timers, now);
            return receiver;
        }
        let tick = timers.deadline_tick(first);
        // SAFETY: the entry lives inside the timer, which the action keeps alive while
        // it is linked; the hook disarms it.
        let (armed, rest) =
            unsafe { timers.arm(shard, timer.entry(), tick, Action::Channel(timer.clone())) };
        match armed {
            Armed::Waiting { wake_a_worker } => {
                drop(rest);
                if wake_a_worker {
                    runtime.shared.idle().notify_work();
                }
            }
            Armed::Expired => {
                if let Action::Channel(timer) = rest {
                    timer.fire(timers, Instant::now());
                }
            }
            // The runtime began shutting down since we looked: its timers close.
            Armed::Shutdown => timer.close(),
        }
        receiver
    }

    /// The last receiver dropped (the channel is closed): unlink the entry, dropping
    /// the wheel's reference to this timer.
    fn receivers_gone(&self) {
        // SAFETY: the entry is inside `self`, alive, and armed in no other wheel.
        let action = unsafe { self.runtime.shared.timers().disarm(self.entry()) };
        drop(action);
    }
}

impl FedChannel for ChannelTimer {
    fn entry(&self) -> NonNull<Entry> {
        NonNull::from(&self.entry)
    }

    fn is_closed(&self) -> bool {
        self.sender.chan().is_closed()
    }

    /// Closes the channel (its runtime shut down).
    fn close(&self) {
        self.sender.chan().close();
    }

    /// The deadline came (at `now`): send, then re-arm a `tick`.
    fn fire(self: Arc<Self>, timers: &Timers, now: Instant) {
        // Full: a tick nobody took yet keeps its instant; closed: nobody listens.
        // From the runtime's own wheel: not a use from outside (`chan/home.rs`). A
        // receiver's waker that panics does not stop the tick: the next one is armed
        // first, then the panic goes on to the wheel's firing loop.
        let offered = std::panic::catch_unwind(AssertUnwindSafe(|| self.sender.offer(now)));
        if let Some((origin, period)) = self.schedule {
            match next_tick(origin, period, now) {
                Some(next) => {
                    let tick = timers.deadline_tick(next);
                    let runtime = self.runtime.clone();
                    if timers.rearm_channel(self, tick) {
                        runtime.shared.idle().notify_work();
                    }
                }
                // Past what `Instant` can represent: it would never fire again anyway.
                None => drop(self),
            }
        }
        if let Err(panic) = offered {
            std::panic::resume_unwind(panic);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn next_tick_skips_missed_ticks_and_never_overflows() {
        let origin = Instant::now();
        let ms = Duration::from_millis(1);
        assert_eq!(next_tick(origin, ms, origin), Some(origin + ms));
        assert_eq!(next_tick(origin, ms, origin + ms), Some(origin + 2 * ms));
        assert_eq!(
            next_tick(origin, ms, origin + Duration::from_micros(7_500)),
            Some(origin + 8 * ms)
        );
        // Far more than u32::MAX periods of 1 ns.
        let ns = Duration::from_nanos(1);
        let later = origin + Duration::from_secs(10);
        assert_eq!(next_tick(origin, ns, later), Some(later + ns));
    }
}
