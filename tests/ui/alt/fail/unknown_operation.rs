async fn f(rx: csp::Receiver<u8>) {
    csp::alt! {
        receive(rx) -> _msg => {}
    }
}

fn main() {}
