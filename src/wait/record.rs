//! What a blocked process waits on, packed into the header's 8-byte wait word when it
//! blocks (Relaxed: read only by dumps and by deadlock detection, after the runtime has
//! been still for a whole grace period), and turned into text only when reported.
//!
//! | bits    | meaning                                                              |
//! |---------|----------------------------------------------------------------------|
//! | 60..=63 | kind (`WaitOn` variant; 0: nothing recorded)                         |
//! | 59      | foreign: something outside the runtime may complete the wait         |
//! | 32..=58 | the runtime's foreign epoch as the recording poll began (low 27 bits, `epoch.rs`) |
//! | 0..=31  | payload: a channel, process or set id (dumps show ids past 2^32 truncated), an alt's channel count, a timer's milliseconds or a file descriptor |
//!
//! One poll may record several waits (a future that selects between csp operations):
//! the last names the wait, and the foreign bit stays set once any of them set it, so a
//! wait that something outside may end is never hidden by another.
//!
//! A process's poll starts from a blank word that already carries the epoch
//! ([`blank_wait`], stored by the poll harness, which knows the runtime without a
//! look-up), and a wait recorded in the poll keeps it: the epoch at the poll's start,
//! no later than the one when the wait is recorded, so a wait that a bump makes stale
//! still reads as stale. A `block_on` future's wait is stamped when recorded.

use std::fmt;
use std::task::Waker;

use crate::loom::sync::atomic::Ordering;
use crate::task::RawTask;
use crate::wait::claim::Owner;
use crate::wait::parker::Parker;

/// A csp wait. `JoinSet` is `join_next` of a `JoinSet`: any of its processes ending
/// ends the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitOn {
    Recv {
        channel: u64,
    },
    Send {
        channel: u64,
    },
    Closed {
        channel: u64,
    },
    Alt {
        channels: u64,
    },
    Join {
        process: u64,
    },
    JoinSet {
        set: u64,
    },
    /// A `sleep`, `timeout` or `sleep_until` of this many milliseconds (capped at the
    /// payload's 32 bits): always a wait something outside the channels ends.
    Timer {
        millis: u64,
    },
    /// A socket's (or another I/O source's) readiness, by its driver registration:
    /// always a wait something outside the channels ends.
    Io {
        token: u64,
    },
}

/// A recorded wait, as deadlock detection sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recorded {
    /// Only the runtime's own processes (or its `block_on` future) can complete it.
    Internal,
    /// Recorded before a channel of the runtime turned foreign: poll its owner again to
    /// know.
    Stale,
    /// Nothing recorded, or something outside the runtime may complete it.
    Open,
}

const KIND_SHIFT: u32 = 60;
const FOREIGN: u64 = 1 << 59;
const EPOCH_SHIFT: u32 = 32;
const EPOCH_MASK: u64 = (1 << 27) - 1;
const PAYLOAD: u64 = (1 << EPOCH_SHIFT) - 1;

impl WaitOn {
    /// The wait word for this wait, recorded by a poll of runtime `runtime` that started
    /// now; `foreign` if something outside the runtime may complete it (a channel used
    /// from outside, a process of another runtime). A poll records with
    /// [`restamp`] instead, keeping the epoch it started with.
    #[cfg(all(test, not(loom)))]
    fn encode(self, foreign: bool, runtime: u64) -> u64 {
        self.encode_unstamped(foreign) | blank_wait(runtime)
    }

    /// The wait word's kind, payload and foreign bit, without the epoch.
    #[inline]
    fn encode_unstamped(self, foreign: bool) -> u64 {
        let foreign = if foreign { FOREIGN } else { 0 };
        self.encode_bare() | foreign
    }

    #[inline]
    fn encode_bare(self) -> u64 {
        let (kind, payload) = match self {
            WaitOn::Recv { channel } => (1, channel),
            WaitOn::Send { channel } => (2, channel),
            WaitOn::Closed { channel } => (3, channel),
            WaitOn::Alt { channels } => (4, channels),
            WaitOn::Join { process } => (5, process),
            WaitOn::JoinSet { set } => (6, set),
            WaitOn::Timer { millis } => (7, millis.min(PAYLOAD)),
            WaitOn::Io { token } => (8, token),
        };
        (kind << KIND_SHIFT) | (payload & PAYLOAD)
    }

    /// What deadlock detection makes of wait word `word` of a waiter of runtime
    /// `runtime`.
    pub(crate) fn classify(word: u64, runtime: u64) -> Recorded {
        if WaitOn::decode(word).is_none() || word & FOREIGN != 0 {
            Recorded::Open
        } else if (word >> EPOCH_SHIFT) & EPOCH_MASK
            == crate::wait::epoch::foreign_epoch(runtime) & EPOCH_MASK
        {
            Recorded::Internal
        } else {
            Recorded::Stale
        }
    }

    /// Whether the poll that recorded `word` also waits on something outside csp (a
    /// timer or a socket around a csp wait: `record_outside`).
    pub(crate) fn may_end_outside(word: u64) -> bool {
        word & FOREIGN != 0
    }

