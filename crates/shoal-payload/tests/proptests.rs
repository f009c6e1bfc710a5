//! Property tests: columns + indexes agree with the naive JSON evaluator, sections round-trip,
//! and no corruption of the bytes makes a reader panic.

use proptest::prelude::*;
use serde_json::{Value, json};
use shoal_format::AlignedBytes;
use shoal_payload::{
    FieldValues, Filter, PayloadBuilder, PayloadSectionBytes, PayloadSections, PayloadView, PointId, ScalarValue,
    Schema, parse_payload, reference,
};

const SCHEMA: &str =
    r#"{"kw":"keyword","kw2":"keyword","n":"integer","m":"integer","f":"float","b":"bool","t":"text"}"#;
const ID_BASE: u64 = 1000;

fn kw() -> BoxedStrategy<Value> {
    prop_oneof![Just(json!("a")), Just(json!("b")), Just(json!("c")), Just(json!("")), Just(json!("é"))].boxed()
}
fn kw2() -> BoxedStrategy<Value> {
    (0u32..40).prop_map(|i| json!(format!("k{i:02}"))).boxed()
}
fn n() -> BoxedStrategy<Value> {
    prop_oneof![(-20i64..20).prop_map(|x| json!(x)), Just(json!(3.0)), Just(json!(i64::MIN)), Just(json!(i64::MAX))]
        .boxed()
}
fn m() -> BoxedStrategy<Value> {
    (0i64..200).prop_map(|x| json!(x)).boxed()
}
fn f() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(json!(0.0)),
        Just(json!(-0.0)),
        Just(json!(0.5)),
        Just(json!(-2.25)),
        Just(json!(7)),
        Just(json!(1e300)),
        (-50i32..50).prop_map(|x| json!(x as f64 / 4.0))
    ]
    .boxed()
}
fn b() -> BoxedStrategy<Value> {
    any::<bool>().prop_map(|x| json!(x)).boxed()
}
fn t() -> BoxedStrategy<Value> {
    prop_oneof![Just(json!("some words")), Just(json!("")), Just(json!("more text"))].boxed()
}

/// A field's JSON: absent (`None`), `null`, `[]`, `[null]`, a scalar, or an array mixing
/// scalars and `null`s. `arrays` weighs how often arrays appear.
fn field(s: BoxedStrategy<Value>, arrays: u32) -> BoxedStrategy<Option<Value>> {
    prop_oneof![
        4 => Just(None),
        1 => Just(Some(Value::Null)),
        1 => Just(Some(json!([]))),
        1 => Just(Some(json!([null]))),
        8 => s.clone().prop_map(Some),
        arrays => proptest::collection::vec(prop_oneof![6 => s.prop_map(Some), 1 => Just(None)], 1..5)
            .prop_map(|v| Some(Value::Array(v.into_iter().map(|x| x.unwrap_or(Value::Null)).collect()))),
    ]
    .boxed()
}

fn doc() -> impl Strategy<Value = Value> {
    (
        field(kw(), 4),
        field(kw2(), 4),
        field(n(), 6),
        field(m(), 1),
        field(f(), 3),
        field(b(), 2),
        field(t(), 2),
        0u32..20,
    )
        .prop_map(|(kw, kw2, n, m, f, b, t, null_doc)| {
            if null_doc == 0 {
                return Value::Null;
            }
            let mut o = serde_json::Map::new();
            for (k, v) in [("kw", kw), ("kw2", kw2), ("n", n), ("m", m), ("f", f), ("b", b), ("t", t)] {
                if let Some(v) = v {
                    o.insert(k.into(), v);
                }
            }
            Value::Object(o)
        })
}

fn bound() -> impl Strategy<Value = Value> {
    prop_oneof![(-25i64..210).prop_map(|x| json!(x)), (-100i32..100).prop_map(|x| json!(x as f64 / 4.0 + 0.125))]
}

