//! loom models of the driver's lock-free parts, driving the real `ScheduledIo`,
//! readiness word and waker slot: an event racing an operation's `WouldBlock` clear or a
//! stream's short-read clear, and a second task's waker pushing the first's out of the
//! slot while the driver fires. In each, an operation that ends up waiting is woken by
//! the event, or sees it.

use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use crate::runtime::driver::read_ahead::Found;
use crate::runtime::driver::readiness::{Direction, READABLE};
use crate::runtime::driver::scheduled_io::ScheduledIo;

/// A waker that counts its wakes (loom's atomic, so the model sees the race).
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: StdArc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &StdArc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counter() -> (StdArc<Counter>, Waker) {
    let counter = StdArc::new(Counter(AtomicUsize::new(0)));
    (counter.clone(), Waker::from(counter))
}

/// An operation acted on a readiness, got `WouldBlock`, clears it and waits again,
/// while the driver reports a new event: the operation sees the event (its clear left
/// it standing, or its second look found it), or its waker is woken.
#[test]
fn loom_event_racing_a_would_block_clear() {
    loom::model(|| {
        let io = Arc::new(ScheduledIo::new());
        io.dispatch(READABLE, 1);
        let (counter, waker) = counter();
        let mut cx = Context::from_waker(&waker);
        let Poll::Ready(seen) = io.poll_ready(&mut cx, Direction::Read) else {
            panic!("readable at first");
        };

        let driver = {
            let io = io.clone();
            thread::spawn(move || io.dispatch(READABLE, 2))
        };
        // The system call said `WouldBlock`.
        let waits = io.clear(seen) && io.poll_ready(&mut cx, Direction::Read).is_pending();
        driver.join().unwrap();
        if waits {
            assert_eq!(
                counter.0.load(Ordering::SeqCst),
                1,
                "a waiting operation is woken by the event it did not see"
            );
        }
    });
}

/// A stream's read came back short (it emptied the socket) on a source that no longer
/// reads ahead, so it clears the readiness it acted on, while the driver reports bytes
/// that arrived after it: as for a `WouldBlock`, the next read sees the event, or its
/// wait is woken by it.
#[test]
fn loom_event_racing_a_short_read_clear() {
    loom::model(|| {
        let io = Arc::new(ScheduledIo::new());
        let (counter, waker) = counter();
        let mut cx = Context::from_waker(&waker);
        // A short read, then a read ahead that found nothing (`WouldBlock`, cleared):
        // the source stops reading ahead.
        io.dispatch(READABLE, 1);
        let Poll::Ready(seen) = io.poll_ready(&mut cx, Direction::Read) else {
            panic!("readable at first");
        };
        io.stream_read(seen, Found::Bytes { short: true });
        io.stream_read(seen, Found::Nothing);
        assert!(io.clear(seen));

        io.dispatch(READABLE, 2);
        let Poll::Ready(seen) = io.poll_ready(&mut cx, Direction::Read) else {
            panic!("readable again");
        };
        let driver = {
            let io = io.clone();
            thread::spawn(move || io.dispatch(READABLE, 3))
        };
        // The read returned fewer bytes than it asked for.
        io.stream_read(seen, Found::Bytes { short: true });
        let waits = io.poll_ready(&mut cx, Direction::Read).is_pending();
        driver.join().unwrap();
        if waits {
            assert_eq!(
                counter.0.load(Ordering::SeqCst),
                1,
                "a waiting read is woken by the bytes that came after its short read"
            );
        }
    });
}

/// A task waits, then another task waits in the same direction (two processes
/// accepting on one listener), pushing the first's waker out of the slot, while the
/// driver reports the event that ends both waits: the first task is woken, and so is
/// the second unless its look saw the event.
#[test]
fn loom_waker_replaced_while_the_driver_fires() {
    loom::model(|| {
        let io = Arc::new(ScheduledIo::new());
        let (first, first_waker) = counter();
        let (second, second_waker) = counter();
        assert!(
            io.poll_ready(&mut Context::from_waker(&first_waker), Direction::Read)
                .is_pending()
        );

        let driver = {
            let io = io.clone();
            thread::spawn(move || io.dispatch(READABLE, 1))
        };
        let waits = io
            .poll_ready(&mut Context::from_waker(&second_waker), Direction::Read)
            .is_pending();
        driver.join().unwrap();
        assert!(
            first.0.load(Ordering::SeqCst) >= 1,
            "the task pushed out of the slot is woken"
        );
        if waits {
            assert!(
                second.0.load(Ordering::SeqCst) >= 1,
                "the latest waker is woken"
            );
        }
        io.release_wakers();
    });
}
