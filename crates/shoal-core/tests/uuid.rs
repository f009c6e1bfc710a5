//! UUID point ids (`docs/format.md`, "Point ids"): mixed with integer ids in every write, read
//! and filter; stored in the UUID sections (header flag bit 0) only by segments that hold one;
//! a segment set with UUIDs in several segments; damaged UUID sections are typed errors.

use serde_json::json;
use shoal_core::set::Manifest;
use shoal_core::{
    AlignedBytes, Collection, CollectionConfig, Error, FormatError, IndexKind, IvfParams, Metric, PointId,
    SearchRequest,
};
use shoal_format::{FLAG_UUID_IDS, KIND_UUID_INDEX, SegmentReader, crc32c};
use shoal_testkit::clustered_vectors;
use shoal_testkit::scenario::{open_set, write_set};

const DIM: usize = 8;

fn uuid(s: &str) -> PointId {
    PointId::Uuid(PointId::parse_uuid(s).unwrap())
}

/// `n` ids: every third an integer (`3 i`), the others UUIDs that do not sort like `i`.
fn ids(n: usize) -> Vec<PointId> {
    (0..n as u64)
        .map(|i| {
            if i % 3 == 0 {
                PointId::Num(3 * i)
            } else {
                let mut u = [0u8; 16];
                u[..8].copy_from_slice(&(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_be_bytes());
                u[8..].copy_from_slice(&i.to_be_bytes());
                PointId::Uuid(u)
            }
        })
        .collect()
}

fn collection() -> Collection {
    let schema = Collection::parse_schema(&json!({"tag": "keyword"})).unwrap();
    Collection::with_schema(CollectionConfig { dim: DIM, metric: Metric::L2 }, schema).unwrap()
}

fn nearest(col: &Collection, q: &[f32], k: usize) -> Vec<(PointId, u32)> {
    let mut req = SearchRequest::nearest(q.to_vec(), k);
    req.params.exact = true;
    col.search(&req).unwrap().points.iter().map(|p| (p.id, p.score.to_bits())).collect()
}

#[test]
fn mixed_ids_are_written_read_searched_and_deleted_alike() {
    let n = 300;
    let (ids, vectors) = (ids(n), clustered_vectors(1, n, DIM, 6));
    let docs: Vec<_> = (0..n).map(|i| json!({ "tag": if i % 2 == 0 { "a" } else { "b" } })).collect();
    let mut col = collection();
    col.upsert(&ids[..200], &vectors[..200 * DIM], &docs[..200]).unwrap();
    col.seal_with(IndexKind::IvfRabitq(IvfParams { partitions: Some(6), ..IvfParams::default() })).unwrap();
    col.upsert(&ids[200..], &vectors[200 * DIM..], &docs[200..]).unwrap();
    assert!(col.segment(0).unwrap().has_uuids());
    col.verify().unwrap();
    for (i, &id) in ids.iter().enumerate() {
        assert!(col.contains(id), "{id}");
        assert_eq!(col.vector(id), Some(&vectors[i * DIM..(i + 1) * DIM]), "{id}");
        assert_eq!(col.payload(id), Some(docs[i].clone()));
    }
    // `Num(x)` and a UUID holding x's bytes are different points.
    let mut num_bytes = [0u8; 16];
    num_bytes[8..].copy_from_slice(&3u64.to_be_bytes());
    assert!(!col.contains(PointId::Uuid(num_bytes)) && !col.contains(PointId::Num(1)));

    // An exact search finds each point first, by its own id (ties aside: the vectors repeat
    // no row here).
    for i in [0, 1, 2, 150, 250, 299] {
        let got = nearest(&col, &vectors[i * DIM..(i + 1) * DIM], 1);
        assert_eq!(got[0].0, ids[i]);
    }
    // Ids in JSON: integers as numbers, UUIDs as their canonical text.
    let res = col.search(&SearchRequest::nearest(vectors[DIM..2 * DIM].to_vec(), 1)).unwrap();
    assert_eq!(res.points[0].id, ids[1]);
    let text = res.to_json();
    assert!(text.contains(&format!("\"id\":\"{}\"", ids[1])), "{text}");

    // has_id takes both kinds, UUIDs in any form; upper case and braces name the same point.
    let upper = ids[1].to_string().to_uppercase();
    let filter = json!({"must": [{"has_id": [ids[0], format!("{{{upper}}}"), ids[250], 999_999]}]});
    let mut got = col.matching_ids(Some(&filter)).unwrap();
    let mut want = vec![ids[0], ids[1], ids[250]];
    want.sort();
    assert_eq!(got, want);
    // matching_ids lists integers first (ascending), then UUIDs by their bytes.
    got = col.matching_ids(None).unwrap();
    let mut all = ids.clone();
    all.sort();
    assert_eq!(got, all);
    assert!(matches!(got[n / 3 - 1], PointId::Num(_)) && matches!(got[n / 3], PointId::Uuid(_)));

    // Upserts by UUID replace the sealed point; deletes take both kinds.
    col.upsert(&[ids[1]], &vectors[..DIM], &[json!({"tag": "c"})]).unwrap();
    assert_eq!(col.vector(ids[1]), Some(&vectors[..DIM]));
    assert_eq!(col.len(), n);
    assert_eq!(col.delete(&[ids[2], ids[3], ids[260], uuid("00000000-0000-0000-0000-000000000000")]).unwrap(), 3);
    assert_eq!(col.len(), n - 3);
    assert!(!col.contains(ids[2]) && !col.contains(ids[3]) && !col.contains(ids[260]));

    // Sealed again, round-tripped through bytes: the same answers.
    let q = clustered_vectors(2, 20, DIM, 6);
    let before: Vec<_> = q.chunks_exact(DIM).map(|q| nearest(&col, q, 10)).collect();
    let bytes = col.to_bytes().unwrap().to_vec();
    let again = Collection::from_bytes(&bytes).unwrap();
    again.verify().unwrap();
    let after: Vec<_> = q.chunks_exact(DIM).map(|q| nearest(&again, q, 10)).collect();
    assert_eq!(before, after);
    assert_eq!(again.matching_ids(None).unwrap(), col.matching_ids(None).unwrap());
}

#[test]
fn a_segment_of_integer_ids_keeps_todays_bytes() {
    let vectors = clustered_vectors(3, 50, DIM, 4);
    let ints: Vec<u64> = (0..50).map(|i| i * 7).collect();
    let mut a = Collection::new(CollectionConfig { dim: DIM, metric: Metric::Dot }).unwrap();
    a.insert(&ints, &vectors).unwrap();
    let mut b = Collection::new(CollectionConfig { dim: DIM, metric: Metric::Dot }).unwrap();
    b.upsert(&ints.iter().map(|&i| PointId::Num(i)).collect::<Vec<_>>(), &vectors, &[]).unwrap();
    let (a, b) = (a.to_bytes().unwrap().to_vec(), b.to_bytes().unwrap().to_vec());
    assert_eq!(a, b);
    let r = SegmentReader::open(AlignedBytes::from_slice(&a).as_slice()).unwrap().header().flags;
    assert_eq!(r, 0);
}

#[test]
fn nil_and_max_uuids_and_id_zero_are_points() {
    let ids = [
        PointId::Num(0),
        uuid("00000000-0000-0000-0000-000000000000"),
        uuid("ffffffff-ffff-ffff-ffff-ffffffffffff"),
        PointId::Num(u64::MAX),
    ];
    let vectors: Vec<f32> = (0..4 * DIM).map(|i| i as f32).collect();
    let mut col = Collection::new(CollectionConfig { dim: DIM, metric: Metric::L2 }).unwrap();
    col.upsert(&ids, &vectors, &[]).unwrap();
    col.seal();
    let seg = col.segment(0).unwrap();
    assert_eq!((0..4).map(|r| seg.id(r)).collect::<Vec<_>>(), ids);
    for id in ids {
        assert!(col.contains(id), "{id}");
    }
    let json = col.search(&SearchRequest::nearest(vectors[DIM..2 * DIM].to_vec(), 4)).unwrap().to_json();
    assert!(json.contains("\"00000000-0000-0000-0000-000000000000\"") && json.contains("18446744073709551615"));
}

#[test]
fn a_set_checks_uuid_uniqueness_across_segments() {
    let n = 60;
    let (ids, vectors) = (ids(n), clustered_vectors(4, n, DIM, 4));
    // The first segment holds UUIDs only, the second both kinds.
    let first: Vec<usize> = (0..n).filter(|&i| i < 30 && ids[i].as_num().is_none()).collect();
    let rest: Vec<usize> = (0..n).filter(|i| !first.contains(i)).collect();
    let pick = |rows: &[usize]| -> (Vec<PointId>, Vec<f32>) {
        (
            rows.iter().map(|&i| ids[i]).collect(),
            rows.iter().flat_map(|&i| vectors[i * DIM..(i + 1) * DIM].to_vec()).collect(),
        )
    };
    let mut col = collection();
    let (a, va) = pick(&first);
    col.upsert(&a, &va, &[]).unwrap();
    col.seal();
    let (b, vb) = pick(&rest);
    col.upsert(&b, &vb, &[]).unwrap();
    // An upsert of a sealed UUID: its old row is deleted in the first segment.
    col.upsert(&[ids[4]], &vectors[..DIM], &[]).unwrap();
    let (manifest, files) = write_set(&mut col);
    let again = open_set(&manifest, &files);
    assert_eq!(again.matching_ids(None).unwrap(), col.matching_ids(None).unwrap());
    assert_eq!(again.vector(ids[4]), Some(&vectors[..DIM]));

    // The first segment listed twice, without its deletes: its UUIDs are live twice.
    let mut m = Manifest::from_json(manifest.as_bytes()).unwrap();
    let mut entry = m.segments[0].clone();
    entry.live = None;
    let bytes = files.iter().find(|f| f.0 == entry.file).unwrap().1.clone();
    let name = shoal_core::set::segment_name(99, u32::from_str_radix(&entry.table_crc, 16).unwrap());
    entry.file = name.clone();
    m.segments.push(entry);
    let mut files2 = files.clone();
    files2.push((name, bytes));
    let find = |name: &str| files2.iter().find(|f| f.0 == name).map(|f| f.1.clone());
    let opened = Collection::open_set(
        &m,
        &mut |e| Ok(Box::new(AlignedBytes::from_slice(&find(&e.file).ok_or(Error::BadSet("missing".into()))?))),
        &mut |l| find(&l.file).ok_or(Error::BadSet("missing".into())),
    );
    assert!(matches!(opened, Err(Error::BadSet(e)) if e.contains("live in two segments")));
}

/// `bytes` with its header flags set to `flags` (checksum updated).
fn with_flags(bytes: &[u8], flags: u32) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[12..16].copy_from_slice(&flags.to_le_bytes());
    let crc = crc32c(&b[..32]);
    b[32..36].copy_from_slice(&crc.to_le_bytes());
    b
}

