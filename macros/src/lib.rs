//! Procedural macros for `csp`: `alt!` and `prialt!`. Use them through the `csp`
//! crate, which re-exports them with their documentation.

mod alt;

use proc_macro::TokenStream;

/// Waits for the first of several channel operations to be ready and runs its arm; among
/// arms ready at once, picks one uniformly at random. See the `csp` crate for the
/// syntax and rules.
#[proc_macro]
pub fn alt(input: TokenStream) -> TokenStream {
    alt::expand(input.into(), alt::Order::Fair).into()
}

/// As `alt!`, but among arms ready at once, picks the first in written order.
#[proc_macro]
pub fn prialt(input: TokenStream) -> TokenStream {
    alt::expand(input.into(), alt::Order::Written).into()
}
