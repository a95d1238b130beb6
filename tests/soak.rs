//! Soak: thousands of processes doing random mixes of everything at once, for a time
//! budget, then checked against exact invariants.
//!
//! Each wave builds a world of channels of every kind and spawns a few thousand actor
//! processes holding random clones of their ends. An actor runs a random program of
//! sends, receives, `alt!`s (with `after` timeouts, `default`, guards, `recv_any`,
//! `send_any`, `closed`), `Select`s, `csp::timeout`s, sleeps, yields, spawns of children,
//! closes, drops and clones of ends, stream receives, and the odd panic. A leader per
//! wave collects every `JoinHandle` (children's included) and aborts some of them at
//! random.
//!
//! Every message is a drop-counting value with an id. At the end:
//! - every value created was received exactly once or dropped exactly once, never both;
//!   a value whose send returned `Ok` was dropped only once every receiver of its channel
//!   was gone;
//! - every `JoinHandle` resolved: `Ok`, a panic (exactly as many as the actors raised,
//!   each with its payload), or a cancellation (at most as many as aborts);
//! - no process is left (`processes_alive == 0`) and no timer is armed;
//! - after the runtime is dropped, no value, channel or process is left (the shared
//!   ledger is referenced only by the test), and the heap's live bytes, counted by this
//!   binary's global allocator, are back to their level before the runtime was built,
//!   within a few KiB. Both counts follow the same short warm-up run and then settle
//!   crossbeam's epoch-based reclamation (the queue buffers it retired lazily, and the
//!   records of worker threads that have exited), so neither count depends on how far
//!   that reclamation had got.
//!
//! `CSP_SOAK_SECS` sets the time budget (default 4 s); `CSP_SOAK_SEED` the seed (default:
//! from the clock). The seed is printed, and named in every failure. Each actor's program
//! is a function of the seed (scheduling is not). `--nocapture` shows the operation
//! counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicIsize, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use csp::{JoinHandle, Receiver, Sender, TryRecvError, TrySendError};
use futures::StreamExt;

mod common;

use common::{Rng, bounded, panic_message, runtime};

/// The default time budget, in seconds.
const DEFAULT_SECS: u64 = 4;
/// Worker threads of the runtime under test.
const WORKERS: usize = 2;
/// Leaders running waves side by side.
const LEADERS: u64 = 2;
/// Actors a leader spawns per wave (children come on top).
const ACTORS: (u64, u64) = (1000, 2000);
/// Channels per wave.
const CHANNELS: (u64, u64) = (16, 48);
/// Steps of an actor's program.
const STEPS: (u64, u64) = (10, 60);
/// How deep children may nest.
const MAX_DEPTH: u32 = 3;
/// Live heap bytes that may stay behind the dropped runtime. Once the epoch collector is
/// settled the count comes back exactly to its baseline; this leaves room for a few
/// bytes of some library's lazily built state, not for a few leaked processes.
const MEMORY_TOLERANCE: isize = 1024;
/// Processes of the warm-up run.
const WARM_UP_PROCESSES: usize = 20_000;
/// Epoch advances per settling round: each collects at most a few of crossbeam's bags
/// of deferred frees, so a round frees a few hundred bags, more than a run leaves.
const SETTLE_FLUSHES: usize = 128;
/// Settling rounds before the count is taken as it is.
const SETTLE_ROUNDS: usize = 16;
/// The panic payload prefix of the actors' own panics.
const SOAK_PANIC: &str = "soak panic";

