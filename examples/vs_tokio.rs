//! csp against tokio, side by side in one process: every workload of
//! `benches/workloads.rs` (the runtime's, then the channels') on both runtimes,
//! alternating them sample by sample, then the memory each runtime spends per process.
//!
//! ```text
//! cargo run --release --example vs_tokio
//! CSP_BENCH_SAMPLES=2 cargo run --release --example vs_tokio   # a quick run
//! CSP_BENCH_ONLY=ping_pong,timers cargo run --release --example vs_tokio
//! CSP_BENCH_DEADLOCK_DETECTION=off cargo run --release --example vs_tokio
//! CSP_BENCH_WORKERS=8 cargo run --release --example vs_tokio   # 8 workers each
//! cargo run --profile release-lto --example vs_tokio   # the build users ship
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::channel::oneshot;

#[path = "../benches/common/workloads.rs"]
mod workloads;

use workloads::{
    CHANNEL_WORKLOADS, Executor, TIMER_WORKLOADS, WORKLOADS, run_in_process, worker_threads,
};

/// Samples per workload and runtime unless `CSP_BENCH_SAMPLES` says otherwise.
const DEFAULT_SAMPLES: usize = 15;

/// Workloads too slow for the full sample count, with the fraction of it they get: one
/// `skynet` sample, csp's and tokio's, takes seconds on two cores.
const FEWER_SAMPLES: &[(&str, usize)] = &[("skynet", 2)];

/// Pause before each timed run, so the other runtime's workers have finished searching
/// for work and parked, and do not compete for the cores.
const SETTLE: Duration = Duration::from_millis(5);

/// Processes alive at once while measuring memory per process.
const PENDING_PROCESSES: usize = 100_000;