    /// `None` for 0 (nothing recorded) or an unknown kind.
    pub(crate) fn decode(word: u64) -> Option<WaitOn> {
        let payload = word & PAYLOAD;
        Some(match word >> KIND_SHIFT {
            1 => WaitOn::Recv { channel: payload },
            2 => WaitOn::Send { channel: payload },
            3 => WaitOn::Closed { channel: payload },
            4 => WaitOn::Alt { channels: payload },
            5 => WaitOn::Join { process: payload },
            6 => WaitOn::JoinSet { set: payload },
            7 => WaitOn::Timer { millis: payload },
            8 => WaitOn::Io { token: payload },
            _ => return None,
        })
    }
}

impl fmt::Display for WaitOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitOn::Recv { channel } => write!(f, "recv on channel #{channel}"),
            WaitOn::Send { channel } => write!(f, "send on channel #{channel}"),
            WaitOn::Closed { channel } => write!(f, "close of channel #{channel}"),
            WaitOn::Alt { channels: 1 } => write!(f, "alt over 1 channel"),
            WaitOn::Alt { channels } => write!(f, "alt over {channels} channels"),
            WaitOn::Join { process } => write!(f, "join of process #{process}"),
            WaitOn::JoinSet { set } => write!(f, "join_next of JoinSet #{set}"),
            WaitOn::Timer { millis } => write!(f, "timer of {millis} ms"),
            WaitOn::Io { token } => write!(f, "I/O readiness (registration #{token})"),
        }
    }
}

/// Records `wait` as what the owner of `waker` (a process, or a `block_on` future) blocks
/// on; anything else records nothing.
#[inline]
pub(crate) fn record(waker: &Waker, wait: WaitOn, foreign: bool) {
    if let Some(process) = crate::task::waker::process_of(waker) {
        record_process(process, wait, foreign);
    } else if let Some(main) = crate::wait::parker::parker_of(waker) {
        record_main(main, wait, foreign);
    }
}

/// Records `wait`, one that something outside the channels ends (a timer, a socket),
/// as what the owner of `waker` waits on, unless its poll has already recorded a csp
/// wait (`timeout(rx.recv())` still reads as the receive); the word is marked foreign
/// either way, so deadlock detection never counts the owner as blocked. `wait` is made
/// only if it is recorded (a timer's reads the clock).
pub(crate) fn record_outside(waker: &Waker, wait: impl FnOnce() -> WaitOn) {
    if let Some(process) = crate::task::waker::process_of(waker) {
        let slot = &process.header().wait;
        // Relaxed: as in `record_process`.
        let old = slot.load(Ordering::Relaxed);
        let word = match WaitOn::decode(old) {
            Some(_) => old | FOREIGN,
            None => restamp(old, wait(), true),
        };
        slot.store(word, Ordering::Relaxed);
    } else if let Some(main) = crate::wait::parker::parker_of(waker) {
        let old = main.wait_word();
        match WaitOn::decode(old) {
            Some(_) => main.record(old | FOREIGN),
            None => record_main(main, wait(), true),
        }
    }
}

/// [`record`] for a caller that already has the owner behind its waker (a foreign
/// owner records nothing), which saves looking it up twice.
#[inline]
pub(crate) fn record_for(owner: &Owner, wait: WaitOn, foreign: bool) {
    match owner {
        Owner::Process(task) => record_process(task.raw(), wait, foreign),
        Owner::Main(main) => record_main(main, wait, foreign),
        Owner::Foreign(_) => {}
    }
}

#[inline]
fn record_process(process: RawTask, wait: WaitOn, foreign: bool) {
    let slot = &process.header().wait;
    // Relaxed: see the module docs; only the polling thread writes the word while the
    // poll runs. The epoch is the one the poll started with (module docs).
    let old = slot.load(Ordering::Relaxed);
    slot.store(restamp(old, wait, foreign), Ordering::Relaxed);
}

/// The word of a process's poll that recorded `old` (or started from it blank) once it
/// records `wait`: the epoch the poll started with is kept (module docs).
#[inline]
fn restamp(old: u64, wait: WaitOn, foreign: bool) -> u64 {
    let stamp = old & (EPOCH_MASK << EPOCH_SHIFT);
    merge(old, wait.encode_unstamped(foreign) | stamp)
}

#[inline]
fn record_main(main: &Parker, wait: WaitOn, foreign: bool) {
    // The epoch the poll started with is kept, as for a process (`block_on.rs`).
    main.record(restamp(main.wait_word(), wait, foreign));
}

/// The runtime of the owner of `waker` (a process's, or a `block_on` future's); `None`
/// for a foreign owner, which records nothing.
fn owner_runtime(waker: &Waker) -> Option<u64> {
    if let Some(owner) = crate::task::waker::process_of(waker) {
        Some(owner.runtime_id())
    } else {
        crate::wait::parker::parker_of(waker).map(|main| main.runtime())
    }
}

