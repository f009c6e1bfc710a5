//! Binary batches (`docs/format.md`, "Binary batch"): the body of
//! `POST /collections/{name}/points/binary` and of every upsert record in the write-ahead log.

use std::borrow::Cow;

use serde_json::Value;
use shoal_core::{PointId, SparseVector};

/// The batch magic.
pub const MAGIC: &[u8; 4] = b"SHB1";
/// Header bytes before the ids.
pub const HEADER: usize = 16;
/// Most points in one batch.
pub const MAX_POINTS: usize = 1_000_000;
/// Flag bit: payload lines follow the vectors.
pub const FLAG_PAYLOADS: u32 = 1;
/// Flag bit: some id is a UUID; the ids are an id block ([`encode_ids`]) instead of `n` `u64`.
pub const FLAG_UUIDS: u32 = 2;
/// Flag bit: a sparse block ([`encode_sparse`]) follows the vectors.
pub const FLAG_SPARSE: u32 = 4;
/// Flag bit: a dense block ([`encode_dense`]) follows the vectors: the points' dense vectors
/// after the first.
pub const FLAG_DENSE: u32 = 8;
/// Marks a point without the sparse vector in a sparse block.
const ABSENT: u32 = u32::MAX;

/// The sparse vectors of a batch: per sparse vector (by name), one entry per point (`None`:
/// the point does not hold it).
pub type SparseColumns = Vec<(String, Vec<Option<SparseVector>>)>;

/// A parsed batch: ids and vectors borrowed from the body when it is aligned, copied once when
/// it is not.
#[derive(Debug)]
pub struct Batch<'a> {
    /// Vector dimension.
    pub dim: usize,
    /// Point ids.
    pub ids: Vec<PointId>,
    /// `ids.len() * dim` floats, row-major.
    pub vectors: Cow<'a, [f32]>,
    /// One payload per point, or none.
    pub payloads: Vec<Value>,
    /// Sparse vectors by name (none: the batch carries no sparse vector).
    pub sparse: SparseColumns,
    /// The dense vectors after the first (the collection's, in name order), each `(dim,
    /// ids.len() * dim floats)` (none: the collection has one dense vector).
    pub dense: DenseColumns,
}

/// Dense vectors `1..` of a batch: `(dim, row-major floats)` each.
pub type DenseColumns = Vec<(usize, Vec<f32>)>;

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Reads `len` little-endian items of `T` at `bytes`: in place when aligned (on little-endian
/// targets), else copied once.
fn cast_or_copy<T: bytemuck::Pod>(bytes: &[u8]) -> Cow<'_, [T]> {
    #[cfg(target_endian = "little")]
    if let Ok(s) = bytemuck::try_cast_slice::<u8, T>(bytes) {
        return Cow::Borrowed(s);
    }
    let mut v = vec![T::zeroed(); bytes.len() / size_of::<T>()];
    bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(bytes);
    #[cfg(target_endian = "big")]
    for x in bytemuck::cast_slice_mut::<T, u8>(&mut v).chunks_exact_mut(size_of::<T>()) {
        x.reverse();
    }
    Cow::Owned(v)
}

