//! A choice that does not wait is linearizable (API.md, "alt! / prialt!"): it fires an
//! arm, or there was one moment at which no arm could complete. Each test keeps some arm
//! ready at every moment while another thread moves values or closes channels, so a
//! non-waiting choice that reports nothing ready is a violation:
//!
//! - crossbeam-channel's `linearizable_try`, `linearizable_default` and
//!   `linearizable_timeout` (a zero timeout), ported to `try_select`, `alt!` with
//!   `default`, `Select::timeout` and `alt!` with `after`, on bounded(1) and unbounded
//!   channels;
//! - Go's `TestNonblockSelectRace` and `TestNonblockSelectRace2` (runtime/chan_test.go),
//!   with a csp process as the goroutine, at Go's count;
//! - two tokens moved one at a time between two channels, chosen among by `alt!` and by
//!   `recv_any` with `default`; and one channel in two arms (a receive and a send) with
//!   `default`.
//!
//! The counts are the originals' in an optimised build, which `.ci/run` runs; a debug
//! build runs a tenth of them. Every test runs under a watchdog (`common::bounded`) and
//! counts its misses, so a failure says how often the choice got it wrong.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use csp::{Receiver, Select, Sender};

mod common;

use common::{bounded, runtime, scaled};

/// Rounds of each test: the originals' count, or a tenth of it in a debug build.
fn rounds(full: u32) -> u32 {
    scaled(if cfg!(debug_assertions) {
        full / 10
    } else {
        full
    })
}

/// crossbeam's count for its linearizability tests; Go's for its non-blocking selects.
const CROSSBEAM_ROUNDS: u32 = 100_000;
const GO_ROUNDS: u32 = 100_000;

/// A pair of channels of one kind.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Bounded1,
    Unbounded,
}

impl Kind {
    fn channel(self) -> (Sender<u32>, Receiver<u32>) {
        match self {
            Kind::Bounded1 => csp::bounded(1),
            Kind::Unbounded => csp::unbounded(),
        }
    }
}

/// How the chooser makes its non-waiting choice between a receive on `r1` and one on
/// `r2`: true if an arm fired (its value taken), false if it reported none ready.
#[derive(Clone, Copy, Debug)]
enum Chooser {
    /// `Select::try_select`.
    TrySelect,
    /// `alt!` with a `default` arm.
    AltDefault,
    /// `Select` with a zero timeout.
    SelectTimeout,
    /// `alt!` with an `after(Duration::ZERO)` arm.
    AltAfterZero,
}

impl Chooser {
    async fn choose(self, r1: &Receiver<u32>, r2: &Receiver<u32>) -> bool {
        match self {
            Chooser::TrySelect => {
                let mut sel = Select::new();
                let (a, b) = (sel.recv(r1), sel.recv(r2));
                match sel.try_select() {
                    Some(op) if op.index() == a => op.recv(r1).is_ok(),
                    Some(op) if op.index() == b => op.recv(r2).is_ok(),
                    Some(_) => unreachable!("two arms"),
                    None => false,
                }
            }
            Chooser::AltDefault => csp::alt! {
                recv(r1) -> v => v.is_ok(),
                recv(r2) -> v => v.is_ok(),
                default => false,
            },
            Chooser::SelectTimeout => {
                let mut sel = Select::new();
                let (a, b) = (sel.recv(r1), sel.recv(r2));
                sel.timeout(Duration::ZERO);
                let op = sel.select().await;
                match op.index() {
                    i if i == a => op.recv(r1).is_ok(),
                    i if i == b => op.recv(r2).is_ok(),
                    Select::TIMEOUT => false,
                    _ => unreachable!("two arms"),
                }
            }
            Chooser::AltAfterZero => csp::alt! {
                recv(r1) -> v => v.is_ok(),
                recv(r2) -> v => v.is_ok(),
                after(Duration::ZERO) => false,
            },
        }
    }
}

