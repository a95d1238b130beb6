//! The per-thread random numbers a fair choice orders its arms with.

use std::cell::Cell;

std::thread_local! {
    /// xorshift64 state; any non-zero seed works, and choices only need arms to be
    /// picked uniformly, not unpredictably.
    static STATE: Cell<u64> = const { Cell::new(0x2545_F491_4F6C_DD1D) };
}

/// A random number below `n` (`n > 0`).
pub(crate) fn below(n: usize) -> usize {
    let x = STATE
        .try_with(|state| {
            let mut x = state.get();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            state.set(x);
            x
        })
        .unwrap_or(0x9E37_79B9_7F4A_7C15);
    // Lemire's multiply-shift: uniform enough for `n` far below 2^32.
    ((u128::from(x) * n as u128) >> 64) as usize
}

/// Shuffles `items` uniformly (Fisher-Yates).
pub(crate) fn shuffle<T>(items: &mut [T]) {
    for i in (1..items.len()).rev() {
        items.swap(i, below(i + 1));
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
    fn shuffle_permutes() {
        let mut v: Vec<u32> = (0..10).collect();
        super::shuffle(&mut v);
        v.sort_unstable();
        assert_eq!(v, (0..10).collect::<Vec<_>>());
    }
}
