//! Every tuning constant of the runtime, in one place, with where its value came from.

use std::time::Duration;

/// Processes a worker runs in a row from its handoff slot before it puts the slot's
/// occupant at the back of its queue and takes the queue's head instead. Bounds how long a
/// ping-pong pair can keep the rest of the queue waiting. 32 keeps handoff chains hot
/// (ping_pong loses about 3% per halving below 16 on the bench machine) while a queued
/// process waits at most 32 short polls.
pub(crate) const MAX_CONSECUTIVE_HANDOFFS: u32 = 32;

/// Values a poll may put in channel buffers after waking a process into the handoff
/// slot for that process still to run next; past this many it goes to the back of the
/// queue instead, behind the processes already there (`runtime/worker.rs`). Measured on
/// the bench machine (`vs_tokio`, alternating builds): select4 went from 75 to 56 ns an
/// alt on one worker and from 77-78 to 61-71 on two, with 2 and 8 alike and 32 losing
/// it; ping_pong, which buffers nothing, moved by about 1 ns. 8 is well above the few
/// values a poll sends on its way to blocking, and well below a buffer's worth.
pub(crate) const HANDOFF_STALE_SENDS: u32 = 8;

/// Most processes one poll may push out of the handoff slot before they are published
/// to other workers. Until then (or the end of the poll) they wait unseen by thieves,
/// so a process that wakes many others in one poll, such as a receiver draining a
/// buffer that waiting senders refill, finds them on its own worker once it blocks,
/// and they run in a batch, not one stolen process per message. Measured on a 16-core
/// machine at 2 and 4 workers (fan_in, 16 senders): 16, 32 and 64 all took fan_in
/// from 1.8-2.5 times tokio's time to 0.4-0.6 and select4 from 2.1-2.6 to 1.0-1.5;
/// 4 did not help fan_in. 32 leaves room above the senders that benchmark has, and
/// still hands the processes of a long poll to idle workers in batches.
pub(crate) const DISPLACED_BATCH: usize = 32;

/// How long an idle worker leaves a queue that has just filled to its owner before
/// stealing from it (`runtime/queue_age.rs`). Measured on the bench machine (2 workers,
/// `vs_tokio`, alternating runs): fan_in went from 0.70-0.78 of tokio's time to
/// 0.36-0.39 at 50 µs (0.19 at 200 µs), with select4, skynet, yield_many and timers
/// unchanged within the noise. 50 µs is short next to parallel work worth spreading
/// (processes that run for milliseconds wait one grace), and long next to a batch of
/// short polls; 200 µs would hold such work back four times as long. (Go leaves a
/// goroutine just made ready to its processor for a few µs before stealing it.) Only a
/// batch waits it out (`queue_age.rs`): a socket's or a timer's wakes alone do not.
pub(crate) const STEAL_GRACE: Duration = Duration::from_micros(50);

/// A worker looks at the global injector first every this many scheduling ticks, even
/// with local work, so spawns and wakes from outside the pool are not starved. 61 as in
/// Go's scheduler (a prime, so it does not beat with other periodic work), per DESIGN.md.
pub(crate) const GLOBAL_QUEUE_INTERVAL: u32 = 61;

/// Most processes a worker moves from the injector to its own queue in one go; the same
/// as crossbeam-deque's own batch limit (seed 002 moves 16: 32 halves the injector
/// traffic of spawn_remote with no loss elsewhere).
pub(crate) const INJECTOR_BATCH: usize = 32;

/// Rounds of stealing an idle worker tries before it parks (seed 002's table: below
/// [`TIGHT_SPIN_ROUNDS`] it spins on the CPU, then yields its thread to the OS between
/// rounds, and parks at this count). While sockets are registered, a round that finds no
/// work at all past the spins parks at once (`runtime/worker.rs`).
pub(crate) const SEARCH_ROUNDS: u32 = 16;

/// Search rounds separated by a CPU spin hint rather than an OS yield (seed 002).
pub(crate) const TIGHT_SPIN_ROUNDS: u32 = 4;

/// Rounds a contended channel lock spins, each twice as long as the one before, before
/// it yields its thread between tries; crossbeam's `Backoff` uses the same 2^6 limit.
pub(crate) const CHANNEL_LOCK_SPIN_ROUNDS: u32 = 6;

/// Values a bounded channel's buffer holds room for from the start; a larger capacity
/// grows the buffer as values come (once: at its high-water mark a channel allocates
/// nothing more). Without a bound, `bounded(usize::MAX)` (a way to say "no limit")
/// failed on the allocation's size and `bounded(1 << 40)` aborted the process out of
/// memory. 1024 covers the capacities of every benchmark and example (16 to 128) with
/// room to spare, at 8 KiB for a channel of `u64`.
pub(crate) const CHANNEL_PREALLOCATED: usize = 1024;

