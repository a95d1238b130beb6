//! `alt!` and `prialt!`: parsing into [`Alt`], then the expansion onto
//! `csp::__private` (typed arms kept as locals, and a future choosing among them; an
//! alt of receives first tries them straight on the receivers).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Pat, Token, parenthesized};

/// Which ready arm fires.
#[derive(Clone, Copy)]
pub(crate) enum Order {
    /// Uniformly at random (`alt!`).
    Fair,
    /// The first in written order (`prialt!`).
    Written,
}

/// A whole `alt!`.
struct Alt {
    arms: Vec<Arm>,
}

/// One arm: an operation, an optional guard, and its body.
struct Arm {
    op: Op,
    guard: Option<Expr>,
    body: Expr,
}

/// The operation of an arm.
enum Op {
    Recv { end: Expr, pat: Pat },
    RecvAny { ends: Expr, pat: Pat },
    SendAny { ends: Expr, value: Expr, pat: Pat },
    Send { end: Expr, value: Expr, pat: Pat },
    Closed { end: Expr },
    After { duration: Expr },
    Default,
}

impl Parse for Alt {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut arms = Vec::new();
        let (mut default, mut after) = (false, false);
        while !input.is_empty() {
            let (arm, name) = parse_arm(input)?;
            let (seen, other) = match arm.op {
                Op::Default => (&mut default, after),
                Op::After { .. } => (&mut after, default),
                _ => {
                    arms.push(arm);
                    continue;
                }
            };
            if *seen {
                return Err(syn::Error::new(
                    name.span(),
                    format!("an alt! takes at most one `{name}` arm"),
                ));
            }
            if other {
                return Err(syn::Error::new(
                    name.span(),
                    "an alt! takes a `default` arm or an `after` arm, not both: `default` \
                     runs at once when no arm is ready, so the timeout could never fire",
                ));
            }
            *seen = true;
            arms.push(arm);
        }
        if arms.is_empty() {
            return Err(syn::Error::new(
                Span::call_site(),
                "an alt! needs at least one arm, e.g. `recv(rx) -> msg => { .. }`",
            ));
        }
        Ok(Alt { arms })
    }
}

/// Parses one arm and the comma after it; returns the arm and its operation's name.
fn parse_arm(input: ParseStream<'_>) -> syn::Result<(Arm, Ident)> {
    let name: Ident = input.parse()?;
    let op = match name.to_string().as_str() {
        "default" => Op::Default,
        "recv" => {
            let [end] = arguments(input, &name, ["rx"])?;
            Op::Recv {
                end,
                pat: binding(input, &name, "recv(rx) -> msg")?,
            }
        }
        "send" => {
            let [end, value] = arguments(input, &name, ["tx", "value"])?;
            Op::Send {
                end,
                value,
                pat: binding(input, &name, "send(tx, value) -> res")?,
            }
        }
        "closed" => {
            let [end] = arguments(input, &name, ["tx"])?;
            Op::Closed { end }
        }
        "after" => {
            let [duration] = arguments(input, &name, ["duration"])?;
            Op::After { duration }
        }
        "recv_any" => {
            let [ends] = arguments(input, &name, ["&rxs"])?;
            Op::RecvAny {
                ends,
                pat: binding(input, &name, "recv_any(&rxs) -> (i, msg)")?,
            }
        }
        "send_any" => {
            let [ends, value] = arguments(input, &name, ["&txs", "value"])?;
            Op::SendAny {
                ends,
                value,
                pat: binding(input, &name, "send_any(&txs, value) -> (i, res)")?,
            }
        }
        other => {
            return Err(syn::Error::new(
                name.span(),
                format!(
                    "unknown alt! operation `{other}`: expected recv, send, recv_any, \
                     send_any, closed, after or default"
                ),
            ));
        }
    };
    if !matches!(
        op,
        Op::Recv { .. } | Op::RecvAny { .. } | Op::Send { .. } | Op::SendAny { .. }
    ) && input.peek(Token![->])
    {
        let arrow: Token![->] = input.parse()?;
        return Err(syn::Error::new_spanned(
            arrow,
            format!("`{name}` arms have no result to bind: remove `-> ..`"),
        ));
    }
    let guard = if input.peek(Token![if]) {
        input.parse::<Token![if]>()?;
        Some(Expr::parse_without_eager_brace(input)?)
    } else {
        None
    };
    input.parse::<Token![=>]>()?;
    let body: Expr = input.parse()?;
    if !input.is_empty() {
        if matches!(body, Expr::Block(_)) {
            input.parse::<Option<Token![,]>>()?;
        } else {
            input.parse::<Token![,]>()?;
        }
    }
    Ok((Arm { op, guard, body }, name))
}

