//! The wait graph: the live processes of a runtime and what each waits on, as Graphviz
//! DOT text (`Handle::wait_graph`, and the file deadlock detection writes when
//! `CSP_DEADLOCK_DOT` is set).
//!
//! Nodes are processes (`p<id>`), channels (`c<id>`, named by their kind and where
//! they were made), the runtime's `block_on` futures (`main`) and everything outside
//! csp's channels (`foreign`: timers, I/O, another executor's wakers); an edge runs from
//! a waiter to what it waits on. Channel edges come from the census of wait sites
//! (`wait/census.rs`), which lists every linked entry, so an alt shows one edge per
//! channel it waits on; joins come from each process's wait record. The processes of one
//! `JoinSet` are drawn inside a box of the set's (a DOT cluster). The graph is a
//! snapshot taken while the runtime runs: a process may be caught between two waits.
//!
//! The other side of a wait: from a channel with a waiter, a dashed edge runs to the
//! live process (or the `block_on` future) that last used the channel's other side
//! (`chan/site.rs`): `last sent` for a receive, `last received` for a send. It is who
//! could have ended the wait, and a hint: the side may have other users, and some uses
//! are not recorded (`try_send`, `try_recv`, an alt arm that did not wait). None is
//! drawn to the waiter itself.
//!
//! A deadlock's cycle in red: the edges of every cycle that runs through processes that
//! sleep on a csp wait (no waker of theirs held outside csp) and channels that are not
//! foreign, waits, joins and dashed edges alike, are drawn red. Such a cycle says each
//! of its processes waits for the next, as far as the last uses tell; an alt on it may
//! still fire on an arm off the cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::panic::Location;

use crate::loom::sync::atomic::Ordering;
use crate::runtime::Shared;
use crate::runtime::groups::{self, Group};
use crate::task::ProcessState;
use crate::wait::WaitOn;
use crate::wait::census::{self, Op};
use crate::wait::claim::OwnerTag;
use crate::wait::parker::Parker;

/// A node of the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Node {
    Process(u64),
    Channel(u64),
    Main,
    Foreign,
}

impl Node {
    fn name(self) -> String {
        match self {
            Node::Process(id) => format!("p{id}"),
            Node::Channel(id) => format!("c{id}"),
            Node::Main => "main".to_owned(),
            Node::Foreign => "foreign".to_owned(),
        }
    }
}

/// A live process, as drawn.
struct Process {
    id: u64,
    /// Its header's address, as the census names waiters.
    address: usize,
    state: ProcessState,
    spawned_at: &'static Location<'static>,
    /// Its recorded wait, while it sleeps.
    wait: Option<WaitOn>,
    /// Something outside csp's channels may wake it: a waker of it is held outside
    /// csp, or it recorded no csp wait.
    foreign: bool,
    /// Its poll marked its wait as one something outside the runtime may end: a
    /// foreign channel's (drawn on the channel's node), or a timer or socket around a
    /// csp wait (a `timeout`). Never part of a cycle.
    open: bool,
    /// The `JoinSet` it belongs to: drawn inside a box of the set's.
    group: Option<Group>,
}

