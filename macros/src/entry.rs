//! `#[csp::main]` and `#[csp::test]`: the `async fn` becomes a plain `fn` of the same
//! name, visibility and attributes that builds a runtime and `block_on`s the body.
//!
//! On an error the function is still emitted, beside the `compile_error!`, so the rest of
//! the crate (and an editor) keeps seeing it: as an entry point with the default
//! configuration when only the arguments are wrong, as written (see [`unchanged`]) when
//! the function itself does not fit.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::quote;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ItemFn, Lit, Meta, Token};

/// Which attribute is being expanded.
pub(crate) enum Kind {
    /// `#[csp::main]`: runs the body, then shuts the runtime down with a timeout.
    Main,
    /// `#[csp::test]`: a `#[test]` that runs the body.
    Test,
}

impl Kind {
    /// The attribute as users write it, for error messages.
    fn attribute(&self) -> &'static str {
        match self {
            Kind::Main => "#[csp::main]",
            Kind::Test => "#[csp::test]",
        }
    }
}

/// What the arguments configure.
#[derive(Default)]
struct Config {
    worker_threads: Option<usize>,
    /// `console = "addr"`: the runtime serves its console there.
    console: Option<syn::LitStr>,
}

/// Expands `#[csp::main]` or `#[csp::test]` with arguments `args` on `item`.
pub(crate) fn expand(kind: Kind, args: TokenStream, item: TokenStream) -> TokenStream {
    let function = match syn::parse2::<ItemFn>(item.clone()) {
        Ok(function) => function,
        Err(_) => {
            let err = syn::Error::new(
                Span::call_site(),
                format!("{} goes on an `async fn`", kind.attribute()),
            );
            return with_error(item, err);
        }
    };
    let config = parse_args(&kind, args);
    if let Err(mut errors) = check_function(&kind, &function) {
        if let Err(args) = config {
            errors.combine(args);
        }
        return with_error(unchanged(&kind, function), errors);
    }
    match config {
        Ok(config) => entry_point(&kind, &config, function),
        Err(err) => with_error(entry_point(&kind, &Config::default(), function), err),
    }
}

/// `function` as written, for when it does not fit `kind`, except for what would make
/// rustc add errors that only distract from ours: a `#[test]` beside `#[csp::test]` is
/// dropped, and an `async fn main` (rustc rejects an `async` entry point) goes inside a
/// plain `fn main()`.
fn unchanged(kind: &Kind, mut function: ItemFn) -> TokenStream {
    if let Kind::Test = kind {
        function.attrs.retain(|attr| !attr.path().is_ident("test"));
    }
    if function.sig.ident != "main" || function.sig.asyncness.is_none() {
        return quote!(#function);
    }
    let attrs = std::mem::take(&mut function.attrs);
    let vis = &function.vis;
    quote! {
        #(#attrs)*
        #vis fn main() {
            #function
        }
    }
}

/// `tokens`, preceded by the `compile_error!`s of `err`.
fn with_error(tokens: TokenStream, err: syn::Error) -> TokenStream {
    let error = err.to_compile_error();
    quote! { #error #tokens }
}

/// Parses `worker_threads = N` and `console = "addr"` (each optional), reporting every
/// wrong argument.
fn parse_args(kind: &Kind, args: TokenStream) -> syn::Result<Config> {
    let expected = format!(
        "{} takes only `worker_threads = N` and `console = \"addr\"`",
        kind.attribute()
    );
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated
        .parse2(args)
        .map_err(|err| syn::Error::new(err.span(), format!("{err}: {expected}")))?;
    let mut config = Config::default();
    let mut errors = Errors::default();
    for meta in metas {
        let path = meta.path();
        let known = ["worker_threads", "console"]
            .into_iter()
            .find(|name| path.is_ident(name));
        let Some(name) = known else {
            let name: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            errors.push(syn::Error::new_spanned(
                path,
                format!("unknown argument `{}`: {expected}", name.join("::")),
            ));
            continue;
        };
        let Meta::NameValue(arg) = meta else {
            let form = match name {
                "console" => "expected `console = \"addr\"`, e.g. `console = \"127.0.0.1:6669\"`",
                _ => "expected `worker_threads = N`, with N an integer >= 1",
            };
            errors.push(syn::Error::new_spanned(meta, form));
            continue;
        };
        let given_twice = match name {
            "console" => config.console.is_some(),
            _ => config.worker_threads.is_some(),
        };
        if given_twice {
            errors.push(syn::Error::new_spanned(
                arg.path,
                format!("`{name}` is given twice"),
            ));
            continue;
        }
        let parsed = match name {
            "console" => console(&arg.value).map(|addr| config.console = Some(addr)),
            _ => worker_threads(&arg.value).map(|n| config.worker_threads = Some(n)),
        };
        if let Err(err) = parsed {
            errors.push(err);
        }
    }
    errors.or(config)
}

/// The value of `console = "addr"`: a string literal, checked as an address when the
/// runtime is built (it may name a host).
fn console(value: &Expr) -> syn::Result<syn::LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(addr),
            ..
        }) if !addr.value().is_empty() => Ok(addr.clone()),
        _ => Err(syn::Error::new_spanned(
            value,
            "`console` takes the address to serve on as a string, e.g. \
             `console = \"127.0.0.1:6669\"`",
        )),
    }
}