/// Parses a binary batch; errors say what is wrong (for a 400 response).
pub fn parse(body: &[u8]) -> Result<Batch<'_>, String> {
    if body.len() < HEADER {
        return Err(format!("binary batch: {} bytes is shorter than the 16-byte header", body.len()));
    }
    if &body[..4] != MAGIC {
        return Err("binary batch: bad magic (expected \"SHB1\")".into());
    }
    let (dim, n, flags) = (u32_at(body, 4) as usize, u32_at(body, 8) as usize, u32_at(body, 12));
    if n == 0 || n > MAX_POINTS {
        return Err(format!("binary batch: count {n} is not in 1..={MAX_POINTS}"));
    }
    if dim == 0 || dim > 65_536 {
        return Err(format!("binary batch: dim {dim} is not in 1..=65536"));
    }
    if flags & !(FLAG_PAYLOADS | FLAG_UUIDS | FLAG_SPARSE | FLAG_DENSE) != 0 {
        return Err(format!("binary batch: unknown flags {flags:#x}"));
    }
    // n <= 1e6 and dim <= 65536: these fit in 64 bits; checked for 32-bit targets.
    let too_big = || "binary batch: count x dim is too large for this machine".to_string();
    let id_bytes = if flags & FLAG_UUIDS != 0 { id_block_len(n) } else { n * 8 };
    let ids_end = id_bytes.checked_add(HEADER).ok_or_else(too_big)?;
    let vec_end =
        n.checked_mul(dim).and_then(|f| f.checked_mul(4)).and_then(|b| b.checked_add(ids_end)).ok_or_else(too_big)?;
    if body.len() < vec_end {
        return Err(format!(
            "binary batch: truncated: {} bytes, the header announces {n} points of dim {dim} ({vec_end} bytes before payloads)",
            body.len()
        ));
    }
    let (dense, dense_len) = if flags & FLAG_DENSE != 0 {
        parse_dense(&body[vec_end..], n).map_err(|e| format!("binary batch: dense block: {e}"))?
    } else {
        (Vec::new(), 0)
    };
    let (sparse, sparse_len) = if flags & FLAG_SPARSE != 0 {
        parse_sparse(&body[vec_end + dense_len..], n).map_err(|e| format!("binary batch: sparse block: {e}"))?
    } else {
        (Vec::new(), 0)
    };
    let blocks = dense_len + sparse_len;
    let vec_end = vec_end + blocks;
    let payloads = if flags & FLAG_PAYLOADS != 0 {
        parse_lines(&body[vec_end..], n)?
    } else if body.len() != vec_end {
        return Err(format!("binary batch: {} bytes after the vectors and no payload flag", body.len() - vec_end));
    } else {
        Vec::new()
    };
    let ids = if flags & FLAG_UUIDS != 0 {
        parse_ids(&body[HEADER..ids_end], n).map_err(|e| format!("binary batch: {e}"))?
    } else {
        cast_or_copy::<u64>(&body[HEADER..ids_end]).iter().map(|&id| PointId::Num(id)).collect()
    };
    let vectors = cast_or_copy(&body[ids_end..vec_end - blocks]);
    Ok(Batch { dim, ids, vectors, payloads, sparse, dense })
}

/// Appends the dense block of `columns` (1..=15 of them): `u32` K, then per vector its `u32`
/// dimension (1..=65536) and its `n x dim` `f32`, row-major; little-endian.
pub fn encode_dense(columns: &DenseColumns, out: &mut Vec<u8>) {
    out.extend_from_slice(&(columns.len() as u32).to_le_bytes());
    for (dim, v) in columns {
        out.extend_from_slice(&(*dim as u32).to_le_bytes());
        v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
    }
}

/// Parses the dense block at the start of `bytes` for `n` points ([`encode_dense`]); returns it
/// and its length. (Finiteness is the collection's check, as for the first vector.)
fn parse_dense(bytes: &[u8], n: usize) -> Result<(DenseColumns, usize), String> {
    let word = |at: usize, what: &str| -> Result<u32, String> {
        let w = bytes.get(at..at + 4).ok_or_else(|| format!("truncated at {what}"))?;
        Ok(u32::from_le_bytes(w.try_into().expect("4 bytes")))
    };
    let k = word(0, "the vector count")? as usize;
    if k == 0 || k >= shoal_core::MAX_DENSE_VECTORS {
        return Err(format!("{k} dense vectors after the first (1..=15)"));
    }
    let (mut at, mut columns) = (4usize, Vec::with_capacity(k));
    for i in 0..k {
        let dim = word(at, "a dimension")? as usize;
        if dim == 0 || dim > 65_536 {
            return Err(format!("vector {}: dim {dim} is not in 1..=65536", i + 1));
        }
        let len = n * dim * 4;
        let floats = bytes.get(at + 4..at + 4 + len).ok_or_else(|| format!("truncated in vector {}", i + 1))?;
        columns.push((dim, cast_or_copy::<f32>(floats).into_owned()));
        at += 4 + len;
    }
    Ok((columns, at))
}

/// Bytes of the id block of `n` ids: `n` `u64`, `⌈n/64⌉` kind words, `n` UUIDs.
pub fn id_block_len(n: usize) -> usize {
    8 * n + 8 * n.div_ceil(64) + 16 * n
}