/// Sleeps measured for lateness, per runtime (alternating the two).
const LATENESS_SLEEPS: usize = 200;
/// The sleep whose lateness is measured.
const LATENESS_SLEEP: Duration = Duration::from_millis(1);

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn main() {
    let samples = samples();
    let workers = worker_threads();
    let csp = csp::Runtime::with_workers(workers);
    let tokio = tokio::runtime::Runtime::with_workers(workers);

    println!(
        "csp vs tokio: {workers} worker threads each, median of {samples} samples \
         (the two runtimes alternate)"
    );
    println!("machine: {}", machine());
    println!("build: {}", build_profile());
    println!();
    println!(
        "{:<14} | {:>11} | {:>12} | {:>17}",
        "workload", "csp median", "tokio median", "ratio (csp/tokio)"
    );
    println!("{:-<15}|{:-<13}|{:-<14}|{:-<18}", "", "", "", "");
    let mut per_unit = Vec::new();
    let mut scheduling = Vec::new();
    let mut notes = Vec::new();
    let only = std::env::var("CSP_BENCH_ONLY").ok();
    let selected = |name: &str| {
        only.as_ref()
            .is_none_or(|only| only.split(',').any(|o| o == name))
    };
    for workload in WORKLOADS
        .iter()
        .chain(CHANNEL_WORKLOADS)
        .chain(TIMER_WORKLOADS)
        .filter(|w| selected(w.name))
    {
        let divisor = FEWER_SAMPLES
            .iter()
            .find(|(name, _)| *name == workload.name)
            .map_or(1, |&(_, divisor)| divisor);
        let its_samples = samples.div_ceil(divisor);
        if its_samples < samples {
            notes.push(format!(
                "{}: median of {its_samples} samples, not {samples} (1/{divisor} of them: one \
                 sample takes seconds)",
                workload.name
            ));
        }
        let before = csp.metrics();
        let [csp_median, tokio_median] = compare(
            its_samples,
            || (workload.csp)(&csp),
            || (workload.tokio)(&tokio),
        );
        let after = csp.metrics();
        if after.takeovers > before.takeovers {
            notes.push(format!(
                "{}: the watchdog took over {} long polls' held processes",
                workload.name,
                after.takeovers - before.takeovers
            ));
        }
        println!(
            "{:<14} | {:>11} | {:>12} | {:>17.2}",
            workload.name,
            human(csp_median),
            human(tokio_median),
            csp_median.as_secs_f64() / tokio_median.as_secs_f64()
        );
        if let Some((count, unit)) = workload.unit {
            let per = |median: Duration| median.as_secs_f64() * 1e9 / count as f64;
            per_unit.push(format!(
                "{} per {unit} ({count} of them): csp {:.0} ns, tokio {:.0} ns",
                workload.name,
                per(csp_median),
                per(tokio_median)
            ));
            // The warm-up run and the samples.
            let units = ((its_samples + 1) * count) as f64;
            let per = |a: u64, b: u64| (b - a) as f64 / units;
            scheduling.push(format!(
                "{} per {unit}: {:.3} polls, {:.3} handoffs, {:.4} steals, {:.4} parks",
                workload.name,
                per(before.polls, after.polls),
                per(before.handoffs, after.handoffs),
                per(before.steals, after.steals),
                per(before.parks, after.parks),
            ));
        }
    }
    println!();
    for line in per_unit.iter().chain(&notes) {
        println!("{line}");
    }
    println!();
    println!("csp's scheduling (Metrics, over the warm-up run and the samples):");
    for line in &scheduling {
        println!("{line}");
    }
    println!();
    let [csp_late, tokio_late] = lateness(&csp, &tokio);
    println!(
        "lateness of a {} ms sleep on an idle runtime ({LATENESS_SLEEPS} sleeps each, \
         from inside a process): csp p50 {} p99 {}, tokio p50 {} p99 {}",
        LATENESS_SLEEP.as_millis(),
        human(percentile(&csp_late, 50)),
        human(percentile(&csp_late, 99)),
        human(percentile(&tokio_late, 50)),
        human(percentile(&tokio_late, 99)),
    );
    println!();
    println!(
        "memory per process ({PENDING_PROCESSES} pending processes, net allocations \
         while all are alive)"
    );
    println!(
        "{:<7} | {:>6} | {:>23} | {:>20} | {:>11}",
        "runtime", "future", "requested beyond future", "usable beyond future", "allocations"
    );
    println!("{:-<8}|{:-<8}|{:-<25}|{:-<22}|{:-<12}", "", "", "", "", "");
    for (name, memory) in [
        ("csp", process_memory(&csp)),
        ("tokio", process_memory(&tokio)),
    ] {
        println!(
            "{name:<7} | {:>4} B | {:>21.1} B | {:>18.1} B | {:>11.2}",
            memory.future,
            memory.requested - memory.future as f64,
            memory.usable - memory.future as f64,
            memory.allocations
        );
    }
}

/// `CSP_BENCH_SAMPLES`, or the default.
fn samples() -> usize {
    workloads::positive_env("CSP_BENCH_SAMPLES", DEFAULT_SAMPLES)
}

/// The core count, and the CPU model where the OS tells it.
/// The cargo profile this binary was built with, told by the directory cargo put it in
/// (`target/<profile>/examples/`): `release`, or `release-lto`, the build users ship
/// (Cargo.toml).
fn build_profile() -> String {
    let exe = std::env::current_exe().ok();
    let profile = exe
        .as_deref()
        .and_then(|exe| exe.parent()?.parent()?.file_name()?.to_str())
        .unwrap_or("unknown");
    let debug = if cfg!(debug_assertions) {
        " (debug assertions on: not a build to time)"
    } else {
        ""
    };
    format!("profile {profile}{debug}")
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| format!(", {}", model.trim()))
        })
        .unwrap_or_default();
    format!(
        "{cores} cores, {}-{}{model}",
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}

