// Inner attributes and inner doc comments at the head of the body stay there, applying
// to the whole function, for `#[csp::main]` and `#[csp::test]` alike.
#![deny(unused_variables)]

#[csp::main]
async fn main() {
    //! The program's entry point.
    #![allow(unused_variables)]
    let unused = 1;
}

#[csp::test]
async fn a_test() {
    #![allow(unused_variables)]
    let unused = 1;
}
