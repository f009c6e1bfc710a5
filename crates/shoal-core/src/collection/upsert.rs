//! Writes: upserts of points (dense and sparse vectors, payloads), the zero-copy path
//! ([`Collection::reserve`], then `commit`), and deletes. Every input is checked before
//! anything changes.

use alloc::format;
use alloc::vec::Vec;

use serde_json::Value;
use shoal_format::PointId;
use shoal_index::normalize;
use shoal_payload::{Schema, parse_payload};

use super::{Collection, IdEncoding, MAX_SAFE_INTEGER};
use crate::Error;
use crate::sparse::{SparseRows, SparseVector};
use crate::text;

impl Collection {
    /// Inserts (or replaces) points with integer ids: `vectors` holds `ids.len() * dim`
    /// floats, row-major.
    ///
    /// All input is checked before anything changes: on error the collection is as before.
    pub fn insert(&mut self, ids: &[u64], vectors: &[f32]) -> Result<(), Error> {
        self.insert_with_payloads(ids, vectors, &[])
    }

    /// [`insert`](Self::insert) with payloads: none (`&[]`), or one JSON object (or `null`) per
    /// point, checked against the schema.
    pub fn insert_with_payloads(&mut self, ids: &[u64], vectors: &[f32], payloads: &[Value]) -> Result<(), Error> {
        let ids: Vec<PointId> = ids.iter().map(|&id| PointId::Num(id)).collect();
        self.upsert(&ids, vectors, payloads)
    }

    /// Inserts (or replaces, payload included) points with ids of either kind, integers and
    /// UUIDs mixed, and their payloads: none (`&[]`), or one JSON object (or `null`) per point.
    ///
    /// All input is checked before anything changes: on error the collection is as before.
    pub fn upsert(&mut self, ids: &[PointId], vectors: &[f32], payloads: &[Value]) -> Result<(), Error> {
        self.upsert_sparse(ids, vectors, payloads, &[])
    }

    /// [`upsert`](Self::upsert) with sparse vectors: `sparse[t]` holds sparse vector `t`'s
    /// ([`sparse_vectors`](Self::sparse_vectors) order) of every point — `None` for a point
    /// without it — or is empty (no point holds it); at most one list per sparse vector.
    pub fn upsert_sparse(
        &mut self,
        ids: &[PointId],
        vectors: &[f32],
        payloads: &[Value],
        sparse: &[Vec<Option<SparseVector>>],
    ) -> Result<(), Error> {
        self.upsert_vectors(ids, &[vectors], payloads, sparse)
    }

    /// [`upsert_sparse`](Self::upsert_sparse) with every dense vector: `dense[d]` holds dense
    /// vector `d`'s ([`dense_vectors`](Self::dense_vectors) order) of every point, row-major;
    /// one slice per dense vector.
    pub fn upsert_vectors(
        &mut self,
        ids: &[PointId],
        dense: &[&[f32]],
        payloads: &[Value],
        sparse: &[Vec<Option<SparseVector>>],
    ) -> Result<(), Error> {
        let [vectors, extra @ ..] = dense else { return Err(self.dense_count_error()) };
        self.check_insert(ids.len(), vectors, payloads, None)?;
        self.check_dense(ids.len(), extra)?;
        self.check_sparse(ids.len(), sparse)?;
        // `reserve` without its zero fill: the batch is appended straight from the slices.
        self.mutable.discard_pending(self.dim);
        self.mutable.vectors.extend_from_slice(vectors);
        self.mutable.reserved = true;
        self.commit_checked(IdEncoding::U64, payloads, Some(ids), (extra, sparse)).map(|_| ())
    }

    /// The error of a batch without one list per dense vector.
    fn dense_count_error(&self) -> Error {
        Error::InvalidRequest(format!("give every point's {} dense vectors, in name order", self.dense.len()))
    }

    /// Checks the dense vectors `1..` of `points` points (`extra[d - 1]`, row-major): one list
    /// per vector, each of the right length, every element finite.
    pub fn check_dense(&self, points: usize, extra: &[&[f32]]) -> Result<(), Error> {
        if extra.len() + 1 != self.dense.len() {
            return Err(self.dense_count_error());
        }
        for (spec, v) in self.dense[1..].iter().zip(extra) {
            if Some(v.len()) != points.checked_mul(spec.dim) {
                return Err(Error::LengthMismatch { ids: points, floats: v.len(), dim: spec.dim });
            }
            if let Some(at) = first_non_finite(v) {
                return Err(Error::NonFinite { point: at / spec.dim, element: at % spec.dim });
            }
        }
        Ok(())
    }