/// An edge: from, to, label.
type Edge = (Node, Node, &'static str);

/// A channel with a waiter, as drawn.
struct Channel {
    /// `channel #1 (rendezvous, made at src/main.rs:3:5)`.
    name: String,
    foreign: bool,
}

impl Shared {
    /// The runtime's wait graph as DOT text; `main`, a `block_on` future's parker,
    /// adds that future's join and its uses of channels (its channel waits show without
    /// it).
    pub(crate) fn wait_graph(&self, main: Option<&Parker>) -> String {
        let processes = self.graph_processes();
        let live: BTreeMap<usize, u64> = processes.iter().map(|p| (p.address, p.id)).collect();
        let main_address = main.map(|m| std::ptr::from_ref(m) as usize);
        // A side's last user (`chan/site.rs`) as a node, if it is one drawn.
        let user_node = |user: usize| match live.get(&user) {
            Some(&id) => Some(Node::Process(id)),
            None if user != 0 && main_address == Some(user) => Some(Node::Main),
            None => None,
        };
        let mut channels = BTreeMap::new();
        let mut edges = BTreeSet::new();
        let mut other_sides = BTreeSet::new();
        let runtime = self.id();
        census::survey(|site| {
            let mut waiters = Vec::new();
            for w in site.waiting {
                let from = match w.owner {
                    OwnerTag::Process(address) => match live.get(&address) {
                        Some(&id) => Node::Process(id),
                        None => continue, // another runtime's, or one that just ended
                    },
                    OwnerTag::Main(id) if id == runtime => Node::Main,
                    _ => continue,
                };
                waiters.push((from, w.op));
                edges.insert((from, Node::Channel(site.id), op_label(w.op)));
            }
            if waiters.is_empty() {
                return;
            }
            channels.entry(site.id).or_insert_with(|| Channel {
                name: site.name(),
                foreign: site.foreign,
            });
            // Who could end each wait: the last user of the other side.
            let users = site.last_users;
            let sides = [
                (users.sender, "last sent", &[Op::Recv, Op::Read][..]),
                (users.receiver, "last received", &[Op::Send][..]),
            ];
            for (user, label, ops) in sides {
                let Some(user) = user_node(user) else {
                    continue;
                };
                if waiters
                    .iter()
                    .any(|&(waiter, op)| ops.contains(&op) && waiter != user)
                {
                    other_sides.insert((Node::Channel(site.id), user, label));
                }
            }
        });
        for p in &processes {
            let from = Node::Process(p.id);
            match p.wait {
                Some(WaitOn::Join { process }) => {
                    edges.insert((from, Node::Process(process), "join"));
                }
                Some(WaitOn::JoinSet { set }) => join_set_edges(&mut edges, from, set, &processes),
                _ => {}
            }
            if p.foreign {
                let label = match p.wait {
                    Some(WaitOn::Timer { .. }) => "timer",
                    Some(WaitOn::Io { .. }) => "I/O",
                    _ => "foreign",
                };
                edges.insert((from, Node::Foreign, label));
            }
        }
        // Relaxed: a hint, as in the process dumps.
        match main.and_then(|m| WaitOn::decode(m.wait_word())) {
            Some(WaitOn::Join { process }) => {
                edges.insert((Node::Main, Node::Process(process), "join"));
            }
            Some(WaitOn::JoinSet { set }) => {
                join_set_edges(&mut edges, Node::Main, set, &processes)
            }
            _ => {}
        }
        let red = cycles(&processes, &channels, edges.iter().chain(&other_sides));
        render(&processes, &channels, &edges, &other_sides, &red)
    }

    fn graph_processes(&self) -> Vec<Process> {
        let mut out = Vec::new();
        self.registry().for_each(|raw| {
            let state = raw.state().load();
            if state.is_blocking() || state.is_complete() {
                return;
            }
            let header = raw.header();
            let process_state = state.process_state();
            // Relaxed: see the module docs of `wait/record.rs`.
            let word = header.wait.load(Ordering::Relaxed);
            let sleeping = process_state == ProcessState::Sleeping;
            out.push(Process {
                id: header.id,
                address: raw.as_ptr().as_ptr() as usize,
                state: process_state,
                spawned_at: header.spawned_at,
                wait: WaitOn::decode(word).filter(|_| sleeping),
                // A wait on a foreign channel shows on the channel's node instead.
                foreign: sleeping
                    && (state.foreign_wakers() > 0
                        || matches!(
                            WaitOn::decode(word),
                            None | Some(WaitOn::Timer { .. } | WaitOn::Io { .. })
                        )),
                open: WaitOn::may_end_outside(word),
                group: None,
            });
        });
        out.sort_by_key(|p| p.id);
        let groups = groups::of(out.iter().map(|p| p.id));
        for p in &mut out {
            p.group = groups.get(&p.id).copied();
        }
        out
    }
}

/// A `join_next` edge from `from` to each live process of set `set`.
fn join_set_edges(edges: &mut BTreeSet<Edge>, from: Node, set: u64, processes: &[Process]) {
    for p in processes
        .iter()
        .filter(|p| p.group.is_some_and(|g| g.id == set))
    {
        edges.insert((from, Node::Process(p.id), "join_next"));
    }
}

fn op_label(op: Op) -> &'static str {
    match op {
        Op::Send => "send",
        Op::Recv => "recv",
        Op::Closed => "closed",
        Op::Read => "recv (stream)",
    }
}

