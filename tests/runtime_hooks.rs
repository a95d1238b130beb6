//! `Builder::on_thread_start` and `on_thread_stop`: run once on every worker and every
//! blocking-pool thread, the start hook before the thread runs any work; a panicking
//! hook neither stops a thread nor loses a process; and the recipe of the docs that
//! puts csp's threads in a tokio runtime's context, so tokio sockets work in processes.
//!
//! Every test runs under a watchdog (`common::bounded`).

mod common;

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use common::{Counter, bounded, thread_name, wait_until};

const LIMIT: u64 = 30;

thread_local! {
    /// Set by the start hook on the thread it ran on.
    static STARTED: Cell<bool> = const { Cell::new(false) };
}

/// The names of the threads each hook ran on.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self) {
        self.0.lock().unwrap().push(thread_name());
    }

    fn sorted(&self) -> Vec<String> {
        let mut names = self.0.lock().unwrap().clone();
        names.sort();
        names
    }
}

#[test]
fn hooks_run_once_on_every_worker_and_blocking_thread() {
    let (starts, stops, in_runtime) = bounded(LIMIT, || {
        let starts = Log::default();
        let stops = Log::default();
        let in_runtime = Counter::new();
        let rt = {
            let (starts, stops, in_runtime) = (starts.clone(), stops.clone(), in_runtime.clone());
            csp::Runtime::builder()
                .worker_threads(3)
                .thread_name("hooked")
                .on_thread_start(move || {
                    assert!(!STARTED.get(), "the start hook ran twice on one thread");
                    STARTED.set(true);
                    if csp::Handle::try_current().is_some() {
                        in_runtime.incr();
                    }
                    starts.push();
                })
                .on_thread_stop(move || {
                    assert!(
                        STARTED.get(),
                        "the stop hook ran where the start hook did not"
                    );
                    stops.push();
                })
                .build()
                .unwrap()
        };
        // Work on every worker (a barrier that needs all three at once) and on two
        // blocking-pool threads (both closures run at once), each checking that its
        // thread's start hook ran first.
        rt.block_on(async {
            let workers = Arc::new(Barrier::new(3));
            let on_workers = csp::par!(for _ in 0..3 => {
                let workers = workers.clone();
                async move {
                    workers.wait();
                    STARTED.get()
                }
            });
            assert_eq!(on_workers, [true; 3]);
            let blocking = Arc::new(Barrier::new(2));
            let closures: Vec<_> = (0..2)
                .map(|_| {
                    let blocking = blocking.clone();
                    csp::spawn_blocking(move || {
                        blocking.wait();
                        STARTED.get()
                    })
                })
                .collect();
            for closure in closures {
                assert!(closure.await.unwrap());
            }
        });
        rt.shutdown_timeout(Duration::from_secs(10));
        (starts.sorted(), stops.sorted(), in_runtime.get())
    });
    let expected = [
        "hooked-0",
        "hooked-1",
        "hooked-2",
        "hooked-blocking-1",
        "hooked-blocking-2",
    ];
    assert_eq!(starts, expected);
    assert_eq!(stops, expected);
    assert_eq!(in_runtime, 5);
}

#[test]
fn a_blocking_thread_retired_when_idle_runs_its_stop_hook() {
    // The pool retires a thread after 10 s idle.
    bounded(60, || {
        let stops = Counter::new();
        let counter = stops.clone();
        let rt = csp::Runtime::builder()
            .worker_threads(1)
            .on_thread_stop(move || {
                if thread_name().contains("blocking") {
                    counter.incr();
                }
            })
            .build()
            .unwrap();
        rt.block_on(async { csp::spawn_blocking(|| ()).await.unwrap() });
        wait_until(40, "the idle blocking thread has exited", || {
            stops.get() == 1
        });
        drop(rt);
        assert_eq!(stops.get(), 1);
    });
}

