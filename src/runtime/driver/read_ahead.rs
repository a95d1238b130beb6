//! Reading ahead: whether a stream's read that emptied the socket leaves its readiness
//! standing, so the next read runs the system call at once, or clears it, so the next
//! read waits for the driver's next event. Learned per source from what reading ahead
//! found.
//!
//! A read that returns fewer bytes than it asked for has emptied the socket's receive
//! queue, as tokio also assumes. Clearing the readiness then (tokio's rule) saves the
//! next read a call that will most likely get `WouldBlock`; leaving it standing lets the
//! next read take bytes that came meanwhile without waiting for the driver to report
//! them (a poll, a dispatch, a wake, a schedule), which costs several times that call.
//! Which pays depends on the peer and the load (docs/performance.md, "Reading ahead,
//! learned per socket"). Bytes that arrive after the read report a new edge, which the
//! clear cannot erase (the tick rule of `readiness.rs`), so for them the choice is only
//! about cost.
//!
//! The assumption fails where the kernel ends a read early with bytes still queued: a
//! TCP read that stops at the mark of urgent data the peer sent, and a Unix stream's that
//! stops after a message that carried descriptors (`SCM_RIGHTS`) or, with `SO_PASSCRED`
//! set, between two writers' bytes. There a clear, as tokio's, leaves those bytes
//! unread until the peer sends more (or the connection's timeout ends it); a read ahead
//! takes them. The peer chooses to send these, so it stalls only its own connection.
//!
//! Each source keeps a score. A *read ahead* is a read that runs on the readiness its
//! previous, short, read left standing, with no event since (the word's tick is the
//! same). One that finds bytes (or the end of the stream: it returned at once) raises
//! the score by [`READ_AHEAD_HIT`]; one that gets `WouldBlock` lowers it by 1. A short
//! read leaves the readiness standing while the score is at least
//! [`READ_AHEAD_THRESHOLD`], and otherwise, as a *probe*, so that a peer whose pace
//! changes is noticed: first after [`READ_AHEAD_PROBE`] short reads, then after twice as
//! many each time a probe finds nothing, up to [`READ_AHEAD_PROBE_MAX`]. A read ahead
//! that finds bytes sets the interval back to [`READ_AHEAD_PROBE`].
//!
//! The state is one word, read and written with `Relaxed` loads and stores: it is a
//! hint, ordered with nothing. Two processes reading one source at once (through
//! `&TcpStream`) may lose each other's updates, which costs a call or a wait, or puts
//! off noticing a peer's change of pace by up to [`READ_AHEAD_PROBE_MAX`] short reads
//! (a lost reset of the interval).
//!
//! | bits  | what                                                           |
//! |-------|----------------------------------------------------------------|
//! | 0..4  | the score, 0 to [`MAX_SCORE`]                                  |
//! | 4..11 | short reads since the last probe                               |
//! | 11    | [`AHEAD`]: the last read was short and left the readiness up   |
//! | 12..15| the probes' back-off: they come every `READ_AHEAD_PROBE << it` |
//! | 16..  | the readiness tick that read acted on (with [`AHEAD`] set)     |
//!
//! The tick sits at the readiness word's own shift (`readiness.rs`), so every tick that
//! word can carry fits here too.

use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::runtime::driver::readiness::{Seen, TICK_SHIFT};
use crate::tuning::{READ_AHEAD_HIT, READ_AHEAD_PROBE, READ_AHEAD_PROBE_MAX, READ_AHEAD_THRESHOLD};

/// The score's bits.
const SCORE_MASK: usize = 0xf;
/// The highest score: a source that stops paying is read ahead at most
/// `MAX_SCORE - READ_AHEAD_THRESHOLD + 1` more times.
const MAX_SCORE: usize = SCORE_MASK;
/// Shift of the count of short reads since the last probe.
const PROBES_SHIFT: usize = 4;
/// The count's bits, below the shift.
const PROBES_MASK: usize = 0x7f;
/// The last read was short and left the readiness standing, at the tick above.
const AHEAD: usize = 1 << 11;
/// Shift of the probes' back-off.
const BACKOFF_SHIFT: usize = 12;
/// The back-off's bits, below the shift.
const BACKOFF_MASK: usize = 0x7;
/// The longest back-off: probes every [`READ_AHEAD_PROBE_MAX`] short reads.
const MAX_BACKOFF: usize = (READ_AHEAD_PROBE_MAX / READ_AHEAD_PROBE).trailing_zeros() as usize;

