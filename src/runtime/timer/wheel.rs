//! The hierarchical timing wheel: 64 slots per level, 1 tick (1 ms) per slot at level
//! 0, 64 times coarser at each level above, and enough levels (11) to hold any `u64`
//! deadline, so nothing is ever clamped.
//!
//! An entry with deadline `d` sits at the level of the highest 6-bit group in which `d`
//! differs from `elapsed` (the tick the wheel has advanced to), in the slot that group
//! of `d` names. So the entries of level 0 all expire within the current 64 ticks, those
//! of level 1 after them and within the current 4096, and so on: the earliest non-empty
//! slot is found by looking at one occupancy bitmap per level, lowest level first. When a
//! slot above level 0 comes due, its entries move down to the levels below (they now
//! differ from `elapsed` only in lower groups); a level-0 slot's entries expire.
//!
//! The wheel is a plain data structure: its owner ([`Timers`](super::Timers)) holds a
//! lock around it, which is the lock every `unsafe` method here requires.

use std::ptr::NonNull;

use crate::runtime::timer::entry::{Entry, Position};

/// Bits of the deadline each level resolves.
const SLOT_BITS: u32 = 6;
/// Slots per level.
const SLOTS: usize = 1 << SLOT_BITS;
/// Levels: 11 × 6 bits cover all 64 bits of a tick count.
const LEVELS: usize = 64_usize.div_ceil(SLOT_BITS as usize);

/// An intrusive doubly linked list of entries.
#[derive(Debug, Default, Clone, Copy)]
struct List {
    head: Option<NonNull<Entry>>,
    tail: Option<NonNull<Entry>>,
}

impl List {
    fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// # Safety
    /// The entry is alive and unlinked; the wheel lock is held.
    unsafe fn push_back(&mut self, entry: NonNull<Entry>) {
        // SAFETY: per the caller.
        unsafe {
            let e = entry.as_ref();
            e.set_prev(self.tail);
            e.set_next(None);
            match self.tail {
                Some(tail) => tail.as_ref().set_next(Some(entry)),
                None => self.head = Some(entry),
            }
        }
        self.tail = Some(entry);
    }

    /// # Safety
    /// The entry is alive and linked in this list; the wheel lock is held.
    unsafe fn remove(&mut self, entry: NonNull<Entry>) {
        // SAFETY: per the caller.
        unsafe {
            let e = entry.as_ref();
            let (prev, next) = (e.prev(), e.next());
            match prev {
                Some(prev) => prev.as_ref().set_next(next),
                None => self.head = next,
            }
            match next {
                Some(next) => next.as_ref().set_prev(prev),
                None => self.tail = prev,
            }
            e.set_prev(None);
            e.set_next(None);
        }
    }

    /// # Safety
    /// The wheel lock is held.
    unsafe fn pop_front(&mut self) -> Option<NonNull<Entry>> {
        let head = self.head?;
        // SAFETY: per the caller; `head` is linked here.
        unsafe { self.remove(head) };
        Some(head)
    }
}

pub(crate) struct Wheel {
    /// Every deadline at or before this tick has expired.
    elapsed: u64,
    /// Bit `s` of `occupied[l]`: slot `s` of level `l` is non-empty.
    occupied: [u64; LEVELS],
    /// On the heap: 11 KiB is too much for a stack frame that builds a runtime.
    slots: Box<[[List; SLOTS]]>,
    /// Entries taken from a due slot and not yet expired or moved down.
    pending: List,
    len: usize,
}

// SAFETY: the entries the lists point to are only touched under the wheel's lock.
unsafe impl Send for Wheel {}

/// The level and slot for `deadline` as seen from `elapsed` (`deadline > elapsed`).
fn slot_for(elapsed: u64, deadline: u64) -> (usize, usize) {
    debug_assert!(deadline > elapsed);
    let highest_bit = 63 - ((deadline ^ elapsed) | (SLOTS as u64 - 1)).leading_zeros();
    let level = (highest_bit / SLOT_BITS) as usize;
    let slot = (deadline >> (level as u32 * SLOT_BITS)) as usize & (SLOTS - 1);
    (level, slot)
}

