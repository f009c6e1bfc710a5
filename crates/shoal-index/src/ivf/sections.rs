//! The IVF + RaBitQ sections of a segment (`docs/format.md`): writing them in place from an
//! [`IvfPlan`], and opening them with the cheap structural checks that make every slice a
//! search takes in bounds.

use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;

use bytemuck::Zeroable;
use shoal_format::{
    FormatError, IvfMeta, KIND_IVF_CENTROIDS, KIND_IVF_META, KIND_IVF_OFFSETS, KIND_IVF_ROT_CENTROIDS,
    KIND_RABITQ_BLOCK_OFFSETS, KIND_RABITQ_CODES, KIND_RABITQ_EX_CODES, KIND_RABITQ_EX_FACTORS, KIND_RABITQ_FACTORS,
    KIND_RABITQ_ROTATION, KIND_VECTORS, Layout, SECTION_OPTIONAL, SegmentReader, cast_records, dense_kind, range_of,
};
use shoal_kernels::Kernels;

use super::{IvfCodes, IvfData, IvfIndex, IvfPlan, IvfQuery, block_bytes};
use crate::Metric;
use crate::Rows;
use crate::progress::Progress;
use crate::rabitq::{EPSILON0, ExFactors, Factors, MAX_BITS, ex_code_bytes};
use crate::rotation::{ROUNDS, Rotation, padded_dim};

/// What dense vector `d`'s section kinds add to vector 0's (`VECTORS` and the IVF kinds):
/// `docs/format.md`, "Named vectors".
fn kind_base(d: usize) -> u32 {
    dense_kind(d, KIND_IVF_META) - KIND_IVF_META
}

fn bad(section: &'static str, reason: &'static str) -> FormatError {
    FormatError::BadSection { section, reason }
}

/// A loaded IVF index: its static part and where its sections lie in the segment.
#[derive(Clone, Debug)]
pub struct IvfSections {
    /// The index's static part (partition count, rotation).
    pub index: IvfIndex,
    /// The seed it was built with.
    pub seed: u64,
    /// Bits per coordinate of its codes.
    pub bits: u32,
    /// The default query settings calibrated at build time.
    pub defaults: IvfQuery,
    centroids: Range<usize>,
    rot_centroids: Range<usize>,
    offsets: Range<usize>,
    block_offsets: Range<usize>,
    codes: Range<usize>,
    factors: Range<usize>,
    ex_codes: Range<usize>,
    ex_factors: Range<usize>,
}

/// The IVF metadata record of a build.
fn meta_of(plan: &IvfPlan, seed: u64, defaults: IvfQuery) -> IvfMeta {
    let mut meta = IvfMeta::zeroed();
    meta.nlist = plan.nlist as u32;
    meta.padded = plan.padded as u32;
    meta.rounds = ROUNDS as u32;
    meta.code_bits = plan.bits;
    meta.query_bits = 4;
    meta.default_nprobe = defaults.nprobe as u32;
    meta.default_rerank = defaults.rerank as u32;
    meta.default_probe_ratio = defaults.probe_ratio;
    meta.seed = seed;
    meta
}

/// The IVF sections of dense vector `d`'s build, `(kind, flags, length)` in file order (all
/// optional: a reader without IVF searches exactly).
pub fn planned(plan: &IvfPlan, dim: usize, d: usize) -> Vec<(u32, u32, u64)> {
    let (n, nlist, padded) = (plan.rows(), plan.nlist, plan.padded);
    let mut out = vec![
        (KIND_IVF_META, core::mem::size_of::<IvfMeta>()),
        (KIND_IVF_CENTROIDS, nlist * dim * 4),
        (KIND_IVF_ROT_CENTROIDS, nlist * padded * 4),
        (KIND_IVF_OFFSETS, (nlist + 1) * 4),
        (KIND_RABITQ_ROTATION, plan.rotation.signs().len() * 8),
        (KIND_RABITQ_BLOCK_OFFSETS, (nlist + 1) * 4),
        (KIND_RABITQ_CODES, plan.code_bytes()),
        (KIND_RABITQ_FACTORS, n * core::mem::size_of::<Factors>()),
    ];
    if plan.bits > 1 {
        out.push((KIND_RABITQ_EX_CODES, n * plan.ex_bytes_per_row()));
        out.push((KIND_RABITQ_EX_FACTORS, n * core::mem::size_of::<ExFactors>()));
    }
    let base = kind_base(d);
    out.into_iter().map(|(kind, len)| (base + kind, SECTION_OPTIONAL, len as u64)).collect()
}

