//! A segment's point ids (`docs/format.md`, "Point ids"): `IDS` and `ID_INDEX` for integer
//! ids, and with header flag bit 0 (`FLAG_UUID_IDS`) `UUIDS`, `ID_KINDS` and `UUID_INDEX` for
//! UUIDs — read (open, lookups, verify) and written.

use alloc::vec::Vec;
use core::ops::Range;

use shoal_format::{
    FLAG_UUID_IDS, IdEntry, KIND_ID_INDEX, KIND_ID_KINDS, KIND_IDS, KIND_UUID_INDEX, KIND_UUIDS, Layout, PointId,
    SegmentReader, UuidEntry, cast_records, range_of,
};

use crate::Error;
use crate::sections::bad;

/// Where a segment's id sections lie.
#[derive(Clone, Debug)]
pub(crate) struct IdRanges {
    ids: Range<usize>,
    id_index: Range<usize>,
    uuids: Option<UuidRanges>,
}

/// The UUID sections (kinds 5–7) of a segment with `FLAG_UUID_IDS`.
#[derive(Clone, Debug)]
struct UuidRanges {
    uuids: Range<usize>,
    kinds: Range<usize>,
    index: Range<usize>,
}

impl IdRanges {
    /// The cheap checks of open: lengths, and the flag agreeing with the sections.
    pub(crate) fn open(reader: &SegmentReader<'_>, rows: usize) -> Result<IdRanges, Error> {
        let bytes = reader.bytes();
        let ids = reader.require(KIND_IDS)?;
        if cast_records::<u64>("IDS", ids)?.len() != rows {
            return Err(bad("IDS", "length does not match the row count"));
        }
        let id_index = reader.require(KIND_ID_INDEX)?;
        let nums = cast_records::<IdEntry>("ID_INDEX", id_index)?.len();
        let uuids = if reader.header().flags & FLAG_UUID_IDS != 0 {
            let uuids = reader.require(KIND_UUIDS)?;
            let kinds = reader.require(KIND_ID_KINDS)?;
            let index = reader.require(KIND_UUID_INDEX)?;
            if cast_records::<[u8; 16]>("UUIDS", uuids)?.len() != rows {
                return Err(bad("UUIDS", "length does not match the row count"));
            }
            if cast_records::<u64>("ID_KINDS", kinds)?.len() != rows.div_ceil(64) {
                return Err(bad("ID_KINDS", "length does not match the row count"));
            }
            let n = cast_records::<UuidEntry>("UUID_INDEX", index)?.len();
            if n == 0 || nums + n != rows {
                return Err(bad("UUID_INDEX", "the two id indexes must hold every row once, some UUID"));
            }
            Some(UuidRanges {
                uuids: range_of(bytes, uuids),
                kinds: range_of(bytes, kinds),
                index: range_of(bytes, index),
            })
        } else {
            if [KIND_UUIDS, KIND_ID_KINDS, KIND_UUID_INDEX].iter().any(|&k| reader.section(k).is_some()) {
                return Err(bad("UUIDS", "UUID sections in a segment without the UUID flag"));
            }
            if nums != rows {
                return Err(bad("ID_INDEX", "length does not match the row count"));
            }
            None
        };
        Ok(IdRanges { ids: range_of(bytes, ids), id_index: range_of(bytes, id_index), uuids })
    }

    /// The id of `row` (`< rows`).
    pub(crate) fn id(&self, bytes: &[u8], row: usize) -> PointId {
        if let Some(u) = &self.uuids {
            let kinds: &[u64] = bytemuck::cast_slice(&bytes[u.kinds.clone()]);
            if kinds[row / 64] >> (row % 64) & 1 == 1 {
                let uuids: &[[u8; 16]] = bytemuck::cast_slice(&bytes[u.uuids.clone()]);
                return PointId::Uuid(uuids[row]);
            }
        }
        let ids: &[u64] = bytemuck::cast_slice(&bytes[self.ids.clone()]);
        PointId::Num(ids[row])
    }

    /// Whether some row's id is a UUID.
    pub(crate) fn has_uuids(&self) -> bool {
        self.uuids.is_some()
    }