/// Appends the id block of `ids` (some of them UUIDs), the segment format's three id arrays:
/// `n` `u64` (the integer, `0` for a UUID), `⌈n/64⌉` `u64` words (bit `i % 64` of word `i / 64`
/// set when id `i` is a UUID) and `n` UUIDs (zeros for an integer), all little-endian.
pub fn encode_ids(ids: &[PointId], out: &mut Vec<u8>) {
    for id in ids {
        out.extend_from_slice(&id.as_num().unwrap_or(0).to_le_bytes());
    }
    for chunk in ids.chunks(64) {
        let word = chunk.iter().enumerate().fold(0u64, |w, (i, id)| w | u64::from(id.as_num().is_none()) << i);
        out.extend_from_slice(&word.to_le_bytes());
    }
    for id in ids {
        out.extend_from_slice(match id {
            PointId::Uuid(u) => u,
            PointId::Num(_) => &[0; 16],
        });
    }
}

/// Parses an id block of `n` ids ([`encode_ids`]; exactly [`id_block_len`] bytes). One encoding
/// per id list: bits past `n`, or a slot of the other kind that is not zero, are refused.
pub fn parse_ids(bytes: &[u8], n: usize) -> Result<Vec<PointId>, String> {
    if bytes.len() != id_block_len(n) {
        return Err(format!("id block: {} bytes for {n} ids", bytes.len()));
    }
    let (nums, rest) = bytes.split_at(8 * n);
    let (kinds, uuids) = rest.split_at(8 * n.div_ceil(64));
    let word = |i: usize| u64::from_le_bytes(kinds[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    if (0..n.div_ceil(64)).all(|i| word(i) == 0) {
        return Err("id block: no id is a UUID (integer ids are written as n u64)".into());
    }
    if !n.is_multiple_of(64) && word(n / 64) >> (n % 64) != 0 {
        return Err("id block: kind bits past the last id".into());
    }
    (0..n)
        .map(|i| {
            let num = u64::from_le_bytes(nums[8 * i..8 * i + 8].try_into().expect("8 bytes"));
            let uuid: [u8; 16] = uuids[16 * i..16 * i + 16].try_into().expect("16 bytes");
            match word(i / 64) >> (i % 64) & 1 {
                1 if num == 0 => Ok(PointId::Uuid(uuid)),
                0 if uuid == [0; 16] => Ok(PointId::Num(num)),
                _ => Err(format!("id block: id {i} has a slot of the other kind that is not zero")),
            }
        })
        .collect()
}

/// The columns a sparse block holds: those where some point holds the vector, by name.
fn block_columns(columns: &SparseColumns) -> Vec<&(String, Vec<Option<SparseVector>>)> {
    let mut held: Vec<_> = columns.iter().filter(|(_, c)| c.iter().any(Option::is_some)).collect();
    held.sort_by(|a, b| a.0.cmp(&b.0));
    held
}

/// Appends the sparse block of `columns` (each one entry per point; those where no point holds
/// the vector are left out, the others written by name, 1..=16 of them): `u32` T; T times the
/// name (`u32` length, UTF-8, zeros to a multiple of 4); then per vector, per point `u32` count
/// (`0xFFFF_FFFF`: the point does not hold it), `count` `u32` indices (ascending) and `count`
/// `f32` values; little-endian.
pub fn encode_sparse(columns: &SparseColumns, out: &mut Vec<u8>) {
    let columns = block_columns(columns);
    out.extend_from_slice(&(columns.len() as u32).to_le_bytes());
    for (name, _) in &columns {
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.resize(out.len().next_multiple_of(4), 0);
    }
    for (_, points) in &columns {
        for v in points {
            let Some(v) = v else {
                out.extend_from_slice(&ABSENT.to_le_bytes());
                continue;
            };
            out.extend_from_slice(&(v.entries().len() as u32).to_le_bytes());
            v.entries().iter().for_each(|e| out.extend_from_slice(&e.index.to_le_bytes()));
            v.entries().iter().for_each(|e| out.extend_from_slice(&e.value.to_le_bytes()));
        }
    }
}

/// Parses the sparse block at the start of `bytes` for `n` points ([`encode_sparse`]; one
/// encoding: names valid and in byte order, each vector held by some point, indices strictly
/// ascending, zero padding); returns it and its length.
fn parse_sparse(bytes: &[u8], n: usize) -> Result<(SparseColumns, usize), String> {
    let mut at = 0usize;
    let word = |at: &mut usize, what: &str| -> Result<u32, String> {
        let w = bytes.get(*at..*at + 4).ok_or_else(|| format!("truncated at {what}"))?;
        *at += 4;
        Ok(u32::from_le_bytes(w.try_into().expect("4 bytes")))
    };
    let t = word(&mut at, "the vector count")? as usize;
    if t == 0 || t > shoal_core::MAX_SPARSE_VECTORS {
        return Err(format!("{t} sparse vectors (1..=16)"));
    }
    let mut columns: SparseColumns = Vec::with_capacity(t);
    for _ in 0..t {
        let len = word(&mut at, "a name length")? as usize;
        if len == 0 || len > shoal_core::MAX_SPARSE_NAME {
            return Err(format!("a name of {len} bytes"));
        }
        let padded = len.next_multiple_of(4);
        let raw = bytes.get(at..at + padded).ok_or("truncated in a name")?;
        let name = std::str::from_utf8(&raw[..len]).map_err(|_| "a name is not UTF-8")?;
        if raw[len..].iter().any(|&b| b != 0) || columns.last().is_some_and(|(c, _)| c.as_str() >= name) {
            return Err("a name's padding is not zero, or the names are not in byte order".into());
        }
        at += padded;
        // Not sized by `n` ahead: the counts must be there first (a short body asks for little).
        columns.push((name.to_string(), Vec::new()));
    }
    for (_, points) in &mut columns {
        for i in 0..n {
            let count = word(&mut at, "a count")?;
            if count == ABSENT {
                points.push(None);
                continue;
            }
            let count = count as usize;
            if count > shoal_core::MAX_SPARSE_PAIRS {
                return Err(format!("point {i}: {count} pairs"));
            }
            let indices = (0..count).map(|_| word(&mut at, "an index")).collect::<Result<Vec<u32>, _>>()?;
            let values =
                (0..count).map(|_| word(&mut at, "a value").map(f32::from_bits)).collect::<Result<Vec<f32>, _>>()?;
            if indices.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!("point {i}: indices not strictly ascending"));
            }
            points.push(Some(SparseVector::new(&indices, &values).map_err(|e| format!("point {i}: {e}"))?));
        }
        if points.iter().all(Option::is_none) {
            return Err("a sparse vector no point holds".into());
        }
    }
    Ok((columns, at))
}

