//! Building a column and its postings from a field's per-row values (the writer's side of
//! [`super`]; the reader's side, and the layout, are there).

use alloc::vec;
use alloc::vec::Vec;

use super::*;

pub(super) fn packed_set(words: &mut [u64], width: u32, i: u64, code: u32) {
    let bit = i * width as u64;
    words[(bit >> 6) as usize] |= (code as u64) << (bit & 63);
}

/// Builds a column and its postings from per-row dictionary indexes in CSR form: row `r`
/// holds `values[row_offsets[r] .. row_offsets[r+1]]` (indexes into a dictionary of
/// `dict_len` values, any order, duplicates allowed). `null_rows` / `nulls_only_rows` list the
/// rows (ascending) whose value is `null` / an array of only `null`s; they must hold no values.
///
/// A dictionary of at most [`MAX_SET_VALUES`] values gives a [`MODE_SETS`] column (each slot
/// is the set of the row's values); a larger one a [`MODE_CODES`] column, or — with multi rows
/// on at least 1/16 of the rows, or 32-bit codes anyway — a [`MODE_COUNTED`] one
/// ([`MODE_DIRECT`] when its multi rows hold 2^27 codes or more).
///
/// ```
/// use shoal_payload::column::{build_column, MODE_COUNTED, MODE_SETS};
/// // Three rows: [1], [], [0, 1, 1]; dictionary of 2 values: value sets.
/// let (col, post) = build_column(2, &[0, 1, 1, 4], &[1, 0, 1, 1], &[], &[]);
/// assert_eq!(col.meta.mode, MODE_SETS);
/// assert_eq!(col.as_ref().code(2), 0b11);
/// assert_eq!(post.all_rows(), vec![2, 0, 2]);
/// // The same rows over a dictionary of 100 values: inline codes (one multi row in three:
/// // its codes are reached by a direct offset).
/// let (col, _) = build_column(100, &[0, 1, 1, 4], &[1, 0, 1, 1], &[], &[]);
/// let c = col.as_ref();
/// assert_eq!(c.meta.mode, MODE_COUNTED);
/// assert_eq!(c.code(0), 3); // inline: value 1 has code 3
/// assert_eq!(c.code(1), 0); // no value
/// assert_eq!(c.multi_codes_of(2).collect::<Vec<_>>(), vec![2, 3]);
/// ```
pub fn build_column(
    dict_len: u32,
    row_offsets: &[u32],
    values: &[u32],
    null_rows: &[u32],
    nulls_only_rows: &[u32],
) -> (ColumnParts, PostingsParts) {
    let rows = row_offsets.len().saturating_sub(1);
    if dict_len <= MAX_SET_VALUES {
        return build_set_column(dict_len, row_offsets, values, null_rows, nulls_only_rows);
    }
    let width = width_for(dict_len);
    let mut slots = vec![0u64; packed_words(rows as u64, width) as usize];
    let blocks = rows.div_ceil(RANK_BLOCK);
    let mut multi_bits = vec![0u64; blocks * (RANK_BLOCK / 64)];
    let mut multi_offsets: Vec<u32> = Vec::new();
    let mut multi_list: Vec<u32> = Vec::new();
    let mut counts = vec![0u32; dict_len as usize + 1];
    let mut valued = 0u32;
    // A row's values, widened for the crates' one integer sort (`shoal_format::sort_u64`).
    let mut scratch: Vec<u64> = Vec::new();
    for r in 0..rows {
        scratch.clear();
        scratch.extend(values[row_offsets[r] as usize..row_offsets[r + 1] as usize].iter().map(|&v| u64::from(v)));
        shoal_format::sort_u64(&mut scratch);
        scratch.dedup();
        for &v in &scratch {
            counts[v as usize + 1] += 1;
        }
        match scratch.len() {
            0 => {}
            1 => {
                packed_set(&mut slots, width, r as u64, scratch[0] as u32 + CODE_FIRST_VALUE);
                valued += 1;
            }
            _ => {
                packed_set(&mut slots, width, r as u64, CODE_MULTI);
                multi_bits[r / 64] |= 1 << (r % 64);
                if multi_offsets.is_empty() {
                    multi_offsets.push(0);
                }
                multi_list.extend(scratch.iter().map(|&v| v as u32 + CODE_FIRST_VALUE));
                multi_offsets.push(multi_list.len() as u32);
                valued += 1;
            }
        }
    }
    let mut multi_rank = Vec::with_capacity(blocks);
    let mut acc = 0u32;
    for b in 0..blocks {
        multi_rank.push(acc);
        acc += multi_bits[b * 8..b * 8 + 8].iter().map(|w| w.count_ones()).sum::<u32>();
    }
    let mut multi_codes = vec![0u64; packed_words(multi_list.len() as u64, width) as usize];
    for (i, &c) in multi_list.iter().enumerate() {
        packed_set(&mut multi_codes, width, i as u64, c);
    }
    // Postings: counting sort by value, rows ascending within a value.
    for i in 1..counts.len() {
        counts[i] += counts[i - 1];
    }
    let offsets = counts.clone();
    let mut post_rows = vec![0u32; *counts.last().unwrap_or(&0) as usize];
    let mut cursor = counts;
    for r in 0..rows {
        scratch.clear();
        scratch.extend(values[row_offsets[r] as usize..row_offsets[r + 1] as usize].iter().map(|&v| u64::from(v)));
        shoal_format::sort_u64(&mut scratch);
        scratch.dedup();
        for &v in &scratch {
            post_rows[cursor[v as usize] as usize] = r as u32;
            cursor[v as usize] += 1;
        }
    }
    let meta = ColumnMeta {
        rows: rows as u32,
        width,
        dict_len,
        multi_points: multi_offsets.len().saturating_sub(1) as u32,
        multi_len: multi_list.len() as u32,
        null_points: null_rows.len() as u32,
        nulls_only_points: nulls_only_rows.len() as u32,
        valued_points: valued,
        mode: MODE_CODES,
        stray_points: 0,
        reserved: [0; 6],
    };
    let col = ColumnParts {
        meta,
        slots,
        multi_bits,
        multi_rank,
        multi_offsets,
        multi_codes,
        null_rows: null_rows.to_vec(),
        nulls_only_rows: nulls_only_rows.to_vec(),
    };
    // Measured (benches/check_values_any.rs): the rank path costs two more dependent loads
    // than direct offsets, so it only pays where it saves memory: narrow codes, rare multi rows.
    let direct = (width == 32 || meta.multi_points as u64 * 16 >= rows as u64)
        && meta.multi_points > 0
        && dict_len < DIRECT_TAG - CODE_FIRST_VALUE
        && meta.multi_len < DIRECT_TAG;
    // Counted when the starts fit in 27 bits; the uncounted direct mode past that.
    let col = if direct { to_direct(&col, meta.multi_len < COUNTED_MAX_LEN) } else { col };
    (col, PostingsParts { offsets, rows: post_rows, ..PostingsParts::default() })
}