const _: () = {
    // Checked first: `MAX_BACKOFF` below is meaningless otherwise.
    assert!(READ_AHEAD_PROBE >= 1 && READ_AHEAD_PROBE_MAX >= READ_AHEAD_PROBE);
    // The fields, in the table's order, overlap nowhere.
    assert!(SCORE_MASK < 1 << PROBES_SHIFT);
    assert!(PROBES_MASK << PROBES_SHIFT < AHEAD);
    assert!(AHEAD < 1 << BACKOFF_SHIFT && BACKOFF_MASK << BACKOFF_SHIFT < 1 << TICK_SHIFT);
    assert!(READ_AHEAD_THRESHOLD as usize <= MAX_SCORE);
    assert!(READ_AHEAD_HIT as usize <= MAX_SCORE);
    // The longest interval is the first doubled a whole number of times, and the count,
    // which stays below it, fits its bits.
    assert!(READ_AHEAD_PROBE_MAX == READ_AHEAD_PROBE << MAX_BACKOFF);
    assert!(MAX_BACKOFF <= BACKOFF_MASK);
    assert!(READ_AHEAD_PROBE_MAX as usize <= PROBES_MASK + 1);
};

/// What a stream's read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// `WouldBlock`.
    Nothing,
    /// Bytes (or the end of the stream); `short` if fewer than it asked for.
    Bytes { short: bool },
}

/// One source's read-ahead score (module docs).
#[derive(Debug)]
pub(crate) struct ReadAhead {
    word: AtomicUsize,
}

impl ReadAhead {
    /// A source that reads ahead until that stops paying: the cheaper rule where a peer
    /// answers at once, and at most one wasted call where it does not.
    pub(crate) fn new() -> ReadAhead {
        ReadAhead {
            word: AtomicUsize::new(READ_AHEAD_THRESHOLD as usize),
        }
    }