/// Writes dense vector `d`'s IVF sections of `plan` into `file` (laid out by `layout`, whose
/// vector `d` section, unless `codes_only`, already holds the rows in the stored order): the
/// codes encoded from `src`, then the default query settings calibrated on the written index.
#[allow(clippy::too_many_arguments)]
pub fn write(
    kernels: &Kernels,
    metric: Metric,
    src: &dyn Rows,
    (dim, d): (usize, usize),
    plan: &IvfPlan,
    seed: u64,
    codes_only: bool,
    layout: &Layout,
    file: &mut [u8],
    progress: &dyn Progress,
) {
    let base = kind_base(d);
    let range = |kind: u32| layout.range(base + kind);
    let small: [(u32, &[u8]); 5] = [
        (KIND_IVF_CENTROIDS, bytemuck::cast_slice(&plan.centroids)),
        (KIND_IVF_ROT_CENTROIDS, bytemuck::cast_slice(&plan.rot_centroids)),
        (KIND_IVF_OFFSETS, bytemuck::cast_slice(&plan.offsets)),
        (KIND_RABITQ_ROTATION, bytemuck::cast_slice(plan.rotation.signs())),
        (KIND_RABITQ_BLOCK_OFFSETS, bytemuck::cast_slice(&plan.block_offsets)),
    ];
    for (kind, bytes) in small {
        file[range(kind)].copy_from_slice(bytes);
    }
    // The code sections follow one another in this order: split the file between them.
    let mut kinds = vec![KIND_RABITQ_CODES, KIND_RABITQ_FACTORS];
    if plan.bits > 1 {
        kinds.extend([KIND_RABITQ_EX_CODES, KIND_RABITQ_EX_FACTORS]);
    }
    {
        let mut parts: Vec<&mut [u8]> = Vec::with_capacity(4);
        let (mut rest, mut at) = (&mut file[..], 0);
        for &kind in &kinds {
            let r = range(kind);
            let (_, tail) = core::mem::take(&mut rest).split_at_mut(r.start - at);
            let (part, tail) = tail.split_at_mut(r.len());
            parts.push(part);
            (rest, at) = (tail, r.end);
        }
        let mut parts = parts.into_iter();
        let mut next = || parts.next().unwrap_or_default();
        let (codes, factors, ex_codes, ex_factors) = (next(), next(), next(), next());
        // (An absent part is an empty byte slice whose address need not suit the records.)
        let ex_factors = if ex_factors.is_empty() { &mut [] } else { bytemuck::cast_slice_mut(ex_factors) };
        let out = IvfCodes { codes, factors: bytemuck::cast_slice_mut(factors), ex_codes, ex_factors };
        super::encode(kernels, src, plan, out, progress);
    }
    // Default query settings, measured on the index as written. Codes only, the rows in the
    // stored order exist nowhere else: gathered for the calibration.
    let gathered: Vec<f32>;
    let vectors: &[f32] = if codes_only {
        gathered = plan.order.iter().flat_map(|&o| src.row(o as usize)).copied().collect();
        &gathered
    } else {
        bytemuck::cast_slice(&file[range(KIND_VECTORS)])
    };
    let section = |kind: u32| if kinds.contains(&kind) { &file[range(kind)] } else { &[][..] };
    let data = IvfData {
        dim,
        centroids: &plan.centroids,
        rot_centroids: &plan.rot_centroids,
        offsets: &plan.offsets,
        block_offsets: &plan.block_offsets,
        codes: section(KIND_RABITQ_CODES),
        factors: bytemuck::cast_slice(section(KIND_RABITQ_FACTORS)),
        vectors: None,
        bits: plan.bits,
        ex_codes: section(KIND_RABITQ_EX_CODES),
        ex_factors: if plan.bits > 1 { bytemuck::cast_slice(section(KIND_RABITQ_EX_FACTORS)) } else { &[] },
        prefetch: None,
        rows: None,
    };
    let index = IvfIndex { nlist: plan.nlist, padded: plan.padded, rotation: plan.rotation.clone() };
    let defaults = crate::calibrate::calibrate(kernels, metric, &index, data, vectors, seed, codes_only, progress);
    let meta = meta_of(plan, seed, defaults);
    file[range(KIND_IVF_META)].copy_from_slice(bytemuck::bytes_of(&meta));
}