/// Two threads meeting at the start and at the end of each round, spinning: both leave
/// within a few instructions of each other, so their rounds overlap. (crossbeam meets on
/// rendezvous channels; here, with two cores, the side woken through a futex would start
/// its round some microseconds after the other had finished.)
struct Meet(AtomicU64);

impl Meet {
    fn new() -> Arc<Meet> {
        Arc::new(Meet(AtomicU64::new(0)))
    }

    /// Arrives at meeting `n` (0, 1, 2, ...: each side arrives at every one in order)
    /// and waits for the other side to arrive too.
    fn arrive(&self, n: u64) {
        self.0.fetch_add(1, Ordering::AcqRel);
        let mut spins = 0u32;
        while self.0.load(Ordering::Acquire) < 2 * (n + 1) {
            spins += 1;
            if spins < 1 << 10 {
                std::hint::spin_loop();
            } else {
                // The other side is off its core: let it have this one.
                thread::yield_now();
            }
        }
    }
}

/// crossbeam's linearizability test, for one chooser and one kind of channel: in each
/// round the chooser puts a value in c1 and then chooses between c1 and c2 without
/// waiting, while the other side puts a value in c2 and only then takes c1's: at every
/// moment one of the two holds a value. Returns the rounds in which the choice said
/// none was ready.
fn crossbeam_rounds(chooser: Chooser, kind: Kind, rounds: u32) -> u32 {
    let meet = Meet::new();
    let (s1, r1) = kind.channel();
    let (s2, r2) = kind.channel();
    let taker = r1.clone();
    let choosing = {
        let meet = meet.clone();
        thread::spawn(move || {
            csp::block_on(async move {
                let mut misses = 0;
                for round in 0..u64::from(rounds) {
                    meet.arrive(2 * round);
                    // c1 is empty: the other side took last round's value, if the choice
                    // took c2's, before the end of that round.
                    s1.try_send(1).unwrap();
                    if !chooser.choose(&r1, &r2).await {
                        misses += 1;
                    }
                    meet.arrive(2 * round + 1);
                    // What the other side put in c2, if the choice took c1's.
                    let _ = r2.try_recv();
                }
                misses
            })
        })
    };
    for round in 0..u64::from(rounds) {
        meet.arrive(2 * round);
        s2.try_send(2).unwrap();
        let _ = taker.try_recv();
        meet.arrive(2 * round + 1);
        // The value c1 kept if the choice took c2's before this side took c1's.
        let _ = taker.try_recv();
    }
    choosing.join().unwrap()
}

fn crossbeam_port(chooser: Chooser) {
    for kind in [Kind::Bounded1, Kind::Unbounded] {
        let n = rounds(CROSSBEAM_ROUNDS);
        let misses = bounded(300, move || crossbeam_rounds(chooser, kind, n));
        assert_eq!(
            misses, 0,
            "{chooser:?} on {kind:?} channels said no arm was ready in {misses} of {n} \
             rounds, though one of its channels held a value at every moment"
        );
    }
}

#[test]
fn linearizable_try() {
    crossbeam_port(Chooser::TrySelect);
}

#[test]
fn linearizable_default() {
    crossbeam_port(Chooser::AltDefault);
}

#[test]
fn linearizable_timeout_select() {
    crossbeam_port(Chooser::SelectTimeout);
}

#[test]
fn linearizable_timeout_alt() {
    crossbeam_port(Chooser::AltAfterZero);
}