#[test]
fn soak() {
    let secs = env_u64("CSP_SOAK_SECS").unwrap_or(DEFAULT_SECS);
    let seed = env_u64("CSP_SOAK_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    eprintln!("soak: seed {seed} (CSP_SOAK_SEED={seed} repeats it), budget {secs} s");
    quiet_soak_panics();
    let report = bounded(secs + 120, move || run(seed, Duration::from_secs(secs)));
    eprintln!("{report}");
}

/// A soak run's outcome, printed at the end.
struct Report(String);

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn run(seed: u64, budget: Duration) -> Report {
    warm_up();
    let baseline = settle();
    let started = Instant::now();
    let shared = Arc::new(Shared::default());
    let rt = runtime(WORKERS, "soak");
    let waves = {
        let shared = shared.clone();
        rt.block_on(async move {
            let deadline = Instant::now() + budget;
            let leaders: Vec<_> = (0..LEADERS)
                .map(|i| {
                    let shared = shared.clone();
                    let seed = seed ^ (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    csp::spawn(leader(shared, seed, deadline))
                })
                .collect();
            let mut waves = 0;
            for leader in leaders {
                waves += leader
                    .await
                    .unwrap_or_else(|e| panic!("seed {seed}: a leader failed: {e}"));
            }
            waves
        })
    };
    let metrics = rt.metrics();
    assert_eq!(
        metrics.processes_alive,
        0,
        "seed {seed}: processes left after every handle resolved: {:?}",
        rt.processes()
    );
    assert_eq!(metrics.timers_armed, 0, "seed {seed}: timers left armed");
    drop(rt);
    let elapsed = started.elapsed();

    let stats = shared.stats.snapshot();
    let ledger = shared.ledger.check(seed);
    let spawned = stats.get("spawn.actor") + stats.get("spawn.child");
    let resolved = stats.get("join.ok") + stats.get("join.panic") + stats.get("join.cancelled");
    assert_eq!(resolved, spawned, "seed {seed}: every JoinHandle resolves");
    assert_eq!(
        stats.get("join.panic"),
        stats.get("panic"),
        "seed {seed}: every panic raised reaches its JoinHandle, and no other"
    );
    assert!(
        stats.get("join.cancelled") <= stats.get("abort"),
        "seed {seed}: more cancellations than aborts: {stats}"
    );
    assert!(
        ledger.created > 0 && ledger.received > 0 && resolved > 0,
        "seed {seed}: the soak did nothing"
    );
    // Every value, channel end and process is gone: nothing else holds the ledger.
    assert_eq!(
        Arc::strong_count(&shared),
        1,
        "seed {seed}: values or channels outlived the runtime"
    );
    drop(shared);
    let before_flush = ALLOCATOR.live() - baseline;
    warm_up();
    // The snapshot of the counts is the one thing the test still holds on the heap.
    let snapshot = (stats.0.capacity() * std::mem::size_of::<(&str, u64)>()) as isize;
    let left = settle() - baseline - snapshot;
    assert!(
        left.abs() <= MEMORY_TOLERANCE,
        "seed {seed}: {left} bytes still allocated after the runtime was dropped \
         (tolerance {MEMORY_TOLERANCE})"
    );
    Report(format!(
        "soak: seed {seed}, {waves} waves in {elapsed:.2?}, {spawned} processes\n\
         values: {ledger:?}\n\
         operations:\n{stats}\n\
         memory: {left} bytes left after the runtime was dropped ({before_flush} before the \
         warm-up and the settling of retired memory; baseline {baseline}, peak {} above it, {} \
         allocations)",
        ALLOCATOR.peak() - baseline,
        ALLOCATOR.allocations()
    ))
}

/// A small runtime's life, run before the baseline and again before the final count,
/// so both counts include what this thread keeps for its life once it has run a
/// runtime (its parker, thread locals).
fn warm_up() {
    let rt = runtime(WORKERS, "soak");
    rt.block_on(async {
        let handles: Vec<_> = (0..WARM_UP_PROCESSES)
            .map(|_| csp::spawn(async { csp::sleep(Duration::from_millis(1)).await }))
            .collect();
        for handle in handles {
            handle.await.unwrap();
        }
    });
}

/// Drives crossbeam's default epoch collector (the one the run queues retire their old
/// buffers to) from this thread until the live byte count stops moving, and returns it.
///
/// An exited thread's record stays linked in the collector until a later epoch advance
/// unlinks it, and retired buffers wait for two advances: how many of either a count
/// would include otherwise depends on how the worker threads happened to be scheduled.
fn settle() -> isize {
    let mut live = ALLOCATOR.live();
    for _ in 0..SETTLE_ROUNDS {
        for _ in 0..SETTLE_FLUSHES {
            crossbeam_epoch::pin().flush();
        }
        let now = ALLOCATOR.live();
        if now == live {
            break;
        }
        live = now;
    }
    live
}

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
    )
}