/// Records that the owner of `waker` waits for process `process` of runtime `runtime`
/// (a `JoinHandle`): a wait something outside the owner's runtime may end if the process
/// belongs to another runtime, or is a blocking-pool task (`blocking`), which runs
/// outside csp's view.
pub(crate) fn record_join(waker: &Waker, process: u64, runtime: u64, blocking: bool) {
    let Some(owner_runtime) = owner_runtime(waker) else {
        return;
    };
    let foreign = blocking || owner_runtime != runtime;
    record(waker, WaitOn::Join { process }, foreign);
}

/// Records that the owner of `waker` waits for the next process of `JoinSet` `set` to
/// end, whose processes all belong to runtime `runtime` (`None`: to several, or to
/// none yet): a wait only the owner's runtime can end if it is that runtime.
pub(crate) fn record_join_set(waker: &Waker, set: u64, runtime: Option<u64>) {
    let Some(owner_runtime) = owner_runtime(waker) else {
        return;
    };
    record(
        waker,
        WaitOn::JoinSet { set },
        runtime != Some(owner_runtime),
    );
}

/// The wait word a poll of a process of runtime `runtime` starts from: nothing recorded,
/// stamped with the runtime's foreign epoch now (module docs).
#[inline]
pub(crate) fn blank_wait(runtime: u64) -> u64 {
    (crate::wait::epoch::foreign_epoch(runtime) & EPOCH_MASK) << EPOCH_SHIFT
}

/// The wait word after a poll that recorded `old` records `new` (module docs).
#[inline]
fn merge(old: u64, new: u64) -> u64 {
    new | (old & FOREIGN)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reads_well() {
        for wait in [
            WaitOn::Recv { channel: 7 },
            WaitOn::Send { channel: 4 },
            WaitOn::Closed {
                channel: (1 << 32) - 1,
            },
            WaitOn::Alt { channels: 2 },
            WaitOn::Join { process: 9 },
            WaitOn::JoinSet { set: 3 },
            WaitOn::Timer { millis: 250 },
            WaitOn::Io { token: 12 },
        ] {
            assert_eq!(WaitOn::decode(wait.encode(false, 1)), Some(wait));
            assert_eq!(WaitOn::decode(wait.encode(true, 1)), Some(wait));
            assert_eq!(
                WaitOn::classify(wait.encode(false, 1), 1),
                Recorded::Internal
            );
            assert_eq!(WaitOn::classify(wait.encode(true, 1), 1), Recorded::Open);
        }
        assert_eq!(WaitOn::decode(0), None);
        assert_eq!(WaitOn::classify(0, 1), Recorded::Open);
        let internal = WaitOn::Recv { channel: 1 }.encode(false, 1);
        let foreign = WaitOn::Recv { channel: 2 }.encode(true, 1);
        assert_eq!(
            WaitOn::classify(merge(foreign, internal), 1),
            Recorded::Open
        );
        assert_eq!(WaitOn::classify(merge(0, internal), 1), Recorded::Internal);
        // A poll's blank word records nothing; a wait recorded on it keeps its epoch
        // (a made-up one here: 5), and a foreign wait recorded earlier in the poll.
        assert_eq!(WaitOn::decode(blank_wait(1)), None);
        assert_eq!(WaitOn::classify(blank_wait(1), 1), Recorded::Open);
        let stamped = 5 << EPOCH_SHIFT;
        let recorded = restamp(stamped, WaitOn::Send { channel: 3 }, false);
        assert_eq!(WaitOn::decode(recorded), Some(WaitOn::Send { channel: 3 }));
        assert_eq!(recorded & (EPOCH_MASK << EPOCH_SHIFT), stamped);
        let foreign_first = restamp(stamped, WaitOn::Recv { channel: 2 }, true);
        let then_internal = restamp(foreign_first, WaitOn::Recv { channel: 4 }, false);
        assert_eq!(
            WaitOn::decode(then_internal),
            Some(WaitOn::Recv { channel: 4 })
        );
        assert_eq!(then_internal & FOREIGN, FOREIGN);
        assert_eq!(then_internal & (EPOCH_MASK << EPOCH_SHIFT), stamped);
        assert_eq!(
            WaitOn::Recv { channel: 7 }.to_string(),
            "recv on channel #7"
        );
        assert_eq!(
            WaitOn::Join { process: 9 }.to_string(),
            "join of process #9"
        );
    }

    #[test]
    fn a_main_wait_keeps_the_epoch_its_poll_started_with() {
        // A `block_on` future's poll starts (`block_on.rs` stamps its word), a channel
        // of its runtime turns foreign, and then the poll records a wait on that channel
        // read as not foreign: the wait is stale, never one only csp could end. (A
        // runtime id of its own: the epochs are shared with any runtime whose id is the
        // same modulo 64, which a bump only makes look again.)
        const RUNTIME: u64 = 63;
        let main = Parker::new(RUNTIME);
        main.record(blank_wait(RUNTIME));
        crate::wait::epoch::bump(RUNTIME);
        record_main(&main, WaitOn::Recv { channel: 1 }, false);
        assert_eq!(WaitOn::classify(main.wait_word(), RUNTIME), Recorded::Stale);
    }
}
