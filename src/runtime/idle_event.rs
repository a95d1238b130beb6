//! What parked workers sleep on: a queue of the workers listening, in the order they
//! began to, and a way to wake each. [`Idle`](super::idle::Idle) decides *whether* to
//! wake one; this decides *which*, and wakes it.
//!
//! - A worker *listens* ([`IdleEvent::listen`]) before its last look at the queues, so a
//!   notification sent between that look and its sleep is kept: its wait returns at
//!   once.
//! - [`notify_one`](IdleEvent::notify_one) notifies the worker that has listened
//!   longest, unless a notification is still unconsumed: that worker will search when it
//!   wakes, which is what a second one would have done.
//! - A worker's wait ends once it is notified and *consumes* the notification. A
//!   listener dropped while notified, its notification not consumed (its last look
//!   found work, or its timed sleep ended first), passes it to the next worker
//!   listening, unless another notification is still unconsumed (after `notify_all`,
//!   say), as a `notify_one` would.
//! - A listener waits blocking its thread, or is polled with a waker (the I/O
//!   driver's, for a worker asleep in the driver's poll).
//!
//! The queue is under a lock held only to move a worker in or out of it and to record
//! what wakes it (its thread, or the waker it was polled with): a notifier takes that
//! under the lock and wakes it after letting go. A wake that a system call carries out (a
//! `futex` wake, or the driver's waker) then never runs with the lock held: a notifier
//! preempted in that call (two cores shared with a load generator) held the lock of the
//! event this replaces, and a worker coming to listen waited for the notifier to run
//! again (docs/performance.md).
//!
//! A wake that arrives after the worker stopped waiting is spurious for its next sleep:
//! a blocking wait parks its thread again until it finds itself notified, and the
//! driver's poll sleeps on when its listener is not. A late unpark reaches the thread's
//! own park token, which whatever else parks a worker thread (`wait/parker.rs`) loops
//! past: it returns once, spuriously, and looks at its own flag.

use std::collections::VecDeque;
use std::task::{Context, Poll, Waker};
#[cfg(not(loom))]
use std::time::Instant;

use crate::loom::sync::Mutex;
use crate::loom::thread::{self, Thread};

/// What a worker's slot says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not listening.
    Idle,
    /// In the queue, not notified.
    Listening,
    /// Taken out of the queue by a notification it has not consumed yet.
    Notified,
}

/// How a notifier wakes a listening worker.
#[derive(Debug, Clone)]
enum Wake {
    /// Not waiting yet: its wait will find itself notified.
    Nothing,
    /// Blocked in [`Listener::wait`]: unpark its thread.
    Thread(Thread),
    /// Polled as a future: wake the waker it was polled with.
    // Only a worker asleep in the I/O driver's poll is polled (and the tests).
    #[cfg_attr(not(feature = "io"), allow(dead_code))]
    Waker(Waker),
}

impl Wake {
    fn wake(self) {
        match self {
            Wake::Nothing => {}
            Wake::Thread(thread) => thread.unpark(),
            Wake::Waker(waker) => waker.wake(),
        }
    }
}

#[derive(Debug)]
struct Slot {
    state: State,
    wake: Wake,
}

impl Default for Slot {
    fn default() -> Slot {
        Slot {
            state: State::Idle,
            wake: Wake::Nothing,
        }
    }
}

#[derive(Debug)]
struct Queue {
    /// The workers listening and not notified, longest first.
    listening: VecDeque<usize>,
    /// Workers notified that have not consumed it.
    notified: usize,
    /// One per worker.
    slots: Box<[Slot]>,
}

impl Queue {
    /// Notifies the worker that has listened longest, unless a notification is
    /// unconsumed; what wakes it, to call once the lock is let go.
    fn notify_one(&mut self) -> Wake {
        if self.notified > 0 {
            return Wake::Nothing;
        }
        let Some(index) = self.listening.pop_front() else {
            return Wake::Nothing;
        };
        self.notified += 1;
        let slot = &mut self.slots[index];
        slot.state = State::Notified;
        slot.wake.clone()
    }

    /// `index` consumes its notification and stops listening.
    fn consume(&mut self, index: usize) {
        debug_assert_eq!(self.slots[index].state, State::Notified);
        self.notified -= 1;
        self.slots[index] = Slot::default();
    }
}