    /// Checks an insert without making it: the errors [`insert_with_payloads`] would give for
    /// these points (dimension, non-finite values, payloads against the schema, capacity), with
    /// the payloads checked against `schema` instead of the collection's when given (a host
    /// about to [`extend_schema`]). A host that logs writes before applying them calls this
    /// first, so that nothing it logs can fail to apply.
    ///
    /// [`insert_with_payloads`]: Self::insert_with_payloads
    /// [`extend_schema`]: Self::extend_schema
    pub fn check_insert(
        &self,
        points: usize,
        vectors: &[f32],
        payloads: &[Value],
        schema: Option<&Schema>,
    ) -> Result<(), Error> {
        self.writable("insert")?;
        if Some(vectors.len()) != points.checked_mul(self.dim) {
            return Err(Error::LengthMismatch { ids: points, floats: vectors.len(), dim: self.dim });
        }
        match schema {
            Some(s) => check_payloads_against(s, points, payloads)?,
            None => self.check_payloads(points, payloads)?,
        }
        if let Some(at) = first_non_finite(vectors) {
            return Err(Error::NonFinite { point: at / self.dim, element: at % self.dim });
        }
        self.check_capacity(points)
    }

    /// Checks that `n` more rows fit: internal ids are `u32`.
    fn check_capacity(&self, n: usize) -> Result<(), Error> {
        let total = self.sealed_rows() + self.mutable.rows();
        match total.checked_add(n) {
            Some(t) if t < u32::MAX as usize => Ok(()),
            _ => Err(Error::CapacityExceeded),
        }
    }

    /// Reserves a batch of `n` points with integer ids to be filled in place through
    /// [`pending_ids`] and [`pending_vectors`] and made visible by [`commit`]. A batch reserved
    /// before and not committed is dropped.
    ///
    /// [`pending_ids`]: Self::pending_ids
    /// [`pending_vectors`]: Self::pending_vectors
    /// [`commit`]: Self::commit
    /// A batch of UUID (or mixed) ids is committed with [`commit_points`](Self::commit_points).
    pub fn reserve(&mut self, n: usize) -> Result<(), Error> {
        self.writable("insert")?;
        self.mutable.discard_pending(self.dim);
        self.check_capacity(n)?;
        let floats = (self.mutable.rows() + n).checked_mul(self.dim).ok_or(Error::CapacityExceeded)?;
        // Memory that cannot be had (a wasm instance's 4 GiB, a host's limit) is a typed error,
        // not an abort: nothing has changed yet.
        // Amortised growth (doubling, as `resize` would), or exactly what is asked when doubling
        // does not fit: many small batches must not copy the collection each time.
        fn grow<T>(v: &mut Vec<T>, more: usize) -> Result<(), Error> {
            v.try_reserve(more).or_else(|_| v.try_reserve_exact(more)).map_err(|_| Error::CapacityExceeded)
        }
        let more = floats - self.mutable.vectors.len();
        grow(&mut self.mutable.vectors, more)?;
        grow(&mut self.mutable.pending_nums, n)?;
        self.mutable.pending_nums.resize(n, 0);
        grow(&mut self.mutable.ids, n)?;
        self.mutable.vectors.resize(floats, 0.0);
        self.mutable.reserved = true;
        Ok(())
    }

    /// Integer ids of the reserved batch, to fill in place.
    pub fn pending_ids(&mut self) -> &mut [u64] {
        &mut self.mutable.pending_nums
    }

    /// Vectors of the reserved batch (row-major), to fill in place.
    pub fn pending_vectors(&mut self) -> &mut [f32] {
        &mut self.mutable.vectors[self.mutable.committed * self.dim..]
    }

    /// Checks the reserved batch and makes it visible; returns the number of points committed.
    ///
    /// On error the batch is dropped and the collection is as before.
    pub fn commit(&mut self, ids: IdEncoding) -> Result<usize, Error> {
        self.commit_with_payloads(ids, &[])
    }

    /// [`commit`](Self::commit) with payloads: none (`&[]`), or one JSON object (or `null`) per
    /// reserved point, checked against the schema before anything becomes visible.
    pub fn commit_with_payloads(&mut self, ids: IdEncoding, payloads: &[Value]) -> Result<usize, Error> {
        if self.dense.len() > 1 {
            self.mutable.discard_pending(self.dim);
            return Err(self.dense_count_error());
        }
        self.commit_checked(ids, payloads, None, (&[], &[]))
    }

