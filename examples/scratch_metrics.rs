#[path = "../benches/common/workloads.rs"]
mod workloads;
use workloads::*;
fn main() {
    let w: usize = std::env::var("W")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let only = std::env::var("ONLY").unwrap_or_default();
    let rt = csp::Runtime::builder().worker_threads(w).build().unwrap();
    for wl in CHANNEL_WORKLOADS {
        if !only.is_empty() && !only.split(',').any(|o| o == wl.name) {
            continue;
        }
        (wl.csp)(&rt);
        let a = rt.metrics();
        let t = std::time::Instant::now();
        (wl.csp)(&rt);
        let el = t.elapsed();
        let b = rt.metrics();
        println!(
            "{:10} {:8.2?} polls {:8} steals {:6} handoffs {:8} parks {:6}",
            wl.name,
            el,
            b.polls - a.polls,
            b.steals - a.steals,
            b.handoffs - a.handoffs,
            b.parks - a.parks
        );
    }
}