/// Checks that `offsets` has `n + 1` entries, starts at 0, never decreases and ends at `end`.
fn check_offsets(section: &'static str, offsets: &[u32], n: usize, end: usize) -> Result<(), FormatError> {
    if offsets.len() != n + 1 || offsets[0] != 0 || offsets[n] as usize != end {
        return Err(bad(section, "wrong length or bounds"));
    }
    if offsets.windows(2).any(|w| w[0] > w[1]) {
        return Err(bad(section, "offsets decrease"));
    }
    Ok(())
}

/// Reads and checks an `IVF_META` section for `rows` vectors of dimension `dim`, whose
/// reserved bytes from `reserved_from` on are zero (format 2 keeps values in the first 8).
pub(crate) fn read_meta(meta: &[u8], dim: usize, rows: usize, reserved_from: usize) -> Result<&IvfMeta, FormatError> {
    let meta: &IvfMeta = match cast_records::<IvfMeta>("IVF_META", meta)? {
        [m] => m,
        _ => return Err(bad("IVF_META", "must hold exactly one record")),
    };
    let (nlist, padded) = (meta.nlist as usize, meta.padded as usize);
    if nlist == 0 || nlist > rows.max(1) {
        return Err(bad("IVF_META", "partition count out of range"));
    }
    if padded != padded_dim(dim)
        || meta.rounds as usize != ROUNDS
        || !(1..=MAX_BITS).contains(&meta.code_bits)
        || meta.query_bits != 4
    {
        return Err(bad("IVF_META", "unsupported code layout"));
    }
    let ratio = meta.default_probe_ratio;
    if meta.default_nprobe == 0
        || meta.default_nprobe as usize > nlist
        || meta.default_rerank == 0
        || !(ratio == 0.0 || (ratio >= 1.0 && ratio.is_finite()))
    {
        return Err(bad("IVF_META", "default query settings out of range"));
    }
    if meta.reserved[reserved_from..].iter().any(|&b| b != 0) {
        return Err(bad("IVF_META", "reserved bytes are not zero"));
    }
    Ok(meta)
}

/// The default query settings an `IVF_META` record holds.
pub(crate) fn defaults_of(meta: &IvfMeta) -> IvfQuery {
    IvfQuery {
        nprobe: meta.default_nprobe as usize,
        rerank: meta.default_rerank as usize,
        epsilon: EPSILON0,
        probe_ratio: meta.default_probe_ratio,
        passing: 1.0,
    }
}

impl IvfSections {
    /// The sections of dense vector `d`'s index whose bytes [`open`](Self::open) reads (the
    /// others it checks by length): what a reader by byte ranges fetches to open the index.
    pub fn hot_kinds(d: usize) -> [u32; 6] {
        [
            KIND_IVF_META,
            KIND_IVF_CENTROIDS,
            KIND_IVF_ROT_CENTROIDS,
            KIND_IVF_OFFSETS,
            KIND_RABITQ_ROTATION,
            KIND_RABITQ_BLOCK_OFFSETS,
        ]
        .map(|k| k + kind_base(d))
    }

    /// Opens dense vector `d`'s IVF sections if the segment has them (`IVF_META` present),
    /// for `rows` vectors of dimension `dim`.
    pub fn open(
        reader: &SegmentReader<'_>,
        (dim, d): (usize, usize),
        rows: usize,
    ) -> Result<Option<IvfSections>, FormatError> {
        if reader.section(kind_base(d) + KIND_IVF_META).is_none() {
            return Ok(None);
        }
        let bytes = reader.bytes();
        let section = |kind: u32| reader.require(kind);
        Self::open_parts((dim, d), rows, |kind| section(kind).map(|s| range_of(bytes, s)), section).map(Some)
    }