/// Arms a choice plans for without allocating; choices written by hand rarely have
/// more, and a larger one allocates its plan once (a `Select` reuses it). Every `alt!`
/// future carries two buffers of this size, so it is kept small (8 arms cost 128 bytes
/// less per `alt!` than 16, which select4 measured).
pub(crate) const INLINE_ARMS: usize = 8;

/// Registry shards per worker thread: enough that processes completing on different
/// workers rarely meet on one shard lock (tokio shards its task list the same way).
pub(crate) const REGISTRY_SHARDS_PER_WORKER: usize = 4;

/// Most threads in a runtime's blocking pool (API.md).
pub(crate) const BLOCKING_MAX_THREADS: usize = 512;

/// How long an idle blocking-pool thread waits for work before it exits (API.md).
pub(crate) const BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// How long `#[csp::main]` waits, after its body ends or panics, for its runtime's
/// processes to be dropped and its threads to exit (API.md: `shutdown_timeout(1 s)`);
/// `#[csp::test]` waits as long after a body that panicked.
pub(crate) const MAIN_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(1);

/// Ids a thread takes from the global counter at once. Small enough that ids stay short
/// in reports (`process #260`), large enough that the shared counter is touched once per
/// 256 spawns.
pub(crate) const ID_BLOCK: u64 = 256;

/// Expired timers taken out of the wheel per lock hold, then fired after unlocking. Bounds
/// both the time the wheel's lock is held and the stack space for the batch; at 32 the
/// lock is taken once per 32 expiries, which makes it negligible next to the wakes
/// (the timers benchmark fires 10k at once).
pub(crate) const TIMER_FIRE_BATCH: usize = 32;

/// Passes a wait-graph survey makes over channels whose lock was taken when it looked
/// (`wait/census.rs`), yielding between passes. A channel lock is held for a handful of
/// pointer moves, so a second pass almost always finds it free; 64 passes make a
/// channel reported without its waiters a sign of a lock held far too long.
pub(crate) const CENSUS_SURVEY_ROUNDS: usize = 64;

/// With the `io` feature, a busy worker checks whether to poll the I/O driver without
/// blocking after this many rounds of its loop in a row without parking, and polls it if
/// [`DRIVER_POLL_PERIOD`] has passed since it last did. 61, as
/// [`GLOBAL_QUEUE_INTERVAL`] and tokio's default `event_interval`: one clock reading per
/// 61 processes run is lost in their cost. A runtime with no source registered skips
/// the check and its clock reading: some 1% of a ring hop's time with LTO.
#[cfg(feature = "io")]
pub(crate) const DRIVER_POLL_INTERVAL: u32 = 61;

/// With the `io` feature, the least time between two of a busy worker's polls of the I/O
/// driver without blocking, so sockets are served while no worker parks. Measured when
/// csp drove smol's reactor, whose zero-timeout poll was five system calls (2-3 µs):
/// made every 61 rounds it took 35% of a busy worker's time, at 50, 200 and 1000 µs the
/// cost was lost in the noise, and `scripts/load` measured 0, 100 and 1000 µs alike. The
/// driver's own zero-timeout poll is one `epoll_wait`, and only while no parked worker
/// holds the driver; 100 µs bounds how long a ready socket waits while every worker is
/// busy.
#[cfg(feature = "io")]
pub(crate) const DRIVER_POLL_PERIOD: Duration = Duration::from_micros(100);

/// With the `io` feature: what a stream's read ahead that finds bytes adds to its
/// source's score, where one that gets `WouldBlock` takes 1
/// (`runtime/driver/read_ahead.rs`): a source keeps reading ahead while more than 1 in 9
/// of its reads ahead find bytes. One that does saves a wait for the driver's event (an
/// `epoll_wait` on some worker, a dispatch, a wake, a schedule); one that does not costs
/// a `recvfrom`. 8, from the build that always cleared after a short read
/// (docs/performance.md, 2026-11-26): at 50 connections it cost 0.5-0.8 µs more a
/// request than reading ahead, for 0.7 fewer calls of some 0.3 µs. Under `scripts/load`
/// the score stays low at 50 and 500 connections alike (docs/performance.md,
/// 2026-11-27): the value matters for peers that answer faster than the driver reports.
#[cfg(feature = "io")]
pub(crate) const READ_AHEAD_HIT: u8 = 8;

