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

/// This thread's generator state (a fixed seed once the thread is exiting).
#[inline]
fn load() -> u64 {
    STATE.try_with(Cell::get).unwrap_or(0x9E37_79B9_7F4A_7C15)
}

#[inline]
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

/// Shuffles `items` uniformly (Fisher-Yates), reading and writing the thread-local state
/// once each (each access is a call into the TLS runtime, for a library crate).
#[inline]
pub(crate) fn shuffle<T>(items: &mut [T]) {
    if items.len() < 2 {
        return;
    }
    let mut x = load();
    for i in (1..items.len()).rev() {
        x = step(x);
        items.swap(i, scale(x, i + 1));
    }
    store(x);
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