/// The actors' own panics are expected by the thousand: keep them out of the output.
fn quiet_soak_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if panic_message(info.payload()).is_some_and(|m| m.starts_with(SOAK_PANIC)) {
            return;
        }
        default(info);
    }));
}

// ---------------------------------------------------------------------------------------
// The ledger: every value's fate
// ---------------------------------------------------------------------------------------

/// What has happened to a value (bits).
const SENT_OK: u8 = 1;
const RECEIVED: u8 = 2;
const DROPPED: u8 = 4;

const CHUNK: usize = 1 << 16;
const CHUNKS: usize = 1 << 12;

/// One state byte per value, in chunks allocated on first use.
struct Ledger {
    next: AtomicU64,
    chunks: Box<[OnceLock<Box<[AtomicU8]>>]>,
    violations: AtomicU64,
    first_violation: Mutex<Option<String>>,
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger {
            next: AtomicU64::new(0),
            chunks: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
            violations: AtomicU64::new(0),
            first_violation: Mutex::new(None),
        }
    }
}

/// The ledger's totals, once every value's fate is settled.
#[derive(Debug)]
#[allow(dead_code)] // read through Debug
struct Totals {
    created: u64,
    received: u64,
    received_after_a_cancelled_send: u64,
    dropped_unsent: u64,
    dropped_after_its_receivers: u64,
}

impl Ledger {
    fn new_id(&self) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        assert!(id < (CHUNK * CHUNKS) as u64, "the ledger is full");
        id
    }

    fn state(&self, id: u64) -> &AtomicU8 {
        let (chunk, at) = (id as usize / CHUNK, id as usize % CHUNK);
        &self.chunks[chunk].get_or_init(|| (0..CHUNK).map(|_| AtomicU8::new(0)).collect())[at]
    }

    /// Records `bit` for value `id`; returns the bits it had.
    fn record(&self, id: u64, bit: u8) -> u8 {
        self.state(id).fetch_or(bit, Ordering::SeqCst)
    }

    fn violation(&self, what: String) {
        self.violations.fetch_add(1, Ordering::SeqCst);
        let mut first = self.first_violation.lock().unwrap();
        if first.is_none() {
            *first = Some(what);
        }
    }

    /// Checks that every value's fate is settled, once, and totals them.
    fn check(&self, seed: u64) -> Totals {
        let violations = self.violations.load(Ordering::SeqCst);
        assert_eq!(
            violations,
            0,
            "seed {seed}: {violations} violations; the first: {}",
            self.first_violation
                .lock()
                .unwrap()
                .as_deref()
                .unwrap_or("")
        );
        let created = self.next.load(Ordering::SeqCst);
        let mut totals = Totals {
            created,
            received: 0,
            received_after_a_cancelled_send: 0,
            dropped_unsent: 0,
            dropped_after_its_receivers: 0,
        };
        for id in 0..created {
            let state = self.state(id).load(Ordering::SeqCst);
            match (
                state & RECEIVED != 0,
                state & DROPPED != 0,
                state & SENT_OK != 0,
            ) {
                (true, false, true) => totals.received += 1,
                (true, false, false) => {
                    totals.received += 1;
                    totals.received_after_a_cancelled_send += 1;
                }
                (false, true, false) => totals.dropped_unsent += 1,
                (false, true, true) => totals.dropped_after_its_receivers += 1,
                (false, false, _) => panic!(
                    "seed {seed}: value {id} was neither received nor dropped: lost or \
                     leaked (state {state:#b})"
                ),
                (true, true, _) => unreachable!("recorded as a violation"),
            }
        }
        totals
    }
}

/// A channel's record: whether any of its receivers is left.
struct ChanRec {
    shared: Arc<Shared>,
    /// Whether actors may `close` it (a few channels per wave: a close ends the
    /// channel for everyone).
    closable: bool,
    /// Live `Rx` wrappers: raised after the `Receiver` is cloned, lowered before it is
    /// dropped, so it is 0 whenever the channel drops its buffered values.
    receivers: AtomicUsize,
}

/// A message: counts its fate in the ledger.
struct Msg {
    id: u64,
    chan: Arc<ChanRec>,
    consumed: bool,
}

impl Msg {
    fn new(chan: &Arc<ChanRec>) -> Msg {
        Msg {
            id: chan.shared.ledger.new_id(),
            chan: chan.clone(),
            consumed: false,
        }
    }

