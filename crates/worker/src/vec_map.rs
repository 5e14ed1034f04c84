//! Small maps and sets kept as vectors of entries and looked up by a linear scan: the worker's
//! per-tab and per-connection state, which holds a handful of entries at a time (the group's
//! tabs, the connections, a tab's frames).
//!
//! Such a scan is as quick as hashing at these sizes, and its code is much smaller: a
//! `HashMap` compiles hashbrown's table (growing, probing, dropping) anew for every key and
//! value type, which came to about 54 KB of the worker's wasm over 30 types. State that grows
//! with the traffic (the delivery ledger's command ids) stays in `HashMap`s.
//!
//! The order of the entries is not kept (a removal moves the last entry into the gap), as a
//! `HashMap` keeps none.

use std::borrow::Borrow;

/// A map from `K` to `V`.
#[derive(Debug, Clone)]
pub struct VecMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> VecMap<K, V> {
    pub const fn new() -> Self {
        Self(Vec::new())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.0.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }

    /// Keeps the entries `keep` returns true for.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        self.0.retain_mut(|(k, v)| keep(k, v));
    }

    /// Takes every entry out, leaving the map empty.
    pub fn drain(&mut self) -> std::vec::Drain<'_, (K, V)> {
        self.0.drain(..)
    }
}

impl<K: PartialEq, V> VecMap<K, V> {
    fn position<Q: PartialEq + ?Sized>(&self, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
    {
        self.0.iter().position(|(k, _)| k.borrow() == key)
    }

    pub fn get<Q: PartialEq + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.position(key).map(|i| &self.0[i].1)
    }

    pub fn get_mut<Q: PartialEq + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        self.position(key).map(|i| &mut self.0[i].1)
    }

    pub fn contains_key<Q: PartialEq + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.position(key).is_some()
    }

    /// Sets `key`'s value; the value it had, if any.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.position(&key) {
            Some(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            None => {
                self.0.push((key, value));
                None
            }
        }
    }

    pub fn remove<Q: PartialEq + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.position(key).map(|i| self.0.swap_remove(i).1)
    }

    /// `key`'s place in the map, as `HashMap::entry`.
    pub fn entry(&mut self, key: K) -> Entry<'_, K, V> {
        Entry { map: self, key }
    }

    fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.position(&key) {
            Some(i) => i,
            None => {
                self.0.push((key, make()));
                self.0.len() - 1
            }
        };
        &mut self.0[i].1
    }
}

/// A key's place in a [`VecMap`], filled or not.
pub struct Entry<'a, K, V> {
    map: &'a mut VecMap<K, V>,
    key: K,
}

impl<'a, K: PartialEq, V> Entry<'a, K, V> {
    /// The key's value, made by `make` first if it has none.
    pub fn or_insert_with(self, make: impl FnOnce() -> V) -> &'a mut V {
        self.map.get_or_insert_with(self.key, make)
    }

    pub fn or_insert(self, value: V) -> &'a mut V {
        self.or_insert_with(|| value)
    }

    pub fn or_default(self) -> &'a mut V
    where
        V: Default,
    {
        self.or_insert_with(V::default)
    }
}

impl<K: PartialEq, V> FromIterator<(K, V)> for VecMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        let mut map = Self::new();
        for (k, v) in entries {
            map.insert(k, v);
        }
        map
    }
}

impl<K, V> IntoIterator for VecMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// A set of `T`.
#[derive(Debug, Clone)]
pub struct VecSet<T>(Vec<T>);

impl<T> Default for VecSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> VecSet<T> {
    pub const fn new() -> Self {
        Self(Vec::new())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }

    /// Keeps the members `keep` returns true for.
    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.0.retain(keep);
    }
}

impl<T: PartialEq> VecSet<T> {
    pub fn contains<Q: PartialEq + ?Sized>(&self, value: &Q) -> bool
    where
        T: Borrow<Q>,
    {
        self.0.iter().any(|t| t.borrow() == value)
    }

    /// Adds `value`; false if it was already there.
    pub fn insert(&mut self, value: T) -> bool {
        if self.contains(&value) {
            return false;
        }
        self.0.push(value);
        true
    }

    /// Takes `value` out; false if it was not there.
    pub fn remove<Q: PartialEq + ?Sized>(&mut self, value: &Q) -> bool
    where
        T: Borrow<Q>,
    {
        match self.0.iter().position(|t| t.borrow() == value) {
            Some(i) => {
                self.0.swap_remove(i);
                true
            }
            None => false,
        }
    }
}

impl<T: PartialEq> FromIterator<T> for VecSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(values: I) -> Self {
        let mut set = Self::new();
        for v in values {
            set.insert(v);
        }
        set
    }
}

impl<T: PartialEq> Extend<T> for VecSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, values: I) {
        for v in values {
            self.insert(v);
        }
    }
}

impl<T> IntoIterator for VecSet<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a VecSet<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_keeps_one_value_per_key() {
        let mut m: VecMap<String, i32> = VecMap::new();
        assert_eq!(m.insert("a".into(), 1), None);
        assert_eq!(m.insert("b".into(), 2), None);
        assert_eq!(m.insert("a".into(), 3), Some(1));
        assert_eq!(m.len(), 2);
        assert_eq!(m.get("a"), Some(&3));
        *m.entry("c".into()).or_default() += 5;
        *m.entry("c".into()).or_insert(7) += 5;
        assert_eq!(m.get("c"), Some(&10));
        assert_eq!(m.remove("a"), Some(3));
        assert_eq!(m.remove("a"), None);
        assert!(!m.contains_key("a") && m.contains_key("b"));
        m.retain(|_, v| *v > 2);
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![(&"c".to_string(), &10)]);
        let from: VecMap<i32, i32> = [(1, 1), (1, 2), (2, 3)].into_iter().collect();
        assert_eq!(from.len(), 2);
        assert_eq!(from.get(&1), Some(&2));
    }

    #[test]
    fn a_set_holds_each_member_once() {
        let mut s: VecSet<i32> = VecSet::new();
        assert!(s.insert(4));
        assert!(!s.insert(4));
        assert!(s.insert(5));
        assert!(s.contains(&4));
        assert!(s.remove(&4));
        assert!(!s.remove(&4));
        s.extend([5, 6, 6]);
        assert_eq!(s.len(), 2);
        let mut all: Vec<i32> = s.into_iter().collect();
        all.sort();
        assert_eq!(all, vec![5, 6]);
    }
}
