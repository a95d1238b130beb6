//! Integration tests of `#[csp::test]` and `#[csp::main]`: the body runs on a runtime
//! built with the requested worker count, test attributes compose, a `main` shuts
//! its runtime down without waiting for a detached process that never ends, whether its
//! body returns or panics, and a test that fails is not held up by a stuck worker.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

mod common;

use common::bounded;

/// The worker count of the current runtime, from its handle's `Debug` output.
fn current_workers() -> usize {
    let handle = format!("{:?}", csp::Handle::current());
    let count = handle
        .split("workers: ")
        .nth(1)
        .and_then(|rest| rest.split([',', ' ']).next())
        .unwrap_or_else(|| panic!("no worker count in {handle}"));
    count.parse().unwrap()
}

#[csp::test]
async fn the_body_runs_on_a_csp_runtime() {
    assert!(csp::Handle::try_current().is_some());
    let (tx, rx) = csp::channel();
    csp::spawn(async move { tx.send("ping").await.unwrap() });
    assert_eq!(rx.recv().await, Ok("ping"));
}

#[csp::test(worker_threads = 2)]
async fn worker_threads_sets_the_worker_count() {
    assert_eq!(current_workers(), 2);
    let (a, b) = csp::par!(async { current_workers() }, async { current_workers() });
    assert_eq!((a, b), (2, 2));
}

#[csp::test]
async fn a_test_may_return_a_result() -> Result<(), csp::JoinError> {
    let n = csp::spawn(async { 6 * 7 }).await?;
    assert_eq!(n, 42);
    Ok(())
}

#[csp::test(worker_threads = 1)]
#[should_panic(expected = "boom")]
async fn should_panic_after_the_attribute() {
    csp::par!(async {}, async { panic!("boom") });
}

#[should_panic(expected = "before the attribute")]
#[csp::test]
async fn should_panic_before_the_attribute() {
    panic!("before the attribute");
}

static MAIN_WORKERS: AtomicUsize = AtomicUsize::new(0);
static MAIN_DROPS: AtomicUsize = AtomicUsize::new(0);

/// Counts its drop in `MAIN_DROPS`.
struct MainGuard;

impl Drop for MainGuard {
    fn drop(&mut self) {
        MAIN_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

/// Records its worker count, leaves two detached processes that never end (one asleep,
/// one always runnable) holding guards, and fails.
#[csp::main(worker_threads = 3)]
async fn main_like() -> Result<(), String> {
    MAIN_WORKERS.store(current_workers(), Ordering::SeqCst);
    let guard = MainGuard;
    csp::spawn(async move {
        let _guard = guard;
        std::future::pending::<()>().await
    });
    let guard = MainGuard;
    csp::spawn(async move {
        let _guard = guard;
        loop {
            csp::yield_now().await;
        }
    });
    Err(String::from("main_like failed"))
}

#[test]
fn main_runs_the_body_then_shuts_the_runtime_down() {
    let result = bounded(30, main_like);
    assert_eq!(result, Err(String::from("main_like failed")));
    assert_eq!(MAIN_WORKERS.load(Ordering::SeqCst), 3);
    // The shutdown dropped both detached processes: at once, or, if a worker was held
    // up past the shutdown's timeout, as soon as that worker gets back to them.
    common::wait_until(10, "both detached processes are dropped", || {
        MAIN_DROPS.load(Ordering::SeqCst) == 2
    });
}

/// Set once `panicking_main`'s stuck process may return.
static UNSTICK: AtomicBool = AtomicBool::new(false);
/// Set once the stuck process is inside its poll.
static STUCK: AtomicBool = AtomicBool::new(false);

/// Leaves a detached process stuck in one poll, which holds its worker until
/// [`UNSTICK`], then panics.
#[csp::main(worker_threads = 2)]
async fn panicking_main() {
    csp::spawn(async {
        STUCK.store(true, Ordering::SeqCst);
        while !UNSTICK.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    });
    while !STUCK.load(Ordering::SeqCst) {
        csp::sleep(std::time::Duration::from_millis(1)).await;
    }
    panic!("panicking_main failed");
}

#[test]
fn a_main_that_panics_shuts_its_runtime_down_within_the_timeout() {
    // Before, the runtime was dropped while the panic unwound, and a plain drop waits
    // for every worker: the one stuck in the poll never came back.
    let result = bounded(30, || std::panic::catch_unwind(panicking_main));
    UNSTICK.store(true, Ordering::SeqCst);
    let payload = result.expect_err("the body panicked");
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&"panicking_main failed")
    );
}

/// Set once the stuck process of `a_test_that_panics_is_not_held_up_by_a_stuck_worker`
/// may return.
static TEST_UNSTICK: AtomicBool = AtomicBool::new(false);

#[test]
fn a_test_that_panics_is_not_held_up_by_a_stuck_worker() {
    // What `#[csp::test]` expands to, with a body that leaves a process stuck in one
    // poll (spinning on a flag its failed assertion would have set), then fails: the
    // failure must reach the harness, not wait for the stuck worker.
    let result = bounded(30, || {
        std::panic::catch_unwind(|| {
            let runtime = csp::Builder::new().worker_threads(2).build().unwrap();
            csp::__private::run_test(runtime, async {
                let stuck = std::sync::Arc::new(AtomicBool::new(false));
                let inside = stuck.clone();
                csp::spawn(async move {
                    inside.store(true, Ordering::SeqCst);
                    while !TEST_UNSTICK.load(Ordering::SeqCst) {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                });
                while !stuck.load(Ordering::SeqCst) {
                    csp::sleep(std::time::Duration::from_millis(1)).await;
                }
                panic!("the test failed");
            })
        })
    });
    TEST_UNSTICK.store(true, Ordering::SeqCst);
    let payload = result.expect_err("the body panicked");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"the test failed"));
}

#[test]
fn a_test_that_returns_drops_its_runtime_after_every_process() {
    // A body that returns drops the runtime as usual: each detached process is
    // dropped before `run_test` returns, however long its worker takes to get to it.
    let dropped = common::Counter::new();
    bounded(30, {
        let dropped = dropped.clone();
        move || {
            let runtime = csp::Builder::new().worker_threads(2).build().unwrap();
            csp::__private::run_test(runtime, async move {
                let guard = common::Tracked::new(0, &dropped);
                let started = std::sync::Arc::new(AtomicBool::new(false));
                let inside = started.clone();
                csp::spawn(async move {
                    let _guard = guard;
                    inside.store(true, Ordering::SeqCst);
                    // Holds its worker past the end of the body, longer than a bounded
                    // shutdown would wait.
                    std::thread::sleep(std::time::Duration::from_millis(3000));
                    std::future::pending::<()>().await;
                });
                while !started.load(Ordering::SeqCst) {
                    csp::sleep(std::time::Duration::from_millis(1)).await;
                }
            });
        }
    });
    assert_eq!(dropped.get(), 1);
}