/// The value of `worker_threads = N`: an integer literal >= 1.
fn worker_threads(value: &Expr) -> syn::Result<usize> {
    let Expr::Lit(ExprLit {
        lit: Lit::Int(int), ..
    }) = value
    else {
        return Err(syn::Error::new_spanned(
            value,
            "`worker_threads` takes an integer literal, e.g. `worker_threads = 4`",
        ));
    };
    if !matches!(int.suffix(), "" | "usize") {
        return Err(syn::Error::new_spanned(
            int,
            "`worker_threads` is a `usize`: drop the suffix",
        ));
    }
    match int.base10_parse::<usize>()? {
        0 => Err(syn::Error::new_spanned(
            int,
            "`worker_threads` must be at least 1: a runtime needs a worker thread",
        )),
        n => Ok(n),
    }
}

/// Checks that `function` is an `async fn` without parameters (and, for a test, without
/// a `#[test]` of its own), reporting every problem.
fn check_function(kind: &Kind, function: &ItemFn) -> syn::Result<()> {
    let attribute = kind.attribute();
    let sig = &function.sig;
    let mut errors = Errors::default();
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new_spanned(
            sig.fn_token,
            format!("{attribute} goes on an `async fn`: add `async` before `fn`"),
        ));
    }
    if !sig.inputs.is_empty() {
        errors.push(syn::Error::new_spanned(
            &sig.inputs,
            match kind {
                Kind::Main => format!(
                    "a {attribute} function takes no parameters (read command-line \
                     arguments with `std::env::args()`)"
                ),
                Kind::Test => format!("a {attribute} function takes no parameters"),
            },
        ));
    }
    if let Kind::Test = kind {
        for attr in function
            .attrs
            .iter()
            .filter(|attr| attr.path().is_ident("test"))
        {
            errors.push(syn::Error::new_spanned(
                attr,
                "#[csp::test] already makes the function a test: remove this `#[test]`",
            ));
        }
    }
    errors.or(())
}

/// Errors gathered to be reported together.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, err: syn::Error) {
        match &mut self.0 {
            Some(errors) => errors.combine(err),
            None => self.0 = Some(err),
        }
    }

    /// The errors, or `value` if there were none.
    fn or<T>(self, value: T) -> syn::Result<T> {
        match self.0 {
            Some(errors) => Err(errors),
            None => Ok(value),
        }
    }
}

/// The plain `fn` that runs the body of `function` on a new runtime.
fn entry_point(kind: &Kind, config: &Config, function: ItemFn) -> TokenStream {
    let ItemFn {
        attrs,
        vis,
        mut sig,
        block,
    } = function;
    // syn keeps the body's inner attributes (`#![allow(..)]`, `//!`) with the outer
    // ones: they go back inside the body, at its head.
    let (inner, outer): (Vec<_>, Vec<_>) = attrs
        .into_iter()
        .partition(|attr| matches!(attr.style, syn::AttrStyle::Inner(_)));
    sig.asyncness = None;
    let threads = config.worker_threads.map(|n| {
        let n = Literal::usize_unsuffixed(n);
        quote!(.worker_threads(#n))
    });
    let console = config.console.as_ref().map(|addr| quote!(.console(#addr)));
    let failed = format!("csp: {} could not start its runtime", kind.attribute());
    let runtime = quote! {
        ::csp::Builder::new()
            #threads
            #console
            .deadlock_detection(true)
            .build()
            .expect(#failed)
    };
    // The body's output is returned through a local located at the body's last statement,
    // so that a mismatch with the declared return type is reported there, not at the
    // attribute.
    let last = block
        .stmts
        .last()
        .map_or(block.brace_token.span.close(), Spanned::span);
    let output = Ident::new("__csp_output", Span::mixed_site().located_at(last));
    match kind {
        // The runtime shuts down with a bound whether the body returns or panics: a
        // detached process that never ends must not hold up the exit (API.md).
        Kind::Main => quote! {
            #(#outer)*
            #vis #sig {
                #(#inner)*
                let #output = ::csp::__private::run_main(#runtime, async move #block);
                #output
            }
        },
        // The runtime is dropped as usual after a body that returns, and shut down with
        // a bound after one that panics: a stuck worker must not hide the failure.
        Kind::Test => quote! {
            #[::core::prelude::v1::test]
            #(#outer)*
            #vis #sig {
                #(#inner)*
                let #output = ::csp::__private::run_test(#runtime, async move #block);
                #output
            }
        },
    }
}