/// The parenthesized operands of an operation, exactly `N` of them.
fn arguments<const N: usize>(
    input: ParseStream<'_>,
    name: &Ident,
    expected: [&str; N],
) -> syn::Result<[Expr; N]> {
    let content;
    let parens = parenthesized!(content in input);
    let args = Punctuated::<Expr, Token![,]>::parse_terminated(&content)?;
    let count = args.len();
    <[Expr; N]>::try_from(args.into_iter().collect::<Vec<_>>()).map_err(|_| {
        syn::Error::new(
            parens.span.join(),
            format!(
                "`{name}` takes {N} operand{}: `{name}({})`, not {count}",
                if N == 1 { "" } else { "s" },
                expected.join(", ")
            ),
        )
    })
}

/// The `-> pattern` binding a recv or send arm's result.
fn binding(input: ParseStream<'_>, name: &Ident, example: &str) -> syn::Result<Pat> {
    if !input.peek(Token![->]) {
        return Err(syn::Error::new(
            name.span(),
            format!("a `{name}` arm binds its result: write `{example} => ..`"),
        ));
    }
    input.parse::<Token![->]>()?;
    Pat::parse_single(input)
}

/// Expands an `alt!` (or, with `Order::Written`, a `prialt!`).
pub(crate) fn expand(input: TokenStream, order: Order) -> TokenStream {
    match syn::parse2::<Alt>(input) {
        Ok(alt) => alt.expand(order),
        Err(err) => err.to_compile_error(),
    }
}