    /// `ID_INDEX`: the integer ids' `(id, row)`, ascending.
    pub(crate) fn num_index<'a>(&self, bytes: &'a [u8]) -> &'a [IdEntry] {
        bytemuck::cast_slice(&bytes[self.id_index.clone()])
    }

    /// `UUID_INDEX`: the UUIDs' `(uuid, row)`, ascending (empty without UUIDs).
    pub(crate) fn uuid_index<'a>(&self, bytes: &'a [u8]) -> &'a [UuidEntry] {
        self.uuids.as_ref().map_or(&[], |u| bytemuck::cast_slice(&bytes[u.index.clone()]))
    }

    /// The row holding `id`. A corrupt (unverified) entry naming a row out of range or of the
    /// other kind is "not found", never a panic or another point.
    pub(crate) fn row_of(&self, bytes: &[u8], rows: usize, id: PointId) -> Option<usize> {
        let row = match id {
            PointId::Num(x) => {
                let index = self.num_index(bytes);
                index[index.binary_search_by_key(&x, |e| e.id).ok()?].row as usize
            }
            PointId::Uuid(u) => {
                let index = self.uuid_index(bytes);
                index[index.binary_search_by_key(&u, |e| e.uuid).ok()?].row as usize
            }
        };
        (row < rows && self.id(bytes, row) == id).then_some(row)
    }

    /// Reads every id byte: both indexes strictly ascending, each entry's row of its kind and
    /// holding its id, the kinds agreeing with the index counts, unused slots zero.
    pub(crate) fn verify(&self, bytes: &[u8], rows: usize) -> Result<(), Error> {
        let ids: &[u64] = bytemuck::cast_slice(&bytes[self.ids.clone()]);
        let index = self.num_index(bytes);
        for (i, e) in index.iter().enumerate() {
            if i > 0 && index[i - 1].id >= e.id {
                return Err(bad("ID_INDEX", "ids are not strictly ascending"));
            }
            if e.reserved != 0 || (e.row as usize) >= rows || self.id(bytes, e.row as usize) != PointId::Num(e.id) {
                return Err(bad("ID_INDEX", "entry disagrees with IDS"));
            }
        }
        let Some(u) = &self.uuids else { return Ok(()) };
        let kinds: &[u64] = bytemuck::cast_slice(&bytes[u.kinds.clone()]);
        let uuids: &[[u8; 16]] = bytemuck::cast_slice(&bytes[u.uuids.clone()]);
        let index = self.uuid_index(bytes);
        for (i, e) in index.iter().enumerate() {
            if i > 0 && index[i - 1].uuid >= e.uuid {
                return Err(bad("UUID_INDEX", "UUIDs are not strictly ascending"));
            }
            if e.reserved != 0 || (e.row as usize) >= rows || self.id(bytes, e.row as usize) != PointId::Uuid(e.uuid) {
                return Err(bad("UUID_INDEX", "entry disagrees with UUIDS"));
            }
        }
        if !rows.is_multiple_of(64) && kinds.last().is_some_and(|w| w >> (rows % 64) != 0) {
            return Err(bad("ID_KINDS", "bits past the last row are set"));
        }
        if kinds.iter().map(|w| w.count_ones() as usize).sum::<usize>() != index.len() {
            return Err(bad("ID_KINDS", "UUID rows disagree with UUID_INDEX"));
        }
        for row in 0..rows {
            let uuid = kinds[row / 64] >> (row % 64) & 1 == 1;
            if (uuid && ids[row] != 0) || (!uuid && uuids[row] != [0; 16]) {
                return Err(bad("IDS", "the slot of an id of the other kind is not zero"));
            }
        }
        Ok(())
    }
}

/// How many of `n` rows have UUID ids.
pub(crate) fn count_uuids(n: usize, id: impl Fn(usize) -> PointId) -> usize {
    (0..n).filter(|&i| matches!(id(i), PointId::Uuid(_))).count()
}

/// The id sections to plan after `IDS` (`ID_INDEX`, and the UUID sections when `uuids > 0`)
/// for `n` rows, as `(kind, flags, length)`; a layout holding the UUID sections gets the header
/// flag [`FLAG_UUID_IDS`].
pub(crate) fn planned_index(n: usize, uuids: usize) -> Vec<(u32, u32, u64)> {
    let mut planned = alloc::vec![(KIND_ID_INDEX, 0, ((n - uuids) * core::mem::size_of::<IdEntry>()) as u64)];
    if uuids > 0 {
        planned.push((KIND_UUIDS, 0, (n * 16) as u64));
        planned.push((KIND_ID_KINDS, 0, (n.div_ceil(64) * 8) as u64));
        planned.push((KIND_UUID_INDEX, 0, (uuids * core::mem::size_of::<UuidEntry>()) as u64));
    }
    planned
}

