//! The command ids a session remembers: the last `bound` ids first seen, each with its number
//! (the order ids were first seen) and what is known of it. When a new id would make one too
//! many, the oldest is forgotten.
//!
//! Sized once for its bound, so memory stays flat under a stream of new ids: a hash table with
//! its bound of live entries, once the places of forgotten ids fill it, is rehashed in place only
//! if those entries take at most half its room, and is otherwise doubled. A table allocated for
//! `bound` entries (512 → 1,024 buckets) therefore doubled a few hundred commands after the
//! ledger filled (seen in `./build.sh bench`: the worker's wasm memory grew 25 → 28 pages
//! between 1,000 and 2,000 commands); one allocated for twice the bound never grows.

use std::collections::{HashMap, VecDeque};

pub struct SeenIds<V> {
    known: HashMap<String, (u64, V)>,
    /// First seen first.
    order: VecDeque<String>,
    bound: usize,
}

impl<V> SeenIds<V> {
    pub fn new(bound: usize) -> Self {
        SeenIds {
            known: HashMap::with_capacity(2 * bound),
            order: VecDeque::with_capacity(bound + 1),
            bound,
        }
    }

    pub fn get(&self, id: &str) -> Option<&V> {
        self.known.get(id).map(|(_, v)| v)
    }

    pub fn contains(&self, id: &str) -> bool {
        self.known.contains_key(id)
    }

    /// The number `id` was remembered with.
    pub fn number(&self, id: &str) -> Option<u64> {
        self.known.get(id).map(|(n, _)| *n)
    }

    /// Replaces what is known of a remembered id (false, and nothing changes, if it is not).
    pub fn set(&mut self, id: &str, value: V) -> bool {
        match self.known.get_mut(id) {
            Some((_, v)) => {
                *v = value;
                true
            }
            None => false,
        }
    }

    /// Remembers `id` as the `n`th id seen (an id already remembered keeps its number and takes
    /// `value`); the ids forgotten to stay within the bound are passed to `forgotten`. Whether
    /// `id` is new.
    pub fn remember(
        &mut self,
        id: &str,
        n: u64,
        value: V,
        mut forgotten: impl FnMut(String),
    ) -> bool {
        if let Some((_, v)) = self.known.get_mut(id) {
            *v = value;
            return false;
        }
        self.known.insert(id.to_string(), (n, value));
        self.order.push_back(id.to_string());
        while self.order.len() > self.bound {
            if let Some(old) = self.order.pop_front() {
                self.known.remove(&old);
                forgotten(old);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_ids_first_seen_with_their_numbers() {
        let mut ids = SeenIds::new(3);
        let mut forgotten = Vec::new();
        for (n, id) in ["a", "b", "c"].iter().enumerate() {
            assert!(ids.remember(id, n as u64, n, |old| forgotten.push(old)));
        }
        // Seen again: keeps its number and place, takes the new value.
        assert!(!ids.remember("a", 9, 10, |old| forgotten.push(old)));
        assert_eq!((ids.get("a"), ids.number("a")), (Some(&10), Some(0)));
        assert!(ids.remember("d", 3, 3, |old| forgotten.push(old)));
        assert_eq!(forgotten, ["a"]);
        assert!(!ids.contains("a") && ids.contains("b") && ids.contains("d"));
        assert!(ids.set("b", 20) && !ids.set("a", 0));
        assert_eq!(ids.get("b"), Some(&20));
    }

    /// A full ledger under a stream of new ids never grows its table (which doubled once the
    /// places of forgotten ids filled a table sized for the bound).
    #[test]
    fn a_stream_of_new_ids_does_not_grow_the_table() {
        let mut ids = SeenIds::new(512);
        let room = ids.known.capacity();
        for n in 0..20_000u64 {
            ids.remember(&format!("command-{n}"), n, (), |_| {});
            assert!(
                ids.known.capacity() <= room,
                "the table grew from room for {room} to {} at id {n}",
                ids.known.capacity()
            );
        }
        assert_eq!(ids.known.len(), 512);
        assert!(ids.order.capacity() <= 513 + 8);
    }
}