fn leaf() -> impl Strategy<Value = Value> {
    let lit = |key: &'static str, s: BoxedStrategy<Value>| {
        prop_oneof![
            s.clone().prop_map(move |v| json!({"key": key, "match": {"value": v}})),
            proptest::collection::vec(s.clone(), 0..4).prop_map(move |v| json!({"key": key, "match": {"any": v}})),
            proptest::collection::vec(s, 0..4).prop_map(move |v| json!({"key": key, "match": {"except": v}})),
        ]
    };
    let range = |key: &'static str| {
        (proptest::option::of(bound()), proptest::option::of(bound()), any::<bool>(), any::<bool>()).prop_map(
            move |(lo, hi, lo_strict, hi_strict)| {
                let mut r = serde_json::Map::new();
                if let Some(lo) = lo {
                    r.insert(if lo_strict { "gt" } else { "gte" }.into(), lo);
                }
                if let Some(hi) = hi {
                    r.insert(if hi_strict { "lt" } else { "lte" }.into(), hi);
                }
                json!({"key": key, "range": r})
            },
        )
    };
    let any_key =
        prop_oneof![Just("kw"), Just("kw2"), Just("n"), Just("m"), Just("f"), Just("b"), Just("t")].prop_map(|k| k);
    let integers = prop_oneof![(-22i64..22).prop_map(|x| json!(x)), Just(json!(i64::MAX))].boxed();
    prop_oneof![
        lit("kw", prop_oneof![kw(), Just(json!("zz"))].boxed()),
        lit("kw2", prop_oneof![kw2(), Just(json!("k99"))].boxed()),
        lit("n", integers),
        lit("m", (0i64..205).prop_map(|x| json!(x)).boxed()),
        // Long lists (more than 16 codes: a bitmap code set).
        proptest::collection::vec(kw2(), 10..40).prop_map(|v| json!({"key": "kw2", "match": {"any": v}})),
        proptest::collection::vec(kw2(), 10..40).prop_map(|v| json!({"key": "kw2", "match": {"except": v}})),
        proptest::collection::vec((0i64..205).prop_map(|x| json!(x)), 10..60)
            .prop_map(|v| json!({"key": "m", "match": {"any": v}})),
        b().prop_map(|v| json!({"key": "b", "match": {"value": v}})),
        range("n"),
        range("m"),
        range("f"),
        any_key.clone().prop_map(|k| json!({"is_empty": {"key": k}})),
        any_key.prop_map(|k| json!({"is_null": {"key": k}})),
        // Ids of both kinds, UUIDs in each form Qdrant reads, and ids of no row.
        proptest::collection::vec((0u32..70, 0u8..3), 0..5).prop_map(|ids| {
            let ids: Vec<Value> = ids
                .into_iter()
                .map(|(r, form)| match id_of(r) {
                    PointId::Num(n) => json!(n),
                    PointId::Uuid(u) => {
                        let text = PointId::Uuid(u).to_string();
                        json!(match form {
                            0 => text,
                            1 => text.replace('-', "").to_uppercase(),
                            _ => format!("{{{text}}}"),
                        })
                    }
                })
                .collect();
            json!({"has_id": ids})
        }),
    ]
}

fn filter() -> impl Strategy<Value = Value> {
    leaf().prop_map(|l| json!({"must": [l]})).prop_recursive(3, 24, 4, |inner| {
        let cond = prop_oneof![3 => leaf(), 1 => inner];
        (
            proptest::collection::vec(cond.clone(), 0..3),
            proptest::collection::vec(cond.clone(), 0..3),
            proptest::collection::vec(cond.clone(), 0..2),
            proptest::option::weighted(0.2, (proptest::collection::vec(cond, 0..3), 0usize..3)),
        )
            .prop_map(|(must, should, must_not, min_should)| {
                let mut o = json!({"must": must, "should": should, "must_not": must_not});
                if let Some((conditions, min_count)) = min_should {
                    o["min_should"] = json!({"conditions": conditions, "min_count": min_count});
                }
                o
            })
    })
}

fn build(docs: &[Value]) -> PayloadSections {
    let mut b = PayloadBuilder::new(Schema::from_json(SCHEMA).unwrap());
    for d in docs {
        b.push(d).unwrap();
    }
    b.finish()
}