    /// [`commit_with_payloads`](Self::commit_with_payloads) with the batch's ids given here, of
    /// either kind, mixed (the reserved id slots are ignored): one per reserved point.
    pub fn commit_points(&mut self, ids: &[PointId], payloads: &[Value]) -> Result<usize, Error> {
        self.commit_sparse(IdEncoding::U64, Some(ids), payloads, &[])
    }

    /// [`commit_sparse`](Self::commit_sparse) of a collection with two or more dense vectors:
    /// the reserved batch holds vector 0, `extra[d - 1]` vector `d` of every point (row-major).
    pub fn commit_vectors(
        &mut self,
        enc: IdEncoding,
        ids: Option<&[PointId]>,
        payloads: &[Value],
        (extra, sparse): (&[&[f32]], &[Vec<Option<SparseVector>>]),
    ) -> Result<usize, Error> {
        if !self.mutable.reserved {
            return Err(Error::NoPendingBatch);
        }
        let n = self.mutable.vectors.len() / self.dim - self.mutable.committed;
        let checked = match ids {
            Some(ids) if ids.len() != n => {
                Err(Error::InvalidRequest(format!("commit: {} ids for a batch of {n} points", ids.len())))
            }
            Some(_) => self.check_payloads(n, payloads).and_then(|()| self.check_pending(IdEncoding::U64)),
            None => Ok(()),
        }
        .and_then(|()| self.check_dense(n, extra))
        .and_then(|()| self.check_sparse(n, sparse));
        if let Err(e) = checked {
            self.mutable.discard_pending(self.dim);
            return Err(e);
        }
        self.commit_checked(enc, payloads, ids, (extra, sparse))
    }

    /// Commits the reserved batch with its ids given here (`ids`, as
    /// [`commit_points`](Self::commit_points)) or in its id slots (`None`, encoded as `enc`),
    /// its payloads, and its sparse vectors (as [`upsert_sparse`](Self::upsert_sparse) takes
    /// them). On error the batch is dropped and the collection is as before.
    pub fn commit_sparse(
        &mut self,
        enc: IdEncoding,
        ids: Option<&[PointId]>,
        payloads: &[Value],
        sparse: &[Vec<Option<SparseVector>>],
    ) -> Result<usize, Error> {
        self.commit_vectors(enc, ids, payloads, (&[], sparse))
    }

    /// Commits; `given`: the batch's ids, which already passed [`check_insert`](Self::check_insert)
    /// with its vectors and payloads (`None`: the reserved batch, checked here).
    fn commit_checked(
        &mut self,
        ids: IdEncoding,
        payloads: &[Value],
        given: Option<&[PointId]>,
        (extra, sparse): (&[&[f32]], &[Vec<Option<SparseVector>>]),
    ) -> Result<usize, Error> {
        if !self.mutable.reserved {
            return Err(Error::NoPendingBatch);
        }
        let (first, dim) = (self.mutable.committed, self.dim);
        match given {
            Some(given) => {
                self.mutable.ids.extend_from_slice(given);
                self.mutable.pending_nums.clear();
            }
            None => {
                let n = self.mutable.vectors.len() / dim - first;
                if let Err(e) = self.check_payloads(n, payloads).and_then(|()| self.check_pending(ids)) {
                    self.mutable.discard_pending(dim);
                    return Err(e);
                }
                let m = &mut self.mutable;
                m.ids.extend(m.pending_nums.drain(..).map(PointId::Num));
            }
        }
        let end = self.mutable.ids.len();
        if let Some(schema) = &self.schema {
            if payloads.is_empty() {
                self.mutable.payloads.resize(end, Value::Null);
            } else {
                // One canonical form whatever language wrote the numbers (see `canonicalize`).
                self.mutable.payloads.extend(payloads.iter().map(|p| {
                    let mut p = p.clone();
                    shoal_payload::canonicalize(schema, &mut p);
                    p
                }));
            }
        }
        self.mutable.sparse.resize_with(self.sparse.len(), SparseRows::default);
        for (rows, column) in self.mutable.sparse.iter_mut().zip(sparse).filter(|(_, c)| !c.is_empty()) {
            for (i, v) in column.iter().enumerate() {
                rows.push_at(first + i, v.as_ref().map(SparseVector::entries));
            }
        }
        if self.metric.normalizes() {
            for v in self.mutable.vectors[first * dim..].chunks_exact_mut(dim) {
                normalize(&self.kernels, v);
            }
        }
        self.mutable.dense.resize_with(self.dense.len() - 1, Default::default);
        for ((rows, spec), v) in self.mutable.dense.iter_mut().zip(&self.dense[1..]).zip(extra) {
            rows.1 = spec.dim;
            rows.0.extend_from_slice(v);
            if spec.metric.normalizes() {
                for v in rows.0[first * spec.dim..].chunks_exact_mut(spec.dim) {
                    normalize(&self.kernels, v);
                }
            }
        }
        self.mutable.index.reserve(end - first);
        for row in first..end {
            let id = self.mutable.ids[row];
            match self.mutable.index.insert(id, row as u32) {
                Some(old) => {
                    self.mutable.deleted.insert(old as usize);
                }
                None => {
                    self.delete_sealed(id);
                }
            }
        }
        self.mutable.committed = end;
        self.mutable.reserved = false;
        if let Some(schema) = self.schema.as_ref().filter(|s| text::has_text(s)) {
            self.mutable.text = Some(text::build(schema, self.mutable.payloads.iter()));
        }
        Ok(end - first)
    }

