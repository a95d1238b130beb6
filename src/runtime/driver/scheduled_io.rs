//! What the driver keeps for one registered I/O source: its readiness word and the waker
//! slot of each direction. The driver keeps it in a slot of its own, whose index and
//! generation make the source's token in the driver's poll (`driver.rs`).
//!
//! An operation waits for readiness in its direction ([`poll_ready`](ScheduledIo::poll_ready)),
//! tries the system call, and on `WouldBlock` clears what it saw
//! ([`clear`](ScheduledIo::clear)) and waits again. The driver reports events
//! ([`dispatch`](ScheduledIo::dispatch)): it sets the readiness word, then wakes the
//! directions that became ready. A waiting operation stores its waker, then looks at the
//! readiness word once more, so an event between its first look and its store is seen by
//! that second look or finds the waker (`waker_slot.rs`).

use std::task::{Context, Poll};

use crate::runtime::driver::read_ahead::{Found, ReadAhead};
use crate::runtime::driver::readiness::{
    Direction, ERROR, READ_CLOSED, READABLE, Readiness, Seen, WRITABLE, WRITE_CLOSED,
};
use crate::runtime::driver::waker_slot::WakerSlot;
use crate::task::panic::FirstPanic;

/// The driver's state for one source.
#[derive(Debug)]
pub(crate) struct ScheduledIo {
    readiness: Readiness,
    reader: WakerSlot,
    writer: WakerSlot,
    read_ahead: ReadAhead,
}

impl ScheduledIo {
    pub(crate) fn new() -> ScheduledIo {
        ScheduledIo {
            readiness: Readiness::new(),
            reader: WakerSlot::new(),
            writer: WakerSlot::new(),
            read_ahead: ReadAhead::new(),
        }
    }

    fn slot(&self, direction: Direction) -> &WakerSlot {
        match direction {
            Direction::Read => &self.reader,
            Direction::Write => &self.writer,
        }
    }

    /// `Ready` with what it saw once an operation in `direction` may go ahead; else the
    /// task's waker is stored, for the driver to wake.
    pub(crate) fn poll_ready(&self, cx: &mut Context<'_>, direction: Direction) -> Poll<Seen> {
        if let Some(seen) = self.readiness.seen(direction) {
            return Poll::Ready(seen);
        }
        self.slot(direction).store(cx.waker());
        // Again: an event may have come between the first look and the store.
        match self.readiness.seen(direction) {
            Some(seen) => Poll::Ready(seen),
            None => Poll::Pending,
        }
    }

    /// What an operation that acted on `seen` and got `WouldBlock` calls: true if the
    /// readiness it saw is cleared and it may wait, false if a newer event stands and it
    /// should try again.
    #[must_use]
    pub(crate) fn clear(&self, seen: Seen) -> bool {
        self.readiness.clear(seen)
    }

    /// What a stream's read that acted on `seen` found: the read-ahead score learns from
    /// it, and a read that came back short clears the readiness unless the source reads
    /// ahead (`read_ahead.rs`). A `WouldBlock`'s clear is the caller's, by
    /// [`clear`](Self::clear).
    pub(crate) fn stream_read(&self, seen: Seen, found: Found) {
        if self.read_ahead.learn(seen, found) {
            let _ = self.readiness.clear_drained(seen);
        }
    }

    /// The driver's report for this source, from poll `tick`: `ready` (bits of
    /// `readiness.rs`) is recorded, then each direction it ends a wait in is woken.
    pub(crate) fn dispatch(&self, ready: usize, tick: usize) {
        self.readiness.set(ready, tick);
        self.wake(
            ready & (READABLE | READ_CLOSED | ERROR) != 0,
            ready & (WRITABLE | WRITE_CLOSED | ERROR) != 0,
        );
    }

    /// The driver is gone: every waiting operation is woken to find out.
    pub(crate) fn shut_down(&self) {
        self.readiness.shut_down();
        self.wake(true, true);
    }

    /// Wakes the waiters of the directions asked for, those of each whatever a waker of
    /// the other does: a waker's panic is resumed once both directions are woken (let
    /// go if the thread is unwinding already, `task::panic::resume`).
    fn wake(&self, read: bool, write: bool) {
        match (read, write) {
            (true, true) => {
                let mut panic = FirstPanic::default();
                panic.catch(|| self.reader.wake());
                panic.catch(|| self.writer.wake());
                panic.resume();
            }
            (true, false) => self.reader.wake(),
            (false, true) => self.writer.wake(),
            (false, false) => {}
        }
    }

    /// The source is deregistered: its wakers are dropped, every one of them though a
    /// drop panics (the first such panic then goes on, as from any container).
    pub(crate) fn release_wakers(&self) {
        let mut panic = FirstPanic::default();
        panic.catch(|| self.reader.clear());
        panic.catch(|| self.writer.clear());
        panic.resume();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::task::Context;

    use super::*;
    use crate::task::test_wakers::{counting, panicking};

    #[test]
    fn a_wait_ends_with_the_event_of_its_direction() {
        let io = ScheduledIo::new();
        let (counter, waker) = counting();
        let mut cx = Context::from_waker(&waker);
        assert!(io.poll_ready(&mut cx, Direction::Read).is_pending());
        io.dispatch(WRITABLE, 1);
        assert_eq!(counter.wakes(), 0, "a write event wakes no reader");
        io.dispatch(READABLE, 2);
        assert_eq!(counter.wakes(), 1);
        let Poll::Ready(seen) = io.poll_ready(&mut cx, Direction::Read) else {
            panic!("readable");
        };
        assert!(io.clear(seen));
        assert!(io.poll_ready(&mut cx, Direction::Read).is_pending());
        io.shut_down();
        assert_eq!(counter.wakes(), 2);
        assert!(matches!(
            io.poll_ready(&mut cx, Direction::Read),
            Poll::Ready(seen) if seen.is_shut_down()
        ));
    }

    #[test]
    fn a_reader_whose_waker_panics_does_not_keep_the_writer_asleep() {
        for event in [READABLE | WRITABLE, ERROR] {
            let io = ScheduledIo::new();
            let reader = panicking();
            assert!(
                io.poll_ready(&mut Context::from_waker(&reader), Direction::Read)
                    .is_pending()
            );
            let (counter, writer) = counting();
            assert!(
                io.poll_ready(&mut Context::from_waker(&writer), Direction::Write)
                    .is_pending()
            );
            let dispatched =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| io.dispatch(event, 2)));
            assert!(dispatched.is_err(), "the reader's panic goes on");
            assert_eq!(counter.wakes(), 1, "the writer was woken");
        }
    }
}