#[test]
fn panicking_hooks_are_reported_and_lose_nothing() {
    let (sum, starts, stops) = bounded(LIMIT, || {
        let starts = Counter::new();
        let stops = Counter::new();
        let rt = {
            let (starts, stops) = (starts.clone(), stops.clone());
            csp::Runtime::builder()
                .worker_threads(2)
                .on_thread_start(move || {
                    starts.incr();
                    panic!("start hook fails");
                })
                .on_thread_stop(move || {
                    stops.incr();
                    panic!("stop hook fails");
                })
                .build()
                .unwrap()
        };
        let sum = rt.block_on(async {
            let spawned: u64 = csp::par!(for i in 0..100u64 => async move { i })
                .into_iter()
                .sum();
            spawned + csp::spawn_blocking(|| 1000).await.unwrap()
        });
        rt.shutdown_timeout(Duration::from_secs(10));
        (sum, starts.get(), stops.get())
    });
    assert_eq!(sum, 4950 + 1000);
    assert_eq!(starts, 3);
    assert_eq!(stops, 3);
}

// The recipe of `Builder::on_thread_start`'s docs: each csp thread enters a tokio
// runtime's context and keeps the guard in a thread-local until its stop hook.
thread_local! {
    static TOKIO_CONTEXT: RefCell<Option<tokio::runtime::EnterGuard<'static>>> =
        const { RefCell::new(None) };
}

#[test]
fn hooks_enter_tokio_so_tokio_sockets_work_in_processes() {
    let (greeting, blocking_sees_tokio) = bounded(LIMIT, || {
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_io()
            .build()
            .unwrap();
        // 'static, for guards that live in a thread-local: one handle, kept in a static
        // (reachable, so no leak checker reports it).
        static TOKIO_HANDLE: std::sync::OnceLock<tokio::runtime::Handle> =
            std::sync::OnceLock::new();
        let tokio: &'static tokio::runtime::Handle =
            TOKIO_HANDLE.get_or_init(|| tokio_rt.handle().clone());
        let rt = csp::Runtime::builder()
            .worker_threads(2)
            .on_thread_start(move || {
                TOKIO_CONTEXT.with(|guard| *guard.borrow_mut() = Some(tokio.enter()));
            })
            .on_thread_stop(|| {
                let guard = TOKIO_CONTEXT.with(|guard| guard.borrow_mut().take());
                drop(guard);
            })
            .build()
            .unwrap();
        let result = rt.block_on(async {
            let server = csp::spawn(async {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                let client = std::thread::spawn(move || {
                    use std::io::{Read, Write};
                    let mut conn = std::net::TcpStream::connect(addr).unwrap();
                    conn.write_all(b"hello").unwrap();
                    let mut back = String::new();
                    conn.read_to_string(&mut back).unwrap();
                    back
                });
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut got = [0; 5];
                conn.read_exact(&mut got).await.unwrap();
                conn.write_all(b"tokio says hi to ").await.unwrap();
                conn.write_all(&got).await.unwrap();
                drop(conn);
                client
            });
            let client = server.await.unwrap();
            let blocking_sees_tokio =
                csp::spawn_blocking(|| tokio::runtime::Handle::try_current().is_ok())
                    .await
                    .unwrap();
            (client, blocking_sees_tokio)
        });
        let (client, blocking_sees_tokio) = result;
        // csp's threads drop their guards before tokio's runtime goes.
        rt.shutdown_timeout(Duration::from_secs(10));
        drop(tokio_rt);
        (client.join().unwrap(), blocking_sees_tokio)
    });
    assert_eq!(greeting, "tokio says hi to hello");
    assert!(blocking_sees_tokio);
}