#[test]
fn damaged_uuid_sections_are_typed_errors() {
    let n = 40;
    let (ids, vectors) = (ids(n), clustered_vectors(5, n, DIM, 4));
    let mut col = Collection::new(CollectionConfig { dim: DIM, metric: Metric::L2 }).unwrap();
    col.upsert(&ids, &vectors, &[]).unwrap();
    let bytes = col.to_bytes().unwrap().to_vec();
    let r = SegmentReader::open(AlignedBytes::from_slice(&bytes).as_slice()).unwrap().header().flags;
    assert_eq!(r, FLAG_UUID_IDS);
    let open = |b: &[u8]| Collection::from_bytes(b);
    // A reader that does not know a flag refuses the file before reading a section.
    assert!(matches!(
        open(&with_flags(&bytes, FLAG_UUID_IDS | 16)),
        Err(Error::Format(FormatError::UnsupportedFlags(16)))
    ));
    // The sparse flag (bit 2) without sparse sections.
    assert!(matches!(open(&with_flags(&bytes, FLAG_UUID_IDS | 4)), Err(Error::Format(FormatError::BadSection { .. }))));
    // UUID sections in a segment without the flag.
    assert!(
        matches!(open(&with_flags(&bytes, 0)), Err(Error::Format(FormatError::BadSection { .. }))),
        "{:?}",
        open(&with_flags(&bytes, 0))
    );

    // A UUID_INDEX entry naming a row of the other kind or out of range: "not found" on lookup,
    // an error from verify (after the checksum is made to match, as a hand-made file would).
    let aligned = AlignedBytes::from_slice(&bytes);
    let table: Vec<_> = SegmentReader::open(aligned.as_slice()).unwrap().sections().to_vec();
    let entry = table.iter().find(|e| e.kind == KIND_UUID_INDEX).unwrap();
    let num_row = (0..n).find(|&r| col.segment(0).unwrap().id(r).as_num().is_some()).unwrap() as u32;
    for bad_row in [num_row, 1_000_000] {
        let mut b = bytes.clone();
        let at = entry.offset as usize + 16; // the first entry's row
        b[at..at + 4].copy_from_slice(&bad_row.to_le_bytes());
        // Fix the section's CRC in the table, then the table's CRC in the header.
        let i = table.iter().position(|e| e.kind == KIND_UUID_INDEX).unwrap();
        let crc = crc32c(&b[entry.offset as usize..(entry.offset + entry.length) as usize]);
        let crc_at = 64 + 32 * i + 24;
        b[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
        let table_crc = crc32c(&b[64..64 + 32 * table.len()]);
        b[20..24].copy_from_slice(&table_crc.to_le_bytes());
        let b = with_flags(&b, FLAG_UUID_IDS);
        let damaged = open(&b).unwrap();
        let first = {
            let index = &b[entry.offset as usize..entry.offset as usize + 16];
            PointId::Uuid(index.try_into().unwrap())
        };
        assert!(!damaged.contains(first), "a corrupt entry finds no point");
        assert!(matches!(damaged.verify(), Err(Error::Format(FormatError::BadSection { .. }))));
    }
}