/// Go's non-blocking select race: in each round c1 (buffered) holds a value, a process
/// chooses between c1 and c2 with `default`, and this thread makes c2 ready (a value,
/// or, with `close`, the close of a rendezvous channel) and only then takes c1's value:
/// one of the two is ready at every moment. Returns the rounds whose `default` fired.
fn go_rounds(close: bool, rounds: u32) -> u32 {
    let rt = runtime(2, "nonblock-race");
    let (done_tx, done_rx) = csp::bounded::<bool>(1);
    let mut misses = 0;
    for _ in 0..rounds {
        let (s1, r1) = csp::bounded::<u32>(1);
        let (s2, r2) = if close {
            csp::channel::<u32>()
        } else {
            csp::bounded::<u32>(1)
        };
        s1.try_send(1).unwrap();
        let done = done_tx.clone();
        let taker = r1.clone();
        drop(rt.spawn(async move {
            let fired = csp::alt! {
                recv(r1) -> _v => true,
                recv(r2) -> _v => true,
                default => false,
            };
            done.send(fired).await.unwrap();
        }));
        if close {
            s2.close();
        } else {
            // Fails only once the process is done, its receivers gone with it.
            let _ = s2.try_send(2);
        }
        let _ = taker.try_recv();
        if !done_rx.recv_blocking().unwrap() {
            misses += 1;
        }
    }
    misses
}

fn go_port(close: bool) {
    let n = rounds(GO_ROUNDS);
    let misses = bounded(300, move || go_rounds(close, n));
    assert_eq!(
        misses, 0,
        "default fired in {misses} of {n} rounds, though c1 or c2 was ready at every moment"
    );
}

#[test]
fn nonblock_select_race() {
    go_port(false);
}

#[test]
fn nonblock_select_race2() {
    go_port(true);
}

/// How a chooser tries the two token channels without waiting.
#[derive(Clone, Copy, Debug)]
enum TokenChooser {
    /// `alt!` with a receive arm on each, and `default`.
    Alt,
    /// `alt!` with one `recv_any` arm over both, and `default`.
    RecvAny,
}

/// Two tokens moved one at a time between two bounded(2) channels by a plain thread, so
/// that one channel always holds a token while the chooser holds none; the chooser takes
/// a token from either (without waiting) and puts it back where it found it. Returns the
/// choices whose `default` fired.
fn token_rounds(chooser: TokenChooser, rounds: u32) -> u32 {
    let (s1, r1) = csp::bounded::<u32>(2);
    let (s2, r2) = csp::bounded::<u32>(2);
    s1.try_send(1).unwrap();
    s1.try_send(2).unwrap();
    let (stop_tx, stop_rx) = csp::bounded::<()>(1);
    let mover = {
        let (s1, r1, s2, r2) = (s1.clone(), r1.clone(), s2.clone(), r2.clone());
        thread::spawn(move || {
            while stop_rx.try_recv().is_err() {
                // At most one token in hand at a time: the other is in a channel, or
                // in the chooser's hand only while it holds none of its own.
                if let Ok(token) = r1.try_recv() {
                    s2.try_send(token).unwrap();
                }
                if let Ok(token) = r2.try_recv() {
                    s1.try_send(token).unwrap();
                }
            }
        })
    };
    let misses = csp::block_on(async {
        let ends = [r1.clone(), r2.clone()];
        let mut misses = 0;
        for _ in 0..rounds {
            let taken = match chooser {
                TokenChooser::Alt => csp::alt! {
                    recv(r1) -> token => Some((0, token.unwrap())),
                    recv(r2) -> token => Some((1, token.unwrap())),
                    default => None,
                },
                TokenChooser::RecvAny => csp::alt! {
                    recv_any(&ends) -> (i, token) => Some((i, token.unwrap())),
                    default => None,
                },
            };
            match taken {
                Some((0, token)) => s1.try_send(token).unwrap(),
                Some((_, token)) => s2.try_send(token).unwrap(),
                None => misses += 1,
            }
        }
        misses
    });
    stop_tx.try_send(()).unwrap();
    mover.join().unwrap();
    misses
}

fn token_port(chooser: TokenChooser) {
    let n = rounds(300_000);
    let misses = bounded(300, move || token_rounds(chooser, n));
    assert_eq!(
        misses, 0,
        "{chooser:?}: default fired in {misses} of {n} choices, though a channel held a \
         token at every moment"
    );
}

#[test]
fn alt_default_between_two_token_channels() {
    token_port(TokenChooser::Alt);
}

#[test]
fn recv_any_default_between_two_token_channels() {
    token_port(TokenChooser::RecvAny);
}