    /// Checks sparse vector lists for `points` points (see [`upsert_sparse`](Self::upsert_sparse)).
    fn check_sparse(&self, points: usize, sparse: &[Vec<Option<SparseVector>>]) -> Result<(), Error> {
        if sparse.len() > self.sparse.len() || sparse.iter().any(|c| !c.is_empty() && c.len() != points) {
            return Err(Error::InvalidRequest(
                "sparse vectors: at most one list per sparse vector of the collection, each empty or one per point"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Checks that `payloads` is empty or holds one valid payload per point.
    fn check_payloads(&self, points: usize, payloads: &[Value]) -> Result<(), Error> {
        check_payloads_against(self.schema.as_ref().unwrap_or(&Schema::default()), points, payloads)
    }

    /// Validates the reserved batch, converting `f64` ids in place.
    fn check_pending(&mut self, ids: IdEncoding) -> Result<(), Error> {
        let first = self.mutable.committed;
        if ids == IdEncoding::F64 {
            for (point, slot) in self.mutable.pending_nums.iter_mut().enumerate() {
                let x = f64::from_bits(*slot);
                // `x == x as u64 as f64` rejects fractions; the range check rejects the rest.
                if !(0.0..=MAX_SAFE_INTEGER).contains(&x) || x != (x as u64) as f64 {
                    return Err(Error::InvalidId { point });
                }
                *slot = x as u64;
            }
        }
        let dim = self.dim;
        let pending = &self.mutable.vectors[first * dim..];
        if let Some(at) = first_non_finite(pending) {
            return Err(Error::NonFinite { point: at / dim, element: at % dim });
        }
        Ok(())
    }

    /// Deletes the live sealed row of `id`, if any; returns whether there was one.
    fn delete_sealed(&mut self, id: PointId) -> bool {
        match self.sealed_row(id) {
            Some((p, row)) => {
                let part = &mut self.parts[p];
                part.changed = true;
                part.deleted.insert(row)
            }
            None => false,
        }
    }

    /// Deletes points by id; returns how many existed. A codes-only collection refuses.
    pub fn delete(&mut self, ids: &[PointId]) -> Result<usize, Error> {
        self.writable("delete")?;
        Ok(ids.iter().filter(|&&id| self.mutable.delete(id) || self.delete_sealed(id)).count())
    }
}

/// Checks that `payloads` is empty or holds one payload valid under `schema` per point.
pub(crate) fn check_payloads_against(schema: &Schema, points: usize, payloads: &[Value]) -> Result<(), Error> {
    if payloads.is_empty() {
        return Ok(());
    }
    if payloads.len() != points {
        return Err(Error::PayloadCount { points, payloads: payloads.len() });
    }
    for (point, doc) in payloads.iter().enumerate() {
        parse_payload(schema, doc).map_err(|error| Error::InvalidPayload { point, error })?;
    }
    Ok(())
}

/// Index of the first NaN or infinity. The common all-finite case is a branch-free pass
/// (exponent bits all ones means non-finite) that compilers vectorise, so validating a large
/// batch runs at memory speed.
pub(crate) fn first_non_finite(v: &[f32]) -> Option<usize> {
    const EXP: u32 = 0x7f80_0000;
    for (i, chunk) in v.chunks(1024).enumerate() {
        let bad = chunk.iter().fold(0u32, |bad, x| bad | u32::from((x.to_bits() & EXP) == EXP));
        if bad != 0 {
            return chunk.iter().position(|x| !x.is_finite()).map(|j| i * 1024 + j);
        }
    }
    None
}