    /// [`open`](Self::open) of a segment that has `IVF_META`, from its section table alone
    /// (`entry`: a section's byte range in the file) and the bytes of the
    /// [`hot_kinds`](Self::hot_kinds) (`hot`); the other sections are checked by their lengths,
    /// as `open` checks them. Both give [`FormatError::MissingSection`] for a section that is
    /// not there.
    pub fn open_parts<'b>(
        (dim, d): (usize, usize),
        rows: usize,
        entry: impl Fn(u32) -> Result<Range<usize>, FormatError>,
        hot: impl Fn(u32) -> Result<&'b [u8], FormatError>,
    ) -> Result<IvfSections, FormatError> {
        let base = kind_base(d);
        let meta = hot(base + KIND_IVF_META)?;
        let meta = read_meta(meta, dim, rows, 0)?;
        let (nlist, padded) = (meta.nlist as usize, meta.padded as usize);
        let require = |kind: u32| hot(base + kind);
        // A cold section: its range, of `len` bytes.
        let cold = |kind: u32, len: Option<usize>, section: &'static str, reason: &'static str| {
            let r = entry(base + kind)?;
            if Some(r.len()) != len {
                return Err(bad(section, reason));
            }
            Ok(r)
        };
        let centroids = require(KIND_IVF_CENTROIDS)?;
        if Some(cast_records::<f32>("IVF_CENTROIDS", centroids)?.len()) != nlist.checked_mul(dim) {
            return Err(bad("IVF_CENTROIDS", "length does not match nlist x dim"));
        }
        let rot = require(KIND_IVF_ROT_CENTROIDS)?;
        if Some(cast_records::<f32>("IVF_ROT_CENTROIDS", rot)?.len()) != nlist.checked_mul(padded) {
            return Err(bad("IVF_ROT_CENTROIDS", "length does not match nlist x padded"));
        }
        let offsets = cast_records::<u32>("IVF_OFFSETS", require(KIND_IVF_OFFSETS)?)?;
        check_offsets("IVF_OFFSETS", offsets, nlist, rows)?;
        let signs = cast_records::<u64>("RABITQ_ROTATION", require(KIND_RABITQ_ROTATION)?)?;
        if signs.len() != ROUNDS * padded / 64 {
            return Err(bad("RABITQ_ROTATION", "length does not match rounds x padded"));
        }
        let blocks = cast_records::<u32>("RABITQ_BLOCK_OFFSETS", require(KIND_RABITQ_BLOCK_OFFSETS)?)?;
        let total_blocks = (0..nlist).map(|p| ((offsets[p + 1] - offsets[p]) as usize).div_ceil(32)).sum();
        check_offsets("RABITQ_BLOCK_OFFSETS", blocks, nlist, total_blocks)?;
        if (0..nlist)
            .any(|p| (blocks[p + 1] - blocks[p]) as usize != ((offsets[p + 1] - offsets[p]) as usize).div_ceil(32))
        {
            return Err(bad("RABITQ_BLOCK_OFFSETS", "block counts do not match partition sizes"));
        }
        let codes = cold(
            KIND_RABITQ_CODES,
            total_blocks.checked_mul(block_bytes(padded)),
            "RABITQ_CODES",
            "length does not match the blocks",
        )?;
        let factors = cold(
            KIND_RABITQ_FACTORS,
            rows.checked_mul(core::mem::size_of::<Factors>()),
            "RABITQ_FACTORS",
            "length does not match the row count",
        )?;
        let bits = meta.code_bits;
        let (ex_codes, ex_factors) = if bits > 1 {
            let codes = cold(
                KIND_RABITQ_EX_CODES,
                rows.checked_mul(ex_code_bytes(padded, bits)),
                "RABITQ_EX_CODES",
                "length does not match rows x (bits - 1) x padded / 8",
            )?;
            let f = cold(
                KIND_RABITQ_EX_FACTORS,
                rows.checked_mul(core::mem::size_of::<ExFactors>()),
                "RABITQ_EX_FACTORS",
                "length does not match the row count",
            )?;
            (codes, f)
        } else {
            (0..0, 0..0)
        };
        let range = |kind: u32| entry(base + kind).unwrap_or_default();
        Ok(IvfSections {
            index: IvfIndex { nlist, padded, rotation: Rotation::from_signs(padded, signs.to_vec()) },
            seed: meta.seed,
            bits: meta.code_bits,
            defaults: defaults_of(meta),
            centroids: range(KIND_IVF_CENTROIDS),
            rot_centroids: range(KIND_IVF_ROT_CENTROIDS),
            offsets: range(KIND_IVF_OFFSETS),
            block_offsets: range(KIND_RABITQ_BLOCK_OFFSETS),
            codes,
            factors,
            ex_codes,
            ex_factors,
        })
    }

    /// The byte ranges in the file of the centroids, the rotated centroids, the row offsets
    /// and the block offsets (the arrays a reader by byte ranges keeps in memory).
    pub fn hot_ranges(&self) -> [Range<usize>; 4] {
        [self.centroids.clone(), self.rot_centroids.clone(), self.offsets.clone(), self.block_offsets.clone()]
    }

    /// The byte ranges in the file of partition `p`'s FastScan blocks, factors, extra-bit codes
    /// and extra-bit factors (the last two empty for 1-bit codes), from the index's row
    /// `offsets` and `block_offsets`.
    pub fn partition_ranges(&self, p: usize, offsets: &[u32], block_offsets: &[u32]) -> [Range<usize>; 4] {
        let (r0, r1) = (offsets[p] as usize, offsets[p + 1] as usize);
        let (b0, b1) = (block_offsets[p] as usize, block_offsets[p + 1] as usize);
        let bb = block_bytes(self.index.padded);
        let at = |r: &Range<usize>, size: usize| r.start + r0 * size..r.start + r1 * size;
        let (exb, ex) = if self.bits > 1 {
            (ex_code_bytes(self.index.padded, self.bits), core::mem::size_of::<ExFactors>())
        } else {
            (0, 0)
        };
        [
            self.codes.start + b0 * bb..self.codes.start + b1 * bb,
            at(&self.factors, core::mem::size_of::<Factors>()),
            at(&self.ex_codes, exb),
            at(&self.ex_factors, ex),
        ]
    }

    /// The index data over the segment's bytes.
    pub fn data<'a>(&self, bytes: &'a [u8], dim: usize, vectors: Option<&'a [f32]>) -> IvfData<'a> {
        IvfData {
            dim,
            centroids: bytemuck::cast_slice(&bytes[self.centroids.clone()]),
            rot_centroids: bytemuck::cast_slice(&bytes[self.rot_centroids.clone()]),
            offsets: bytemuck::cast_slice(&bytes[self.offsets.clone()]),
            block_offsets: bytemuck::cast_slice(&bytes[self.block_offsets.clone()]),
            codes: &bytes[self.codes.clone()],
            factors: bytemuck::cast_slice(&bytes[self.factors.clone()]),
            vectors,
            bits: self.bits,
            ex_codes: &bytes[self.ex_codes.clone()],
            ex_factors: bytemuck::cast_slice(&bytes[self.ex_factors.clone()]),
            prefetch: None,
            rows: None,
        }
    }

    /// Full check: every float of the index is finite.
    pub fn verify(&self, bytes: &[u8]) -> Result<(), FormatError> {
        let floats: [(&'static str, &Range<usize>); 4] = [
            ("IVF_CENTROIDS", &self.centroids),
            ("IVF_ROT_CENTROIDS", &self.rot_centroids),
            ("RABITQ_FACTORS", &self.factors),
            ("RABITQ_EX_FACTORS", &self.ex_factors),
        ];
        for (name, r) in floats {
            let v: &[f32] = bytemuck::cast_slice(&bytes[r.clone()]);
            if v.iter().any(|x| !x.is_finite()) {
                return Err(bad(name, "non-finite value"));
            }
        }
        Ok(())
    }
}