#[test]
fn enter_tokio_puts_every_thread_in_tokio_context_before_the_start_hook() {
    let (hook_saw_tokio, slept, blocking_sees_tokio, stop_saw_tokio) = bounded(30, || {
        let tokio_rt = tokio::runtime::Runtime::new().unwrap();
        let hook_saw_tokio = Counter::new();
        let stop_saw_tokio = Counter::new();
        let rt = {
            let (start, stop) = (hook_saw_tokio.clone(), stop_saw_tokio.clone());
            csp::Runtime::builder()
                .worker_threads(2)
                .enter_tokio(tokio_rt.handle().clone())
                .on_thread_start(move || {
                    if tokio::runtime::Handle::try_current().is_ok() {
                        start.incr();
                    }
                })
                .on_thread_stop(move || {
                    if tokio::runtime::Handle::try_current().is_ok() {
                        stop.incr();
                    }
                })
                .build()
                .unwrap()
        };
        let (slept, blocking_sees_tokio) = rt.block_on(async {
            let slept = csp::spawn(async {
                let start = std::time::Instant::now();
                tokio::time::sleep(Duration::from_millis(2)).await;
                start.elapsed() >= Duration::from_millis(2)
            })
            .await
            .unwrap();
            let blocking = csp::spawn_blocking(|| tokio::runtime::Handle::try_current().is_ok())
                .await
                .unwrap();
            (slept, blocking)
        });
        rt.shutdown_timeout(Duration::from_secs(10));
        drop(tokio_rt);
        (
            hook_saw_tokio.get(),
            slept,
            blocking_sees_tokio,
            stop_saw_tokio.get(),
        )
    });
    // Two workers and one blocking-pool thread, each in tokio's context in both hooks.
    assert_eq!(hook_saw_tokio, 3);
    assert_eq!(stop_saw_tokio, 3);
    assert!(slept && blocking_sees_tokio);
}

#[test]
fn what_a_stop_hook_wakes_is_not_left_behind() {
    // The stop hook closes a channel that thousands of sleeping processes wait on, while
    // the shutdown is still cancelling them: those it wakes first go to the stopping
    // worker's own queue. Left there, each would keep its process, and through it the
    // runtime's state (and the hooks it holds), alive for good.
    bounded(LIMIT, || {
        const WAITING: usize = 5_000;
        let drops = Counter::new();
        let held = common::Tracked::new(0, &drops);
        let (tx, rx) = csp::channel::<()>();
        let tx = Mutex::new(Some(tx));
        let rt = csp::Runtime::builder()
            .worker_threads(1)
            .on_thread_stop(move || {
                let _ = &held;
                drop(tx.lock().unwrap().take());
            })
            .build()
            .unwrap();
        let handles: Vec<_> = (0..WAITING)
            .map(|_| {
                let rx = rx.clone();
                rt.spawn(async move { rx.recv().await.is_err() })
            })
            .collect();
        drop(rx);
        wait_until(10, "every process waits", || {
            rt.metrics().processes_alive == WAITING as u64
                && rt
                    .processes()
                    .iter()
                    .all(|p| p.state == csp::ProcessState::Sleeping)
        });
        drop(rt);
        for handle in handles {
            // Woken by the hook and run to the end, or cancelled by the shutdown.
            let _ = csp::block_on(handle);
        }
        wait_until(10, "the runtime's state, hooks included, is freed", || {
            drops.get() == 1
        });
    });
}

#[test]
fn block_on_of_another_runtime_in_a_hook_puts_the_thread_in_that_runtime() {
    // Inside runtime `a`'s `block_on`, called from a start hook on runtime `b`'s worker,
    // the thread is in `a` (API.md): a spawn goes to `a`, and a timer channel made there
    // (`a`'s) is armed in `a`'s wheel, so that `a`'s deadlock detection, which sees the
    // `block_on` waiting on that channel, knows a timer will end the wait.
    bounded(30, || {
        let a = Arc::new(
            csp::Runtime::builder()
                .worker_threads(1)
                .thread_name("hook-a")
                .deadlock_grace(Duration::from_millis(20))
                .build()
                .unwrap(),
        );
        let seen = Arc::new(Mutex::new(None));
        let b = {
            let (a, seen) = (a.clone(), seen.clone());
            csp::Runtime::builder()
                .worker_threads(1)
                .thread_name("hook-b")
                .on_thread_start(move || {
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        a.block_on(async {
                            let ran_on = csp::spawn(async { thread_name() }).await.unwrap();
                            let fired = csp::after(Duration::from_millis(200)).recv().await;
                            (ran_on, fired.is_ok())
                        })
                    }));
                    *seen.lock().unwrap() = Some(outcome.map_err(|_| "block_on panicked"));
                })
                .build()
                .unwrap()
        };
        wait_until(20, "the hook's block_on returned", || {
            seen.lock().unwrap().is_some()
        });
        let (ran_on, fired) = seen.lock().unwrap().take().unwrap().unwrap();
        assert!(ran_on.starts_with("hook-a"), "spawned onto {ran_on}");
        assert!(fired, "the timer fired");
        drop(b);
    });
}

