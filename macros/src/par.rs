//! `par!` and `try_par!`: parsing into [`Par`], then the expansion onto
//! `csp::__private`: each branch spawned as a process into a `ParBranch`, all sharing
//! one `ParGroup` that hears of their failures, and one `ParJoin` awaiting them all.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, Pat, Token};

/// The syntax of the replicated form, for error messages.
const REPLICATED: &str = "par!(for PATTERN in ITERATOR => FUTURE)";

/// A whole `par!`.
enum Par {
    /// `par!(a, b, ..)`: a tuple of the outputs.
    Tuple(Vec<Expr>),
    /// `par!(for PATTERN in ITERATOR => FUTURE)`: a `Vec` of the outputs, in the
    /// iterator's order.
    Replicated(Box<Replicated>),
}

/// The replicated form: `FUTURE` run for each `PATTERN` the iterator yields.
struct Replicated {
    pat: Pat,
    iter: Expr,
    body: Expr,
}

impl Parse for Par {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.peek(Token![for]) {
            return parse_replicated(input);
        }
        let branches = Punctuated::<Expr, Token![,]>::parse_terminated_with(input, |input| {
            if input.peek(Token![for]) {
                let for_token: Token![for] = input.parse()?;
                return Err(syn::Error::new_spanned(
                    for_token,
                    format!("the replicated form `{REPLICATED}` must be par!'s only argument"),
                ));
            }
            input.parse()
        })?;
        Ok(Par::Tuple(branches.into_iter().collect()))
    }
}

/// Parses `for PATTERN in ITERATOR => FUTURE`, with an optional trailing comma.
fn parse_replicated(input: ParseStream<'_>) -> syn::Result<Par> {
    input.parse::<Token![for]>()?;
    let pat = Pat::parse_multi_with_leading_vert(input)?;
    if !input.peek(Token![in]) {
        return Err(syn::Error::new_spanned(
            &pat,
            format!("expected `in` after the pattern: `{REPLICATED}`"),
        ));
    }
    let in_token: Token![in] = input.parse()?;
    if input.is_empty() || input.peek(Token![=>]) {
        return Err(syn::Error::new_spanned(
            in_token,
            format!("expected an iterator after `in`: `{REPLICATED}`"),
        ));
    }
    let iter: Expr = input.parse()?;
    if !input.peek(Token![=>]) {
        return Err(if input.is_empty() {
            syn::Error::new_spanned(
                &iter,
                format!("expected `=> FUTURE` after the iterator: `{REPLICATED}`"),
            )
        } else {
            input.error(format!("expected `=>`: `{REPLICATED}`"))
        });
    }
    let arrow: Token![=>] = input.parse()?;
    if input.is_empty() {
        return Err(syn::Error::new_spanned(
            arrow,
            format!("expected the future each item runs after `=>`: `{REPLICATED}`"),
        ));
    }
    let body: Expr = input.parse()?;
    reject_loop_exits(&body)?;
    input.parse::<Option<Token![,]>>()?;
    if !input.is_empty() {
        return Err(input.error(format!(
            "unexpected tokens after the replicated branch: `{REPLICATED}` takes one \
             branch, run for each item"
        )));
    }
    Ok(Par::Replicated(Box::new(Replicated { pat, iter, body })))
}

/// Rejects an unlabelled `break` or `continue` in the replicated form's `FUTURE` that no
/// loop inside `FUTURE` takes: `FUTURE` is evaluated inside par!'s own loop over the
/// items, which would take it, silently, rather than the caller's loop. A labelled one
/// leaves par! for the caller's loop, which drops (and so aborts) the branches spawned
/// so far, as `?` or `return` there do: allowed.
fn reject_loop_exits(body: &Expr) -> syn::Result<()> {
    let mut finder = LoopExits::default();
    syn::visit::Visit::visit_expr(&mut finder, body);
    match finder.first {
        Some(span) => Err(syn::Error::new(
            span,
            format!(
                "this `break` or `continue` would act on par!'s own loop over the items, \
                 not on yours: `{REPLICATED}` evaluates FUTURE inside it. Give your loop a \
                 label (`'outer: loop`, then `break 'outer`), or decide before par!"
            ),
        )),
        None => Ok(()),
    }
}

/// Finds the first unlabelled `break` or `continue` outside every loop, closure, async
/// block and item of an expression.
#[derive(Default)]
struct LoopExits {
    first: Option<Span>,
}

