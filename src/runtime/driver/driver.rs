//! The I/O driver itself: one poll (`selector.rs`) per runtime, which one worker at a time holds
//! and sleeps in (DESIGN.md, "I/O driver").
//!
//! A source's token names its slot in the driver's table and that slot's generation,
//! which every deregistration advances: an event is dispatched only if its token's
//! generation is the slot's, so an event that names a source gone since (its poll under
//! way while it deregistered, or an epoll entry that outlived its descriptor's number,
//! as a duplicated descriptor makes one) reaches nothing. The holder looks a batch's
//! sources up under the table's lock, once per poll, and wakes them after.

use crate::loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::io;
use std::sync::Arc;
use std::task::{Wake, Waker};
use std::time::Duration;

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Mutex;
use crate::runtime::driver::readiness::tick_of;
use crate::runtime::driver::scheduled_io::ScheduledIo;
use crate::runtime::driver::selector::{Registrar, Selector, Source, Token, Wakeup};
use crate::task::panic::catching;
use crate::tuning::DRIVER_EVENTS;

/// The token of the driver's own waker; a source's token is never `usize::MAX`.
const WAKE_TOKEN: Token = Token(usize::MAX);

/// Bits of a token that hold the slot's index; the generation is above them.
const INDEX_BITS: u32 = 24;
const INDEX_MASK: usize = (1 << INDEX_BITS) - 1;

/// The I/O driver of one runtime.
pub(crate) struct Driver {
    /// The poll and what the holder dispatches: only the holder touches them (`held`).
    inner: UnsafeCell<Inner>,
    /// Some worker holds the driver: it sleeps in, or polls, the poll.
    held: AtomicBool,
    /// Registers and deregisters sources from any thread.
    registry: Registrar,
    /// Wakes the holder out of its poll.
    waker: Waker,
    /// How many times `waker` has been woken (the tests count them).
    #[cfg(test)]
    wakes: Arc<std::sync::atomic::AtomicUsize>,
    sources: Mutex<Sources>,
    /// How many sources are registered: changed under `sources`' lock, read without it
    /// by busy workers deciding whether a look at the driver can find anything.
    live: AtomicUsize,
    shut_down: AtomicBool,
}

// SAFETY: `inner` is touched only by the worker holding the driver (`held`, one at a
// time); everything else is thread-safe.
unsafe impl Send for Driver {}
// SAFETY: as above.
unsafe impl Sync for Driver {}

struct Inner {
    selector: Selector,
    /// The sources of one batch of events and what each reported, looked up under the
    /// table's lock and woken after it (allocated once, reused).
    batch: Vec<(Arc<ScheduledIo>, usize)>,
    /// Polls so far: the tick of the events each one reports.
    polls: usize,
}

/// The registered sources, by slot.
#[derive(Default)]
struct Sources {
    slots: Vec<Slot>,
    /// Slots that hold no source.
    free: Vec<usize>,
}

#[derive(Default)]
struct Slot {
    io: Option<Arc<ScheduledIo>>,
    /// Advanced by each deregistration: a token of an older generation is stale.
    generation: usize,
}

impl Sources {
    /// The source `token` names, unless it is gone.
    fn get(&self, token: Token) -> Option<&Arc<ScheduledIo>> {
        let slot = self.slots.get(token.0 & INDEX_MASK)?;
        if slot.generation != token.0 >> INDEX_BITS {
            return None;
        }
        slot.io.as_ref()
    }
}

/// Wakes the driver's holder out of its poll.
struct WakeDriver {
    wakeup: Wakeup,
    /// The driver's count of wakes, for the tests (std's atomic: a tally loom need not
    /// model).
    #[cfg(test)]
    wakes: Arc<std::sync::atomic::AtomicUsize>,
}

impl Wake for WakeDriver {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Relaxed: a tally, which orders nothing.
        #[cfg(test)]
        self.wakes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // A failed write to the eventfd means it is full: the holder will wake anyway.
        let _ = self.wakeup.wake();
    }
}

/// What a source registered as: its state in the driver, and its token.
pub(crate) struct Registered {
    pub(crate) io: Arc<ScheduledIo>,
    pub(crate) token: Token,
}