#[test]
fn a_process_woken_by_a_blocking_call_in_a_hook_runs_on_another_worker() {
    // The blocking calls mark the thread as polling.
    hook_waits_for_a_process(false);
}

#[test]
fn a_process_woken_by_its_own_runtimes_block_on_in_a_hook_runs_on_another_worker() {
    // `block_on` marks the thread as polling for the worker's own runtime.
    hook_waits_for_a_process(true);
}

/// A start hook on one worker sends to a process of its own runtime, then waits for its
/// answer, with the blocking channel calls or inside the runtime's `block_on`. The wake
/// used to hand the process to the hooked worker's handoff slot, which only that
/// worker's loop empties, and the loop waited for the hook: a hang. It goes to a queue
/// the other worker takes from.
fn hook_waits_for_a_process(through_block_on: bool) {
    bounded(30, move || {
        let (requests, incoming) = csp::channel::<csp::Sender<u32>>();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let go_rx = Mutex::new(Some(go_rx));
        // The hook's way to its own runtime, for `block_on`: taken by the hook.
        let itself: Arc<Mutex<Option<Arc<csp::Runtime>>>> = Arc::default();
        let answered = Arc::new(Mutex::new(None));
        let rt = {
            let (itself, answered) = (itself.clone(), answered.clone());
            Arc::new(
                csp::Runtime::builder()
                    .worker_threads(2)
                    .on_thread_start(move || {
                        // The first worker to start only.
                        let Some(go) = go_rx.lock().unwrap().take() else {
                            return;
                        };
                        go.recv().unwrap();
                        let (reply, answer) = csp::channel();
                        let answer = match itself.lock().unwrap().take() {
                            Some(rt) => rt.block_on(async {
                                requests.send(reply).await.unwrap();
                                answer.recv().await
                            }),
                            None => {
                                requests.send_blocking(reply).unwrap();
                                answer.recv_blocking()
                            }
                        };
                        *answered.lock().unwrap() = Some(answer);
                    })
                    .build()
                    .unwrap(),
            )
        };
        if through_block_on {
            *itself.lock().unwrap() = Some(rt.clone());
        }
        let _server = rt.spawn(async move {
            while let Ok(reply) = incoming.recv().await {
                reply.send(7).await.unwrap();
            }
        });
        // The server sleeps on its channel before the hook sends, so the send wakes it.
        wait_until(20, "the server waits for a request", || {
            rt.processes()
                .iter()
                .any(|p| p.state == csp::ProcessState::Sleeping)
        });
        go_tx.send(()).unwrap();
        wait_until(20, "the hook's request was answered", || {
            answered.lock().unwrap().is_some()
        });
        assert_eq!(answered.lock().unwrap().take(), Some(Ok(7)));
        // The hook let go of its `Arc`: this is the last.
        Arc::into_inner(rt).expect("the hook dropped its runtime");
    });
}

#[test]
fn a_stop_hook_may_wait_on_a_timer_under_another_executor() {
    // The hook runs on the worker's thread while its runtime shuts down: its timer moves
    // to the default runtime and fires (it is no process of the runtime going, whose
    // timers are left pending until the process is dropped).
    bounded(LIMIT, || {
        let slept = Counter::new();
        let rt = {
            let slept = slept.clone();
            csp::Runtime::builder()
                .worker_threads(1)
                .on_thread_stop(move || {
                    futures::executor::block_on(csp::sleep(Duration::from_millis(5)));
                    futures::executor::block_on(async {
                        let _ = csp::after(Duration::from_millis(5)).recv().await;
                    });
                    slept.incr();
                })
                .build()
                .unwrap()
        };
        rt.block_on(async {});
        drop(rt);
        assert_eq!(slept.get(), 1);
    });
}