/// The column in [`MODE_COUNTED`] (`counted`) or [`MODE_DIRECT`].
pub(super) fn to_direct(col: &ColumnParts, counted: bool) -> ColumnParts {
    let c = col.as_ref();
    let rows = c.rows();
    let mut slots = vec![0u64; packed_words(rows as u64, 32) as usize];
    let mut codes: Vec<u32> = Vec::with_capacity(col.meta.multi_len as usize);
    for r in 0..rows {
        let code = c.code(r);
        let slot = if code == CODE_MULTI {
            let start = codes.len() as u32;
            codes.extend(c.multi_codes_of(r));
            if let Some(last) = codes.last_mut() {
                *last |= DIRECT_TAG;
            }
            if counted {
                DIRECT_TAG | start << COUNT_BITS | (codes.len() as u32 - start).min(COUNT_OPEN)
            } else {
                DIRECT_TAG | start
            }
        } else {
            code
        };
        packed_set(&mut slots, 32, r as u64, slot);
    }
    let mut multi_codes = vec![0u64; packed_words(codes.len() as u64, 32) as usize];
    for (i, &x) in codes.iter().enumerate() {
        packed_set(&mut multi_codes, 32, i as u64, x);
    }
    ColumnParts {
        meta: ColumnMeta { width: 32, mode: if counted { MODE_COUNTED } else { MODE_DIRECT }, ..col.meta },
        slots,
        multi_codes,
        null_rows: col.null_rows.clone(),
        nulls_only_rows: col.nulls_only_rows.clone(),
        ..ColumnParts::default()
    }
}

