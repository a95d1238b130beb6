//! The runtime's threads: the blocking pool (`spawn_blocking`) and thread names.
//!
//! Every test runs under a watchdog (`common::bounded`), so a hang fails it with a
//! message rather than stalling the run.

use csp::Handle;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::Duration;

mod common;

use common::{bounded, panic_message, runtime, thread_name};

// ---------------------------------------------------------------------------------------
// spawn_blocking
// ---------------------------------------------------------------------------------------

#[test]
fn spawn_blocking_runs_off_the_workers() {
    bounded(20, || {
        let rt = runtime(1, "blk");
        let (name, in_runtime) = rt
            .block_on(csp::Handle::spawn_blocking(&rt.handle(), || {
                (thread_name(), Handle::try_current().is_some())
            }))
            .unwrap();
        assert!(name.contains("blocking"), "{name}");
        assert!(name.starts_with("blk-"), "{name}");
        assert_ne!(name, "blk-0");
        assert!(in_runtime);
        // The free function, from a process, uses the process's runtime's pool.
        let name = rt
            .block_on(rt.spawn(async { csp::spawn_blocking(thread_name).await.unwrap() }))
            .unwrap();
        assert!(
            name.starts_with("blk-") && name.contains("blocking"),
            "{name}"
        );
        // A blocking closure does not hold up the only worker: this one waits for a
        // message that a process sends.
        let (tx, rx) = mpsc::channel();
        let waiting = rt.handle().spawn_blocking(move || rx.recv().unwrap());
        let sender = rt.spawn(async move { tx.send(11).unwrap() });
        rt.block_on(sender).unwrap();
        assert_eq!(rt.block_on(waiting).unwrap(), 11);
    });
}

#[test]
fn spawn_blocking_closures_run_concurrently() {
    bounded(30, || {
        let rt = runtime(1, "blk-many");
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..64)
            .map(|i| {
                let (running, most) = (running.clone(), most.clone());
                rt.handle().spawn_blocking(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(50));
                    running.fetch_sub(1, Ordering::SeqCst);
                    i
                })
            })
            .collect();
        let results: Vec<i32> = handles
            .into_iter()
            .map(|h| rt.block_on(h).unwrap())
            .collect();
        assert_eq!(results, (0..64).collect::<Vec<_>>());
        let most = most.load(Ordering::SeqCst);
        assert!(most > 1, "at most {most} blocking closure(s) ran at a time");

        // Proof of concurrency: 8 closures that can only finish together.
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let barrier = barrier.clone();
                csp::Handle::spawn_blocking(&rt.handle(), move || barrier.wait().is_leader())
            })
            .collect();
        let leaders = handles
            .into_iter()
            .filter(|_| true)
            .map(|h| rt.block_on(h).unwrap())
            .filter(|&leader| leader)
            .count();
        assert_eq!(leaders, 1);
    });
}

#[test]
fn spawn_blocking_panics_are_delivered() {
    bounded(20, || {
        let rt = runtime(1, "blk-panic");
        let err = rt
            .block_on(
                rt.handle()
                    .spawn_blocking(|| -> u8 { panic!("blocking boom") }),
            )
            .unwrap_err();
        assert!(err.is_panic());
        assert_eq!(
            panic_message(err.into_panic().as_ref()).as_deref(),
            Some("blocking boom")
        );
        // The pool still works.
        assert_eq!(rt.block_on(rt.handle().spawn_blocking(|| 3)).unwrap(), 3);
    });
}

// ---------------------------------------------------------------------------------------
// Thread names
// ---------------------------------------------------------------------------------------

#[test]
fn default_runtime_workers_are_named_csp_worker_n() {
    bounded(20, || {
        // From a plain thread, csp::spawn goes to the default runtime.
        let handles: Vec<_> = (0..20)
            .map(|_| csp::spawn(async { thread_name() }))
            .collect();
        for h in handles {
            let name = futures::executor::block_on(h).unwrap();
            let n = name
                .strip_prefix("csp-worker-")
                .unwrap_or_else(|| panic!("a default worker named {name:?}"));
            assert!(n.parse::<usize>().is_ok(), "{name}");
        }
        let name = futures::executor::block_on(csp::spawn_blocking(thread_name)).unwrap();
        assert!(name.contains("blocking"), "{name}");
    });
}

#[test]
fn builder_thread_name_is_the_workers_prefix() {
    bounded(20, || {
        let rt = runtime(3, "my-pool");
        let names = rt.block_on(async {
            let handles: Vec<_> = (0..200)
                .map(|_| {
                    csp::spawn(async {
                        csp::yield_now().await;
                        thread_name()
                    })
                })
                .collect();
            let mut names = HashSet::new();
            for h in handles {
                names.insert(h.await.unwrap());
            }
            names
        });
        let allowed: HashSet<String> = (0..3).map(|i| format!("my-pool-{i}")).collect();
        assert!(names.is_subset(&allowed), "{names:?}");
    });
}