fn parse_lines(bytes: &[u8], n: usize) -> Result<Vec<Value>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("binary batch: payload lines: {e}"))?;
    let text = text.strip_suffix('\n').unwrap_or(text);
    let mut out = Vec::with_capacity(n);
    for (i, line) in text.split('\n').enumerate() {
        if i == n {
            return Err(format!("binary batch: more than {n} payload lines"));
        }
        let line = line.trim();
        out.push(if line.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(line).map_err(|e| format!("binary batch: payload line {i}: {e}"))?
        });
    }
    if out.len() != n {
        return Err(format!("binary batch: {} payload lines for {n} points", out.len()));
    }
    Ok(out)
}

/// Encodes a batch (the JSON upsert routes log this form): integer ids as `n` `u64`, or an id
/// block ([`FLAG_UUIDS`]) when some id is a UUID.
pub fn encode(dim: usize, ids: &[PointId], vectors: &[f32], payloads: &[Value]) -> Vec<u8> {
    encode_with_sparse(dim, ids, vectors, (&Vec::new(), &Vec::new()), payloads)
}

/// [`encode`] with the dense vectors after the first ([`FLAG_DENSE`] when there are some) and
/// sparse vectors ([`FLAG_SPARSE`] when some point holds one).
pub fn encode_with_sparse(
    dim: usize,
    ids: &[PointId],
    vectors: &[f32],
    (dense, sparse): (&DenseColumns, &SparseColumns),
    payloads: &[Value],
) -> Vec<u8> {
    let n = ids.len();
    let uuids = ids.iter().any(|id| id.as_num().is_none());
    let mut out = Vec::with_capacity(HEADER + id_block_len(n) + 4 * vectors.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(dim as u32).to_le_bytes());
    out.extend_from_slice(&(n as u32).to_le_bytes());
    let flags = if payloads.is_empty() { 0 } else { FLAG_PAYLOADS }
        | if uuids { FLAG_UUIDS } else { 0 }
        | if block_columns(sparse).is_empty() { 0 } else { FLAG_SPARSE }
        | if dense.is_empty() { 0 } else { FLAG_DENSE };
    out.extend_from_slice(&flags.to_le_bytes());
    if uuids {
        encode_ids(ids, &mut out);
    } else {
        for id in ids {
            out.extend_from_slice(&id.as_num().unwrap_or(0).to_le_bytes());
        }
    }
    for x in vectors {
        out.extend_from_slice(&x.to_le_bytes());
    }
    if !dense.is_empty() {
        encode_dense(dense, &mut out);
    }
    if !block_columns(sparse).is_empty() {
        encode_sparse(sparse, &mut out);
    }
    for p in payloads {
        serde_json::to_writer(&mut out, p).expect("a JSON value serialises");
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_with_and_without_payloads() {
        let ids = [PointId::Num(7), PointId::Num(1 << 40)];
        let v = [1.0f32, -2.5, 0.0, 3.25];
        let docs = [json!({"tag": "a"}), Value::Null];
        for payloads in [&[][..], &docs[..]] {
            let bytes = encode(2, &ids, &v, payloads);
            let b = parse(&bytes).unwrap();
            assert_eq!((b.dim, &b.ids[..], &b.vectors[..], &b.payloads[..]), (2, &ids[..], &v[..], payloads));
            // The same batch one byte off alignment parses to the same values (copied).
            let mut shifted = vec![0u8; bytes.len() + 1];
            shifted[1..].copy_from_slice(&bytes);
            let b = parse(&shifted[1..]).unwrap();
            assert_eq!((&b.ids[..], &b.vectors[..]), (&ids[..], &v[..]));
        }
    }

    #[test]
    fn mixed_ids_round_trip_through_the_id_block() {
        let u = |b: u8| PointId::Uuid([b; 16]);
        let ids: Vec<PointId> = (0..130u64).map(|i| if i % 3 == 0 { PointId::Num(i) } else { u(i as u8) }).collect();
        let v: Vec<f32> = (0..130).map(|i| i as f32).collect();
        let bytes = encode(1, &ids, &v, &[]);
        assert_eq!(u32::from_le_bytes(bytes[12..16].try_into().unwrap()), FLAG_UUIDS);
        let b = parse(&bytes).unwrap();
        assert_eq!((b.ids, &b.vectors[..]), (ids.clone(), &v[..]));
        // Integer-only batches keep today's bytes: `n` u64 ids, no flag.
        let nums = encode(1, &[PointId::Num(5)], &[1.0], &[]);
        assert_eq!(nums.len(), HEADER + 8 + 4);
        // Each non-canonical block is refused: a kind bit past the ids, a UUID row with an
        // integer, an integer row with UUID bytes.
        let at = HEADER + 8 * 130;
        let mut past = bytes.clone();
        past[at + 16 + 7] |= 0x80;
        let mut num_on_uuid = bytes.clone();
        num_on_uuid[HEADER + 8] = 1;
        let mut uuid_on_num = bytes.clone();
        uuid_on_num[at + 24] = 1;
        // An id block of integers only: the same ids have one encoding, without the flag.
        let mut flagged = nums.clone();
        flagged[12] = FLAG_UUIDS as u8;
        let mut block = Vec::new();
        encode_ids(&[PointId::Num(5)], &mut block);
        flagged.splice(HEADER..HEADER + 8, block);
        for (bad, want) in [
            (past, "past the last id"),
            (num_on_uuid, "other kind"),
            (uuid_on_num, "other kind"),
            (flagged, "no id is a UUID"),
        ] {
            let err = parse(&bad).unwrap_err();
            assert!(err.contains(want), "{err:?} should mention {want:?}");
        }
    }

    #[test]
    fn sparse_vectors_round_trip_and_bad_blocks_are_refused() {
        let ids = [PointId::Num(1), PointId::Uuid([7; 16]), PointId::Num(3)];
        let sv = |i: &[u32], v: &[f32]| Some(SparseVector::new(i, v).unwrap());
        let sparse: SparseColumns = vec![
            ("alpha".into(), vec![sv(&[9, 2], &[0.5, -1.0]), None, sv(&[], &[])]),
            ("beta, 18 bytes ..x".into(), vec![None, sv(&[u32::MAX], &[3.0]), None]),
        ];
        let docs = [json!({"a": 1}), Value::Null, json!({"b": 2})];
        for payloads in [&[][..], &docs[..]] {
            let bytes = encode_with_sparse(1, &ids, &[1.0, 2.0, 3.0], (&Vec::new(), &sparse), payloads);
            let b = parse(&bytes).unwrap();
            assert_eq!((&b.ids[..], &b.vectors[..], &b.payloads[..]), (&ids[..], &[1.0, 2.0, 3.0][..], payloads));
            assert_eq!(b.sparse, sparse);
            assert_eq!(encode_with_sparse(1, &b.ids, &b.vectors, (&b.dense, &b.sparse), &b.payloads), bytes);
        }
        let good = encode_with_sparse(1, &ids, &[1.0, 2.0, 3.0], (&Vec::new(), &sparse), &[]);
        let block = HEADER + id_block_len(3) + 12;
        let with = |at: usize, word: u32| {
            let mut b = good.clone();
            b[at..at + 4].copy_from_slice(&word.to_le_bytes());
            b
        };
        // Point 0 of "alpha" starts after the count and two names (4 + 8, 4 + 20 bytes).
        let first = block + 4 + 12 + 24;
        // Names out of byte order: "beta..." written first.
        let mut swapped = good.clone();
        swapped[block + 4..block + 16].copy_from_slice(&[5, 0, 0, 0, b'b', b'e', b't', b'a', b'x', 0, 0, 0]);
        // A column no point holds is left out when encoding, and refused when parsing.
        let none: SparseColumns = vec![("alpha".into(), vec![None, None, None])];
        assert_eq!(
            encode_with_sparse(1, &ids, &[1.0, 2.0, 3.0], (&Vec::new(), &none), &[]),
            encode(1, &ids, &[1.0, 2.0, 3.0], &[])
        );
        let mut absent = encode(1, &ids, &[1.0, 2.0, 3.0], &[]);
        absent[12] |= FLAG_SPARSE as u8;
        for w in [1u32, 5, u32::from_le_bytes(*b"alph"), u32::from_le_bytes(*b"a\0\0\0"), ABSENT, ABSENT, ABSENT] {
            absent.extend_from_slice(&w.to_le_bytes());
        }
        for (bytes, want) in [
            (swapped, "byte order"),
            (absent, "no point holds"),
            (with(block, 0), "0 sparse vectors"),
            (with(block, 17), "17 sparse vectors"),
            (with(block + 4, 0), "a name of 0 bytes"),
            (with(first + 4, 9), "not strictly ascending"),
            (with(first + 12, f32::NAN.to_bits()), "not finite"),
            (with(first, 70_000), "70000 pairs"),
            (good[..good.len() - 2].to_vec(), "truncated"),
            ([&good[..], &[0, 0, 0, 0]].concat(), "after the vectors"),
        ] {
            let err = parse(&bytes).unwrap_err();
            assert!(err.contains(want), "{err:?} should mention {want:?}");
        }
    }

    #[test]
    fn dense_vectors_after_the_first_round_trip_and_bad_blocks_are_refused() {
        let ids = [PointId::Num(1), PointId::Uuid([7; 16])];
        let dense: DenseColumns = vec![(3, vec![0.5, 1.0, 1.5, 2.0, 2.5, 3.0]), (1, vec![-1.0, -2.0])];
        let sparse: SparseColumns = vec![("s".into(), vec![None, Some(SparseVector::new(&[4], &[1.0]).unwrap())])];
        let docs = [json!({"a": 1}), Value::Null];
        for (sparse, payloads) in [(&Vec::new(), &[][..]), (&sparse, &docs[..])] {
            let bytes = encode_with_sparse(2, &ids, &[1.0, 2.0, 3.0, 4.0], (&dense, sparse), payloads);
            assert_ne!(u32::from_le_bytes(bytes[12..16].try_into().unwrap()) & FLAG_DENSE, 0);
            let b = parse(&bytes).unwrap();
            assert_eq!((&b.ids[..], &b.vectors[..], &b.payloads[..]), (&ids[..], &[1.0, 2.0, 3.0, 4.0][..], payloads));
            assert_eq!((&b.dense, &b.sparse), (&dense, sparse));
            assert_eq!(encode_with_sparse(2, &b.ids, &b.vectors, (&b.dense, &b.sparse), &b.payloads), bytes);
        }
        let good = encode_with_sparse(2, &ids, &[1.0, 2.0, 3.0, 4.0], (&dense, &Vec::new()), &[]);
        let block = HEADER + id_block_len(2) + 16;
        let with = |at: usize, word: u32| {
            let mut b = good.clone();
            b[at..at + 4].copy_from_slice(&word.to_le_bytes());
            b
        };
        for (bytes, want) in [
            (with(block, 0), "0 dense vectors"),
            (with(block, 16), "16 dense vectors"),
            (with(block + 4, 0), "dim 0"),
            (with(block + 4, 70_000), "dim 70000"),
            (with(block + 4, 4), "vector 2: dim"),
            (with(block + 4, 9), "truncated"),
            (good[..good.len() - 1].to_vec(), "truncated"),
        ] {
            let err = parse(&bytes).unwrap_err();
            assert!(err.contains(want), "{err:?} should mention {want:?}");
        }
    }

    #[test]
    fn malformed_batches_are_refused() {
        let good = encode(2, &[PointId::Num(1), PointId::Num(2)], &[0.0; 4], &[]);
        let with_docs = encode(2, &[PointId::Num(1), PointId::Num(2)], &[0.0; 4], &[json!({}), json!({})]);
        let mut bad_magic = good.clone();
        bad_magic[0] = b'X';
        let mut bad_flags = good.clone();
        bad_flags[12] = 16;
        let mut zero = good.clone();
        zero[8..12].copy_from_slice(&0u32.to_le_bytes());
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (good[..10].to_vec(), "shorter than the 16-byte header"),
            (bad_magic, "bad magic"),
            (bad_flags, "unknown flags"),
            (zero, "count 0"),
            (good[..good.len() - 1].to_vec(), "truncated"),
            ([&good[..], b"x"].concat(), "after the vectors"),
            (with_docs[..with_docs.len() - 4].to_vec(), "payload lines for 2 points"),
            ([&with_docs[..], b"{}\n"].concat(), "more than 2 payload lines"),
            ([&with_docs[..with_docs.len() - 3], b"{\n"].concat(), "payload line 1"),
        ];
        for (bytes, want) in cases {
            let err = parse(&bytes).unwrap_err();
            assert!(err.contains(want), "{err:?} should mention {want:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Whatever the bytes, parsing answers (no panic), and an accepted batch re-encodes to
        /// the same bytes (payload lines normalised aside).
        #[test]
        fn any_bytes_parse_or_are_refused(
            magic in proptest::prelude::any::<bool>(),
            n in 0u32..4,
            dim in 0u32..4,
            flags in 0u32..5,
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256),
        ) {
            let mut bytes = if magic { MAGIC.to_vec() } else { b"SHB0".to_vec() };
            for x in [dim, n, flags] {
                bytes.extend_from_slice(&x.to_le_bytes());
            }
            bytes.extend_from_slice(&tail);
            if let Ok(b) = parse(&bytes)
                && b.payloads.is_empty()
            {
                proptest::prop_assert_eq!(encode(b.dim, &b.ids, &b.vectors, &[]), bytes);
            }
        }

        /// Every damage to a valid batch — a cut, a flipped byte — is refused or parses to a
        /// batch of the announced shape.
        #[test]
        fn damaged_batches_never_panic(n in 1usize..5, dim in 1usize..4, cut in 0usize..200, at in 0usize..200, bit in 0u8..8) {
            let ids: Vec<PointId> =
                (0..n as u64).map(|i| if i % 2 == 1 { PointId::Uuid([i as u8; 16]) } else { PointId::Num(i) }).collect();
            let v: Vec<f32> = (0..n * dim).map(|i| i as f32).collect();
            let docs: Vec<Value> = (0..n).map(|i| serde_json::json!({"i": i})).collect();
            let good = encode(dim, &ids, &v, &docs);
            let cut_bytes = &good[..cut.min(good.len())];
            if let Ok(b) = parse(cut_bytes) {
                proptest::prop_assert_eq!(b.ids.len() * b.dim, b.vectors.len());
            }
            let mut flipped = good.clone();
            let at = at % flipped.len();
            flipped[at] ^= 1 << bit;
            if let Ok(b) = parse(&flipped) {
                proptest::prop_assert_eq!(b.ids.len() * b.dim, b.vectors.len());
                proptest::prop_assert!(b.payloads.is_empty() || b.payloads.len() == b.ids.len());
            }
        }
    }
}