    /// A receiver got it.
    fn receive(mut self) {
        self.consumed = true;
        let ledger = &self.chan.shared.ledger;
        let before = ledger.record(self.id, RECEIVED);
        if before & (RECEIVED | DROPPED) != 0 {
            ledger.violation(format!(
                "value {} received after it was {}",
                self.id,
                fate(before)
            ));
        }
    }
}

/// Its sender saw `send` return `Ok` for value `id` of `chan`.
fn sent_ok(chan: &ChanRec, id: u64) {
    let ledger = &chan.shared.ledger;
    let before = ledger.record(id, SENT_OK);
    if before & SENT_OK != 0 {
        ledger.violation(format!("value {id} sent Ok twice"));
    }
    if before & DROPPED != 0 && chan.receivers.load(Ordering::SeqCst) > 0 {
        ledger.violation(format!(
            "value {id} sent Ok was dropped while its channel had receivers"
        ));
    }
}

fn fate(state: u8) -> &'static str {
    if state & RECEIVED != 0 {
        "received"
    } else {
        "dropped"
    }
}

impl Drop for Msg {
    fn drop(&mut self) {
        if self.consumed {
            return;
        }
        let ledger = &self.chan.shared.ledger;
        let before = ledger.record(self.id, DROPPED);
        if before & (RECEIVED | DROPPED) != 0 {
            ledger.violation(format!(
                "value {} dropped after it was {}",
                self.id,
                fate(before)
            ));
        } else if before & SENT_OK != 0 && self.chan.receivers.load(Ordering::SeqCst) > 0 {
            ledger.violation(format!(
                "value {} sent Ok was dropped while its channel had receivers",
                self.id
            ));
        }
    }
}

/// A sending end and its channel's record.
struct Tx {
    tx: Sender<Msg>,
    rec: Arc<ChanRec>,
}

impl Clone for Tx {
    fn clone(&self) -> Tx {
        Tx {
            tx: self.tx.clone(),
            rec: self.rec.clone(),
        }
    }
}

/// A receiving end and its channel's record (which counts it).
struct Rx {
    rx: Receiver<Msg>,
    rec: Arc<ChanRec>,
}

impl Rx {
    fn new(rx: Receiver<Msg>, rec: Arc<ChanRec>) -> Rx {
        rec.receivers.fetch_add(1, Ordering::SeqCst);
        Rx { rx, rec }
    }
}

impl Clone for Rx {
    fn clone(&self) -> Rx {
        Rx::new(self.rx.clone(), self.rec.clone())
    }
}

impl Drop for Rx {
    fn drop(&mut self) {
        // Before the `Receiver` field drops (fields drop after this).
        self.rec.receivers.fetch_sub(1, Ordering::SeqCst);
    }
}

// ---------------------------------------------------------------------------------------
// Operation counts
// ---------------------------------------------------------------------------------------

#[derive(Default)]
struct Shared {
    ledger: Ledger,
    stats: Stats,
}

/// Named counters.
#[derive(Default)]
struct Stats(Mutex<Vec<(&'static str, Arc<AtomicU64>)>>);

/// A copy of the counters.
struct StatsSnapshot(Vec<(&'static str, u64)>);

impl Stats {
    fn counter(&self, name: &'static str) -> Arc<AtomicU64> {
        let mut all = self.0.lock().unwrap();
        if let Some((_, c)) = all.iter().find(|(n, _)| *n == name) {
            return c.clone();
        }
        let c = Arc::new(AtomicU64::new(0));
        all.push((name, c.clone()));
        c
    }

    fn snapshot(&self) -> StatsSnapshot {
        let mut all: Vec<_> = self
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|(n, c)| (*n, c.load(Ordering::SeqCst)))
            .collect();
        all.sort();
        StatsSnapshot(all)
    }
}

impl StatsSnapshot {
    fn get(&self, name: &str) -> u64 {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, v)| *v)
    }
}

impl std::fmt::Display for StatsSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (name, value)) in self.0.iter().enumerate() {
            let sep = if i % 4 == 3 { "\n" } else { "  " };
            write!(f, "{name:>24} {value:>9}{sep}")?;
        }
        Ok(())
    }
}