/// The first tick of the span covered by `slot` of `level`, as seen from `elapsed`.
fn slot_start(elapsed: u64, level: usize, slot: usize) -> u64 {
    let shift = level as u32 * SLOT_BITS;
    // The bits above this level come from `elapsed` (none above the top level).
    let above = match shift.checked_add(SLOT_BITS) {
        Some(bits) if bits < 64 => elapsed & !((1u64 << bits) - 1),
        _ => 0,
    };
    above | ((slot as u64) << shift)
}

impl Wheel {
    pub(crate) fn new() -> Wheel {
        Wheel {
            elapsed: 0,
            occupied: [0; LEVELS],
            slots: vec![[List::default(); SLOTS]; LEVELS].into_boxed_slice(),
            pending: List::default(),
            len: 0,
        }
    }

    /// The tick the wheel has advanced to.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// Entries linked (pending ones included).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Links `entry` to expire at `deadline`; `false` (and nothing linked) if that tick
    /// has already passed.
    ///
    /// # Safety
    /// The entry is alive, pinned and unlinked, and stays alive until it is removed or
    /// returned by [`poll`](Self::poll); the wheel lock is held.
    pub(crate) unsafe fn insert(&mut self, entry: NonNull<Entry>, deadline: u64) -> bool {
        if deadline <= self.elapsed {
            return false;
        }
        // SAFETY: per the caller.
        unsafe {
            entry.as_ref().set_deadline(deadline);
            self.link(entry);
        }
        self.len += 1;
        true
    }

    /// # Safety
    /// As `insert`, with the entry's deadline set and after `elapsed`.
    unsafe fn link(&mut self, entry: NonNull<Entry>) {
        // SAFETY: per the caller.
        let deadline = unsafe { entry.as_ref().deadline() };
        let (level, slot) = slot_for(self.elapsed, deadline);
        // SAFETY: per the caller.
        unsafe {
            self.slots[level][slot].push_back(entry);
            entry
                .as_ref()
                .set_position(Position::Slot((level * SLOTS + slot) as u16));
        }
        self.occupied[level] |= 1 << slot;
    }

    /// Unlinks `entry` if it is linked; true if it was.
    ///
    /// # Safety
    /// The entry is alive; the wheel lock is held.
    pub(crate) unsafe fn remove(&mut self, entry: NonNull<Entry>) -> bool {
        // SAFETY: per the caller.
        let position = unsafe { entry.as_ref().position() };
        match position {
            Position::Unlinked => return false,
            Position::Pending => {
                // SAFETY: per the caller; the entry is in `pending`.
                unsafe { self.pending.remove(entry) }
            }
            Position::Slot(index) => {
                let (level, slot) = (index as usize / SLOTS, index as usize % SLOTS);
                let list = &mut self.slots[level][slot];
                // SAFETY: per the caller; the entry is in this slot.
                unsafe { list.remove(entry) };
                if list.is_empty() {
                    self.occupied[level] &= !(1 << slot);
                }
            }
        }
        // SAFETY: per the caller.
        unsafe { entry.as_ref().set_position(Position::Unlinked) };
        self.len -= 1;
        true
    }

    /// The earliest non-empty slot: its level, slot and first tick.
    fn next_slot(&self) -> Option<(usize, usize, u64)> {
        (0..LEVELS).find_map(|level| {
            let occupied = self.occupied[level];
            if occupied == 0 {
                return None;
            }
            // Every occupied slot lies at or after the one `elapsed` is in (module
            // docs): no slot of this level wraps around.
            let current = (self.elapsed >> (level as u32 * SLOT_BITS)) as usize & (SLOTS - 1);
            debug_assert_eq!(occupied & ((1u64 << current) - 1), 0);
            let slot = occupied.trailing_zeros() as usize;
            Some((level, slot, slot_start(self.elapsed, level, slot)))
        })
    }