impl<'ast> syn::visit::Visit<'ast> for LoopExits {
    fn visit_expr_break(&mut self, node: &'ast syn::ExprBreak) {
        if node.label.is_none() {
            self.first.get_or_insert(node.span());
        }
        syn::visit::visit_expr_break(self, node);
    }

    fn visit_expr_continue(&mut self, node: &'ast syn::ExprContinue) {
        if node.label.is_none() {
            self.first.get_or_insert(node.span());
        }
    }

    // Inside these, an unlabelled exit is theirs (or an error of its own).
    fn visit_expr_loop(&mut self, _: &'ast syn::ExprLoop) {}
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    fn visit_item(&mut self, _: &'ast syn::Item) {}

    // A `while` condition and a `for` iterator are outside their loop's body.
    fn visit_expr_while(&mut self, node: &'ast syn::ExprWhile) {
        self.visit_expr(&node.cond);
    }

    fn visit_expr_for_loop(&mut self, node: &'ast syn::ExprForLoop) {
        self.visit_expr(&node.expr);
    }
}

/// Which macro: what fails a branch, and what the join evaluates to.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// `par!`: a panic fails a branch; the outputs themselves.
    All,
    /// `try_par!`: a panic or an `Err`; `Ok` of the outputs, or the error.
    Try,
}

/// Expands a `par!` or `try_par!`.
pub(crate) fn expand(input: TokenStream, kind: Kind) -> TokenStream {
    match syn::parse2::<Par>(input) {
        Ok(par) => par.expand(kind),
        Err(err) => err.to_compile_error(),
    }
}

/// Spawns `branch` as a process of the group `group`. The call carries the branch's
/// span, so the process's `spawned_at` and any error about the branch (not a future, not
/// `Send`) point at it.
fn spawn(branch: &Expr, group: &TokenStream, kind: Kind) -> TokenStream {
    let kind = match kind {
        Kind::All => quote!(All),
        Kind::Try => quote!(Try),
    };
    quote_spanned! {branch.span()=>
        ::csp::__private::spawn_branch::<::csp::__private::#kind, _>(#group, #branch)
    }
}

impl Par {
    fn expand(&self, kind: Kind) -> TokenStream {
        let private = quote!(::csp::__private);
        let group = format_ident!("__csp_group", span = Span::mixed_site());
        let join = format_ident!("__csp_join", span = Span::mixed_site());
        // What the join's `Result` becomes: `par!`'s cannot be an error.
        let finish = |outputs: TokenStream| match kind {
            Kind::All => quote!(#private::into_ok(#outputs)),
            Kind::Try => outputs,
        };
        match self {
            Par::Tuple(branches) => {
                // `(ParBranch<A>, (ParBranch<B>, ()))`, built (and so spawned) in
                // written order, and the matching pattern for the outputs.
                let group_ref = quote!(&#group);
                let joined = branches.iter().rev().fold(quote!(()), |rest, branch| {
                    let spawn = spawn(branch, &group_ref, kind);
                    quote!((#spawn, #rest))
                });
                let outputs: Vec<_> = (0..branches.len())
                    .map(|i| format_ident!("__csp_output_{}", i, span = Span::mixed_site()))
                    .collect();
                let pattern = outputs
                    .iter()
                    .rev()
                    .fold(quote!(()), |rest, output| quote!((#output, #rest)));
                let result = finish(quote! {
                    ::core::result::Result::map(#join.await, |#pattern| (#(#outputs,)*))
                });
                quote! {{
                    let #group = #private::ParGroup::new();
                    let #join = #private::ParJoin::new(#joined, #group);
                    #result
                }}
            }
            Par::Replicated(replicated) => {
                let Replicated { pat, iter, body } = &**replicated;
                let items = format_ident!("__csp_items", span = Span::mixed_site());
                let branch = format_ident!("__csp_branch", span = Span::mixed_site());
                let spawn = spawn(body, &quote!(#join.group()), kind);
                let result = finish(quote!(#join.await));
                quote! {{
                    let #items = ::core::iter::IntoIterator::into_iter(#iter);
                    let mut #join = #private::ParJoin::with_capacity(
                        ::core::iter::Iterator::size_hint(&#items).0,
                        #private::ParGroup::new(),
                    );
                    for #pat in #items {
                        let #branch = #spawn;
                        #join.push(#branch);
                    }
                    #result
                }}
            }
        }
    }
}
