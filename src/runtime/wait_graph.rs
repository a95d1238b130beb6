//! The wait graph: the live processes of a runtime and what each waits on, as Graphviz
//! DOT text (`Handle::wait_graph`, and the file deadlock detection writes when
//! `CSP_DEADLOCK_DOT` is set).
//!
//! Nodes are processes (`p<id>`), channels (`c<id>`), the runtime's `block_on`
//! futures (`main`) and everything outside csp's channels (`foreign`: timers, I/O,
//! another executor's wakers); an edge runs from a waiter to what it waits on. Channel
//! edges come from the census of wait sites (`wait/census.rs`), which lists every linked
//! entry, so an alt shows one edge per channel it waits on; joins come from each
//! process's wait record. The processes of one `JoinSet` are drawn inside a box of the
//! set's (a DOT cluster). The graph is a snapshot taken while the runtime runs: a
//! process may be caught between two waits.

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
    /// The `JoinSet` it belongs to: drawn inside a box of the set's.
    group: Option<Group>,
}

impl Shared {
    /// The runtime's wait graph as DOT text; `main`, a `block_on` future's parker,
    /// adds that future's join (its channel waits show without it).
    pub(crate) fn wait_graph(&self, main: Option<&Parker>) -> String {
        let processes = self.graph_processes();
        let live: BTreeMap<usize, u64> = processes.iter().map(|p| (p.address, p.id)).collect();
        let mut channels = BTreeMap::new();
        let mut edges = BTreeSet::new();
        let runtime = self.id();
        census::survey(|channel, kind, foreign, waiting| {
            for w in waiting {
                let from = match w.owner {
                    OwnerTag::Process(address) => match live.get(&address) {
                        Some(&id) => Node::Process(id),
                        None => continue, // another runtime's, or one that just ended
                    },
                    OwnerTag::Main(id) if id == runtime => Node::Main,
                    _ => continue,
                };
                channels
                    .entry(channel)
                    .or_insert_with(|| (kind.clone(), foreign));
                edges.insert((from, Node::Channel(channel), op_label(w.op)));
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
                edges.insert((from, Node::Foreign, "foreign"));
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
        render(&processes, &channels, &edges)
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
                foreign: sleeping && (state.foreign_wakers() > 0 || WaitOn::decode(word).is_none()),
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
fn join_set_edges(
    edges: &mut BTreeSet<(Node, Node, &'static str)>,
    from: Node,
    set: u64,
    processes: &[Process],
) {
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

fn render(
    processes: &[Process],
    channels: &BTreeMap<u64, (String, bool)>,
    edges: &BTreeSet<(Node, Node, &'static str)>,
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
    for (id, (kind, foreign)) in channels {
        let (style, note) = match foreign {
            true => (", style=dashed", "\\nforeign"),
            false => ("", ""),
        };
        let _ = writeln!(
            dot,
            "    {} [shape=ellipse{style}, label=\"channel #{id}\\n{}{note}\"];",
            Node::Channel(*id).name(),
            escape(kind)
        );
    }
    let ends = || edges.iter().flat_map(|&(from, to, _)| [from, to]);
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
    for &(from, to, op) in edges {
        let label = match (from, to) {
            (Node::Process(id), Node::Channel(_)) if alts.contains(&id) => format!("alt: {op}"),
            _ => op.to_owned(),
        };
        let _ = writeln!(
            dot,
            "    {} -> {} [label=\"{label}\"];",
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
    use super::escape;

    #[test]
    fn labels_escape_quotes_and_backslashes() {
        assert_eq!(escape(r#"C:\src\"main".rs"#), r#"C:\\src\\\"main\".rs"#);
    }
}