    /// The tick by which the wheel must next be advanced: the start of its earliest
    /// non-empty slot (exact for entries in level 0, a lower bound above), or `now`
    /// if entries taken from a due slot wait to be sorted out; `None` if empty.
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        if !self.pending.is_empty() {
            return Some(self.elapsed);
        }
        self.next_slot().map(|(_, _, start)| start)
    }

    /// Advances the wheel towards `now` and returns the next entry that has expired by
    /// then (unlinked; the caller fires it), or `None` once every deadline up to `now`
    /// has been dealt with.
    ///
    /// # Safety
    /// The wheel lock is held.
    pub(crate) unsafe fn poll(&mut self, now: u64) -> Option<NonNull<Entry>> {
        loop {
            // SAFETY: per the caller.
            while let Some(entry) = unsafe { self.pending.pop_front() } {
                // SAFETY: linked entries are alive (`insert`'s contract).
                let e = unsafe { entry.as_ref() };
                // SAFETY: the lock is held.
                if unsafe { e.deadline() } <= self.elapsed {
                    // SAFETY: as above.
                    unsafe { e.set_position(Position::Unlinked) };
                    self.len -= 1;
                    return Some(entry);
                }
                // Not yet: down to a lower level.
                // SAFETY: as above; the entry was just unlinked from `pending`.
                unsafe { self.link(entry) };
            }
            match self.next_slot() {
                Some((level, slot, start)) if start <= now => {
                    self.elapsed = start;
                    self.occupied[level] &= !(1 << slot);
                    let list = std::mem::take(&mut self.slots[level][slot]);
                    self.pending = list;
                    let mut cursor = list.head;
                    while let Some(entry) = cursor {
                        // SAFETY: the lock is held; `entry` is linked in `pending`.
                        unsafe {
                            entry.as_ref().set_position(Position::Pending);
                            cursor = entry.as_ref().next();
                        }
                    }
                }
                _ => {
                    self.elapsed = self.elapsed.max(now);
                    return None;
                }
            }
        }
    }
}

impl std::fmt::Debug for Wheel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wheel")
            .field("elapsed", &self.elapsed)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
pub(super) mod tests {
    use std::pin::Pin;

    use super::*;

    /// `n` fresh entries, pinned (the timers' tests use them too).
    pub(in crate::runtime::timer) fn entries(n: usize) -> Vec<Pin<Box<Entry>>> {
        (0..n).map(|_| Box::pin(Entry::new())).collect()
    }

    /// The pointer the wheel links.
    pub(in crate::runtime::timer) fn ptr(entry: &Pin<Box<Entry>>) -> NonNull<Entry> {
        NonNull::from(&**entry)
    }

    /// Every expired entry up to `now`, with the tick at which it came out.
    fn drain(wheel: &mut Wheel, now: u64) -> Vec<(NonNull<Entry>, u64)> {
        let mut out = Vec::new();
        // SAFETY: single-threaded test: the `&mut` is the lock.
        while let Some(entry) = unsafe { wheel.poll(now) } {
            out.push((entry, wheel.elapsed()));
        }
        out
    }

    #[test]
    fn levels_and_slots() {
        assert_eq!(LEVELS, 11);
        assert_eq!(slot_for(0, 1), (0, 1));
        assert_eq!(slot_for(0, 63), (0, 63));
        assert_eq!(slot_for(0, 64), (1, 1));
        assert_eq!(slot_for(60, 70), (1, 1));
        assert_eq!(slot_for(0, u64::MAX), (10, 15));
        assert_eq!(slot_start(70, 1, 3), 192);
        assert_eq!(slot_start(5000, 0, 7), 4992 + 7);
        assert_eq!(slot_start(u64::MAX - 1, 10, 15), 15 << 60);
    }

    #[test]
    fn expires_each_entry_at_its_tick_and_never_before() {
        // Deadlines spread over several levels, including the far future.
        let deadlines = [
            1,
            2,
            63,
            64,
            65,
            100,
            4095,
            4096,
            4097,
            250_000,
            1 << 40,
            u64::MAX - 1,
        ];
        let es = entries(deadlines.len());
        let mut wheel = Wheel::new();
        for (e, &d) in es.iter().zip(&deadlines) {
            // SAFETY: the entries outlive the wheel's use of them.
            assert!(unsafe { wheel.insert(ptr(e), d) });
        }
        assert_eq!(wheel.len(), deadlines.len());
        // Advance in uneven steps; each entry must come out at the first `now` at or
        // after its deadline.
        let mut now = 0_u64;
        let mut seen = Vec::new();
        for step in [
            1,
            1,
            30,
            40,
            1,
            3000,
            2000,
            100_000,
            200_000,
            1 << 41,
            u64::MAX / 2,
            u64::MAX,
        ] {
            let before = now;
            now = now.saturating_add(step).min(u64::MAX - 1);
            for (entry, _) in drain(&mut wheel, now) {
                let i = es.iter().position(|e| ptr(e) == entry).unwrap();
                assert!(deadlines[i] > before && deadlines[i] <= now, "entry {i}");
                seen.push(i);
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..deadlines.len()).collect::<Vec<_>>());
        assert_eq!(wheel.len(), 0);
        assert_eq!(wheel.next_deadline(), None);
    }