/// The edges that lie on a cycle through blocked processes (asleep on a csp wait, no
/// waker held outside csp) and channels that are not foreign (module docs): those whose
/// ends are in one strongly connected component of the graph of such nodes.
fn cycles<'a>(
    processes: &[Process],
    channels: &BTreeMap<u64, Channel>,
    edges: impl Iterator<Item = &'a Edge> + Clone,
) -> BTreeSet<(Node, Node)> {
    let blocked: BTreeSet<u64> = processes
        .iter()
        .filter(|p| p.state == ProcessState::Sleeping && p.wait.is_some() && !p.foreign && !p.open)
        .map(|p| p.id)
        .collect();
    let counts = |n: &Node| match n {
        Node::Process(id) => blocked.contains(id),
        Node::Channel(id) => channels.get(id).is_some_and(|c| !c.foreign),
        Node::Main | Node::Foreign => false,
    };
    let arcs: BTreeSet<(Node, Node)> = edges
        .filter(|(from, to, _)| counts(from) && counts(to))
        .map(|&(from, to, _)| (from, to))
        .collect();
    let component = components(&arcs);
    arcs.into_iter()
        .filter(|(from, to)| from == to || component[from] == component[to])
        .collect()
}

/// The strongly connected components of the graph of `arcs` (Tarjan's algorithm, with
/// an explicit stack: a graph may be deep): a component number for each node.
fn components(arcs: &BTreeSet<(Node, Node)>) -> BTreeMap<Node, usize> {
    let mut next: BTreeMap<Node, Vec<Node>> = BTreeMap::new();
    for &(from, to) in arcs {
        next.entry(from).or_default().push(to);
        next.entry(to).or_default();
    }
    let mut index: BTreeMap<Node, (usize, usize)> = BTreeMap::new(); // (index, low link)
    let mut component: BTreeMap<Node, usize> = BTreeMap::new();
    let mut stack: Vec<Node> = Vec::new();
    let mut counter = 0;
    for &root in next.keys() {
        if index.contains_key(&root) {
            continue;
        }
        // Each frame: a node and how many of its successors it has looked at.
        let mut frames = vec![(root, 0)];
        index.insert(root, (counter, counter));
        counter += 1;
        stack.push(root);
        while let Some(&mut (node, ref mut seen)) = frames.last_mut() {
            if let Some(&succ) = next[&node].get(*seen) {
                *seen += 1;
                match index.get(&succ) {
                    None => {
                        index.insert(succ, (counter, counter));
                        counter += 1;
                        stack.push(succ);
                        frames.push((succ, 0));
                    }
                    Some(&(succ_index, _)) if !component.contains_key(&succ) => {
                        let low = &mut index.get_mut(&node).expect("indexed").1;
                        *low = (*low).min(succ_index);
                    }
                    Some(_) => {} // in a finished component
                }
                continue;
            }
            frames.pop();
            let (node_index, low) = index[&node];
            if low == node_index {
                let id = component.len();
                while let Some(member) = stack.pop() {
                    component.insert(member, id);
                    if member == node {
                        break;
                    }
                }
            }
            if let Some(&(parent, _)) = frames.last() {
                let parent_low = &mut index.get_mut(&parent).expect("indexed").1;
                *parent_low = (*parent_low).min(low);
            }
        }
    }
    component
}