impl Alt {
    fn expand(&self, order: Order) -> TokenStream {
        let private = quote!(::csp::__private);
        // Names only the expansion sees.
        let name =
            |what: &str, i: usize| format_ident!("__csp_{}_{}", what, i, span = Span::mixed_site());
        // An alt whose channel arms are all receives first runs their quick pass on the
        // receivers themselves, and builds its arms only if none is ready (`alt/quick.rs`).
        let quick = self
            .arms
            .iter()
            .all(|arm| matches!(arm.op, Op::Recv { .. } | Op::Default | Op::After { .. }));
        let mut setup = Vec::new();
        // Quick pass only: each arm's guard, try, and building once the pass found none.
        let mut enabled = Vec::new();
        let mut tries = Vec::new();
        let mut builds = Vec::new();
        let mut refs = Vec::new();
        let mut branches = Vec::new();
        let mut default_body = None;
        let mut after = None;
        for (i, arm) in self.arms.iter().enumerate() {
            let guard = name("guard", i);
            let local = name("arm", i);
            // The operand, borrowed once here: a `let` extends the life of a temporary
            // (`recv(&rx)`), which a borrow inside the arm's constructor would not.
            let end = name("end", i);
            let guard_expr = match &arm.guard {
                Some(guard) => quote!((#guard)),
                None => quote!(true),
            };
            let body = &arm.body;
            let build = match &arm.op {
                Op::Default => {
                    setup.push(quote! { let #guard: bool = #guard_expr; });
                    let body = match body {
                        Expr::Block(_) => quote!(#body),
                        other => quote!({ #other }),
                    };
                    default_body = Some(quote! { if #guard #body else { ::core::unreachable!() } });
                    continue;
                }
                Op::After { duration } => {
                    // Evaluated only if the guard is true; a false guard disables it.
                    let timeout = name("after", i);
                    setup.push(quote! {
                        let #guard: bool = #guard_expr;
                        let #timeout: ::core::option::Option<::core::time::Duration> =
                            if #guard {
                                ::core::option::Option::Some(#duration)
                            } else {
                                ::core::option::Option::None
                            };
                    });
                    after = Some((timeout, body));
                    continue;
                }
                Op::Recv { .. } => quote!(#private::RecvArm::new(#end)),
                Op::RecvAny { .. } => quote!(#private::RecvAnyArm::new(#end)),
                Op::Send { value, .. } => quote!(#private::SendArm::new(#end, #value)),
                Op::Closed { .. } => quote!(#private::ClosedArm::new(#end)),
                Op::SendAny { value, .. } => quote!(#private::SendAnyArm::new(#end, #value)),
            };
            let operand = match &arm.op {
                Op::Recv { end, .. }
                | Op::RecvAny { ends: end, .. }
                | Op::Send { end, .. }
                | Op::SendAny { ends: end, .. }
                | Op::Closed { end } => end,
                Op::Default | Op::After { .. } => unreachable!("handled above"),
            };
            let index = refs.len();
            let quick_outcome = name("quick", i);
            if quick {
                // Built empty; filled only if the quick pass finds no arm ready.
                setup.push(quote! {
                    let #guard: bool = #guard_expr;
                    let #end = &(#operand);
                    let mut #quick_outcome = ::core::option::Option::None;
                    let mut #local = ::core::pin::pin!(::core::option::Option::None);
                });
                enabled.push(quote!(#guard));
                tries.push(quote! {
                    #index => {
                        #quick_outcome = #private::quick_recv(#end);
                        #quick_outcome.is_some()
                    }
                });
                builds.push(quote! {
                    if #guard {
                        #local.set(::core::option::Option::Some(#build));
                    }
                });
            } else {
                setup.push(quote! {
                    let #guard: bool = #guard_expr;
                    let #end = &(#operand);
                    let mut #local = ::core::pin::pin!(if #guard {
                        ::core::option::Option::Some(#build)
                    } else {
                        ::core::option::Option::None
                    });
                });
            }
            refs.push(quote!(#local.as_mut().as_pin_mut()));
            let within = format_ident!("__csp_within", span = Span::mixed_site());
            let take = match &arm.op {
                // The outcome of the quick pass, if it fired this arm; else the arm's.
                Op::Recv { .. } if quick => quote! {
                    match #quick_outcome.take() {
                        ::core::option::Option::Some(outcome) => outcome,
                        ::core::option::Option::None => match #local.as_mut().as_pin_mut() {
                            ::core::option::Option::Some(arm) => arm.outcome(),
                            ::core::option::Option::None => ::core::unreachable!(),
                        },
                    }
                },
                Op::RecvAny { .. } | Op::SendAny { .. } => quote! {
                    (#within, match #local.as_mut().as_pin_mut() {
                        ::core::option::Option::Some(arm) => arm.outcome(#within),
                        ::core::option::Option::None => ::core::unreachable!(),
                    })
                },
                _ => quote! {
                    match #local.as_mut().as_pin_mut() {
                        ::core::option::Option::Some(arm) => arm.outcome(),
                        ::core::option::Option::None => ::core::unreachable!(),
                    }
                },
            };
            branches.push(match &arm.op {
                Op::Recv { pat, .. }
                | Op::RecvAny { pat, .. }
                | Op::Send { pat, .. }
                | Op::SendAny { pat, .. } => {
                    // A block body's statements go beside the binding, not in a block of
                    // their own (which would trip `unused_braces` in the user's crate).
                    let body = match body {
                        Expr::Block(block) if block.label.is_none() && block.attrs.is_empty() => {
                            let stmts = &block.block.stmts;
                            quote!(#(#stmts)*)
                        }
                        other => quote!(#other),
                    };
                    quote! { (#index, #within) => { let _ = #within; let #pat = #take; #body } }
                }
                _ => quote! { (#index, _) => #body, },
            });
        }
        let biased = matches!(order, Order::Written);
        let has_default = default_body.is_some();
        let default_branch = default_body.unwrap_or_else(|| quote!(::core::unreachable!()));
        // A default arm whose guard is false is no default: the alt waits.
        let default_guard = self
            .arms
            .iter()
            .position(|arm| matches!(arm.op, Op::Default))
            .map(|i| {
                let guard = name("guard", i);
                quote!(#guard)
            })
            .unwrap_or(quote!(false));
        // Only an alt with an `after` arm carries a timer.
        let (make, after_arg, after_branch) = match after {
            Some((timeout, body)) => (
                quote!(#private::alt_after),
                quote!(, #timeout),
                quote! { (#private::AFTER, _) => #body, },
            ),
            None => (quote!(#private::alt), quote!(), quote!()),
        };
        let fired = format_ident!("__csp_fired", span = Span::mixed_site());
        // The arms as a list `(arm0, (arm1, (.., ())))`, typed, so the future is `Send`
        // exactly when they are.
        let count = refs.len();
        let list = refs
            .iter()
            .rev()
            .fold(quote!(()), |rest, arm| quote!((#arm, #rest)));
        let choose = quote! {
            #make::<#count, _>(
                #list,
                #biased,
                #has_default && #default_guard
                #after_arg
            ).await
        };
        let choose = if quick && count > 0 {
            quote! {
                match #private::quick_pass::<#count>(
                    [#(#enabled),*],
                    #biased,
                    |arm| match arm {
                        #(#tries)*
                        _ => ::core::unreachable!(),
                    },
                ) {
                    ::core::option::Option::Some(arm) => (arm, 0),
                    ::core::option::Option::None => {
                        #(#builds)*
                        #choose
                    }
                }
            }
        } else {
            choose
        };
        quote! {{
            #(#setup)*
            let #fired = #choose;
            match #fired {
                #(#branches)*
                #after_branch
                _ => #default_branch
            }
        }}
    }
}