/// Runs `csp` and `tokio` once each to warm up, then `samples` timed times each,
/// alternating them and which of the two goes first, and returns their median times.
fn compare(samples: usize, csp: impl Fn(), tokio: impl Fn()) -> [Duration; 2] {
    let runs: [&dyn Fn(); 2] = [&csp, &tokio];
    for run in runs {
        run();
    }
    let mut times = [Vec::with_capacity(samples), Vec::with_capacity(samples)];
    for sample in 0..samples {
        for turn in 0..runs.len() {
            let which = (sample + turn) % runs.len();
            std::thread::sleep(SETTLE);
            let start = Instant::now();
            runs[which]();
            times[which].push(start.elapsed());
        }
    }
    times.map(median)
}

/// How late a `LATENESS_SLEEP` sleep wakes on each runtime, idle but for the one process
/// sleeping: `LATENESS_SLEEPS` samples each, alternating the runtimes, sorted.
fn lateness(csp: &csp::Runtime, tokio: &tokio::runtime::Runtime) -> [Vec<Duration>; 2] {
    fn one<E: Executor>(rt: &E) -> Duration {
        std::thread::sleep(SETTLE);
        run_in_process(rt, async {
            let start = Instant::now();
            E::sleep(LATENESS_SLEEP).await;
            start.elapsed().saturating_sub(LATENESS_SLEEP)
        })
    }
    let mut late = [Vec::new(), Vec::new()];
    for _ in 0..LATENESS_SLEEPS {
        late[0].push(one(csp));
        late[1].push(one(tokio));
    }
    late.map(|mut times| {
        times.sort_unstable();
        times
    })
}

/// The `p`th percentile of sorted `times`.
fn percentile(times: &[Duration], p: usize) -> Duration {
    times[(times.len() * p / 100).min(times.len() - 1)]
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    let mid = times.len() / 2;
    if times.len().is_multiple_of(2) {
        (times[mid - 1] + times[mid]) / 2
    } else {
        times[mid]
    }
}

/// `d` in µs, ms or s, with four significant digits or so.
fn human(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros < 1e3 {
        format!("{micros:.1} µs")
    } else if micros < 1e6 {
        format!("{:.2} ms", micros / 1e3)
    } else {
        format!("{:.3} s", micros / 1e6)
    }
}

/// What one process costs in memory while it is alive, on average.
struct ProcessMemory {
    /// `size_of_val` of the spawned future.
    future: usize,
    /// Bytes asked of the allocator.
    requested: f64,
    /// Bytes the allocator set aside for them (`malloc_usable_size`).
    usable: f64,
    allocations: f64,
}

/// Spawns `PENDING_PROCESSES` processes from a root process, each waiting on a oneshot
/// channel, and measures the allocations made between before the first spawn and when
/// every process has been polled once (so none sits in a run queue), net of frees. Then
/// releases them all and joins them.
fn process_memory<E: Executor>(rt: &E) -> ProcessMemory {
    run_in_process(rt, async {
        // The channels and the vectors are the workload's, not the runtime's: they are
        // allocated before the measurement starts and freed after it ends.
        let (releases, mut waits): (Vec<_>, Vec<_>) =
            (0..PENDING_PROCESSES).map(|_| oneshot::channel()).unzip();
        let mut handles = Vec::with_capacity(PENDING_PROCESSES);
        let polled = Arc::new(AtomicUsize::new(0));
        let mut future = 0;

        let before = Tally::start();
        for wait in waits.drain(..) {
            let polled = polled.clone();
            let process = async move {
                // Relaxed: a count; the spin below only needs to see it reach the total.
                polled.fetch_add(1, Ordering::Relaxed);
                wait.await.is_ok()
            };
            future = std::mem::size_of_val(&process);
            handles.push(E::spawn(process));
        }
        while polled.load(Ordering::Relaxed) < PENDING_PROCESSES {
            E::yield_now().await;
        }
        let grown = Tally::stop().minus(&before);

        for release in releases {
            release.send(()).expect("a process stopped waiting");
        }
        for handle in handles {
            assert!(handle.await.expect("a process failed"));
        }
        let per_process = |total: isize| total as f64 / PENDING_PROCESSES as f64;
        ProcessMemory {
            future,
            requested: per_process(grown.requested),
            usable: per_process(grown.usable),
            allocations: per_process(grown.allocations),
        }
    })
}