/// The idle event of a runtime of `workers` workers (module docs).
#[derive(Debug)]
pub(crate) struct IdleEvent {
    queue: Mutex<Queue>,
}

impl IdleEvent {
    pub(crate) fn new(workers: usize) -> IdleEvent {
        IdleEvent {
            queue: Mutex::new(Queue {
                // Room for every worker: listening never allocates.
                listening: VecDeque::with_capacity(workers),
                notified: 0,
                slots: (0..workers).map(|_| Slot::default()).collect(),
            }),
        }
    }

    /// Worker `index` starts listening (it listens in one place at a time).
    pub(crate) fn listen(&self, index: usize) -> Listener<'_> {
        let mut queue = self.queue.lock();
        debug_assert_eq!(queue.slots[index].state, State::Idle, "listens twice");
        queue.slots[index].state = State::Listening;
        queue.listening.push_back(index);
        Listener {
            event: self,
            index,
            consumed: false,
        }
    }

    /// Notifies one listening worker, unless a notification is unconsumed (module docs).
    pub(crate) fn notify_one(&self) {
        let wake = self.queue.lock().notify_one();
        wake.wake();
    }

    /// Notifies every listening worker (shutdown).
    pub(crate) fn notify_all(&self) {
        let wakes: Vec<Wake> = {
            let mut queue = self.queue.lock();
            let queue = &mut *queue;
            let listening = std::mem::take(&mut queue.listening);
            queue.notified += listening.len();
            listening
                .into_iter()
                .map(|index| {
                    let slot = &mut queue.slots[index];
                    slot.state = State::Notified;
                    slot.wake.clone()
                })
                .collect()
        };
        wakes.into_iter().for_each(Wake::wake);
    }
}

/// A worker listening; dropping it stops listening (module docs).
#[derive(Debug)]
#[must_use = "a listener dropped at once stops listening"]
pub(crate) struct Listener<'a> {
    event: &'a IdleEvent,
    index: usize,
    /// The notification was consumed: the slot is back to `Idle`.
    consumed: bool,
}

