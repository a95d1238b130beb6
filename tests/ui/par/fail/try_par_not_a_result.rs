async fn f() {
    let _ = csp::try_par!(async { Ok::<u8, String>(1) }, async { 2u8 });
}

fn main() {}