/// The global allocator: `System`, keeping a tally of live allocations while
/// [`Tally::start`] has switched counting on, so the timed workloads pay almost nothing.
struct CountingAllocator;

static COUNTING: AtomicBool = AtomicBool::new(false);
static REQUESTED: AtomicIsize = AtomicIsize::new(0);
static USABLE: AtomicIsize = AtomicIsize::new(0);
static ALLOCATIONS: AtomicIsize = AtomicIsize::new(0);

/// The live allocations counted so far: bytes requested, bytes usable, allocations.
struct Tally {
    requested: isize,
    usable: isize,
    allocations: isize,
}

impl Tally {
    /// Switches counting on and returns the tally so far.
    fn start() -> Tally {
        COUNTING.store(true, Ordering::SeqCst);
        Tally::now()
    }

    /// Returns the tally so far and switches counting off.
    fn stop() -> Tally {
        let tally = Tally::now();
        COUNTING.store(false, Ordering::SeqCst);
        tally
    }

    fn now() -> Tally {
        Tally {
            requested: REQUESTED.load(Ordering::SeqCst),
            usable: USABLE.load(Ordering::SeqCst),
            allocations: ALLOCATIONS.load(Ordering::SeqCst),
        }
    }

    fn minus(&self, earlier: &Tally) -> Tally {
        Tally {
            requested: self.requested - earlier.requested,
            usable: self.usable - earlier.usable,
            allocations: self.allocations - earlier.allocations,
        }
    }

    /// Counts the allocation at `ptr` of `size` requested bytes as live (`sign` 1) or
    /// freed (`sign` -1), if counting is on.
    ///
    /// # Safety
    /// `ptr` must be a live allocation of `System`.
    unsafe fn record(ptr: *mut u8, size: usize, sign: isize) {
        // Relaxed: the counters are only read after the allocations of interest, and a
        // few allocations racing with the switch do not change a per-process average.
        if COUNTING.load(Ordering::Relaxed) {
            // SAFETY: the caller's contract.
            let usable = unsafe { usable_size(ptr, size) };
            REQUESTED.fetch_add(sign * size as isize, Ordering::Relaxed);
            USABLE.fetch_add(sign * usable as isize, Ordering::Relaxed);
            ALLOCATIONS.fetch_add(sign, Ordering::Relaxed);
        }
    }
}

/// The bytes the allocator set aside for the allocation at `ptr` of `size` requested
/// bytes.
///
/// # Safety
/// `ptr` must be a live allocation of `System`.
#[cfg(target_os = "linux")]
unsafe fn usable_size(ptr: *mut u8, _size: usize) -> usize {
    // SAFETY: `System` allocates with `malloc` (or `posix_memalign`), so `ptr` is a live
    // `malloc` allocation.
    unsafe { libc::malloc_usable_size(ptr.cast()) }
}

/// Elsewhere the requested size: the usable column then shows no rounding.
#[cfg(not(target_os = "linux"))]
unsafe fn usable_size(_ptr: *mut u8, size: usize) -> usize {
    size
}

// SAFETY: every method forwards to `System`; the tally only reads the allocations.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            // SAFETY: `ptr` was just allocated.
            unsafe { Tally::record(ptr, layout.size(), 1) };
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            // SAFETY: `ptr` was just allocated.
            unsafe { Tally::record(ptr, layout.size(), 1) };
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` is live until the `dealloc` below.
        unsafe { Tally::record(ptr, layout.size(), -1) };
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) };
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` is live until the `realloc` below.
        unsafe { Tally::record(ptr, layout.size(), -1) };
        // SAFETY: the caller's contract, forwarded.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        // On failure the old allocation stays live.
        let (live, size) = if new.is_null() {
            (ptr, layout.size())
        } else {
            (new, new_size)
        };
        // SAFETY: `live` is the allocation that is live now.
        unsafe { Tally::record(live, size, 1) };
        new
    }
}
