//! The per-thread random numbers a fair choice orders its arms with.

use std::cell::Cell;

std::thread_local! {
    /// xorshift64 state; any non-zero seed works, and choices only need arms to be
    /// picked uniformly, not unpredictably.
    static STATE: Cell<u64> = const { Cell::new(0x2545_F491_4F6C_DD1D) };
}

/// One xorshift64 step.
#[inline]
fn step(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// `x` scaled to a number below `n` (`n > 0`): Lemire's multiply-shift, uniform enough
/// for `n` far below 2^32.
#[inline]
fn scale(x: u64, n: usize) -> usize {
    ((u128::from(x) * n as u128) >> 64) as usize
}

/// The state of a thread whose own is gone (it is exiting).
const EXITING_SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// Sets this thread's generator state.
#[cfg(all(test, not(loom)))]
fn seed(x: u64) {
    STATE.with(|state| state.set(x));
}

/// A random number below `n` (`n > 0`).
#[cfg(all(test, not(loom)))]
fn below(n: usize) -> usize {
    let mut stream = Stream::start();
    let x = stream.below(n);
    stream.end();
    x
}

/// A run of random numbers from this thread's generator, with one look-up of the
/// thread-local state to start it and one to end it (each look-up is a call into the
/// TLS runtime, for a library crate), however many numbers it draws.
pub(crate) struct Stream {
    x: u64,
}

impl Stream {
    /// Starts a run where this thread's generator stands (a fixed seed once the thread
    /// is exiting and its state is gone).
    #[inline]
    pub(crate) fn start() -> Stream {
        Stream {
            x: STATE.try_with(Cell::get).unwrap_or(EXITING_SEED),
        }
    }

    /// A random number below `n` (`n > 0`).
    #[inline]
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.x = step(self.x);
        scale(self.x, n)
    }

    /// Ends the run: the thread's generator goes on from here. (A run dropped without
    /// this repeats its numbers in the next one, which fairness does not mind.)
    #[inline]
    pub(crate) fn end(self) {
        // Nothing to keep once the thread is exiting.
        let _ = STATE.try_with(|state| state.set(self.x));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut seen = [0usize; 5];
        for _ in 0..10_000 {
            seen[super::below(5)] += 1;
        }
        for count in seen {
            assert!((1_500..2_500).contains(&count), "{seen:?}");
        }
    }

    #[test]
    fn a_stream_goes_on_from_the_thread_state_and_hands_it_back() {
        // Two draws in one run are the draws of two runs in a row.
        super::seed(12345);
        let mut stream = super::Stream::start();
        let together = (stream.below(1 << 20), stream.below(1 << 20));
        stream.end();
        super::seed(12345);
        let apart = (super::below(1 << 20), super::below(1 << 20));
        assert_eq!(together, apart);
        assert_ne!(apart.0, apart.1);
    }
}