/// Writes `ID_INDEX` and, with UUIDs, the UUID sections of `n` rows whose ids `id` gives
/// (`IDS`, already written, holds `0` for UUID rows), as `layout` planned them.
pub(crate) fn write_index(n: usize, id: impl Fn(usize) -> PointId, layout: &Layout, file: &mut [u8]) {
    let id_index = layout.range(KIND_ID_INDEX);
    if !layout.has(KIND_UUIDS) {
        // Integer ids only: `ID_INDEX` from `IDS` as written (planned before it).
        let (head, rest) = file.split_at_mut(id_index.start);
        let ids: &[u64] = bytemuck::cast_slice(&head[layout.range(KIND_IDS)]);
        let index: &mut [IdEntry] = bytemuck::cast_slice_mut(&mut rest[..id_index.len()]);
        for (row, (e, &x)) in index.iter_mut().zip(ids).enumerate() {
            *e = IdEntry { id: x, row: row as u32, reserved: 0 };
        }
        sort_id_entries(index);
        return;
    }
    // One pass over the ids: the UUID slots written, the kind bits and both indexes' entries
    // kept (the bits are ⌈n/64⌉ words, copied in after).
    let (mut nums, mut entries) = (Vec::new(), Vec::new());
    let mut words = alloc::vec![0u64; n.div_ceil(64)];
    let uuids: &mut [[u8; 16]] = bytemuck::cast_slice_mut(&mut file[layout.range(KIND_UUIDS)]);
    for row in 0..n {
        match id(row) {
            PointId::Num(x) => nums.push(IdEntry { id: x, row: row as u32, reserved: 0 }),
            PointId::Uuid(u) => {
                uuids[row] = u;
                words[row / 64] |= 1 << (row % 64);
                entries.push(UuidEntry { uuid: u, row: row as u32, reserved: 0 });
            }
        }
    }
    bytemuck::cast_slice_mut::<u8, u64>(&mut file[layout.range(KIND_ID_KINDS)]).copy_from_slice(&words);
    sort_id_entries(&mut nums);
    bytemuck::cast_slice_mut::<u8, IdEntry>(&mut file[id_index]).copy_from_slice(&nums);
    let order = uuid_order(&entries.iter().map(|e| e.uuid).collect::<Vec<_>>());
    let index: &mut [UuidEntry] = bytemuck::cast_slice_mut(&mut file[layout.range(KIND_UUID_INDEX)]);
    for (slot, i) in index.iter_mut().zip(order) {
        *slot = entries[i as usize];
    }
}

/// The permutation that sorts `uuids` (unique) ascending by bytes: `order[k]` is the position
/// of the `k`-th smallest. Only [`shoal_format::sort_u64`] sorts (a sort routine of its own for
/// UUIDs or [`PointId`]s would be 8–16 KB of wasm): the first halves (big-endian `u64`)
/// sorted and made distinct, the UUIDs grouped by them (a counting sort), then each group of
/// two or more ordered by its second halves, which are distinct within a group.
pub(crate) fn uuid_order(uuids: &[[u8; 16]]) -> Vec<u32> {
    debug_assert!(
        {
            let mut all = uuids.to_vec();
            all.sort_unstable();
            all.windows(2).all(|w| w[0] != w[1])
        },
        "uuid_order takes distinct UUIDs"
    );
    let half = |u: &[u8; 16], at: usize| u64::from_be_bytes(u[at..at + 8].try_into().expect("8 bytes"));
    let mut his: Vec<u64> = uuids.iter().map(|u| half(u, 0)).collect();
    shoal_format::sort_u64(&mut his);
    his.dedup();
    let group = |u: &[u8; 16]| his.binary_search(&half(u, 0)).expect("every first half is listed");
    let mut start = alloc::vec![0u32; his.len() + 1];
    for u in uuids {
        start[group(u) + 1] += 1;
    }
    for g in 0..his.len() {
        start[g + 1] += start[g];
    }
    let mut fill = start.clone();
    let mut order = alloc::vec![0u32; uuids.len()];
    for (i, u) in uuids.iter().enumerate() {
        let g = group(u);
        order[fill[g] as usize] = i as u32;
        fill[g] += 1;
    }
    let mut los = Vec::new();
    let mut members = Vec::new();
    for g in 0..his.len() {
        let run = &mut order[start[g] as usize..start[g + 1] as usize];
        if run.len() < 2 {
            continue;
        }
        members.clear();
        members.extend_from_slice(run);
        los.clear();
        los.extend(members.iter().map(|&i| half(&uuids[i as usize], 8)));
        shoal_format::sort_u64(&mut los);
        for &i in &members {
            run[los.binary_search(&half(&uuids[i as usize], 8)).expect("listed")] = i;
        }
    }
    order
}