/// One bounded(1) channel in two arms, a receive and a send, with `default`, while a
/// plain thread fills and empties it: it is empty (the send can complete) or full (the
/// receive can) at every moment. Returns the choices whose `default` fired.
fn one_channel_rounds(rounds: u32) -> u32 {
    let (tx, rx) = csp::bounded::<u32>(1);
    let (stop_tx, stop_rx) = csp::bounded::<()>(1);
    let toggler = {
        let (tx, rx) = (tx.clone(), rx.clone());
        thread::spawn(move || {
            while stop_rx.try_recv().is_err() {
                let _ = tx.try_send(7);
                let _ = rx.try_recv();
            }
        })
    };
    let misses = csp::block_on(async {
        let mut misses = 0;
        for _ in 0..rounds {
            csp::alt! {
                recv(rx) -> v => { v.unwrap(); },
                send(tx, 8) -> sent => sent.unwrap(),
                default => misses += 1,
            }
        }
        misses
    });
    stop_tx.try_send(()).unwrap();
    toggler.join().unwrap();
    misses
}

#[test]
fn one_channel_in_a_receive_and_a_send_arm_with_default() {
    let n = rounds(300_000);
    let misses = bounded(300, move || one_channel_rounds(n));
    assert_eq!(
        misses, 0,
        "default fired in {misses} of {n} choices, though the channel was empty or full \
         at every moment"
    );
}

/// `try_recv` racing the sender's close: every value sent before the close is received
/// before `Closed`, and once the close has returned, `try_recv` never says `Empty`.
#[test]
fn try_recv_racing_a_close() {
    const VALUES: u32 = 64;
    let n = rounds(20_000);
    bounded(300, move || {
        for _ in 0..n {
            let (tx, rx) = csp::bounded::<u32>(VALUES as usize);
            let closed = Arc::new(AtomicBool::new(false));
            let closer = {
                let closed = closed.clone();
                thread::spawn(move || {
                    for v in 0..VALUES {
                        tx.try_send(v).unwrap();
                    }
                    tx.close();
                    closed.store(true, Ordering::Release);
                })
            };
            let mut next = 0;
            loop {
                let closed_before = closed.load(Ordering::Acquire);
                match rx.try_recv() {
                    Ok(v) => {
                        assert_eq!(v, next, "values in order, none lost");
                        next += 1;
                    }
                    Err(csp::TryRecvError::Closed) => break,
                    Err(csp::TryRecvError::Empty) => {
                        assert!(!closed_before, "Empty after the close returned")
                    }
                }
            }
            assert_eq!(
                next, VALUES,
                "every value sent before the close is received"
            );
            closer.join().unwrap();
        }
    });
}

/// A `closed` arm with `default`, and `try_send`, racing a close: once the close has
/// returned, the arm fires (never `default`) and `try_send` says `Closed`.
#[test]
fn closed_arm_and_try_send_racing_a_close() {
    let n = rounds(20_000);
    bounded(300, move || {
        for _ in 0..n {
            let (tx, rx) = csp::bounded::<u32>(1);
            let closed = Arc::new(AtomicBool::new(false));
            let closer = {
                let closed = closed.clone();
                thread::spawn(move || {
                    rx.close();
                    closed.store(true, Ordering::Release);
                    rx
                })
            };
            csp::block_on(async {
                loop {
                    let closed_before = closed.load(Ordering::Acquire);
                    let fired = csp::alt! {
                        closed(tx) => true,
                        default => false,
                    };
                    assert!(fired || !closed_before, "default after the close returned");
                    let closed_before = closed.load(Ordering::Acquire);
                    // Full once a value is in; Closed once the close is seen, full or not.
                    match tx.try_send(1) {
                        Err(csp::TrySendError::Closed(_)) => {}
                        other => assert!(
                            !fired && !closed_before,
                            "{other:?} after the close was seen"
                        ),
                    }
                    if fired {
                        break;
                    }
                }
            });
            drop(closer.join().unwrap());
        }
    });
}
