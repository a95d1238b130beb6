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
    Cancelled { token: Expr },
    After { duration: Expr },
    At { deadline: Expr },
    Default,
}

impl Parse for Alt {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut arms = Vec::new();
        // The `default` arm, and the timeout arm (`after` or `at`), by name once seen.
        let (mut default, mut timeout): (Option<Ident>, Option<Ident>) = (None, None);
        while !input.is_empty() {
            let (arm, name) = parse_arm(input)?;
            let (seen, other) = match arm.op {
                Op::Default => (&mut default, &timeout),
                Op::After { .. } | Op::At { .. } => (&mut timeout, &default),
                _ => {
                    arms.push(arm);
                    continue;
                }
            };
            if let Some(first) = seen {
                return Err(syn::Error::new(
                    name.span(),
                    if *first == name {
                        format!("an alt! takes at most one `{name}` arm")
                    } else {
                        format!(
                            "an alt! takes one timeout arm: this `{name}` arm and the \
                             `{first}` arm before it both end the wait"
                        )
                    },
                ));
            }
            if let Some(other) = other {
                let timeout = match arm.op {
                    Op::Default => other,
                    _ => &name,
                };
                return Err(syn::Error::new(
                    name.span(),
                    format!(
                        "an alt! takes a `default` arm or an `{timeout}` arm, not both: \
                         `default` runs at once when no arm is ready, so the timeout could \
                         never fire"
                    ),
                ));
            }
            *seen = Some(name);
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
        "cancelled" => {
            let [token] = arguments(input, &name, ["token"])?;
            Op::Cancelled { token }
        }
        "after" => {
            let [duration] = arguments(input, &name, ["duration"])?;
            Op::After { duration }
        }
        "at" => {
            let [deadline] = arguments(input, &name, ["deadline"])?;
            Op::At { deadline }
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
                     send_any, closed, cancelled, after, at or default"
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
    /// The expansion, in two steps: a block that builds the arms, chooses, and moves the
    /// fired arm's outcome into a local of a local enum (one variant per arm), declared
    /// before the block, then a `match` on that local running the arm's body. The block ends before any body
    /// runs, so every arm, and every borrow of an operand, is gone by then: a body may
    /// assign to a variable another arm used (`timer = csp::after(d)`), and what the
    /// choice registered is unlinked before the body awaits anything.
    fn expand(&self, order: Order) -> TokenStream {
        let private = quote!(::csp::__private);
        // Names only the expansion sees.
        let name =
            |what: &str, i: usize| format_ident!("__csp_{}_{}", what, i, span = Span::mixed_site());
        let fired_enum = format_ident!("__CspFired", span = Span::mixed_site());
        let variant = |i: usize| format_ident!("Arm{}", i);
        // An alt whose channel arms are all receives first runs their quick pass on the
        // receivers themselves, and builds its arms only if none is ready (`alt/quick.rs`).
        let quick = self.arms.iter().all(|arm| {
            matches!(
                arm.op,
                Op::Recv { .. } | Op::Default | Op::After { .. } | Op::At { .. }
            )
        });
        let mut setup = Vec::new();
        // Quick pass only: each arm's guard, try, and building once the pass found none.
        let mut enabled = Vec::new();
        let mut tries = Vec::new();
        let mut builds = Vec::new();
        let mut refs = Vec::new();
        // The enum's type parameters and variants, what the choice's outcome maps to,
        // and the bodies.
        let mut params = Vec::new();
        let mut variants = Vec::new();
        let mut outcomes = Vec::new();
        let mut bodies = Vec::new();
        let mut default_fired = None;
        let mut timeout = None;
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
            let arm_variant = variant(i);
            let build = match &arm.op {
                Op::Default => {
                    setup.push(quote! { let #guard: bool = #guard_expr; });
                    variants.push(quote!(#arm_variant));
                    bodies.push(quote! { #fired_enum::#arm_variant => #body, });
                    default_fired = Some((guard, quote!(#fired_enum::#arm_variant)));
                    continue;
                }
                Op::After { duration: when } | Op::At { deadline: when } => {
                    // Evaluated only if the guard is true; a false guard disables it.
                    let expiry = name("expiry", i);
                    let (ty, make) = match &arm.op {
                        Op::After { .. } => {
                            (quote!(::core::time::Duration), quote!(#private::alt_after))
                        }
                        _ => (quote!(::std::time::Instant), quote!(#private::alt_at)),
                    };
                    setup.push(quote! {
                        let #guard: bool = #guard_expr;
                        let #expiry: ::core::option::Option<#ty> = if #guard {
                            ::core::option::Option::Some(#when)
                        } else {
                            ::core::option::Option::None
                        };
                    });
                    variants.push(quote!(#arm_variant));
                    outcomes.push(quote! { (#private::AFTER, _) => #fired_enum::#arm_variant, });
                    bodies.push(quote! { #fired_enum::#arm_variant => #body, });
                    timeout = Some((make, expiry));
                    continue;
                }
                Op::Recv { .. } => quote!(#private::RecvArm::new(#end)),
                Op::RecvAny { .. } => quote!(#private::RecvAnyArm::new(#end)),
                Op::Send { value, .. } => quote!(#private::SendArm::new(#end, #value)),
                Op::Closed { .. } => quote!(#private::ClosedArm::new(#end)),
                Op::Cancelled { .. } => quote!(#private::ClosedArm::cancelled(#end)),
                Op::SendAny { value, .. } => quote!(#private::SendAnyArm::new(#end, #value)),
            };
            let operand = match &arm.op {
                Op::Recv { end, .. }
                | Op::RecvAny { ends: end, .. }
                | Op::Send { end, .. }
                | Op::SendAny { ends: end, .. }
                | Op::Closed { end }
                | Op::Cancelled { token: end } => end,
                Op::Default | Op::After { .. } | Op::At { .. } => unreachable!("handled above"),
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
            match &arm.op {
                Op::Recv { pat, .. }
                | Op::RecvAny { pat, .. }
                | Op::Send { pat, .. }
                | Op::SendAny { pat, .. } => {
                    let param = format_ident!("T{}", i);
                    let value = format_ident!("__csp_value", span = Span::mixed_site());
                    params.push(quote!(#param));
                    variants.push(quote!(#arm_variant(#param)));
                    outcomes.push(quote! {
                        (#index, #within) => {
                            let _ = #within;
                            #fired_enum::#arm_variant(#take)
                        }
                    });
                    // A block body's statements go beside the binding, not in a block of
                    // their own (which would trip `unused_braces` in the user's crate).
                    let body = match body {
                        Expr::Block(block) if block.label.is_none() && block.attrs.is_empty() => {
                            let stmts = &block.block.stmts;
                            quote!(#(#stmts)*)
                        }
                        other => quote!(#other),
                    };
                    bodies.push(quote! {
                        #fired_enum::#arm_variant(#value) => { let #pat = #value; #body }
                    });
                }
                _ => {
                    // A `closed` or `cancelled` arm: the outcome says only that it fired.
                    variants.push(quote!(#arm_variant));
                    outcomes.push(quote! { (#index, _) => #fired_enum::#arm_variant, });
                    bodies.push(quote! { #fired_enum::#arm_variant => #body, });
                }
            }
        }
        let biased = matches!(order, Order::Written);
        // A default arm whose guard is false is no default: the alt waits.
        let (has_default, default_outcome) = match default_fired {
            Some((guard, fired)) => (quote!(#guard), quote! { _ => #fired, }),
            None => (quote!(false), quote! { _ => ::core::unreachable!(), }),
        };
        // Only an alt with a timeout arm carries a timer.
        let (make, timeout_arg) = match timeout {
            Some((make, expiry)) => (make, quote!(, #expiry)),
            None => (quote!(#private::alt), quote!()),
        };
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
                #has_default
                #timeout_arg
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
        let fired = format_ident!("__csp_fired", span = Span::mixed_site());
        quote! {{
            #[allow(clippy::large_enum_variant)]
            enum #fired_enum<#(#params),*> { #(#variants),* }
            // Declared before the arms, so that a panic while they drop (a send arm's
            // value whose `Drop` panics) drops the outcome with the other locals: the
            // value of a block whose locals panic as they drop would be leaked.
            let #fired;
            {
                #(#setup)*
                #fired = match #choose {
                    #(#outcomes)*
                    #default_outcome
                };
            }
            match #fired {
                #(#bodies)*
            }
        }}
    }
}
