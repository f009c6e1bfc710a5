//! `shoal build`: vector file in, sealed segment file out.

use std::io::{BufRead, BufReader, Lines};
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use shoal_core::{
    AlignedBytes, CollectionConfig, Error, IndexKind, IvfParams, Kernels, Metric, NewSegment, Progress, Schema,
    SealedSegment,
};

use crate::HostError;
use crate::input::{InputFormat, VectorFile};
use crate::storage::{BuildError, write_atomic, write_in_place};

impl BuildArgs {
    /// The vector file, given as the argument or with `--input`.
    pub fn input(&self) -> &Path {
        self.input.as_deref().or(self.input_flag.as_deref()).expect("clap requires one")
    }
}

/// Arguments of `shoal build`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// Vector file to read. It is read in place (memory-mapped): do not change it while the
    /// build runs.
    #[arg(value_name = "INPUT", required_unless_present = "input_flag")]
    pub input: Option<PathBuf>,
    /// The input as a flag: the older spelling, still accepted.
    #[arg(long = "input", value_name = "FILE", hide = true, conflicts_with = "input")]
    pub input_flag: Option<PathBuf>,
    /// Input format; inferred from the extension (.npy, .fvecs, .f32/.bin/.raw) if absent.
    #[arg(long, value_enum)]
    pub format: Option<InputFormat>,
    /// Vector dimension: required for raw f32, checked against the file otherwise.
    #[arg(long, value_name = "D")]
    pub dim: Option<usize>,
    /// How vectors are compared (cosine normalises stored vectors to unit length).
    #[arg(long, value_enum, default_value_t = MetricArg::L2)]
    pub metric: MetricArg,
    /// External id of row 0; row r gets id r + N.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub ids_from: u64,
    /// Payload fields and their types, as JSON: '{"tag": "keyword", "year": "integer"}'
    /// (types: keyword, integer, float, bool, text). Needed with --payloads.
    #[arg(long, value_name = "JSON", requires = "payloads")]
    pub fields: Option<String>,
    /// Payloads as JSON lines: line N is the payload object (or null) of row N.
    #[arg(long, value_name = "FILE", requires = "fields")]
    pub payloads: Option<PathBuf>,
    /// Segment file to write (atomically: OUT.tmp, fsync, rename).
    #[arg(long, value_name = "SEGMENT")]
    pub out: PathBuf,
    /// Index to build: `flat` (exact search only) or `ivf-rabitq`.
    #[arg(long, value_enum, default_value_t = IndexArg::Flat)]
    pub index: IndexArg,
    /// IVF partitions [default: about 2·√rows].
    #[arg(long, value_name = "N")]
    pub partitions: Option<u32>,
    /// Seed of the IVF build (k-means and rotation); builds are deterministic for a seed.
    #[arg(long, value_name = "SEED")]
    pub seed: Option<u64>,
    /// Bits per coordinate of the RaBitQ codes, 1..=8 (1 sign bit + extra bits that refine the
    /// estimates of nearby rows, from which the candidates are chosen; extended RaBitQ).
    /// Default: 4 up to 128 dimensions, 1 above.
    #[arg(long, value_name = "BITS")]
    pub bits: Option<u32>,
    /// Keep only the index codes, not the full vectors: a much smaller, read-only segment whose
    /// searches rank by the codes' estimates (needs --bits 2..=8; recall then depends on them).
    #[arg(long)]
    pub codes_only: bool,
    /// With --codes-only: also write the full vectors, in the segment's row order (normalised
    /// for cosine), as raw little-endian f32 to this file, for lazy exact re-ranking
    /// (`searchLazy` in JavaScript reads just the rows a query needs). The index is then built
    /// and calibrated for exact re-ranking.
    #[arg(long, value_name = "FILE", requires = "codes_only")]
    pub vectors_out: Option<PathBuf>,
    /// File layout: `v1` (the default: memory-mapped, the npm package, segment sets) or
    /// `ranges` (format 2: searched where it lies by byte ranges — `shoal search http://…` —
    /// with every range checked; needs --index ivf-rabitq, no payloads).
    #[arg(long, value_enum, default_value_t = LayoutArg::V1)]
    pub layout: LayoutArg,
    /// No progress bar and no summary line.
    #[arg(long, short)]
    pub quiet: bool,
}

/// An index kind on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum IndexArg {
    /// No index: every search scans all vectors.
    Flat,
    /// IVF partitions with RaBitQ codes and exact re-ranking.
    IvfRabitq,
}

/// A metric name on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MetricArg {
    /// Cosine similarity (higher is better).
    Cosine,
    /// Dot product (higher is better).
    Dot,
    /// Squared Euclidean distance (lower is better).
    L2,
}

