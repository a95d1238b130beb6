// `#[csp::main]` fits any parameterless `async fn`: it keeps the name, the visibility,
// the attributes and the return type, including `impl Trait`. `#[csp::test]` compiles
// in any crate, with its arguments and beside other attributes.
mod entry {
    /// Runs the service.
    #[csp::main(worker_threads = 1)]
    #[inline(never)]
    pub async fn serve() -> impl std::fmt::Debug {
        csp::spawn(async { 6 * 7 }).await.unwrap()
    }

    #[csp::main(worker_threads = 3usize)]
    pub(crate) async fn early_return() -> u8 {
        if csp::spawn(async { true }).await.unwrap() {
            return 1;
        }
        2
    }
}

#[csp::test]
async fn a_test() {}

#[csp::test(worker_threads = 2)]
#[should_panic(expected = "boom")]
async fn a_panicking_test() {
    panic!("boom");
}

fn main() {
    assert_eq!(format!("{:?}", entry::serve()), "42");
    assert_eq!(entry::early_return(), 1);
}