impl Driver {
    pub(crate) fn new() -> io::Result<Driver> {
        let (selector, registry, wakeup) = Selector::new(DRIVER_EVENTS, WAKE_TOKEN)?;
        #[cfg(test)]
        let wakes = Arc::default();
        let waker = Waker::from(Arc::new(WakeDriver {
            wakeup,
            #[cfg(test)]
            wakes: Arc::clone(&wakes),
        }));
        Ok(Driver {
            inner: UnsafeCell::new(Inner {
                selector,
                batch: Vec::with_capacity(DRIVER_EVENTS),
                polls: 0,
            }),
            held: AtomicBool::new(false),
            registry,
            waker,
            #[cfg(test)]
            wakes,
            sources: Mutex::new(Sources::default()),
            live: AtomicUsize::new(0),
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

    /// Whether any source is registered: if none is, a poll can report nothing but the
    /// driver's own waker, and a busy worker has no reason to look.
    ///
    /// A hint, read without the lock: a registration on another thread may be seen a
    /// little late, at the busy worker's next check (`DRIVER_POLL_INTERVAL` rounds on),
    /// which keeps the bound on how long a ready socket waits while every worker is busy.
    #[inline]
    pub(crate) fn has_sources(&self) -> bool {
        // Relaxed: nothing is read on the strength of it; a stale answer costs one
        // look made or skipped.
        self.live.load(Ordering::Relaxed) > 0
    }

    /// A waker that brings the holder out of its poll.
    pub(crate) fn waker(&self) -> &Waker {
        &self.waker
    }

    /// How many times [`waker`](Self::waker) has been woken so far.
    #[cfg(test)]
    pub(crate) fn waker_wakes(&self) -> usize {
        // Relaxed: as where it is counted.
        self.wakes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Registers `source`, edge-triggered, for reading and writing.
    pub(crate) fn register(&self, source: &mut impl Source) -> io::Result<Registered> {
        let io = Arc::new(ScheduledIo::new());
        let mut sources = self.sources.lock();
        // Acquire, under the lock `shut_down` stores it under: either this registration
        // fails, or the shutdown finds the source in the table.
        if self.shut_down.load(Ordering::Acquire) {
            return Err(shut_down_error());
        }
        let index = match sources.free.pop() {
            Some(index) => index,
            None => {
                sources.slots.push(Slot::default());
                sources.slots.len() - 1
            }
        };
        if index > INDEX_MASK {
            sources.free.push(index);
            return Err(io::Error::other(
                "csp: more I/O sources than one runtime's driver can register (2^24)",
            ));
        }
        let slot = &mut sources.slots[index];
        let token = Token((slot.generation << INDEX_BITS) | index);
        debug_assert_ne!(token, WAKE_TOKEN);
        if let Err(err) = self.registry.register(source, token) {
            sources.free.push(index);
            return Err(err);
        }
        slot.io = Some(io.clone());
        // Relaxed: a count for `has_sources`, which orders nothing (see there).
        self.live.fetch_add(1, Ordering::Relaxed);
        Ok(Registered { io, token })
    }

    /// Deregisters `source`, registered with `token`: no event of it is dispatched from
    /// now on, even one the poll reports later (its slot's generation moves on).
    pub(crate) fn deregister(&self, source: &mut impl Source, token: Token) {
        // A failure (the descriptor closed already, or not registered) leaves nothing
        // to do: the generation below makes any event that still names it stale.
        let _ = self.registry.deregister(source);
        self.release(token);
    }

    /// Frees the slot of the source registered with `token`, leaving the operating
    /// system's registration alone: for a source whose descriptor is no longer the one
    /// registered (closed, its number perhaps another source's now). No event of it is
    /// dispatched from now on.
    pub(crate) fn release(&self, token: Token) {
        let mut sources = self.sources.lock();
        let index = token.0 & INDEX_MASK;
        if let Some(slot) = sources.slots.get_mut(index)
            && slot.generation == token.0 >> INDEX_BITS
            && slot.io.take().is_some()
        {
            // Wrapping: a token of a generation 2^40 deregistrations old could alias,
            // which no program lives to see.
            slot.generation = slot.generation.wrapping_add(1) & (usize::MAX >> INDEX_BITS);
            sources.free.push(index);
            // Relaxed: as in `register`.
            self.live.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The runtime shuts down: every source's waiting operations are woken to fail, and
    /// no source registers any more.
    pub(crate) fn shut_down(&self) {
        let live: Vec<_> = {
            let sources = self.sources.lock();
            // Release (under the lock): a registration that sees it fails.
            self.shut_down.store(true, Ordering::Release);
            sources
                .slots
                .iter()
                .filter_map(|slot| slot.io.clone())
                .collect()
        };
        for io in live {
            catching(|| io.shut_down());
        }
        self.waker.wake_by_ref();
    }

    /// The model's operating system reports `ready` for the source of `token`.
    #[cfg(all(test, loom))]
    pub(crate) fn fire(&self, token: Token, ready: usize) {
        self.registry.fire(token, ready);
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        // Acquire: pairs with the release in `shut_down`; a holder that sees it leaves.
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
    /// this thread. `Err` if the poll failed other than by a signal.
    pub(crate) fn poll(&self, timeout: Option<Duration>) -> io::Result<()> {
        let driver = self.driver;
        // SAFETY: `held` makes the poll ours until this guard drops.
        driver.inner.with_mut(|inner| {
            let inner = unsafe { &mut *inner };
            let events = match inner.selector.select(timeout) {
                Ok(events) => events,
                // Interrupted by a signal: as if no event came.
                Err(err) if err.kind() == io::ErrorKind::Interrupted => return Ok(()),
                Err(err) => return Err(err),
            };
            inner.polls = inner.polls.wrapping_add(1);
            let tick = tick_of(inner.polls);
            {
                let sources = driver.sources.lock();
                for (token, ready) in events {
                    let Some(io) = sources.get(token) else {
                        // The driver's waker, or a source gone since.
                        continue;
                    };
                    inner.batch.push((io.clone(), ready));
                }
            }
            // Outside the lock: a waker is the waiting task's code (perhaps another
            // executor's), and its panic must not take the worker down.
            for (io, ready) in inner.batch.drain(..) {
                catching(|| io.dispatch(ready, tick));
                // Caught apart: this may be the source's last reference (deregistered
                // meanwhile), whose wakers go with it, and a drop while the dispatch's
                // panic unwound would have to be let go unseen.
                catching(move || drop(io));
            }
            Ok(())
        })
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        // Release: our use of the poll happens before the next holder's. A swap rather
        // than a store: loom orders a store against a racing swap (a worker's failed
        // `try_hold`) more loosely than hardware does, and could see the flag stuck; on
        // the parking path the read-modify-write costs nothing that shows.
        let _ = self.driver.held.swap(false, Ordering::Release);
    }
}
