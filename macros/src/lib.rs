//! Procedural macros for `csp`: `alt!`, `prialt!`, `par!`, `try_par!`, `#[csp::main]`
//! and `#[csp::test]`. Use them through the `csp` crate, which re-exports them with their
//! documentation.

mod alt;
mod entry;
mod par;

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

/// Runs futures as parallel processes and waits for all of them. See the `csp` crate.
#[proc_macro]
pub fn par(input: TokenStream) -> TokenStream {
    par::expand(input.into(), par::Kind::All).into()
}

/// As `par!`, for branches that return `Result`: the first `Err` cancels the others and
/// is returned. See the `csp` crate.
#[proc_macro]
pub fn try_par(input: TokenStream) -> TokenStream {
    par::expand(input.into(), par::Kind::Try).into()
}

/// Runs an `async fn main` on a csp runtime. See the `csp` crate.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(entry::Kind::Main, args.into(), item.into()).into()
}

/// Runs an `async fn` test on a csp runtime. See the `csp` crate.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(entry::Kind::Test, args.into(), item.into()).into()
}