    #[test]
    fn next_deadline_is_a_lower_bound_and_exact_at_level_zero() {
        let es = entries(2);
        let mut wheel = Wheel::new();
        // SAFETY: the entries outlive the wheel's use of them.
        unsafe {
            assert!(wheel.insert(ptr(&es[0]), 5000));
            assert_eq!(wheel.next_deadline(), Some(4096));
            assert!(wheel.insert(ptr(&es[1]), 10));
        }
        assert_eq!(wheel.next_deadline(), Some(10));
        assert_eq!(drain(&mut wheel, 9).len(), 0);
        assert_eq!(drain(&mut wheel, 10).len(), 1);
        assert!(drain(&mut wheel, 4999).is_empty());
        assert_eq!(wheel.next_deadline(), Some(5000));
        assert_eq!(drain(&mut wheel, 5000).len(), 1);
    }

    #[test]
    fn removed_entries_never_expire_and_past_deadlines_are_refused() {
        let es = entries(3);
        let mut wheel = Wheel::new();
        // SAFETY: the entries outlive the wheel's use of them.
        unsafe {
            assert!(wheel.insert(ptr(&es[0]), 70));
            assert!(wheel.insert(ptr(&es[1]), 70));
            assert!(wheel.insert(ptr(&es[2]), 200));
            assert!(wheel.remove(ptr(&es[0])));
            assert!(!wheel.remove(ptr(&es[0])));
        }
        assert_eq!(drain(&mut wheel, 100).len(), 1);
        // SAFETY: as above.
        unsafe {
            assert!(!wheel.insert(ptr(&es[0]), 100), "a passed tick is refused");
            assert!(wheel.remove(ptr(&es[2])));
        }
        assert!(drain(&mut wheel, 1000).is_empty());
        assert_eq!(wheel.len(), 0);
    }

    #[test]
    fn an_entry_removed_while_pending_is_not_returned() {
        let es = entries(2);
        let mut wheel = Wheel::new();
        // SAFETY: the entries outlive the wheel's use of them.
        unsafe {
            assert!(wheel.insert(ptr(&es[0]), 64));
            assert!(wheel.insert(ptr(&es[1]), 64));
            // The first poll moves both into `pending` and returns one.
            let first = wheel.poll(64).unwrap();
            let other = if first == ptr(&es[0]) { &es[1] } else { &es[0] };
            assert!(wheel.remove(ptr(other)));
            assert_eq!(wheel.poll(64), None);
        }
        assert_eq!(wheel.len(), 0);
    }

    #[test]
    fn random_deadlines_expire_neither_early_nor_late() {
        let mut rng = 0x2545_F491_4F6C_DD1D_u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let es = entries(2000);
        let mut wheel = Wheel::new();
        let mut now = 0_u64;
        let mut live = std::collections::HashMap::new();
        for (i, e) in es.iter().enumerate() {
            let deadline = now + 1 + next() % 300_000;
            // SAFETY: the entries outlive the wheel's use of them.
            assert!(unsafe { wheel.insert(ptr(e), deadline) });
            live.insert(ptr(e), deadline);
            if i % 7 == 0 {
                now += next() % 5000;
                for (entry, _) in drain(&mut wheel, now) {
                    let deadline = live.remove(&entry).unwrap();
                    assert!(deadline <= now);
                }
                assert!(live.values().all(|&d| d > now), "an entry was missed");
            }
        }
        for (entry, _) in drain(&mut wheel, u64::MAX - 1) {
            live.remove(&entry).unwrap();
        }
        assert!(live.is_empty());
    }
}
