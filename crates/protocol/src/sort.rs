//! Sorting with one sorting routine for every element type. The standard library's sorts are
//! generic and large (about 500 bytes of wasm per call site and type, 32 KB in the worker over 27
//! calls); here the merge runs once, over indices, non-generic, and only the comparison and a
//! swap per element are generated per type. The lists sorted here are short (hosts, tabs,
//! patterns, find's hits): O(n log n) all the same.

use std::cmp::Ordering;

/// Sorts `v` stably by `compare` (as `slice::sort_by`).
pub fn sort_by<T>(v: &mut [T], mut compare: impl FnMut(&T, &T) -> Ordering) {
    let order = {
        let items: &[T] = v;
        sorted_order(items.len(), &mut |a, b| compare(&items[a], &items[b]))
    };
    permute(v, order);
}

/// Sorts `v` stably by a key (as `slice::sort_by_key`).
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// Sorts `v` (as `slice::sort`).
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, T::cmp);
}

/// Sorts `v` and removes repeated elements (as `sort` then `Vec::dedup`).
pub fn sort_dedup<T: Ord>(v: &mut Vec<T>) {
    sort(v);
    v.dedup();
}

/// The indices `0..n` in the order `compare` puts them, stably: a bottom-up merge sort.
fn sorted_order(n: usize, compare: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut scratch = vec![0; n];
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j) = (start, mid);
            for slot in &mut scratch[start..end] {
                // The left run's element first when they are equal: stable.
                let left =
                    i < mid && (j >= end || compare(order[i], order[j]) != Ordering::Greater);
                if left {
                    *slot = order[i];
                    i += 1;
                } else {
                    *slot = order[j];
                    j += 1;
                }
            }
            start = end;
        }
        std::mem::swap(&mut order, &mut scratch);
        width *= 2;
    }
    order
}

/// Rearranges `v` so that position `i` holds what was at `order[i]`, following each cycle
/// with swaps.
fn permute<T>(v: &mut [T], mut order: Vec<usize>) {
    for i in 0..order.len() {
        let mut j = i;
        loop {
            let k = order[j];
            order[j] = j;
            if k == i {
                break;
            }
            v.swap(j, k);
            j = k;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_as_the_standard_library_does_and_stably() {
        let mut seed = 7u32;
        for n in 0..70 {
            let mut v: Vec<(u32, usize)> = (0..n)
                .map(|i| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    ((seed >> 16) % 5, i)
                })
                .collect();
            let mut expected = v.clone();
            expected.sort_by_key(|p| p.0);
            sort_by_key(&mut v, |p| p.0);
            assert_eq!(v, expected, "n = {n}");
        }
        let mut words = vec!["b", "a", "c", "a", "b"];
        sort_dedup(&mut words);
        assert_eq!(words, ["a", "b", "c"]);
        let mut desc = vec![1, 3, 2];
        sort_by(&mut desc, |a, b| b.cmp(a));
        assert_eq!(desc, [3, 2, 1]);
    }
}
