async fn f(tx: csp::Sender<u8>) {
    csp::alt! {
        closed(tx) -> _x => {}
    }
}

fn main() {}