impl Listener<'_> {
    /// Consumes the notification if there is one; else records what `wake` makes of the
    /// one recorded as what wakes this worker (`None`: the one recorded will do).
    fn consume_or_record(&mut self, wake: impl FnOnce(&Wake) -> Option<Wake>) -> bool {
        if self.consumed {
            return true;
        }
        let mut queue = self.event.queue.lock();
        if queue.slots[self.index].state == State::Notified {
            queue.consume(self.index);
            self.consumed = true;
            return true;
        }
        let slot = &mut queue.slots[self.index];
        if let Some(wake) = wake(&slot.wake) {
            // The old one is dropped under the lock: a waker csp made (the driver's) or
            // a thread handle, neither of which runs user code.
            slot.wake = wake;
        }
        false
    }

    /// True once notified (the notification consumed); else `cx`'s waker is woken by
    /// the notification.
    #[cfg_attr(not(feature = "io"), allow(dead_code))]
    pub(crate) fn poll_notified(&mut self, cx: &Context<'_>) -> Poll<()> {
        let waker = cx.waker();
        let notified = self.consume_or_record(|recorded| match recorded {
            Wake::Waker(recorded) if recorded.will_wake(waker) => None,
            _ => Some(Wake::Waker(waker.clone())),
        });
        if notified {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// Blocks the thread until notified.
    pub(crate) fn wait(mut self) {
        while !self.record_thread() {
            thread::park();
        }
    }

    /// Blocks the thread until notified or `deadline` passes; true if notified.
    #[cfg(not(loom))]
    pub(crate) fn wait_deadline(mut self, deadline: Instant) -> bool {
        loop {
            if self.record_thread() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            std::thread::park_timeout(deadline - now);
        }
    }

    /// `consume_or_record` with this thread as what wakes the worker.
    fn record_thread(&mut self) -> bool {
        self.consume_or_record(|recorded| match recorded {
            Wake::Thread(_) => None,
            _ => Some(Wake::Thread(thread::current())),
        })
    }
}

impl Drop for Listener<'_> {
    fn drop(&mut self) {
        if self.consumed {
            return;
        }
        let wake = {
            let mut queue = self.event.queue.lock();
            let index = self.index;
            match queue.slots[index].state {
                State::Listening => {
                    queue.listening.retain(|&other| other != index);
                    queue.slots[index] = Slot::default();
                    Wake::Nothing
                }
                // Notified, not consumed: the next worker listening gets it.
                State::Notified => {
                    queue.consume(index);
                    queue.notify_one()
                }
                State::Idle => unreachable!("a listener outlived its slot"),
            }
        };
        wake.wake();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::task::test_wakers::counting;

    fn poll(listener: &mut Listener<'_>, waker: &Waker) -> bool {
        listener
            .poll_notified(&Context::from_waker(waker))
            .is_ready()
    }

    #[test]
    fn a_notification_before_the_wait_is_kept() {
        let event = IdleEvent::new(1);
        let listener = event.listen(0);
        event.notify_one();
        assert!(listener.wait_deadline(Instant::now()), "kept, not lost");
    }

    #[test]
    fn one_unconsumed_notification_holds_back_the_next() {
        let event = IdleEvent::new(2);
        let ((a, a_waker), (b, b_waker)) = (counting(), counting());
        let mut first = event.listen(0);
        let mut second = event.listen(1);
        assert!(!poll(&mut first, &a_waker) && !poll(&mut second, &b_waker));
        event.notify_one();
        event.notify_one();
        assert_eq!(
            (a.wakes(), b.wakes()),
            (1, 0),
            "the longest listening, once"
        );
        assert!(poll(&mut first, &a_waker), "consumed");
        drop(first);
        event.notify_one();
        assert_eq!(b.wakes(), 1, "the next, once the first was consumed");
        assert!(poll(&mut second, &b_waker));
    }

    #[test]
    fn a_notified_listener_dropped_passes_it_on() {
        let event = IdleEvent::new(3);
        let (count, waker) = counting();
        let first = event.listen(0);
        let mut second = event.listen(1);
        let mut third = event.listen(2);
        assert!(!poll(&mut second, &waker) && !poll(&mut third, &waker));
        event.notify_one();
        drop(first);
        assert_eq!(count.wakes(), 1, "passed to the next, and to it alone");
        assert!(poll(&mut second, &waker));
        assert!(!poll(&mut third, &waker));
        // A listener that stops listening un-notified takes nothing from the others.
        drop(third);
        event.notify_one();
        assert_eq!(count.wakes(), 1, "nobody listens");
        let fourth = event.listen(2);
        assert!(
            !fourth.wait_deadline(Instant::now()),
            "not told before it listened"
        );
    }

    #[test]
    fn notify_all_wakes_every_listener() {
        let event = IdleEvent::new(3);
        let (count, waker) = counting();
        let mut listeners: Vec<_> = (0..3).map(|i| event.listen(i)).collect();
        for listener in &mut listeners {
            assert!(!poll(listener, &waker));
        }
        event.notify_all();
        assert_eq!(count.wakes(), 3);
        for listener in &mut listeners {
            assert!(poll(listener, &waker));
        }
    }

    #[test]
    fn a_blocked_thread_is_woken_and_a_timed_wait_ends() {
        let event = Arc::new(IdleEvent::new(2));
        let (woken, was_woken) = std::sync::mpsc::channel();
        let thread = {
            let event = event.clone();
            std::thread::spawn(move || {
                event.listen(1).wait();
                woken.send(()).unwrap();
            })
        };
        // Once it has recorded its thread it parks, or is about to: the unpark is what
        // must reach it, not a notification its first look would find.
        let start = Instant::now();
        while !matches!(event.queue.lock().slots[1].wake, Wake::Thread(_)) {
            assert!(start.elapsed() < Duration::from_secs(10), "never waited");
            std::thread::yield_now();
        }
        event.notify_one();
        was_woken
            .recv_timeout(Duration::from_secs(10))
            .expect("the blocked thread was woken");
        thread.join().unwrap();
        let start = Instant::now();
        let listener = event.listen(0);
        assert!(!listener.wait_deadline(start + Duration::from_millis(5)));
        assert!(start.elapsed() >= Duration::from_millis(5));
    }
}