/// Per-actor counters, added to the shared ones when the actor ends (however it ends):
/// no shared atomic per operation.
struct Counts {
    shared: Arc<Shared>,
    local: Vec<(&'static str, u64)>,
}

impl Counts {
    fn new(shared: Arc<Shared>) -> Counts {
        Counts {
            shared,
            local: Vec::new(),
        }
    }

    fn bump(&mut self, name: &'static str) {
        match self.local.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => *v += 1,
            None => self.local.push((name, 1)),
        }
    }

    /// Adds to the shared counters now (before a panic, whose count must be seen by
    /// the time its JoinHandle resolves).
    fn flush(&mut self) {
        for (name, v) in self.local.drain(..) {
            self.shared
                .stats
                .counter(name)
                .fetch_add(v, Ordering::SeqCst);
        }
    }
}

impl Drop for Counts {
    fn drop(&mut self) {
        self.flush();
    }
}

// ---------------------------------------------------------------------------------------
// Leaders and actors
// ---------------------------------------------------------------------------------------

type Process = Pin<Box<dyn Future<Output = u64> + Send>>;

/// What every actor of a wave shares: the counters, and where child handles go. The
/// reaper channel closes once every actor of the wave is gone.
struct Wave {
    shared: Arc<Shared>,
    reaper: Sender<JoinHandle<u64>>,
    /// The record of values offered on several channels at once (`send_any`): no
    /// receivers of its own, so their drops are not checked against any.
    anywhere: Arc<ChanRec>,
}

/// Runs waves until `deadline`; returns how many.
async fn leader(shared: Arc<Shared>, seed: u64, deadline: Instant) -> u64 {
    let mut rng = Rng::new(seed);
    let mut waves = 0;
    while Instant::now() < deadline {
        wave(&shared, rng.next()).await;
        waves += 1;
    }
    waves
}

fn between(rng: &mut Rng, (lo, hi): (u64, u64)) -> u64 {
    lo + rng.below(hi - lo + 1)
}

/// One wave: a world of channels and actors, run until every actor is done.
async fn wave(shared: &Arc<Shared>, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut counts = Counts::new(shared.clone());
    let channels: Vec<(Tx, Rx)> = (0..between(&mut rng, CHANNELS))
        .map(|_| {
            let (tx, rx) = match rng.below(6) {
                0 | 1 => csp::channel(),
                2 => csp::bounded(1 + rng.below(4) as usize),
                3 => csp::bounded(16),
                _ => csp::unbounded(),
            };
            let rec = Arc::new(ChanRec {
                shared: shared.clone(),
                closable: rng.below(4) == 0,
                receivers: AtomicUsize::new(0),
            });
            (
                Tx {
                    tx,
                    rec: rec.clone(),
                },
                Rx::new(rx, rec),
            )
        })
        .collect();
    let (reaper, reaped) = csp::unbounded();
    let ctx = Arc::new(Wave {
        shared: shared.clone(),
        reaper,
        anywhere: Arc::new(ChanRec {
            shared: shared.clone(),
            closable: false,
            receivers: AtomicUsize::new(0),
        }),
    });
    for _ in 0..between(&mut rng, ACTORS) {
        let txs = (0..1 + rng.below(3))
            .map(|_| {
                channels[rng.below(channels.len() as u64) as usize]
                    .0
                    .clone()
            })
            .collect();
        let rxs = (0..1 + rng.below(3))
            .map(|_| {
                channels[rng.below(channels.len() as u64) as usize]
                    .1
                    .clone()
            })
            .collect();
        let steps = between(&mut rng, STEPS);
        let handle = csp::spawn(actor(ctx.clone(), txs, rxs, rng.next(), 0, steps));
        counts.bump("spawn.actor");
        ctx.reaper
            .try_send(handle)
            .expect("the reaper takes every handle");
    }
    // The actors hold the only ends now: channels close as they finish.
    drop(channels);
    drop(ctx);
    let mut handles = Vec::new();
    loop {
        csp::alt! {
            recv(reaped) -> handle => match handle {
                Ok(handle) => {
                    handles.push(handle);
                    if rng.below(48) == 0 {
                        abort_one(&mut rng, &handles, &mut counts);
                    }
                }
                Err(_) => break,
            },
            after(Duration::from_micros(rng.below(2000))) => {
                if rng.below(3) == 0 {
                    abort_one(&mut rng, &handles, &mut counts);
                }
            }
        }
    }
    for handle in handles {
        match handle.await {
            Ok(_) => counts.bump("join.ok"),
            Err(e) if e.is_cancelled() => counts.bump("join.cancelled"),
            Err(e) => {
                let payload = e.into_panic();
                let message = panic_message(&*payload).unwrap_or_default();
                assert!(
                    message.starts_with(SOAK_PANIC),
                    "a process panicked unexpectedly: {message}"
                );
                counts.bump("join.panic");
            }
        }
    }
}