impl From<MetricArg> for Metric {
    fn from(m: MetricArg) -> Metric {
        match m {
            MetricArg::Cosine => Metric::Cosine,
            MetricArg::Dot => Metric::Dot,
            MetricArg::L2 => Metric::L2,
        }
    }
}

/// Runs `shoal build`: the rows are read where they lie in the memory-mapped input (copied
/// only for cosine, which stores them normalised, or from `.fvecs`, whose rows are not
/// contiguous) and the segment is written in place into `OUT.tmp` through a writable mapping,
/// synced, and renamed to `OUT`: no copy of the vectors or of the segment is held in memory.
pub fn run(args: &BuildArgs) -> Result<(), HostError> {
    let started = Instant::now();
    let index = index_kind(args)?;
    if args.layout == LayoutArg::Ranges
        && (args.index != IndexArg::IvfRabitq || args.fields.is_some() || args.vectors_out.is_some())
    {
        return Err(HostError::Usage(
            "--layout ranges needs --index ivf-rabitq, and holds no payloads (--fields) or --vectors-out yet".into(),
        ));
    }
    let schema = match &args.fields {
        Some(fields) => Some(Schema::from_json(fields).map_err(|e| HostError::Usage(format!("--fields: {e}")))?),
        None => None,
    };
    let input = VectorFile::open(args.input(), args.format, args.dim)?;
    let (rows, dim) = (input.rows(), input.dim());
    if args.ids_from.checked_add(rows as u64 - 1).is_none() {
        return Err(HostError::Usage(format!("--ids-from {} + {rows} rows overflows u64 ids", args.ids_from)));
    }
    let metric = Metric::from(args.metric);
    let bar = super::progress_bar(args.quiet);
    bar.set_message("reading the input");
    let payloads = match &args.payloads {
        Some(path) => {
            bar.set_message("reading payloads");
            let mut lines = PayloadLines::open(path)?;
            let mut docs = Vec::new();
            lines.read(0, rows, &mut docs)?;
            lines.expect_end(rows)?;
            Some(docs)
        }
        None => None,
    };
    let copied;
    let vectors = match input.as_f32() {
        Some(v) => v,
        None => {
            bar.set_message("reading vectors");
            let mut v = vec![0f32; rows * dim];
            input.read_rows(0, &mut v)?;
            copied = v;
            &copied[..]
        }
    };
    let segment = NewSegment {
        config: CollectionConfig { dim, metric },
        schema: schema.as_ref(),
        index,
        first_id: args.ids_from,
        vectors,
        payloads: payloads.as_deref(),
    };
    let kernels = Kernels::best();
    let in_rows = |e: Error| match e {
        Error::NonFinite { point, element } => {
            HostError::input(args.input(), format!("row {point}: element {element} is not finite (NaN or infinity)"))
        }
        Error::InvalidPayload { point, error } => HostError::input(
            args.payloads.as_deref().unwrap_or(Path::new("payloads")),
            format!("line {}: {error}", point + 1),
        ),
        // The dimension read from the input, or its row count, is out of range.
        e @ (Error::InvalidConfig(_) | Error::CapacityExceeded) => HostError::input(args.input(), format!("{e}")),
        e => HostError::Core(e),
    };
    let phases = Phases(bar.clone());
    let len = if args.layout == LayoutArg::Ranges {
        // Built in memory in format 1, then laid out anew.
        let built =
            segment.build_reporting_into(&kernels, &phases, |len| Ok(AlignedBytes::zeroed(len))).map_err(in_rows)?;
        let seg = SealedSegment::open(Box::new(built))?;
        phases.phase("laying out for ranges", 0);
        let v2 = shoal_core::remote::write_for_ranges(&seg)?;
        phases.phase("writing", 0);
        write_atomic(&args.out, v2.as_slice())?;
        v2.as_slice().len()
    } else {
        match &args.vectors_out {
            // Codes only with a vectors file: built with the vectors (the index is calibrated for
            // exact re-ranking), which then go to their own file and out of the segment.
            Some(path) => {
                let built = segment
                    .build_reporting_into(&kernels, &phases, |len| Ok(AlignedBytes::zeroed(len)))
                    .map_err(in_rows)?;
                let seg = SealedSegment::open(Box::new(built))?;
                phases.phase("writing vectors", 0);
                write_atomic(path, bytemuck::cast_slice(seg.vectors().expect("built with its vectors")))?;
                let stripped = seg.without_vectors()?;
                phases.phase("writing", 0);
                write_atomic(&args.out, stripped.as_slice())?;
                stripped.as_slice().len()
            }
            None => write_in_place(&args.out, |alloc| segment.build_reporting_into(&kernels, &phases, alloc)).map_err(
                |e| match e {
                    BuildError::Core(e) => in_rows(e),
                    BuildError::Host(e) => e,
                },
            )?,
        }
    };
    bar.finish_and_clear();
    if !args.quiet {
        eprintln!(
            "built {}: {rows} vectors x {dim} ({}), {len} bytes in {:.2} s",
            args.out.display(),
            metric.name(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The file layout of `shoal build --layout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LayoutArg {
    /// Format 1.
    V1,
    /// Format 2, laid out for reading by byte ranges.
    Ranges,
}

/// The index `args` ask for, its flags checked before any input is read.
fn index_kind(args: &BuildArgs) -> Result<IndexKind, HostError> {
    Ok(match args.index {
        IndexArg::Flat
            if args.partitions.is_some() || args.seed.is_some() || args.bits.is_some() || args.codes_only =>
        {
            return Err(HostError::Usage(
                "--partitions, --seed, --bits and --codes-only need --index ivf-rabitq".into(),
            ));
        }
        IndexArg::Flat => IndexKind::Flat,
        IndexArg::IvfRabitq => {
            let d = IvfParams::default();
            if args.partitions == Some(0) {
                return Err(HostError::Usage("--partitions must be at least 1".into()));
            }
            if args.bits.is_some_and(|b| !(1..=8).contains(&b)) {
                return Err(HostError::Usage("--bits must be 1..=8".into()));
            }
            if args.codes_only && args.bits.is_none_or(|b| b < 2) {
                return Err(HostError::Usage("--codes-only ranks by the extra bits: it needs --bits 2..=8".into()));
            }
            IndexKind::IvfRabitq(IvfParams {
                partitions: args.partitions.map(|p| p as usize),
                seed: args.seed.unwrap_or(d.seed),
                bits: args.bits,
                // With a vectors file, built with the vectors and stripped of them afterwards.
                codes_only: args.codes_only && args.vectors_out.is_none(),
            })
        }
    })
}

/// The payload file of `--payloads`: one JSON value per line, read a batch at a time.
struct PayloadLines {
    path: PathBuf,
    lines: Lines<BufReader<std::fs::File>>,
}

impl PayloadLines {
    fn open(path: &Path) -> Result<PayloadLines, HostError> {
        let file = std::fs::File::open(path).map_err(|e| HostError::io(path, "open", e))?;
        Ok(PayloadLines { path: path.to_path_buf(), lines: BufReader::new(file).lines() })
    }

    /// Parses the payloads of rows `first..first + n` into `out`.
    fn read(&mut self, first: usize, n: usize, out: &mut Vec<serde_json::Value>) -> Result<(), HostError> {
        out.clear();
        for row in first..first + n {
            let line = match self.lines.next() {
                Some(line) => line.map_err(|e| HostError::io(&self.path, "read", e))?,
                None => {
                    return Err(HostError::input(
                        &self.path,
                        format!("{row} lines, but the vector file has more rows: one payload line per row"),
                    ));
                }
            };
            let value = serde_json::from_str(&line)
                .map_err(|e| HostError::input(&self.path, format!("line {}: not JSON: {e}", row + 1)))?;
            out.push(value);
        }
        Ok(())
    }

    /// Fails if lines remain after `rows` rows (blank trailing lines are allowed).
    fn expect_end(&mut self, rows: usize) -> Result<(), HostError> {
        for line in self.lines.by_ref() {
            let line = line.map_err(|e| HostError::io(&self.path, "read", e))?;
            if !line.trim().is_empty() {
                return Err(HostError::input(
                    &self.path,
                    format!("more lines than the {rows} rows of the vector file: one payload line per row"),
                ));
            }
        }
        Ok(())
    }
}

/// The build's phases on the bar: a phase of known size gets a bar and a count, the others
/// a spinner, each with the time since the build started.
struct Phases(ProgressBar);

impl Progress for Phases {
    fn phase(&self, name: &'static str, total: u64) {
        let bar = &self.0;
        bar.set_position(0);
        if total > 0 {
            let template = "{spinner} {msg} [{bar:30}] {human_pos}/{human_len} ({eta} left) {elapsed}";
            bar.set_style(ProgressStyle::with_template(template).expect("a valid template").progress_chars("=> "));
            bar.set_length(total);
        } else {
            bar.set_style(super::spinner_style());
            bar.unset_length();
        }
        bar.reset_eta();
        bar.set_message(name);
    }

    fn add(&self, units: u64) {
        self.0.inc(units);
    }
}
