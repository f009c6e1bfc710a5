use shoal_kernels::Kernels;

/// How vectors are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Squared Euclidean distance; lower is better.
    L2,
    /// Dot product; higher is better.
    Dot,
    /// Cosine similarity, computed as the dot product of vectors normalised at insert; higher
    /// is better.
    Cosine,
}

impl Metric {
    /// Parses `"l2"`, `"dot"` or `"cosine"` (also `"euclid"` and `"euclidean"` for l2).
    pub fn parse(s: &str) -> Option<Metric> {
        match s {
            "l2" | "euclid" | "euclidean" => Some(Metric::L2),
            "dot" => Some(Metric::Dot),
            "cosine" => Some(Metric::Cosine),
            _ => None,
        }
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Metric::L2 => "l2",
            Metric::Dot => "dot",
            Metric::Cosine => "cosine",
        }
    }

    /// The code stored in a segment's `META` section.
    pub fn code(self) -> u32 {
        match self {
            Metric::L2 => 0,
            Metric::Dot => 1,
            Metric::Cosine => 2,
        }
    }

    /// Inverse of [`code`](Self::code).
    pub fn from_code(code: u32) -> Option<Metric> {
        match code {
            0 => Some(Metric::L2),
            1 => Some(Metric::Dot),
            2 => Some(Metric::Cosine),
            _ => None,
        }
    }

    /// Whether vectors are normalised at insert (and queries before search).
    pub fn normalizes(self) -> bool {
        self == Metric::Cosine
    }

    /// Raw kernel outputs for `query` against consecutive rows, as ranking keys (lower is
    /// better): the distance for l2, the negated similarity otherwise (negation is exact).
    #[inline]
    pub fn keys(self, kernels: &Kernels, query: &[f32], rows: &[f32], out: &mut [f32]) {
        match self {
            Metric::L2 => kernels.l2_sq_batch(query, rows, out),
            Metric::Dot | Metric::Cosine => {
                kernels.dot_batch(query, rows, out);
                for x in out.iter_mut() {
                    *x = -*x;
                }
            }
        }
    }

    /// The user-facing score of a ranking key.
    #[inline]
    pub fn score(self, key: f32) -> f32 {
        match self {
            Metric::L2 => key,
            Metric::Dot | Metric::Cosine => -key,
        }
    }

    /// The ranking key of a score (the inverse of [`score`](Self::score)).
    pub fn key_of_score(self, score: f32) -> f32 {
        self.score(score)
    }
}

/// Scales `v` to unit length in place (the canonical dot kernel, `libm::sqrtf`, one division per
/// element), so every target normalises to the same bits. A zero vector stays zero.
pub fn normalize(kernels: &Kernels, v: &mut [f32]) {
    let norm = libm::sqrtf(kernels.dot(v, v));
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x /= norm;
        }
    }
}
