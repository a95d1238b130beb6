// An unlabelled `break` or `continue` in FUTURE would act on par!'s own loop over the
// items: rejected, pointing at it. Inside a loop of FUTURE's own, or labelled, it is fine
// (tests/ui/par/pass/replicated.rs).
async fn run(stop: bool) {
    loop {
        let _: Vec<u32> = csp::par!(for i in 0..4u32 => {
            if stop {
                break;
            }
            async move { i }
        });
    }
}

async fn skip(skip: bool) {
    for _ in 0..2 {
        let _: Vec<u32> = csp::par!(for i in 0..4u32 => {
            if skip {
                continue;
            }
            async move { i }
        });
    }
}

fn main() {
    let _ = (run(false), skip(false));
}