/// Row `r`'s id: even rows have integer ids, odd rows UUIDs (`ab` + the row, big-endian).
fn id_of(r: u32) -> PointId {
    if r.is_multiple_of(2) {
        PointId::Num(ID_BASE + r as u64)
    } else {
        let mut u = [0u8; 16];
        u[0] = 0xab;
        u[12..].copy_from_slice(&r.to_be_bytes());
        PointId::Uuid(u)
    }
}

fn row_of(id: PointId) -> Option<u32> {
    let r = match id {
        PointId::Num(n) => u32::try_from(n.checked_sub(ID_BASE)?).ok().filter(|r| r.is_multiple_of(2))?,
        PointId::Uuid(u) => Some(u32::from_be_bytes(u[12..].try_into().unwrap()))
            .filter(|r| r % 2 == 1 && u[0] == 0xab && u[1..12].iter().all(|&b| b == 0))?,
    };
    Some(r)
}

fn sorted_values(v: &FieldValues) -> Vec<ScalarValue> {
    let mut out = match v {
        FieldValues::Values(v) => v.iter().filter(|x| !matches!(x, ScalarValue::Text(_))).cloned().collect(),
        _ => Vec::new(),
    };
    out.sort_by(|a, b| match (a, b) {
        (ScalarValue::Keyword(x), ScalarValue::Keyword(y)) => x.as_bytes().cmp(y.as_bytes()),
        (ScalarValue::Integer(x), ScalarValue::Integer(y)) => x.cmp(y),
        (ScalarValue::Float(x), ScalarValue::Float(y)) => x.total_cmp(y),
        (ScalarValue::Bool(x), ScalarValue::Bool(y)) => x.cmp(y),
        _ => core::cmp::Ordering::Equal,
    });
    out.dedup();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn columns_and_indexes_match_the_naive_evaluator(
        docs in proptest::collection::vec(doc(), 0..70),
        filters in proptest::collection::vec(filter(), 1..6),
    ) {
        let sections = build(&docs);
        let aligned = sections.to_aligned();
        let view = aligned.view().unwrap();
        view.verify().unwrap();
        for f in &filters {
            let f = Filter::from_value(f).unwrap();
            let q = view.compile(&f, &row_of).unwrap();
            let naive: Vec<u32> = (0..docs.len() as u32)
                .filter(|&r| reference::matches(&f, &docs[r as usize], id_of(r)))
                .collect();
            let by_row: Vec<u32> = (0..view.rows()).filter(|&r| q.matches(r)).collect();
            prop_assert_eq!(&by_row, &naive, "filter {:?}", f);
            prop_assert_eq!(q.matching_points().to_rows(), naive.clone());
            let c = q.estimate_cardinality();
            let n = naive.len() as u64;
            prop_assert!(c.min <= n && n <= c.max && c.min <= c.expected && c.expected <= c.max, "{:?} vs {}", c, n);
        }
    }

    #[test]
    fn sections_round_trip(docs in proptest::collection::vec(doc(), 0..70)) {
        let schema = Schema::from_json(SCHEMA).unwrap();
        let sections = build(&docs);
        prop_assert_eq!(&build(&docs), &sections); // deterministic
        let aligned = sections.to_aligned();
        let view = aligned.view().unwrap();
        view.verify().unwrap();
        prop_assert_eq!(view.rows() as usize, docs.len());
        prop_assert_eq!(view.schema(), &schema);
        for (r, d) in docs.iter().enumerate() {
            // Documents come back in canonical form (see `canonicalize`), and canonicalising
            // never changes a value that parses.
            let mut expect = if d.is_null() { json!({}) } else { d.clone() };
            shoal_payload::canonicalize(&schema, &mut expect);
            prop_assert_eq!(parse_payload(&schema, &expect).unwrap(), parse_payload(&schema, d).unwrap());
            prop_assert_eq!(view.document(r as u32).unwrap(), expect);
            let parsed = parse_payload(&schema, d).unwrap();
            for (i, fv) in parsed.iter().enumerate() {
                let got = view.field(i).values(r as u32);
                prop_assert_eq!(got, sorted_values(fv), "row {} field {}", r, schema.name(i));
            }
        }
    }

    #[test]
    fn corrupt_bytes_never_panic(
        docs in proptest::collection::vec(doc(), 1..40),
        section in 0usize..5,
        cut in any::<prop::sample::Index>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..4),
        truncate in any::<bool>(),
        filters in proptest::collection::vec(filter(), 1..3),
    ) {
        let sections = build(&docs);
        let mut parts: Vec<Vec<u8>> = sections.by_kind().iter().map(|(_, b)| b.to_vec()).collect();
        let target = &mut parts[section];
        if truncate {
            let len = cut.index(target.len() + 1);
            target.truncate(len);
        }
        for (at, x) in &flips {
            if !target.is_empty() {
                let i = at.index(target.len());
                target[i] ^= x;
            }
        }
        let aligned: Vec<AlignedBytes> = parts.iter().map(|p| AlignedBytes::from_slice(p)).collect();
        let bytes = PayloadSectionBytes {
            fields: aligned[0].as_slice(),
            columns: aligned[1].as_slice(),
            dicts: aligned[2].as_slice(),
            postings: aligned[3].as_slice(),
            docs: aligned[4].as_slice(),
        };
        if let Ok(view) = PayloadView::open(bytes) {
            let _ = view.verify();
            for r in 0..view.rows() + 2 {
                let _ = view.document(r);
                for i in 0..view.schema().len() {
                    let _ = view.field(i).values(r);
                }
            }
            for f in &filters {
                let f = Filter::from_value(f).unwrap();
                if let Ok(q) = view.compile(&f, &row_of) {
                    for r in 0..view.rows() + 2 {
                        let _ = q.matches(r);
                    }
                    let _ = q.matching_points();
                    let _ = q.estimate_cardinality();
                }
            }
        }
    }
}