/// With the `io` feature: the score at and above which a source reads ahead; a new
/// source starts there (it reads ahead, as a source whose peer answers at once should,
/// and stops after one read ahead that finds nothing). Half the score's range, so a
/// source that paid for a long time stops after at most 8 in a row that find nothing.
#[cfg(feature = "io")]
pub(crate) const READ_AHEAD_THRESHOLD: u8 = 8;

/// With the `io` feature: a source that does not read ahead still does, to see whether
/// it pays again (a *probe*), first after this many short reads, then after twice as
/// many each time a probe finds nothing, up to [`READ_AHEAD_PROBE_MAX`]. 8, the one
/// interval before the back-off (docs/performance.md, "Reading ahead, learned per
/// socket"), chosen then as at most 1/8 of a `WouldBlock` call a request, against the
/// 0.96 calls a request that not reading ahead saved at 500 connections; a source that
/// stops paying probes for the first time within 8 short reads of stopping.
#[cfg(feature = "io")]
pub(crate) const READ_AHEAD_PROBE: u8 = 8;

/// With the `io` feature: the longest interval, in short reads, between two probes of a
/// source that does not read ahead. With every interval 8, under wrk at 50 and 500
/// connections, where probes found bytes nearly never, csp made 1.126 and 1.127
/// `recvfrom` a request against tokio's 1.000; with the back-off to 128, 1.011 and 1.012
/// (docs/performance.md, "Probes that back off"). 128 is the most the count's bits in
/// the source's word hold, not a measured optimum: the cost is that a peer whose pace
/// changes is noticed only after up to 128 short reads. A power of two times
/// [`READ_AHEAD_PROBE`].
#[cfg(feature = "io")]
pub(crate) const READ_AHEAD_PROBE_MAX: u8 = 128;

/// Events the I/O driver takes from one `epoll_wait`, its buffer allocated once. More
/// wait for the next poll, which comes at once (the holder runs what the first batch
/// woke, then polls again), so the size only bounds one batch; tokio takes 1024 too.
#[cfg(feature = "io")]
pub(crate) const DRIVER_EVENTS: usize = 1024;

/// The shortest period of the deadlock monitor (`Builder::on_deadlock`): it looks once
/// per grace period, and a grace shorter than this (zero, say) would have it spin. A
/// grace period this short is for tests; the default is 1 s.
pub(crate) const DEADLOCK_MONITOR_MIN_PERIOD: Duration = Duration::from_millis(1);

/// How often `Runtime::shutdown_timeout` looks whether the deadlock monitor (or the
/// watchdog) has ended, while its `on_deadlock` hook (or a future's drop) may still be
/// running: one that blocks is left behind at the timeout, as a worker stuck in a poll
/// is.
pub(crate) const MONITOR_EXIT_POLL: Duration = Duration::from_millis(1);

/// How often the console's thread samples which process each worker is polling
/// (`console/sampler.rs`): the resolution of its poll times. 2 ms makes a 20 ms poll
/// show as 9 to 10 samples, while 500 wake-ups a second of one thread cost some 0.1%
/// of a core with nobody looking (a wake-up and a read of each worker's counters).
#[cfg(feature = "console")]
pub(crate) const CONSOLE_SAMPLE_PERIOD: Duration = Duration::from_millis(2);

/// How often the console records a point of its plots and ages the processes' waits;
/// the page reloads as often.
#[cfg(feature = "console")]
pub(crate) const CONSOLE_TICK: Duration = Duration::from_secs(1);

/// Points the console's plots keep: 5 minutes at one a second.
#[cfg(feature = "console")]
pub(crate) const CONSOLE_HISTORY: usize = 300;

/// A poll that holds its worker this long is a warning on the console. tokio-console
/// warns about polls of over 10 ms by default; at the 2 ms sampling period, 20 ms is
/// the shortest length the sampler tells from a run of ordinary polls without fail.
#[cfg(feature = "console")]
pub(crate) const LONG_POLL_WARNING: Duration = Duration::from_millis(20);

/// Long polls the console lists, newest first.
#[cfg(feature = "console")]
pub(crate) const LONG_POLLS_KEPT: usize = 20;

/// A process woken inside its own polls this many times in one console tick, for more
/// than half of its polls, is a warning ("woken many times without progress"): a
/// spin on `yield_now` or a future that wakes itself while nothing changes. At one
/// poll per wake, 1,000 a second is a core's thousandth spent on one such process.
#[cfg(feature = "console")]
pub(crate) const BUSY_REQUEUES_PER_TICK: u64 = 1_000;

