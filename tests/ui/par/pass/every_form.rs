// Every documented form: tuples of any length (trailing comma optional), branches of
// any `Send + 'static` future type, and the replicated form with a pattern, over any
// `IntoIterator`.
async fn double(x: u32) -> u32 {
    x * 2
}

async fn forms() {
    let () = csp::par!();
    let (a,): (u32,) = csp::par!(double(1));
    let (b, c): (u32, &str) = csp::par!(double(2), async { "two" });
    let (d, e, f): (u32, (), String) =
        csp::par!(double(3), async {}, async move { String::from("three") },);
    let squares: Vec<u32> = csp::par!(for i in 0..4u32 => async move { i * i });
    let pairs: Vec<u32> = csp::par!(
        for (i, s) in vec![(1, "a"), (2, "b")] => async move { i + s.len() as u32 },
    );
    let doubled: Vec<u32> = csp::par!(for i in [1, 2, 3] => double(i));
    let _ = (a, b, c, d, e, f, squares, pairs, doubled);
}

fn main() {
    csp::block_on(forms());
}
