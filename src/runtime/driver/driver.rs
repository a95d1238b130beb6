//! The I/O driver itself: one `mio::Poll` per runtime, which one worker at a time holds
//! and sleeps in (DESIGN.md, "I/O driver").

use std::collections::HashMap;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Wake, Waker};
use std::time::Duration;

use mio::event::Source;
use mio::{Events, Interest, Poll, Registry, Token};

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Mutex;
use crate::runtime::driver::readiness::{
    ERROR, READ_CLOSED, READABLE, WRITABLE, WRITE_CLOSED, tick_of,
};
use crate::runtime::driver::scheduled_io::ScheduledIo;
use crate::tuning::DRIVER_EVENTS;

/// The token of the driver's own waker; a source's token is its `ScheduledIo`'s address,
/// never 0.
const WAKE_TOKEN: Token = Token(0);

/// The I/O driver of one runtime.
pub(crate) struct Driver {
    /// The poll, its events and its count: only the holder touches them (`held`).
    inner: UnsafeCell<Inner>,
    /// Some worker holds the driver: it sleeps in, or polls, the poll.
    held: AtomicBool,
    /// Registers and deregisters sources from any thread.
    registry: Registry,
    /// Wakes the holder out of its poll.
    waker: Waker,
    sources: Mutex<Sources>,
    /// `sources.released` is not empty: the holder drops them before its next poll.
    has_released: AtomicBool,
    shut_down: AtomicBool,
}

// SAFETY: `inner` is touched only by the worker holding the driver (`held`, one at a
// time); everything else is thread-safe.
unsafe impl Send for Driver {}
// SAFETY: as above.
unsafe impl Sync for Driver {}

struct Inner {
    poll: Poll,
    events: Events,
    /// Polls so far: the tick of the events each one reports.
    polls: usize,
}

/// The registered sources, and those deregistered since the holder's last poll began.
#[derive(Default)]
struct Sources {
    live: HashMap<usize, Arc<ScheduledIo>>,
    /// Deregistered, but an event from a poll under way may still name them: kept until
    /// the holder's next poll begins, when none can.
    released: Vec<Arc<ScheduledIo>>,
}

/// Wakes the driver's holder out of its poll.
struct WakeDriver(mio::Waker);

impl Wake for WakeDriver {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // A failed write to the eventfd means it is full: the holder will wake anyway.
        let _ = self.0.wake();
    }
}

impl Driver {
    pub(crate) fn new() -> io::Result<Driver> {
        let poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = Waker::from(Arc::new(WakeDriver(mio::Waker::new(
            poll.registry(),
            WAKE_TOKEN,
        )?)));
        Ok(Driver {
            inner: UnsafeCell::new(Inner {
                poll,
                events: Events::with_capacity(DRIVER_EVENTS),
                polls: 0,
            }),
            held: AtomicBool::new(false),
            registry,
            waker,
            sources: Mutex::new(Sources::default()),
            has_released: AtomicBool::new(false),
            shut_down: AtomicBool::new(false),
        })
    }

    /// Holds the driver, unless another worker does.
    #[inline]
    pub(crate) fn try_hold(&self) -> Option<Held<'_>> {
        // Acquire: the last holder's use of the poll happens before ours.
        if self.held.swap(true, Ordering::Acquire) {
            return None;
        }
        Some(Held { driver: self })
    }

    /// A waker that brings the holder out of its poll.
    pub(crate) fn waker(&self) -> &Waker {
        &self.waker
    }

    /// Registers `source`, edge-triggered, for reading and writing.
    pub(crate) fn register(&self, source: &mut impl Source) -> io::Result<Arc<ScheduledIo>> {
        let io = Arc::new(ScheduledIo::new());
        let token = Token(Arc::as_ptr(&io) as usize);
        let mut sources = self.sources.lock();
        if self.shut_down.load(Ordering::Acquire) {
            return Err(shut_down_error());
        }
        self.registry
            .register(source, token, Interest::READABLE | Interest::WRITABLE)?;
        sources.live.insert(token.0, io.clone());
        Ok(io)
    }

    /// Deregisters `source`, registered as `io`; `io` is kept until no event can name it.
    pub(crate) fn deregister(&self, source: &mut impl Source, io: &Arc<ScheduledIo>) {
        // Fails only if the source was never registered or is closed already: either way
        // no event can come for it any more.
        let _ = self.registry.deregister(source);
        let mut sources = self.sources.lock();
        if let Some(io) = sources.live.remove(&(Arc::as_ptr(io) as usize)) {
            sources.released.push(io);
            self.has_released.store(true, Ordering::Release);
        }
    }

    /// The runtime shuts down: every source's waiting operations are woken to fail, and
    /// no source registers any more.
    pub(crate) fn shut_down(&self) {
        let live: Vec<_> = {
            let sources = self.sources.lock();
            self.shut_down.store(true, Ordering::Release);
            sources.live.values().cloned().collect()
        };
        for io in live {
            let _ = catch_unwind(AssertUnwindSafe(|| io.shut_down()));
        }
        self.waker.wake_by_ref();
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }
}

/// The error of an operation on a source whose runtime shut down.
pub(crate) fn shut_down_error() -> io::Error {
    io::Error::other("csp: the runtime this socket belongs to has shut down")
}

/// The driver, held by one worker until dropped.
pub(crate) struct Held<'a> {
    driver: &'a Driver,
}

impl Held<'_> {
    /// Waits for events up to `timeout` (`None`: until one comes or the driver's waker
    /// is woken), and dispatches them: each source's waiting operations are woken, on
    /// this thread. Returns how many sources had events.
    pub(crate) fn poll(&self, timeout: Option<Duration>) -> usize {
        let driver = self.driver;
        if driver.has_released.swap(false, Ordering::AcqRel) {
            // No event of the poll to come can name these: they were deregistered before.
            let released = std::mem::take(&mut driver.sources.lock().released);
            drop(released);
        }
        // SAFETY: `held` makes the poll ours until this guard drops.
        driver.inner.with_mut(|inner| {
            let inner = unsafe { &mut *inner };
            if let Err(err) = inner.poll.poll(&mut inner.events, timeout) {
                // Interrupted by a signal: as if no event came.
                debug_assert_eq!(err.kind(), io::ErrorKind::Interrupted, "{err}");
                return 0;
            }
            inner.polls = inner.polls.wrapping_add(1);
            let tick = tick_of(inner.polls);
            let mut sources = 0;
            for event in inner.events.iter() {
                let token = event.token();
                if token == WAKE_TOKEN {
                    continue;
                }
                let ready = [
                    (event.is_readable(), READABLE),
                    (event.is_writable(), WRITABLE),
                    (event.is_read_closed(), READ_CLOSED),
                    (event.is_write_closed(), WRITE_CLOSED),
                    (event.is_error(), ERROR),
                ]
                .into_iter()
                .fold(0, |ready, (is, bit)| ready | (usize::from(is) * bit));
                // SAFETY: the token is the address of a registered source's
                // `ScheduledIo`, which the driver keeps alive until the poll after its
                // deregistration begins (`Sources::released`).
                let io = unsafe { &*(token.0 as *const ScheduledIo) };
                // A waker is the waiting task's code, perhaps another executor's: its
                // panic must not take the worker down.
                let _ = catch_unwind(AssertUnwindSafe(|| io.dispatch(ready, tick)));
                sources += 1;
            }
            sources
        })
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        // Release: our use of the poll happens before the next holder's.
        self.driver.held.store(false, Ordering::Release);
    }
}
