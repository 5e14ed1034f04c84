//! Which agent a command acts for (its connection, and the MCP session within it when the
//! backend names one), known to everything the command runs through its scope, and each
//! agent's tab group look (title and colour), registered by the session for its connections.

use crate::brand::brand;
use crate::vec_map::VecMap;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The colours Chrome gives tab groups, in the order further agents get them.
const COLORS: [&str; 9] = [
    "green", "orange", "purple", "cyan", "pink", "red", "yellow", "grey", "blue",
];

/// The connection a command came by (0: the first, which the Options form edits), and the
/// agent the backend named for it (`agent` on the wire: one MCP client session).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Agent {
    pub conn: u32,
    pub name: Option<String>,
}

impl Agent {
    pub fn of(conn: u32, name: Option<String>) -> Agent {
        Agent { conn, name }
    }

    /// The first connection's own group, named by the brand as it always was.
    pub fn is_primary(&self) -> bool {
        self.conn == 0 && self.name.is_none()
    }

    /// A short key for storage: "" for the primary, else "2" or "2/name".
    pub fn key(&self) -> String {
        match (&self.name, self.conn) {
            (None, 0) => String::new(),
            (None, c) => c.to_string(),
            (Some(n), c) => format!("{c}/{n}"),
        }
    }

    /// The agent of a [`Agent::key`].
    pub fn from_key(key: &str) -> Agent {
        let (conn, name) = match key.split_once('/') {
            Some((c, n)) => (c, Some(n.to_string())),
            None => (key, None),
        };
        Agent::of(conn.parse().unwrap_or(0), name)
    }
}

/// A group's title and colour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupLook {
    pub title: String,
    pub color: String,
}

thread_local! {
    static CURRENT: RefCell<Agent> = RefCell::new(Agent::default());
    /// Per connection (other than the primary), its group's look.
    static LOOKS: RefCell<VecMap<u32, GroupLook>> = const { RefCell::new(VecMap::new()) };
    /// Named agents in the order first seen: each gets its own colour.
    static NAMED: RefCell<Vec<Agent>> = const { RefCell::new(Vec::new()) };
}

/// The agent of the command running now (the primary outside any command).
pub fn current() -> Agent {
    CURRENT.with(|c| c.borrow().clone())
}

/// `work`, run as `agent`'s: whatever it calls sees [`current`] return `agent`.
pub fn scope<F: Future>(agent: Agent, work: F) -> Scoped<F> {
    Scoped {
        agent,
        work: Box::pin(work),
    }
}

/// A future that runs as one agent's (see [`scope`]).
pub struct Scoped<F> {
    agent: Agent,
    work: Pin<Box<F>>,
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let before = CURRENT.with(|c| std::mem::replace(&mut *c.borrow_mut(), this.agent.clone()));
        let polled = this.work.as_mut().poll(cx);
        CURRENT.with(|c| *c.borrow_mut() = before);
        polled
    }
}

/// The connection's group look (set by the session when it knows the connection).
pub fn set_look(conn: u32, look: GroupLook) {
    LOOKS.with(|l| l.borrow_mut().insert(conn, look));
}

/// The connection was removed.
pub fn forget(conn: u32) {
    LOOKS.with(|l| l.borrow_mut().remove(&conn));
    NAMED.with(|n| n.borrow_mut().retain(|a| a.conn != conn));
}

/// The colour the `n`th further connection's group gets (never the brand's, while there are
/// others).
pub fn color_for(n: usize) -> String {
    let own = brand().group_color;
    let others: Vec<&str> = COLORS.iter().copied().filter(|c| *c != own).collect();
    others[n % others.len()].to_string()
}

/// The agent's group look: the brand's for the primary; the connection's registered look; for
/// a named agent, the connection's title with the agent's name and a colour of its own.
pub fn look(agent: &Agent) -> GroupLook {
    let b = brand();
    let base = if agent.conn == 0 {
        GroupLook {
            title: b.group_title.clone(),
            color: b.group_color.clone(),
        }
    } else {
        LOOKS
            .with(|l| l.borrow().get(&agent.conn).cloned())
            .unwrap_or_else(|| GroupLook {
                title: format!("{} {}", b.group_title, agent.conn + 1),
                color: color_for(agent.conn as usize),
            })
    };
    let Some(name) = &agent.name else {
        return base;
    };
    let n = NAMED.with(|list| {
        let mut list = list.borrow_mut();
        match list.iter().position(|a| a == agent) {
            Some(i) => i,
            None => {
                list.push(agent.clone());
                list.len() - 1
            }
        }
    });
    GroupLook {
        title: format!("{} · {name}", base.title),
        color: color_for(LOOKS.with(|l| l.borrow().len()) + 1 + n),
    }
}

/// Every title an agent's group has or would have that is not `agent`'s: a tab in a group of
/// one of those titles belongs to another agent.
pub fn other_titles(agent: &Agent) -> Vec<String> {
    let mine = look(agent).title;
    let mut all = vec![brand().group_title.clone()];
    LOOKS.with(|l| all.extend(l.borrow().values().map(|g| g.title.clone())));
    NAMED.with(|n| {
        let named: Vec<Agent> = n.borrow().clone();
        all.extend(named.iter().map(look_title));
    });
    all.retain(|t| *t != mine);
    all
}

fn look_title(agent: &Agent) -> String {
    look(agent).title
}

/// The further connections whose looks are registered, in order.
pub fn connections() -> Vec<u32> {
    let mut all: Vec<u32> = LOOKS.with(|l| l.borrow().keys().copied().collect());
    protocol::sort::sort(&mut all);
    all
}
