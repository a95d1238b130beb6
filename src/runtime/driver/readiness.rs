//! The readiness word of one I/O source: what the driver last saw the operating system
//! report for it, and when.
//!
//! | bits   | name             | set by the driver when                        | cleared                                      |
//! |--------|------------------|-----------------------------------------------|----------------------------------------------|
//! | 0      | [`READABLE`]     | the source became readable                    | a read's `WouldBlock`, some short reads      |
//! | 1      | [`WRITABLE`]     | the source became writable                    | a write's `WouldBlock`                       |
//! | 2      | [`READ_CLOSED`]  | the peer closed its writing side (or hung up) | a read's `WouldBlock`                        |
//! | 3      | [`WRITE_CLOSED`] | the source can no longer be written           | a write's `WouldBlock`                       |
//! | 4      | [`ERROR`]        | the source reported an error                  | either's `WouldBlock`                        |
//! | 5      | [`SHUT_DOWN`]    | the runtime's driver shut down                | never                                        |
//! | 16..   | tick             | the driver poll that last set a bit           | -                                            |
//!
//! Sources are registered edge-triggered: the operating system reports a change once, so
//! the word remembers it until an operation that tried and got `WouldBlock` clears it.
//! That clear is conditional on the tick: an operation clears only the readiness it saw
//! ([`Seen`]), and if an event arrived since (a newer tick) the word is left alone, so a
//! readiness reported between the operation's look and its clear is never lost.
//!
//! A stream socket's read that returns fewer bytes than it asked for has emptied the
//! receive queue: the next read would get `WouldBlock`, unless bytes come first. Such a
//! read may clear [`READABLE`] as a `WouldBlock` would ([`Readiness::clear_drained`];
//! whether it does is `read_ahead.rs`'s choice). The same tick rule keeps that safe:
//! bytes that arrive after the read make the operating system report a new edge, which
//! comes after the clear or leaves the word with a newer tick that the clear leaves
//! alone. The closed and error bits stay: an end of stream that came with the last
//! bytes is reported once, and the next read must still see it.
//!
//! Every ordering is `AcqRel` (or `Acquire` for loads): the driver's set publishes the
//! event to the operation that then tries the system call.

use crate::loom::sync::atomic::{AtomicUsize, Ordering};

/// The source became readable.
pub(crate) const READABLE: usize = 1 << 0;
/// The source became writable.
pub(crate) const WRITABLE: usize = 1 << 1;
/// The peer will send no more (read end of the stream closed, or hung up).
pub(crate) const READ_CLOSED: usize = 1 << 2;
/// Nothing more can be written (the peer is gone, or the write half was shut).
pub(crate) const WRITE_CLOSED: usize = 1 << 3;
/// The source reported an error: the next operation will return it.
pub(crate) const ERROR: usize = 1 << 4;
/// The driver is gone (its runtime shut down): operations that would wait fail instead.
pub(crate) const SHUT_DOWN: usize = 1 << 5;

/// Bits below the tick.
const READY_MASK: usize = (1 << TICK_SHIFT) - 1;
/// Shift of the tick: the driver's poll count, wrapping, when an event last set a bit.
/// `read_ahead.rs` keeps a tick at the same shift in its own word.
pub(crate) const TICK_SHIFT: usize = 16;

/// A direction of I/O: the readiness that lets an operation in it go ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

impl Direction {
    /// The bits that end a wait in this direction: its own readiness, and everything
    /// that makes the operation return at once (closed, error, shut down).
    fn mask(self) -> usize {
        match self {
            Direction::Read => READABLE | READ_CLOSED | ERROR | SHUT_DOWN,
            Direction::Write => WRITABLE | WRITE_CLOSED | ERROR | SHUT_DOWN,
        }
    }

    /// The bits a `WouldBlock` in this direction clears: all but [`SHUT_DOWN`]. The
    /// call would block, so nothing it could report is pending: a closed or failed source
    /// that still returns `WouldBlock` (a connected UDP socket after an ICMP error, a
    /// datagram socket shut for reading) must wait for its next event, not spin.
    fn clearable(self) -> usize {
        self.mask() & !SHUT_DOWN
    }
}

/// The readiness an operation saw and acted on: what it may clear after a `WouldBlock`.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    direction: Direction,
    /// The readiness bits of `direction` seen.
    ready: usize,
    tick: usize,
}

impl Seen {
    /// True if the driver is gone.
    pub(crate) fn is_shut_down(self) -> bool {
        self.ready & SHUT_DOWN != 0
    }

    /// The driver poll that last set a bit of the word, as of this look.
    pub(crate) fn tick(self) -> usize {
        self.tick
    }
}

/// The readiness word of one source.
#[derive(Debug)]
pub(crate) struct Readiness {
    word: AtomicUsize,
}

impl Readiness {
    /// A source nothing has been reported for yet.
    pub(crate) fn new() -> Readiness {
        Readiness {
            word: AtomicUsize::new(0),
        }
    }

    /// What lets an operation in `direction` go ahead now, if anything does.
    #[inline]
    pub(crate) fn seen(&self, direction: Direction) -> Option<Seen> {
        let word = self.word.load(Ordering::Acquire);
        let ready = word & direction.mask();
        (ready != 0).then_some(Seen {
            direction,
            ready,
            tick: word >> TICK_SHIFT,
        })
    }

    /// The driver's report of `ready` (a set of the bits above) at poll `tick`: added to
    /// the word, whose tick becomes `tick`.
    pub(crate) fn set(&self, ready: usize, tick: usize) {
        debug_assert_eq!(ready & !READY_MASK, 0);
        let tick = tick << TICK_SHIFT;
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            let next = ((current & READY_MASK) | ready) | tick;
            match self.word.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }

    /// After an operation that acted on `seen` got `WouldBlock`: its direction's
    /// readiness is cleared, unless an event arrived since `seen` (a newer tick), which
    /// the operation has not tried yet. True if cleared (the operation may wait); false
    /// if a newer event stands (it should try again).
    #[must_use]
    pub(crate) fn clear(&self, seen: Seen) -> bool {
        self.clear_bits(seen, seen.direction.clearable())
    }

    /// After a stream's read that acted on `seen` returned fewer bytes than it asked
    /// for: [`READABLE`] is cleared, as by a `WouldBlock` but keeping the closed and
    /// error bits (module docs), unless an event arrived since `seen`. True if cleared.
    pub(crate) fn clear_drained(&self, seen: Seen) -> bool {
        debug_assert_eq!(seen.direction, Direction::Read);
        self.clear_bits(seen, READABLE)
    }

    /// Clears `bits` of the word if its tick is still `seen`'s; true if it was.
    fn clear_bits(&self, seen: Seen, bits: usize) -> bool {
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            if current >> TICK_SHIFT != seen.tick {
                return false;
            }
            let next = current & !bits;
            if next == current {
                return true;
            }
            match self.word.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
    }

    /// The driver is gone: every wait ends, and none starts.
    pub(crate) fn shut_down(&self) {
        self.word.fetch_or(SHUT_DOWN, Ordering::AcqRel);
    }
}

/// Ticks wrap within the word's high bits: a tick from a poll counter.
pub(crate) fn tick_of(polls: usize) -> usize {
    polls & (usize::MAX >> TICK_SHIFT)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_seen_in_its_direction_only() {
        let r = Readiness::new();
        assert!(r.seen(Direction::Read).is_none());
        r.set(READABLE, 1);
        assert!(r.seen(Direction::Read).is_some());
        assert!(r.seen(Direction::Write).is_none());
        r.set(WRITABLE, 2);
        assert!(r.seen(Direction::Write).is_some());
        assert!(
            r.seen(Direction::Read).is_some(),
            "setting one keeps the other"
        );
    }

    #[test]
    fn a_would_block_clears_what_it_saw() {
        let r = Readiness::new();
        r.set(READABLE | WRITABLE, 1);
        let seen = r.seen(Direction::Read).unwrap();
        assert!(r.clear(seen));
        assert!(r.seen(Direction::Read).is_none());
        assert!(
            r.seen(Direction::Write).is_some(),
            "the other direction stays"
        );
    }

    #[test]
    fn a_newer_event_survives_the_clear_of_an_older_look() {
        let r = Readiness::new();
        r.set(READABLE, 1);
        let seen = r.seen(Direction::Read).unwrap();
        // The operation tries its system call; meanwhile more data arrives.
        r.set(READABLE, 2);
        assert!(!r.clear(seen), "the newer event stands: try again");
        assert!(r.seen(Direction::Read).is_some());
    }

    #[test]
    fn closed_and_error_end_waits_until_a_would_block_shut_down_for_good() {
        let r = Readiness::new();
        r.set(READ_CLOSED, 1);
        assert!(r.seen(Direction::Write).is_none());
        let seen = r.seen(Direction::Read).unwrap();
        // The call after the close said `WouldBlock` (a datagram socket): wait again.
        assert!(r.clear(seen));
        assert!(r.seen(Direction::Read).is_none(), "no spin on a closed bit");
        r.set(ERROR, 2);
        assert!(r.seen(Direction::Write).is_some());
        assert!(r.seen(Direction::Read).is_some());
        let fresh = Readiness::new();
        fresh.shut_down();
        let seen = fresh.seen(Direction::Read).unwrap();
        assert!(seen.is_shut_down());
        assert!(fresh.clear(seen));
        assert!(
            fresh.seen(Direction::Read).unwrap().is_shut_down(),
            "for good"
        );
        assert!(fresh.seen(Direction::Write).unwrap().is_shut_down());
    }

    #[test]
    fn a_short_read_clears_readable_and_keeps_the_end_of_stream() {
        let r = Readiness::new();
        // The last bytes and the peer's end of stream, reported in one event.
        r.set(READABLE | READ_CLOSED | WRITABLE, 1);
        let seen = r.seen(Direction::Read).unwrap();
        assert!(r.clear_drained(seen));
        let after = r
            .seen(Direction::Read)
            .expect("the end of stream still ends a wait");
        assert_eq!(after.ready, READ_CLOSED, "readable cleared, closed kept");
        assert!(
            r.seen(Direction::Write).is_some(),
            "the other direction stays"
        );
    }

    #[test]
    fn bytes_that_arrive_after_a_short_read_survive_its_clear() {
        let r = Readiness::new();
        r.set(READABLE, 1);
        let seen = r.seen(Direction::Read).unwrap();
        // The read came back short; before its clear, more bytes arrive.
        r.set(READABLE, 2);
        assert!(!r.clear_drained(seen), "the newer event stands");
        assert!(r.seen(Direction::Read).is_some());
        // An error seen with the readiness stays for the next call to report.
        r.set(ERROR, 3);
        let seen = r.seen(Direction::Read).unwrap();
        assert!(r.clear_drained(seen));
        assert_eq!(r.seen(Direction::Read).unwrap().ready, ERROR);
    }

    #[test]
    fn ticks_wrap_inside_the_word() {
        let r = Readiness::new();
        r.set(READABLE, tick_of(usize::MAX));
        let seen = r.seen(Direction::Read).unwrap();
        assert!(r.clear(seen));
    }
}