fn abort_one(rng: &mut Rng, handles: &[JoinHandle<u64>], counts: &mut Counts) {
    if handles.is_empty() {
        return;
    }
    handles[rng.below(handles.len() as u64) as usize].abort();
    counts.bump("abort");
}

/// How long a waiting operation may wait: mostly not long.
fn patience(rng: &mut Rng) -> Duration {
    match rng.below(8) {
        0 => Duration::ZERO,
        1..=4 => Duration::from_micros(rng.below(300)),
        _ => Duration::from_micros(300 + rng.below(2000)),
    }
}

fn pick<T>(rng: &mut Rng, items: &[T]) -> Option<usize> {
    (!items.is_empty()).then(|| rng.below(items.len() as u64) as usize)
}

fn actor(
    wave: Arc<Wave>,
    txs: Vec<Tx>,
    rxs: Vec<Rx>,
    seed: u64,
    depth: u32,
    steps: u64,
) -> Process {
    Box::pin(run_actor(wave, txs, rxs, seed, depth, steps))
}

/// A random program of `steps` operations on the actor's ends.
async fn run_actor(
    wave: Arc<Wave>,
    mut txs: Vec<Tx>,
    mut rxs: Vec<Rx>,
    seed: u64,
    depth: u32,
    steps: u64,
) -> u64 {
    let mut rng = Rng::new(seed);
    let mut counts = Counts::new(wave.shared.clone());
    for _ in 0..steps {
        let op = rng.below(1000);
        let t = pick(&mut rng, &txs);
        let r = pick(&mut rng, &rxs);
        match (op, t, r) {
            (0..=119, Some(t), _) => {
                let tx = &txs[t];
                let msg = Msg::new(&tx.rec);
                let id = msg.id;
                match csp::timeout(patience(&mut rng), tx.tx.send(msg)).await {
                    Ok(Ok(())) => {
                        sent_ok(&tx.rec, id);
                        counts.bump("send.ok");
                    }
                    Ok(Err(e)) => {
                        drop(e.into_inner());
                        counts.bump("send.closed");
                    }
                    Err(_) => counts.bump("send.timeout"),
                }
            }
            (120..=199, Some(t), _) => {
                let tx = &txs[t];
                let msg = Msg::new(&tx.rec);
                let id = msg.id;
                match tx.tx.try_send(msg) {
                    Ok(()) => {
                        sent_ok(&tx.rec, id);
                        counts.bump("try_send.ok");
                    }
                    Err(TrySendError::Full(_)) => counts.bump("try_send.full"),
                    Err(TrySendError::Closed(_)) => counts.bump("try_send.closed"),
                }
            }
            (200..=369, _, Some(r)) => {
                match csp::timeout(patience(&mut rng), rxs[r].rx.recv()).await {
                    Ok(Ok(msg)) => {
                        msg.receive();
                        counts.bump("recv.ok");
                    }
                    Ok(Err(_)) => counts.bump("recv.closed"),
                    Err(_) => counts.bump("recv.timeout"),
                }
            }
            (370..=439, _, Some(r)) => match rxs[r].rx.try_recv() {
                Ok(msg) => {
                    msg.receive();
                    counts.bump("try_recv.ok");
                }
                Err(TryRecvError::Empty) => counts.bump("try_recv.empty"),
                Err(TryRecvError::Closed) => counts.bump("try_recv.closed"),
            },
            (440..=539, Some(t), Some(r)) => {
                // recv, send and a timeout.
                let (tx, rx) = (&txs[t], &rxs[r]);
                let msg = Msg::new(&tx.rec);
                let id = msg.id;
                let wait = patience(&mut rng);
                csp::alt! {
                    recv(rx.rx) -> got => match got {
                        Ok(msg) => {
                            msg.receive();
                            counts.bump("alt.recv");
                        }
                        Err(_) => counts.bump("alt.recv_closed"),
                    },
                    send(tx.tx, msg) -> sent => match sent {
                        Ok(()) => {
                            sent_ok(&tx.rec, id);
                            counts.bump("alt.send");
                        }
                        Err(e) => {
                            drop(e.0);
                            counts.bump("alt.send_closed");
                        }
                    },
                    after(wait) => counts.bump("alt.after"),
                }
            }
            (540..=589, _, Some(r)) => {
                // Two receives (the second guarded) and a default: never waits.
                let other = pick(&mut rng, &rxs).unwrap_or(r);
                let guard = rng.below(2) == 0;
                let fired = csp::alt! {
                    recv(rxs[r].rx) -> got => got.map(Msg::receive).is_ok(),
                    recv(rxs[other].rx) -> got if guard => got.map(Msg::receive).is_ok(),
                    default => {
                        counts.bump("alt.default");
                        false
                    }
                };
                if fired {
                    counts.bump("alt.recv");
                }
            }
            (590..=639, Some(t), _) => {
                // prialt of two sends: exactly one value goes, the other is dropped.
                let other = pick(&mut rng, &txs).unwrap_or(t);
                let (a, b) = (&txs[t], &txs[other]);
                let (ma, mb) = (Msg::new(&a.rec), Msg::new(&b.rec));
                let (ia, ib) = (ma.id, mb.id);
                let wait = patience(&mut rng);
                csp::prialt! {
                    send(a.tx, ma) -> sent => match sent {
                        Ok(()) => {
                            sent_ok(&a.rec, ia);
                            counts.bump("prialt.send");
                        }
                        Err(e) => drop(e.into_inner()),
                    },
                    send(b.tx, mb) -> sent => match sent {
                        Ok(()) => {
                            sent_ok(&b.rec, ib);
                            counts.bump("prialt.send");
                        }
                        Err(e) => drop(e.into_inner()),
                    },
                    after(wait) => counts.bump("prialt.after"),
                }
            }
            (640..=689, Some(t), Some(r)) => {
                // Select: a receive, a send, a timeout; the Selected is always read.
                let (tx, rx) = (&txs[t], &rxs[r]);
                let msg = Msg::new(&tx.rec);
                let id = msg.id;
                let mut sel = csp::Select::new();
                let a = sel.recv(&rx.rx);
                let b = sel.send(&tx.tx, msg);
                sel.timeout(patience(&mut rng));
                let op = sel.select().await;
                match op.index() {
                    i if i == a => match op.recv(&rx.rx) {
                        Ok(msg) => {
                            msg.receive();
                            counts.bump("select.recv");
                        }
                        Err(_) => counts.bump("select.recv_closed"),
                    },
                    i if i == b => match op.send(&tx.tx) {
                        Ok(()) => {
                            sent_ok(&tx.rec, id);
                            counts.bump("select.send");
                        }
                        Err(e) => drop(e.into_inner()),
                    },
                    _ => counts.bump("select.timeout"),
                }
            }
            (690..=739, _, Some(_)) => {
                // recv_any over every receiver held, send_any over every sender held
                // (channels of all kinds, and clones of one channel side by side). Its
                // value may go to any of them, so it is tied to no channel's receivers.
                let rx_refs: Vec<&Receiver<Msg>> = rxs.iter().map(|r| &r.rx).collect();
                let tx_refs: Vec<&Sender<Msg>> = txs.iter().map(|t| &t.tx).collect();
                let msg = Msg::new(&wave.anywhere);
                let id = msg.id;
                let offer = rng.below(2) == 0;
                let wait = patience(&mut rng);
                csp::alt! {
                    recv_any(&rx_refs) -> (_i, got) => match got {
                        Ok(msg) => {
                            msg.receive();
                            counts.bump("recv_any.ok");
                        }
                        Err(_) => counts.bump("recv_any.closed"),
                    },
                    send_any(&tx_refs, msg) -> (_i, sent) if offer => match sent {
                        Ok(()) => {
                            sent_ok(&wave.anywhere, id);
                            counts.bump("send_any.ok");
                        }
                        Err(e) => {
                            drop(e.into_inner());
                            counts.bump("send_any.closed");
                        }
                    },
                    after(wait) => counts.bump("recv_any.after"),
                }
            }
            (740..=779, _, Some(r)) => {
                // The Stream (poll_recv): never handed a value it does not take.
                match csp::timeout(patience(&mut rng), rxs[r].rx.next()).await {
                    Ok(Some(msg)) => {
                        msg.receive();
                        counts.bump("stream.next");
                    }
                    Ok(None) => counts.bump("stream.end"),
                    Err(_) => counts.bump("stream.timeout"),
                }
            }
            (780..=789, Some(t), _) => {
                let wait = patience(&mut rng);
                csp::alt! {
                    closed(txs[t].tx) => counts.bump("closed.fired"),
                    after(wait) => counts.bump("closed.after"),
                }
            }
            (790..=839, _, _) => {
                csp::sleep(patience(&mut rng)).await;
                counts.bump("sleep");
            }
            (840..=889, _, _) => {
                csp::yield_now().await;
                counts.bump("yield");
            }
            (890..=929, _, _) if depth < MAX_DEPTH => {
                let child_txs = txs.iter().filter(|_| rng.below(2) == 0).cloned().collect();
                let child_rxs = rxs.iter().filter(|_| rng.below(2) == 0).cloned().collect();
                let child = csp::spawn(actor(
                    wave.clone(),
                    child_txs,
                    child_rxs,
                    rng.next(),
                    depth + 1,
                    steps / 2,
                ));
                counts.bump("spawn.child");
                if rng.below(6) == 0 {
                    child.abort();
                    counts.bump("abort");
                }
                wave.reaper
                    .try_send(child)
                    .expect("the reaper takes every handle");
            }
            (930..=931, Some(t), _) if txs[t].rec.closable => {
                txs[t].tx.close();
                counts.bump("close");
            }
            (932..=933, _, Some(r)) if rxs[r].rec.closable => {
                rxs[r].rx.close();
                counts.bump("close");
            }
            (934..=943, Some(t), _) => {
                drop(txs.swap_remove(t));
                counts.bump("drop_end");
            }
            (944..=953, _, Some(r)) => {
                drop(rxs.swap_remove(r));
                counts.bump("drop_end");
            }
            (954..=973, Some(t), Some(r)) => {
                if rng.below(2) == 0 {
                    txs.push(txs[t].clone());
                } else {
                    rxs.push(rxs[r].clone());
                }
                counts.bump("clone_end");
            }
            (974..=976, _, _) => {
                counts.bump("panic");
                counts.flush();
                panic!("{SOAK_PANIC}: an actor gives up with its values in hand");
            }
            _ => counts.bump("noop"),
        }
    }
    steps
}

