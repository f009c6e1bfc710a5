//! Postings decode speed per codec, in integers per second (a posting is two integers: the
//! doc id and the tf), with the varint baseline measured in the same run.
//!
//! ```text
//! cargo bench -p shoal-text --bench postings
//! ```
//!
//! Lists are synthetic with a fixed seed: 1M postings whose gaps average 2 (dense), 16 and
//! 1,000 (sparse), tf mostly 1 with a geometric tail.

use std::hint::black_box;
use std::time::Instant;

use shoal_text::postings::{self, BLOCK, Codec, PostingsCursor, TERMINATED};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn list(n: usize, mean_gap: u64, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let mut r = Rng(seed);
    let (mut docs, mut tfs) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut d = 0u64;
    for _ in 0..n {
        docs.push(d as u32);
        let mut tf = 1;
        while r.next().is_multiple_of(4) && tf < 50 {
            tf += 1;
        }
        tfs.push(tf);
        d += 1 + r.next() % (2 * mean_gap - 1);
    }
    (docs, tfs)
}

/// Best of `reps` timings of `f`, in seconds.
fn time(reps: usize, mut f: impl FnMut() -> u64) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn main() {
    let n = 1_000_000;
    println!(
        "{:<10} {:<10} {:>12} {:>16} {:>16} {:>10}",
        "gaps", "codec", "bytes/post", "scan Mint/s", "seek ns/seek", "vs varint"
    );
    for mean_gap in [2u64, 16, 1000] {
        let (docs, tfs) = list(n, mean_gap, 0x5eed ^ mean_gap);
        let mut base = 0.0;
        for codec in [Codec::Varint, Codec::BitPacked] {
            let mut bytes = Vec::new();
            postings::encode(codec, &docs, &tfs, None, &mut bytes).unwrap();
            // Full scan: every posting through the cursor.
            let scan = time(7, || {
                let mut c = PostingsCursor::open(&bytes).unwrap();
                let mut s = 0u64;
                while c.doc() != TERMINATED {
                    s = s.wrapping_add(u64::from(c.doc()) ^ u64::from(c.tf()));
                    c.advance().unwrap();
                }
                s
            });
            // Seeks to every 1000th posting: decodes only the blocks it lands in.
            let targets: Vec<u32> = docs.iter().step_by(1000).map(|d| d + 1).collect();
            let seek = time(7, || {
                let mut c = PostingsCursor::open(&bytes).unwrap();
                let mut s = 0u64;
                for &t in &targets {
                    s = s.wrapping_add(u64::from(c.seek(t).unwrap()));
                }
                s
            });
            let mint = 2.0 * n as f64 / scan / 1e6;
            if codec == Codec::Varint {
                base = mint;
            }
            println!(
                "{:<10} {:<10} {:>12.3} {:>16.0} {:>16.1} {:>9.2}x",
                mean_gap,
                format!("{codec:?}"),
                bytes.len() as f64 / n as f64,
                mint,
                seek / targets.len() as f64 * 1e9,
                mint / base
            );
        }
    }
    // The bare bit-unpack kernel (scalar reference, auto-vectorised) per width.
    let mut out = [0u32; BLOCK];
    for w in [1u32, 4, 8, 13, 20, 32] {
        let bytes = vec![0xA5u8; 16 * w as usize];
        let reps = 200_000;
        let t = time(5, || {
            let mut s = 0u64;
            for _ in 0..reps {
                postings::unpack(black_box(&bytes), w, &mut out);
                s = s.wrapping_add(u64::from(out[17]));
            }
            s
        });
        println!("unpack width {w:>2}: {:>8.0} Mint/s", (reps * BLOCK) as f64 / t / 1e6);
    }
}
