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

/// This thread's generator state (a fixed seed once the thread is exiting).
#[cfg(all(test, not(loom)))]
fn load() -> u64 {
    STATE.try_with(Cell::get).unwrap_or(EXITING_SEED)
}

#[cfg(all(test, not(loom)))]
fn store(x: u64) {
    // Nothing to keep once the thread is exiting.
    let _ = STATE.try_with(|state| state.set(x));
}

/// A random number below `n` (`n > 0`).
#[cfg(all(test, not(loom)))]
fn below(n: usize) -> usize {
    let x = step(load());
    store(x);
    scale(x, n)
}

/// Shuffles `items` uniformly (Fisher-Yates), with one look-up of the thread-local state
/// for both its read and its write (each look-up is a call into the TLS runtime, for a
/// library crate).
#[inline]
pub(crate) fn shuffle(items: &mut [u32]) {
    if items.len() < 2 {
        return;
    }
    let done = STATE.try_with(|state| state.set(permute(items, state.get())));
    if done.is_err() {
        // The thread is exiting: its state is gone.
        permute(items, EXITING_SEED);
    }
}

/// Fisher-Yates from generator state `x`; returns the state after.
#[inline]
fn permute(items: &mut [u32], mut x: u64) -> u64 {
    for i in (1..items.len()).rev() {
        x = step(x);
        items.swap(i, scale(x, i + 1));
    }
    x
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
    fn shuffle_permutes() {
        let mut v: Vec<u32> = (0..10).collect();
        super::shuffle(&mut v);
        v.sort_unstable();
        assert_eq!(v, (0..10).collect::<Vec<_>>());
    }
}