/// Slots and codes of a counted column, well formed or not: small starts and counts, tags
/// anywhere, `multi_len` up to one past the codes (the padding code of an odd length).
fn counted_words() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, u32)> {
    use shoal_payload::column::{COUNT_BITS, DIRECT_TAG};
    let slot = prop_oneof![
        0u32..8,
        (0u32..24, 0u32..16).prop_map(|(start, n)| DIRECT_TAG | start << COUNT_BITS | n),
        any::<u32>(),
    ];
    let code = prop_oneof![0u32..8, (0u32..8).prop_map(|c| c | DIRECT_TAG), any::<u32>()];
    let pair = |s: BoxedStrategy<u32>| (s.clone(), s).prop_map(|(lo, hi)| lo as u64 | (hi as u64) << 32);
    (
        proptest::collection::vec(pair(slot.boxed()), 0..12),
        proptest::collection::vec(pair(code.boxed()), 0..14),
        0u32..30,
    )
}

proptest! {
    /// The counted-column path of `any_code` answers as the general multi-row reader
    /// (`multi_codes_of`) does, on any bytes — corrupt ones too.
    #[test]
    fn counted_fast_path_equals_the_general_path((slots, codes, len) in counted_words(), k in 0u32..8) {
        use shoal_payload::column::{CODE_EMPTY, CODE_FIRST_VALUE, ColumnMeta, ColumnRef, DIRECT_TAG, MODE_COUNTED};
        let col = ColumnRef {
            meta: ColumnMeta { rows: slots.len() as u32 * 2, width: 32, mode: MODE_COUNTED, multi_len: len, ..ColumnMeta::default() },
            slots: &slots,
            multi_codes: &codes,
            ..ColumnRef::default()
        };
        let preds: [&dyn Fn(u32) -> bool; 3] = [&|c| c == k, &|c| c != k, &|c| c % 3 == k % 3];
        for row in 0..col.rows() + 2 {
            for f in preds {
                let c = col.code(row);
                let general = if (CODE_FIRST_VALUE..DIRECT_TAG).contains(&c) {
                    f(c)
                } else if c == CODE_EMPTY {
                    false
                } else {
                    col.multi_codes_of(row).any(f)
                };
                prop_assert_eq!(col.any_code(row, f), general, "row {} slot {:#x}", row, c);
            }
        }
    }
}
