// Every documented form of `par!` and `try_par!`: tuples of any length (trailing comma
// optional), branches of any `Send + 'static` future type, and the replicated form with
// a pattern, over any `IntoIterator`, with loops of its own or labelled exits in the
// future expression; `try_par!` with `?`.
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
    // `break` and `continue` of a loop inside the future expression, or labelled.
    let found: Vec<u32> = csp::par!(for i in 0..2u32 => {
        let mut n = i;
        while n < 10 {
            n += 3;
            if n % 2 == 0 {
                continue;
            }
            break;
        }
        async move { n }
    });
    let mut rounds = 0;
    'rounds: loop {
        rounds += 1;
        let _: Vec<u32> = csp::par!(for i in 0..2u32 => {
            if rounds > 1 {
                break 'rounds;
            }
            async move { i }
        });
    }
    let _ = (a, b, c, d, e, f, squares, pairs, doubled, found);
}

async fn checked(x: u32) -> Result<u32, String> {
    x.checked_mul(2).ok_or_else(|| format!("{x} is too large"))
}

async fn try_forms() -> Result<u32, String> {
    let nothing: Result<(), String> = csp::try_par!();
    nothing?;
    let (a,) = csp::try_par!(checked(1))?;
    let (b, c, d) = csp::try_par!(checked(2), async { Ok("two") }, async { Ok(()) },)?;
    let squares: Vec<u32> = csp::try_par!(for i in 0..4u32 => async move { Ok::<_, String>(i * i) })?;
    let doubled = csp::try_par!(for i in [1, 2, 3] => checked(i))?;
    let _ = (c, d);
    Ok(a + b + squares.iter().sum::<u32>() + doubled.iter().sum::<u32>())
}

fn main() {
    csp::block_on(forms());
    assert_eq!(csp::block_on(try_forms()), Ok(2 + 4 + 14 + 12));
}