// ---------------------------------------------------------------------------------------
// The counting allocator
// ---------------------------------------------------------------------------------------

#[global_allocator]
static ALLOCATOR: Counting = Counting {
    live: AtomicIsize::new(0),
    peak: AtomicIsize::new(0),
    allocations: AtomicU64::new(0),
};

/// `System`, counting live bytes, their peak, and allocations.
struct Counting {
    live: AtomicIsize,
    peak: AtomicIsize,
    allocations: AtomicU64,
}

impl Counting {
    fn live(&self) -> isize {
        self.live.load(Ordering::SeqCst)
    }

    fn peak(&self) -> isize {
        self.peak.load(Ordering::SeqCst)
    }

    fn allocations(&self) -> u64 {
        self.allocations.load(Ordering::SeqCst)
    }

    fn grow(&self, bytes: usize) {
        let live = self.live.fetch_add(bytes as isize, Ordering::Relaxed) + bytes as isize;
        self.peak.fetch_max(live, Ordering::Relaxed);
    }

    fn shrink(&self, bytes: usize) {
        self.live.fetch_sub(bytes as isize, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System`; the counting allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            self.allocations.fetch_add(1, Ordering::Relaxed);
            self.grow(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            self.allocations.fetch_add(1, Ordering::Relaxed);
            self.grow(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) };
        self.shrink(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            self.allocations.fetch_add(1, Ordering::Relaxed);
            self.shrink(layout.size());
            self.grow(new_size);
        }
        new
    }
}
