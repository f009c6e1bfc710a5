//! `shoal import`: a segment file (from `shoal build`, or `toBytes()` in JavaScript) becomes a
//! collection that `shoal serve` serves.

use std::path::PathBuf;

use serde_json::json;
use shoal_core::IndexKind;

use crate::HostError;
use crate::server::store::{Meta, create_folder, schema_json};
use crate::server::valid_name;
use crate::storage::open_collection;

/// Arguments of `shoal import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The server's data folder (as `shoal serve --data`).
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// Name of the new collection (1-64 of A-Z a-z 0-9 _ -).
    #[arg(long)]
    pub name: String,
    /// Keep the full vectors in RAM when served (default: memory-mapped).
    #[arg(long)]
    pub in_ram: bool,
    /// The segment file to import (checked in full first).
    pub segment: PathBuf,
}

/// Runs `shoal import`. Stop the server first, or restart it after: it opens collections at start.
pub fn run(args: &ImportArgs) -> Result<(), HostError> {
    if !valid_name(&args.name) {
        return Err(HostError::Usage(format!("--name {:?}: use 1-64 of A-Z a-z 0-9 _ -", args.name)));
    }
    let dir = args.data.join("collections").join(&args.name);
    if dir.exists() {
        return Err(HostError::Usage(format!("collection {} exists in {}", args.name, args.data.display())));
    }
    let col = open_collection(&args.segment)?;
    let bar = super::progress_bar(false);
    bar.set_message("verifying every checksum");
    if let Err(e) = col.verify() {
        bar.finish_and_clear();
        return Err(HostError::segment(&args.segment, e));
    }
    let fields = col.schema().map_or_else(|| json!({}), schema_json);
    let index = match col.index_kind() {
        IndexKind::IvfRabitq(p) => {
            let mut o = json!({"index": "ivf-rabitq", "seed": p.seed});
            if let Some(b) = p.bits {
                o["bits"] = b.into();
            }
            o
        }
        _ => json!({}),
    };
    let meta = Meta {
        dim: col.dim(),
        metric: col.metric().name().to_string(),
        fields,
        index,
        on_disk: !args.in_ram,
        dynamic: false,
        payload: col.nested().then(|| "nested".to_string()),
        sparse_vectors: col
            .sparse_vectors()
            .iter()
            .map(|s| (s.name.clone(), json!({"modifier": if s.idf { "idf" } else { "none" }})))
            .collect(),
        // A segment of several dense vectors names them; one is unnamed.
        vector_name: Some(col.dense_vectors()[0].name.clone()).filter(|n| !n.is_empty()),
        dense_vectors: if col.dense_vectors().len() > 1 {
            col.dense_vectors()
                .iter()
                .map(|s| (s.name.clone(), json!({"dim": s.dim, "metric": s.metric.name()})))
                .collect()
        } else {
            serde_json::Map::new()
        },
    };
    bar.set_message("copying the segment into the data folder");
    std::fs::create_dir_all(args.data.join("collections")).map_err(|e| HostError::io(&args.data, "create", e))?;
    let created = create_folder(&dir, &args.name, &meta, Some(&args.segment)).map_err(|e| HostError::Usage(e.message));
    bar.finish_and_clear();
    created?;
    eprintln!(
        "imported {} ({} points, {}-d {}) as collection {}",
        args.segment.display(),
        col.len(),
        col.dim(),
        meta.metric,
        args.name
    );
    Ok(())
}