/// Sorts `ID_INDEX` entries (distinct ids) by id. The package sorts the ids alone and places
/// each entry by binary search (no sort routine for the 16-byte records: wasm size); native
/// hosts sort the records (faster on the 10M-row builds). Both give the same bytes (tested).
pub(crate) fn sort_id_entries(index: &mut [IdEntry]) {
    #[cfg(target_family = "wasm")]
    sort_id_entries_by_keys(index);
    #[cfg(not(target_family = "wasm"))]
    index.sort_unstable();
}

/// [`sort_id_entries`] through [`shoal_format::sort_u64`] only.
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))] // native: its test only
fn sort_id_entries_by_keys(index: &mut [IdEntry]) {
    let mut keys: Vec<u64> = index.iter().map(|e| e.id).collect();
    shoal_format::sort_u64(&mut keys);
    let entries = index.to_vec();
    for e in entries {
        index[keys.binary_search(&e.id).expect("every id is listed")] = e;
    }
}

/// Sorts point ids ascending ([`PointId`] order: integers by value, then UUIDs by bytes) with
/// the sort routines of `u64` and [`uuid_order`] (see there).
pub(crate) fn sort_ids(ids: &mut Vec<PointId>) {
    let mut nums: Vec<u64> = ids.iter().filter_map(|id| id.as_num()).collect();
    let uuids: Vec<[u8; 16]> = ids
        .iter()
        .filter_map(|id| match id {
            PointId::Uuid(u) => Some(*u),
            PointId::Num(_) => None,
        })
        .collect();
    shoal_format::sort_u64(&mut nums);
    ids.clear();
    ids.extend(nums.into_iter().map(PointId::Num));
    ids.extend(uuid_order(&uuids).into_iter().map(|i| PointId::Uuid(uuids[i as usize])));
}

/// The `IDS` slot of an id: the integer, or `0` for a UUID.
pub(crate) fn ids_slot(id: PointId) -> u64 {
    id.as_num().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// `sort_ids` (two passes of the `IdEntry` sort for UUIDs) gives `PointId`'s own order,
        /// also when many UUIDs share their first 8 bytes.
        #[test]
        fn sort_ids_is_the_point_id_order(raw in proptest::collection::vec((any::<bool>(), 0u64..4, 0u64..40), 0..400)) {
            let mut ids: Vec<PointId> = raw
                .iter()
                .map(|&(uuid, hi, lo)| {
                    if uuid {
                        let mut u = [0u8; 16];
                        u[..8].copy_from_slice(&(hi << 62 | hi).to_be_bytes());
                        u[8..].copy_from_slice(&(lo.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_be_bytes());
                        PointId::Uuid(u)
                    } else {
                        PointId::Num(lo * 1000 + hi)
                    }
                })
                .collect();
            ids.dedup();
            let mut unique = Vec::new();
            for id in ids {
                if !unique.contains(&id) {
                    unique.push(id);
                }
            }
            let mut want = unique.clone();
            want.sort();
            sort_ids(&mut unique);
            prop_assert_eq!(unique, want);
        }

        /// The package's way of sorting `ID_INDEX` gives the native hosts' bytes.
        #[test]
        fn id_entries_sort_alike_both_ways(ids in proptest::collection::hash_set(any::<u64>(), 0..300)) {
            let entries: Vec<IdEntry> =
                ids.iter().enumerate().map(|(row, &id)| IdEntry { id, row: row as u32, reserved: 0 }).collect();
            let (mut a, mut b) = (entries.clone(), entries);
            a.sort_unstable();
            sort_id_entries_by_keys(&mut b);
            prop_assert_eq!(a, b);
        }
    }
}