fn render(
    processes: &[Process],
    channels: &BTreeMap<u64, Channel>,
    edges: &BTreeSet<Edge>,
    other_sides: &BTreeSet<Edge>,
    red: &BTreeSet<(Node, Node)>,
) -> String {
    let mut dot =
        String::from("digraph csp {\n    rankdir=LR;\n    node [fontname=\"monospace\"];\n");
    let alts: BTreeSet<u64> = processes
        .iter()
        .filter(|p| matches!(p.wait, Some(WaitOn::Alt { .. })))
        .map(|p| p.id)
        .collect();
    // The processes of each JoinSet inside a box of the set's, the others outside.
    let mut sets: BTreeMap<Option<u64>, (Option<Group>, Vec<&Process>)> = BTreeMap::new();
    for p in processes {
        let set = sets
            .entry(p.group.map(|g| g.id))
            .or_insert((p.group, Vec::new()));
        set.1.push(p);
    }
    for (group, members) in sets.values() {
        let indent = match group {
            Some(group) => {
                let _ = writeln!(
                    dot,
                    "    subgraph cluster_set{id} {{\n        label=\"JoinSet #{id}\\nmade at {}\";\n        style=rounded;",
                    escape(&group.made_at.to_string()),
                    id = group.id,
                );
                "        "
            }
            None => "    ",
        };
        for p in members {
            let mut label = format!(
                "process #{}\\n{:?}\\n{}",
                p.id,
                p.state,
                escape(&p.spawned_at.to_string())
            );
            if let Some(wait) = p.wait {
                let _ = write!(label, "\\n{wait}");
            }
            let _ = writeln!(
                dot,
                "{indent}{} [shape=box, label=\"{label}\"];",
                Node::Process(p.id).name()
            );
        }
        if group.is_some() {
            dot.push_str("    }\n");
        }
    }
    for (id, channel) in channels {
        let (style, note) = match channel.foreign {
            true => (", style=dashed", "\\nforeign"),
            false => ("", ""),
        };
        let _ = writeln!(
            dot,
            "    {} [shape=ellipse{style}, label=\"{}{note}\"];",
            Node::Channel(*id).name(),
            escape(&channel.name)
        );
    }
    let ends = || {
        edges
            .iter()
            .chain(other_sides)
            .flat_map(|&(from, to, _)| [from, to])
    };
    if ends().any(|n| n == Node::Main) {
        dot.push_str("    main [shape=box, style=bold, label=\"block_on\"];\n");
    }
    if ends().any(|n| n == Node::Foreign) {
        dot.push_str(
            "    foreign [shape=diamond, label=\"outside csp's channels\\n(timer, I/O, another executor)\"];\n",
        );
    }
    let elsewhere: BTreeSet<u64> = ends()
        .filter_map(|n| match n {
            Node::Process(id) if processes.binary_search_by_key(&id, |p| p.id).is_err() => Some(id),
            _ => None,
        })
        .collect();
    for n in elsewhere {
        let _ = writeln!(
            dot,
            "    p{n} [shape=box, style=dashed, label=\"#{n}\\nnot a live process here:\\na blocking task, just finished,\\nor another runtime's\"];"
        );
    }
    let drawn = edges
        .iter()
        .map(|edge| (edge, ""))
        .chain(other_sides.iter().map(|edge| (edge, "style=dashed, ")));
    for (&(from, to, op), style) in drawn {
        let label = match (from, to) {
            (Node::Process(id), Node::Channel(_)) if alts.contains(&id) => format!("alt: {op}"),
            _ => op.to_owned(),
        };
        // The label last: tests read it as the end of the line.
        let color = if red.contains(&(from, to)) {
            "color=red, "
        } else {
            ""
        };
        let _ = writeln!(
            dot,
            "    {} -> {} [{style}{color}label=\"{label}\"];",
            from.name(),
            to.name()
        );
    }
    dot.push_str("}\n");
    dot
}

/// `text` inside a DOT string.
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::collections::BTreeSet;

    use super::{Node, components, escape};

    #[test]
    fn strongly_connected_components_put_each_cycle_together_and_leave_tails_alone() {
        use Node::{Channel as C, Process as P};
        // p1 -> c1 -> p2 -> c2 -> p1 and p2 -> p3 -> c3 -> p2: two cycles through p2,
        // one component; p4 -> c1 leads into it; p5 -> c5 -> p6 is a path, no cycle.
        let arcs = BTreeSet::from([
            (P(1), C(1)),
            (C(1), P(2)),
            (P(2), C(2)),
            (C(2), P(1)),
            (P(2), P(3)),
            (P(3), C(3)),
            (C(3), P(2)),
            (P(4), C(1)),
            (P(5), C(5)),
            (C(5), P(6)),
        ]);
        let component = components(&arcs);
        let cycle = [P(1), C(1), P(2), C(2), P(3), C(3)];
        assert!(cycle.iter().all(|n| component[n] == component[&P(1)]));
        let others = [P(4), P(5), C(5), P(6)];
        let mut seen: BTreeSet<usize> = others.iter().map(|n| component[n]).collect();
        assert_eq!(seen.len(), others.len(), "each alone: {component:?}");
        assert!(seen.insert(component[&P(1)]), "{component:?}");
    }

    #[test]
    fn labels_escape_quotes_and_backslashes() {
        assert_eq!(escape(r#"C:\src\"main".rs"#), r#"C:\\src\\\"main\".rs"#);
    }
}