    /// A read acting on `seen` found `found`. The score learns from it if it was a read
    /// ahead; if it was short, true says to clear the readiness (wait for the next
    /// event), false to leave it standing (read ahead).
    #[must_use]
    pub(crate) fn learn(&self, seen: Seen, found: Found) -> bool {
        // Relaxed: a hint (module docs).
        let word = self.word.load(Ordering::Relaxed);
        let mut score = word & SCORE_MASK;
        let mut probes = (word >> PROBES_SHIFT) & PROBES_MASK;
        let mut backoff = (word >> BACKOFF_SHIFT) & BACKOFF_MASK;
        if word & AHEAD != 0 && word >> TICK_SHIFT == seen.tick() {
            // A read ahead on a score below the threshold was a probe.
            let probe = score < READ_AHEAD_THRESHOLD as usize;
            match found {
                Found::Nothing => {
                    score = score.saturating_sub(1);
                    if probe {
                        backoff = (backoff + 1).min(MAX_BACKOFF);
                    }
                }
                Found::Bytes { .. } => {
                    score = (score + READ_AHEAD_HIT as usize).min(MAX_SCORE);
                    backoff = 0;
                }
            }
        }
        let interval = (READ_AHEAD_PROBE as usize) << backoff;
        let ahead = found == Found::Bytes { short: true }
            && (score >= READ_AHEAD_THRESHOLD as usize || {
                probes += 1;
                probes >= interval
            });
        // `>=` where `==` would do (the count restarts at each probe, and stands still
        // while the score is high): a count can then never run into the bits above it.
        if probes >= interval {
            probes = 0;
        }
        let next = score
            | probes << PROBES_SHIFT
            | backoff << BACKOFF_SHIFT
            | if ahead {
                AHEAD | seen.tick() << TICK_SHIFT
            } else {
                0
            };
        if next != word {
            // Relaxed: as the load.
            self.word.store(next, Ordering::Relaxed);
        }
        found == Found::Bytes { short: true } && !ahead
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::runtime::driver::readiness::{Direction, READABLE, Readiness};

    /// A short read at driver tick `tick`, then `next` found by the read after it with no
    /// event between: returns whether the short read cleared the readiness.
    fn short_then(ahead: &ReadAhead, tick: usize, next: Found) -> bool {
        let word = Readiness::new();
        word.set(READABLE, tick);
        let seen = word.seen(Direction::Read).unwrap();
        let cleared = ahead.learn(seen, Found::Bytes { short: true });
        if !cleared {
            let _ = ahead.learn(seen, next);
        }
        cleared
    }

    #[test]
    fn reads_ahead_while_it_finds_bytes() {
        let ahead = ReadAhead::new();
        for tick in 1..100 {
            assert!(
                !short_then(&ahead, tick, Found::Bytes { short: true }),
                "tick {tick}"
            );
        }
    }

    /// Runs `reads` short reads, each followed by a read that finds nothing, from tick
    /// `*tick` on; returns the reads (counted from 1) that read ahead.
    fn probes_among(ahead: &ReadAhead, tick: &mut usize, reads: usize) -> Vec<usize> {
        (1..=reads)
            .filter(|_| {
                *tick += 1;
                !short_then(ahead, *tick, Found::Nothing)
            })
            .collect()
    }

    /// Where the probes fall among `reads` short reads that all find nothing after, from
    /// an interval of `interval` on.
    fn backed_off(mut interval: usize, reads: usize) -> Vec<usize> {
        let mut at = Vec::new();
        let mut read = interval;
        while read <= reads {
            at.push(read);
            interval = (interval * 2).min(READ_AHEAD_PROBE_MAX as usize);
            read += interval;
        }
        at
    }

    #[test]
    fn stops_once_reading_ahead_finds_nothing_and_probes_less_and_less_often() {
        let ahead = ReadAhead::new();
        assert!(
            !short_then(&ahead, 1, Found::Nothing),
            "reads ahead at first"
        );
        let probes = probes_among(&ahead, &mut 1, 1000);
        let expected = backed_off(READ_AHEAD_PROBE as usize, 1000);
        // 8, 24, 56, 120, 248, then every 128.
        assert_eq!(expected[..6], [8, 24, 56, 120, 248, 376]);
        assert_eq!(probes, expected);
    }

    #[test]
    fn a_probe_that_finds_bytes_resets_the_back_off() {
        let ahead = ReadAhead::new();
        let mut tick = 1;
        assert!(!short_then(&ahead, tick, Found::Nothing));
        let _ = probes_among(&ahead, &mut tick, 1000);
        // Backed off all the way: the next probe finds bytes.
        loop {
            tick += 1;
            if !short_then(&ahead, tick, Found::Bytes { short: false }) {
                break;
            }
        }
        // Reads ahead again, finds nothing, and probes from the first interval on.
        tick += 1;
        assert!(!short_then(&ahead, tick, Found::Nothing), "reads ahead");
        let probes = probes_among(&ahead, &mut tick, 200);
        assert_eq!(probes, backed_off(READ_AHEAD_PROBE as usize, 200));
    }

    #[test]
    fn a_probe_that_finds_bytes_starts_reading_ahead_again() {
        let ahead = ReadAhead::new();
        let mut tick = 1;
        while !short_then(&ahead, tick, Found::Nothing) {
            tick += 1;
        }
        // Probes until one reads ahead, which finds bytes.
        loop {
            tick += 1;
            if !short_then(&ahead, tick, Found::Bytes { short: false }) {
                break;
            }
        }
        tick += 1;
        assert!(
            !short_then(&ahead, tick, Found::Nothing),
            "reading ahead again"
        );
    }

    #[test]
    fn a_read_after_a_new_event_is_no_read_ahead() {
        let ahead = ReadAhead::new();
        let word = Readiness::new();
        for tick in 1..100 {
            word.set(READABLE, tick);
            let seen = word.seen(Direction::Read).unwrap();
            let _ = ahead.learn(seen, Found::Bytes { short: true });
            // The driver reported the socket again before the next read, which found
            // nothing: that says nothing about reading ahead.
            word.set(READABLE, tick + 1000);
            let seen = word.seen(Direction::Read).unwrap();
            assert!(!ahead.learn(seen, Found::Nothing));
        }
        assert!(
            !short_then(&ahead, 5000, Found::Nothing),
            "still reads ahead"
        );
    }

    #[test]
    fn only_a_short_read_clears() {
        let ahead = ReadAhead::new();
        let word = Readiness::new();
        for (tick, found) in [(1, Found::Nothing), (2, Found::Bytes { short: false })] {
            word.set(READABLE, tick);
            for _ in 0..20 {
                assert!(!ahead.learn(word.seen(Direction::Read).unwrap(), found));
            }
        }
    }
}
