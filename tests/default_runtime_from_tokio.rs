//! The default runtime, configured with `Builder::build_default` and driven from tokio:
//! a tokio task reads its metrics and dumps through `Handle`, and a deadlock among the
//! processes it spawned is reported through `on_deadlock`, with no `block_on` anywhere.
//! (One test: the default runtime is configured once per process.)

mod common;

use std::time::Duration;

use common::bounded;

#[test]
fn a_tokio_app_reads_metrics_and_hears_of_a_deadlock_on_the_default_runtime() {
    bounded(30, || {
        let (reports, reported) = std::sync::mpsc::channel::<String>();
        let handle = csp::Runtime::builder()
            .worker_threads(2)
            .deadlock_grace(Duration::from_millis(100))
            .on_deadlock(move |report| {
                let _ = reports.send(report.to_owned());
            })
            .build_default()
            .unwrap();
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (spawned, ids) = tokio.block_on(async move {
            // csp::spawn from a tokio task: the default runtime.
            let done = csp::spawn(async { 2 + 2 }).await.unwrap();
            assert_eq!(done, 4);
            // Two processes that wait for each other, set up by a process of the default
            // runtime (channels made in a tokio task would be foreign).
            let ids = csp::spawn(async {
                let (to_a, from_b) = csp::channel::<u8>();
                let (to_b, from_a) = csp::channel::<u8>();
                let a = csp::spawn(async move {
                    let _keep = to_b;
                    from_b.recv().await
                });
                let b = csp::spawn(async move {
                    let _keep = to_a;
                    from_a.recv().await
                });
                (a.id(), b.id())
            })
            .await
            .unwrap();
            let metrics = handle.metrics();
            assert_eq!(metrics.workers, 2);
            let dump = handle.processes();
            assert!(dump.iter().any(|p| p.id == ids.0));
            (metrics.spawned, ids)
        });
        assert!(spawned >= 4, "{spawned}");
        let report = reported
            .recv_timeout(Duration::from_secs(10))
            .expect("the deadlock on the default runtime was not reported");
        assert!(
            report.starts_with("csp: deadlock: all processes are asleep"),
            "{report}"
        );
        assert!(report.contains(&format!("process #{} ", ids.0)), "{report}");
        assert!(report.contains(&format!("process #{} ", ids.1)), "{report}");
    });
}