fn build_set_column(
    dict_len: u32,
    row_offsets: &[u32],
    values: &[u32],
    null_rows: &[u32],
    nulls_only_rows: &[u32],
) -> (ColumnParts, PostingsParts) {
    let rows = row_offsets.len().saturating_sub(1);
    let width = set_width_for(dict_len);
    let mut slots = vec![0u64; packed_words(rows as u64, width) as usize];
    let mut counts = vec![0u32; dict_len as usize + 1];
    let (mut valued, mut multi_points, mut multi_len) = (0u32, 0u32, 0u32);
    let mut sets = Vec::with_capacity(rows);
    for r in 0..rows {
        let mut set = 0u32;
        for &v in &values[row_offsets[r] as usize..row_offsets[r + 1] as usize] {
            set |= 1 << v;
        }
        sets.push(set);
        packed_set(&mut slots, width, r as u64, set);
        let n = set.count_ones();
        valued += u32::from(n > 0);
        if n > 1 {
            multi_points += 1;
            multi_len += n;
        }
        let mut s = set;
        while s != 0 {
            counts[s.trailing_zeros() as usize + 1] += 1;
            s &= s - 1;
        }
    }
    for i in 1..counts.len() {
        counts[i] += counts[i - 1];
    }
    let offsets = counts.clone();
    let mut post_rows = vec![0u32; *counts.last().unwrap_or(&0) as usize];
    let mut cursor = counts;
    for (r, &set) in sets.iter().enumerate() {
        let mut s = set;
        while s != 0 {
            let v = s.trailing_zeros() as usize;
            post_rows[cursor[v] as usize] = r as u32;
            cursor[v] += 1;
            s &= s - 1;
        }
    }
    let meta = ColumnMeta {
        rows: rows as u32,
        width,
        dict_len,
        multi_points,
        multi_len,
        null_points: null_rows.len() as u32,
        nulls_only_points: nulls_only_rows.len() as u32,
        valued_points: valued,
        mode: MODE_SETS,
        stray_points: 0,
        reserved: [0; 6],
    };
    let col = ColumnParts {
        meta,
        slots,
        null_rows: null_rows.to_vec(),
        nulls_only_rows: nulls_only_rows.to_vec(),
        ..ColumnParts::default()
    };
    (col, PostingsParts { offsets, rows: post_rows, ..PostingsParts::default() })
}

/// Builds the presence-only column of a text field: code 1 marks a row with at least one
/// string (its multi arrays stay empty), code 0 a row without.
pub fn build_presence_column(has_value: &[bool], null_rows: &[u32], nulls_only_rows: &[u32]) -> ColumnParts {
    let rows = has_value.len();
    let width = width_for(0);
    let mut slots = vec![0u64; packed_words(rows as u64, width) as usize];
    let mut valued = 0;
    for (r, &h) in has_value.iter().enumerate() {
        if h {
            packed_set(&mut slots, width, r as u64, CODE_MULTI);
            valued += 1;
        }
    }
    let blocks = rows.div_ceil(RANK_BLOCK);
    ColumnParts {
        meta: ColumnMeta {
            rows: rows as u32,
            width,
            dict_len: 0,
            multi_points: 0,
            multi_len: 0,
            null_points: null_rows.len() as u32,
            nulls_only_points: nulls_only_rows.len() as u32,
            valued_points: valued,
            mode: MODE_CODES,
            stray_points: 0,
            reserved: [0; 6],
        },
        slots,
        multi_bits: vec![0; blocks * (RANK_BLOCK / 64)],
        multi_rank: vec![0; blocks],
        multi_offsets: Vec::new(),
        multi_codes: Vec::new(),
        null_rows: null_rows.to_vec(),
        nulls_only_rows: nulls_only_rows.to_vec(),
    }
}
