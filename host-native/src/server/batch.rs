//! Binary batches (`docs/format.md`, "Binary batch"): the body of
//! `POST /collections/{name}/points/binary` and of every upsert record in the write-ahead log.

use std::borrow::Cow;

use serde_json::Value;

/// The batch magic.
pub const MAGIC: &[u8; 4] = b"SHB1";
/// Header bytes before the ids.
pub const HEADER: usize = 16;
/// Most points in one batch.
pub const MAX_POINTS: usize = 1_000_000;
/// Flag bit: payload lines follow the vectors.
pub const FLAG_PAYLOADS: u32 = 1;

/// A parsed batch: ids and vectors borrowed from the body when it is aligned, copied once when
/// it is not.
#[derive(Debug)]
pub struct Batch<'a> {
    /// Vector dimension.
    pub dim: usize,
    /// Point ids.
    pub ids: Cow<'a, [u64]>,
    /// `ids.len() * dim` floats, row-major.
    pub vectors: Cow<'a, [f32]>,
    /// One payload per point, or none.
    pub payloads: Vec<Value>,
}

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
    if flags & !FLAG_PAYLOADS != 0 {
        return Err(format!("binary batch: unknown flags {flags:#x}"));
    }
    // n <= 1e6 and dim <= 65536: these fit in 64 bits; checked for 32-bit targets.
    let too_big = || "binary batch: count x dim is too large for this machine".to_string();
    let ids_end = n.checked_mul(8).and_then(|b| b.checked_add(HEADER)).ok_or_else(too_big)?;
    let vec_end =
        n.checked_mul(dim).and_then(|f| f.checked_mul(4)).and_then(|b| b.checked_add(ids_end)).ok_or_else(too_big)?;
    if body.len() < vec_end {
        return Err(format!(
            "binary batch: truncated: {} bytes, the header announces {n} points of dim {dim} ({vec_end} bytes before payloads)",
            body.len()
        ));
    }
    let payloads = if flags & FLAG_PAYLOADS != 0 {
        parse_lines(&body[vec_end..], n)?
    } else if body.len() != vec_end {
        return Err(format!("binary batch: {} bytes after the vectors and no payload flag", body.len() - vec_end));
    } else {
        Vec::new()
    };
    Ok(Batch {
        dim,
        ids: cast_or_copy(&body[HEADER..ids_end]),
        vectors: cast_or_copy(&body[ids_end..vec_end]),
        payloads,
    })
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

/// Encodes a batch (the JSON upsert routes log this form).
pub fn encode(dim: usize, ids: &[u64], vectors: &[f32], payloads: &[Value]) -> Vec<u8> {
    let n = ids.len();
    let mut out = Vec::with_capacity(HEADER + 8 * n + 4 * vectors.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(dim as u32).to_le_bytes());
    out.extend_from_slice(&(n as u32).to_le_bytes());
    let flags = if payloads.is_empty() { 0 } else { FLAG_PAYLOADS };
    out.extend_from_slice(&flags.to_le_bytes());
    for id in ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
    for x in vectors {
        out.extend_from_slice(&x.to_le_bytes());
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
        let ids = [7u64, 1 << 40];
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
    fn malformed_batches_are_refused() {
        let good = encode(2, &[1, 2], &[0.0; 4], &[]);
        let with_docs = encode(2, &[1, 2], &[0.0; 4], &[json!({}), json!({})]);
        let mut bad_magic = good.clone();
        bad_magic[0] = b'X';
        let mut bad_flags = good.clone();
        bad_flags[12] = 2;
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
            flags in 0u32..3,
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
            let ids: Vec<u64> = (0..n as u64).collect();
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
