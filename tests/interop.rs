//! csp from outside csp: JoinHandles awaited by tokio and by `futures`' executor, spawns
//! from tokio tasks and plain threads (onto the default runtime), and csp processes
//! awaiting futures that tokio wakes.

use std::future::Future;

use futures::task::LocalSpawnExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

mod common;

use common::{bounded, thread_name};

/// Bounds an async test: fails it after `secs` seconds instead of hanging.
async fn within<T>(secs: u64, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("timed out after {secs} s: a JoinHandle was never woken?"))
}

fn is_default_worker(name: &str) -> bool {
    name.strip_prefix("csp-worker-")
        .is_some_and(|n| n.parse::<usize>().is_ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_handle_awaited_in_tokio_multi_thread() {
    within(20, async {
        // csp::spawn from a tokio task goes to csp's default runtime.
        let handle = csp::spawn(async {
            csp::yield_now().await;
            thread_name()
        });
        let name = handle.await.unwrap();
        assert!(is_default_worker(&name), "{name}");
        // Handles of processes that finish later, awaited concurrently.
        let handles: Vec<_> = (0..100u64)
            .map(|i| {
                csp::spawn(async move {
                    for _ in 0..i % 5 {
                        csp::yield_now().await;
                    }
                    i
                })
            })
            .collect();
        let outs = futures::future::join_all(handles).await;
        let sum: u64 = outs.into_iter().map(Result::unwrap).sum();
        assert_eq!(sum, 4950);
    })
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn join_handle_awaited_in_tokio_current_thread() {
    within(20, async {
        let gate = Arc::new(tokio::sync::Notify::new());
        let g = gate.clone();
        // Pending until tokio's task notifies: the csp process is woken by tokio's
        // Notify, the tokio task by csp's completion.
        let handle = csp::spawn(async move {
            g.notified().await;
            thread_name()
        });
        tokio::task::yield_now().await;
        assert!(!handle.is_finished());
        gate.notify_one();
        let name = handle.await.unwrap();
        assert!(is_default_worker(&name), "{name}");

        let err = csp::spawn(async { panic!("in csp") }).await.unwrap_err();
        assert!(err.is_panic());
        let pending = csp::spawn(std::future::pending::<()>());
        pending.abort();
        assert!(pending.await.unwrap_err().is_cancelled());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csp_spawn_from_a_tokio_task() {
    within(20, async {
        let from_task = tokio::spawn(async {
            let handle =
                csp::spawn(async { (thread_name(), csp::Handle::try_current().is_some()) });
            handle.await.unwrap()
        })
        .await
        .unwrap();
        assert!(is_default_worker(&from_task.0), "{}", from_task.0);
        assert!(from_task.1, "a csp process is inside a runtime");
        assert!(csp::Handle::try_current().is_none(), "a tokio task is not");
        // spawn_blocking too.
        let name = tokio::spawn(async { csp::spawn_blocking(thread_name).await.unwrap() })
            .await
            .unwrap();
        assert!(name.contains("blocking"), "{name}");
    })
    .await;
}

#[test]
fn csp_spawn_from_a_plain_thread() {
    bounded(20, || {
        let handles = thread::spawn(|| {
            assert!(csp::Handle::try_current().is_none());
            (0..10u32)
                .map(|i| csp::spawn(async move { (i, thread_name()) }))
                .collect::<Vec<_>>()
        })
        .join()
        .unwrap();
        for (i, h) in handles.into_iter().enumerate() {
            let (j, name) = futures::executor::block_on(h).unwrap();
            assert_eq!(j as usize, i);
            assert!(is_default_worker(&name), "{name}");
        }
    });
}

#[test]
fn a_csp_process_awaits_a_tokio_oneshot() {
    bounded(20, || {
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let process = csp::spawn(async move { rx.await.unwrap() + 1 });
        // The value comes from a tokio task, after a tokio timer: tokio wakes the process.
        tokio_rt.spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            tx.send(41).unwrap();
        });
        assert_eq!(futures::executor::block_on(process).unwrap(), 42);
    });
}

#[test]
fn a_csp_process_awaits_a_tokio_join_handle() {
    bounded(20, || {
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let tokio_tasks: Vec<_> = (0..10u64)
            .map(|i| {
                tokio_rt.spawn(async move {
                    tokio::time::sleep(Duration::from_millis(5 * i)).await;
                    i * i
                })
            })
            .collect();
        let process = csp::spawn(async move {
            let mut sum = 0;
            for t in tokio_tasks {
                sum += t.await.unwrap();
            }
            sum
        });
        assert_eq!(futures::executor::block_on(process).unwrap(), 285);
    });
}

#[test]
fn csp_and_tokio_ping_pong() {
    bounded(20, || {
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let (to_csp, mut csp_rx) = tokio::sync::mpsc::channel::<u32>(1);
        let (to_tokio, mut tokio_rx) = tokio::sync::mpsc::channel::<u32>(1);
        let echo = tokio_rt.spawn(async move {
            while let Some(v) = tokio_rx.recv().await {
                if to_csp.send(v + 1).await.is_err() {
                    break;
                }
            }
        });
        let process = csp::spawn(async move {
            let mut v = 0;
            for _ in 0..500 {
                to_tokio.send(v).await.unwrap();
                v = csp_rx.recv().await.unwrap();
            }
            v
        });
        assert_eq!(futures::executor::block_on(process).unwrap(), 500);
        tokio_rt.block_on(echo).unwrap();
    });
}

#[test]
fn futures_executor_awaits_a_join_handle() {
    bounded(20, || {
        // Finished before it is awaited.
        let done = csp::spawn(async { 1u8 });
        while !done.is_finished() {
            thread::yield_now();
        }
        assert_eq!(futures::executor::block_on(done).unwrap(), 1);
        // Finished while awaited: the csp worker wakes the futures executor's thread.
        let (tx, rx) = futures::channel::oneshot::channel::<u8>();
        let later = csp::spawn(async move { rx.await.unwrap() * 2 });
        let sender = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            tx.send(21).unwrap();
        });
        assert_eq!(futures::executor::block_on(later).unwrap(), 42);
        sender.join().unwrap();
        // Many at once, awaited concurrently by futures' single-threaded pool.
        let mut pool = futures::executor::LocalPool::new();
        let total = Arc::new(AtomicUsize::new(0));
        for i in 0..50usize {
            let total = total.clone();
            let handle = csp::spawn(async move {
                csp::yield_now().await;
                i
            });
            pool.spawner()
                .spawn_local(async move {
                    total.fetch_add(handle.await.unwrap(), Ordering::SeqCst);
                })
                .unwrap();
        }
        pool.run();
        assert_eq!(total.load(Ordering::SeqCst), 1225);
    });
}

#[test]
fn yield_now_works_under_foreign_executors() {
    bounded(20, || {
        futures::executor::block_on(async {
            for _ in 0..3 {
                csp::yield_now().await;
            }
        });
        let tokio_rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        tokio_rt.block_on(async {
            for _ in 0..3 {
                csp::yield_now().await;
            }
        });
    });
}

#[test]
fn runtime_block_on_awaits_foreign_futures() {
    bounded(20, || {
        let rt = csp::Runtime::builder().worker_threads(1).build().unwrap();
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<&str>();
        tokio_rt.spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            tx.send("from tokio").unwrap();
        });
        assert_eq!(rt.block_on(rx).unwrap(), "from tokio");
        // And csp::block_on a tokio JoinHandle.
        let task = tokio_rt.spawn(async { 7 });
        assert_eq!(csp::block_on(task).unwrap(), 7);
    });
}