/// A channel with this many waiting entries is a warning (a long queue of blocked
/// senders or receivers).
#[cfg(feature = "console")]
pub(crate) const LONG_QUEUE_WAITERS: usize = 64;

/// The wait graph the console draws as a picture, at most: laying out a graph costs
/// time more than linear in its size, and a picture of thousands of nodes shows
/// nothing. Larger graphs are served as DOT only.
#[cfg(feature = "console")]
pub(crate) const CONSOLE_GRAPH_MAX_NODES: usize = 400;

/// How long Graphviz's `dot` may take to draw the console's wait graph before it is
/// killed (the picture is then drawn in process, by `layout-rs`): a bound for a `dot`
/// that hangs, as the console's thread does not sample meanwhile. The largest graph
/// drawn ([`CONSOLE_GRAPH_MAX_NODES`] processes; a ring of 400 processes and 400
/// channels) took `dot` 1.4 s on a 2-core test machine under load.
#[cfg(feature = "console")]
pub(crate) const CONSOLE_DOT_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest head (request line and headers) the console reads: a browser's request is
/// under 2 KiB; past this it answers 431.
#[cfg(feature = "console")]
pub(crate) const CONSOLE_HEAD_LIMIT: usize = 16 * 1024;

/// How long the console gives a client to send its request, and then to take the
/// answer: one thread serves every client, so a slow one holds up the others (and the
/// sampling) this long at most. Generous for a browser on any network.
#[cfg(feature = "console")]
pub(crate) const CONSOLE_REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// Connections the console keeps accepted while they have sent nothing (each at most
/// [`CONSOLE_REQUEST_TIMEOUT`]), so that it serves whichever speaks first: a browser
/// opens up to 6 to a host, some of them speculatively, to send nothing. Past this,
/// new ones wait in the listen backlog.
#[cfg(feature = "console")]
pub(crate) const CONSOLE_WAITING_CONNECTIONS: usize = 32;

/// The longest one read or write of the console waits before it samples the workers
/// (when due) and looks whether the console stops: the sampling period, so that a
/// client that keeps the console waiting leaves no gap in the samples; and how long a
/// shutdown waits for a console that is serving.
#[cfg(feature = "console")]
pub(crate) const CONSOLE_IO_SLICE: Duration = CONSOLE_SAMPLE_PERIOD;

/// How long, and for how many bytes, the console reads what a client still sends after
/// its answer (a body no route reads) before it closes, so the close does not reset the
/// connection under a client still reading.
#[cfg(feature = "console")]
pub(crate) const CONSOLE_LINGER: Duration = Duration::from_millis(100);
/// See [`CONSOLE_LINGER`].
#[cfg(feature = "console")]
pub(crate) const CONSOLE_LINGER_BYTES: usize = 64 * 1024;

/// How long a poll may hold its worker before the watchdog moves the processes the
/// worker holds (its handoff slot, those pushed out of it, its resting process) to where
/// any worker finds them (`runtime/sysmon.rs`); also the watchdog's period while any
/// worker is awake. Go's sysmon looks every 20 µs to 10 ms. Measured on the 2-core VM
/// against the build before the watchdog (vs_tokio, medians of 3 alternated runs): at
/// 2 ms its looks alone (nothing taken over) made `fan_in` 12% slower, at 5 ms 5%, at
/// 10 ms 2%; 5 ms keeps a woken process's wait behind a blocking poll to 5-10 ms.
pub(crate) const LONG_POLL_TAKEOVER: Duration = Duration::from_millis(5);

/// Take-overs the console remembers, to name in its long-poll warnings the processes a
/// long poll held up.
#[cfg(feature = "console")]
pub(crate) const TAKEOVERS_LOGGED: usize = 64;

/// The backlog `TcpListener::bind` asks for: the largest the system allows, as Go's
/// `net.Listen` does, since the kernel caps it (Linux at `net.core.somaxconn`, 4096 by
/// default since 5.4; the BSDs and macOS at `kern.ipc.somaxconn`). A connection that
/// finds the backlog full has its SYN dropped and waits a second for the retry: under
/// `scripts/load` at 10,000 connections, with the 128 that mio (so tokio) and std use, wrk
/// counted 129 to 375 timeouts a 20 s run and a p99 of 0.8 to 2.8 s (csp and tokio
/// alike); with the system's 4,096, none, and a p99 of 150 ms.
#[cfg(all(feature = "io", not(loom)))]
pub(crate) const LISTEN_BACKLOG: i32 = i32::MAX;
