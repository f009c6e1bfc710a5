//! Schema, ingestion, filter parsing and validation, Qdrant semantics, serialization.

use serde_json::{Value, json};
use shoal_payload::column::{MODE_CODES, MODE_COUNTED, MODE_SETS, build_column};
use shoal_payload::{
    FieldType, FieldValues, Filter, FilterErrorKind, PayloadBuilder, PayloadErrorKind, PayloadSections, PointId,
    ScalarValue, Schema, parse_payload, reference,
};

fn schema() -> Schema {
    Schema::from_json(r#"{"tag":"keyword","year":"integer","price":"float","ok":"bool","body":"text"}"#).unwrap()
}

/// The rows `f` matches (ids are rows), checked equal three ways: row by row on the columns,
/// from the value -> rows indexes, and by the naive JSON evaluator.
fn matching_three_ways(view: &shoal_payload::PayloadView<'_>, docs: &[Value], f: &Filter) -> Vec<u32> {
    let q = view.compile(f, &|id| id.as_num().and_then(|n| u32::try_from(n).ok())).unwrap();
    let by_rows: Vec<u32> = (0..view.rows()).filter(|&r| q.matches(r)).collect();
    assert_eq!(q.matching_points().to_rows(), by_rows);
    let naive: Vec<u32> =
        (0..docs.len() as u32).filter(|&r| reference::matches(f, &docs[r as usize], PointId::Num(r as u64))).collect();
    assert_eq!(by_rows, naive, "{f:?}");
    by_rows
}

fn build(docs: &[Value]) -> PayloadSections {
    let mut b = PayloadBuilder::new(schema());
    for d in docs {
        b.push(d).unwrap();
    }
    b.finish()
}

#[test]
fn schema_parsing_and_names() {
    let s = schema();
    assert_eq!(s.len(), 5);
    assert_eq!(s.field("price"), Some((2, FieldType::Float)));
    assert_eq!(s.field("nope"), None);
    assert_eq!(Schema::from_json(&s.to_json()).unwrap(), s);
    let e = Schema::from_json(r#"{"a":"string"}"#).unwrap_err();
    assert_eq!((e.path.as_str(), e.kind), ("schema.a", PayloadErrorKind::UnknownType("string".into())));
    assert_eq!(Schema::from_json(r#"{"":"keyword"}"#).unwrap_err().kind, PayloadErrorKind::BadFieldName);
    let long = "x".repeat(256);
    assert_eq!(Schema::new(&[(long.as_str(), FieldType::Bool)]).unwrap_err().kind, PayloadErrorKind::BadFieldName);
    assert_eq!(Schema::new(&[("a\n", FieldType::Bool)]).unwrap_err().kind, PayloadErrorKind::BadFieldName);
    assert!(Schema::new(&[("a", FieldType::Bool), ("a", FieldType::Text)]).is_err());
    assert_eq!(Schema::from_json("[1]").unwrap_err().kind, PayloadErrorKind::NotAnObject);
    assert!(matches!(Schema::from_json("{").unwrap_err().kind, PayloadErrorKind::InvalidJson(_)));
}

#[test]
fn payload_ingestion_and_errors() {
    let s = schema();
    let v = parse_payload(&s, &json!({"tag": ["a", null, "b"], "year": 3.0, "price": -0.0, "ok": [null], "body": []}))
        .unwrap();
    let (body, ok, price, tag, year) = (&v[0], &v[1], &v[2], &v[3], &v[4]);
    assert_eq!(tag, &FieldValues::Values(vec![ScalarValue::Keyword("a".into()), ScalarValue::Keyword("b".into())]));
    assert_eq!(year, &FieldValues::Values(vec![ScalarValue::Integer(3)]));
    assert_eq!(price, &FieldValues::Values(vec![ScalarValue::Float(0.0)]));
    assert_eq!(ok, &FieldValues::NullsOnly);
    assert_eq!(body, &FieldValues::EmptyArray);
    assert_eq!(parse_payload(&s, &Value::Null).unwrap(), vec![FieldValues::Absent; 5]);

    let err = |doc: Value| parse_payload(&s, &doc).unwrap_err();
    let e = err(json!({"colour": 1}));
    assert_eq!((e.path.as_str(), e.kind), ("payload.colour", PayloadErrorKind::UnknownField));
    let e = err(json!({"year": 1.5}));
    assert_eq!((e.path.as_str(), e.kind), ("payload.year", PayloadErrorKind::NotAnInteger));
    let e = err(json!({"year": 18446744073709551615u64}));
    assert_eq!(e.kind, PayloadErrorKind::NotAnInteger);
    let e = err(json!({"tag": ["a", 1]}));
    assert_eq!(e.path, "payload.tag[1]");
    assert_eq!(e.kind, PayloadErrorKind::WrongType { expected: FieldType::Keyword, found: "number" });
    assert_eq!(
        err(json!({"ok": "yes"})).kind,
        PayloadErrorKind::WrongType { expected: FieldType::Bool, found: "string" }
    );
    assert_eq!(err(json!({"price": {"a": 1}})).path, "payload.price");
    assert_eq!(err(json!([1])).kind, PayloadErrorKind::NotAnObject);
    assert!(e.to_string().contains("payload.tag[1]"));

    // A rejected payload changes nothing.
    let mut b = PayloadBuilder::new(s);
    b.push(&json!({"tag": "a"})).unwrap();
    assert!(b.push(&json!({"tag": "b", "year": "x"})).is_err());
    assert!(b.push_str("{not json").is_err());
    assert_eq!(b.rows(), 1);
    let p = b.finish().to_aligned();
    let v = p.view().unwrap();
    assert_eq!(v.rows(), 1);
    assert_eq!(v.field_by_name("tag").unwrap().dict.len(), 1);
}

#[test]
fn filter_errors_name_their_path() {
    let s = schema();
    let check = |text: &str, path: &str| {
        let e = Filter::from_json(text).and_then(|f| f.validate(&s).map(|_| f)).unwrap_err();
        assert_eq!(e.path, path, "{text}: {e}");
        e.kind
    };
    assert_eq!(
        check(
            r#"{"must": [{"key": "year", "range": {"gte": 1}}, {"key": "tag", "range": {"lt": 3}}]}"#,
            "filter.must[1].range"
        ),
        FilterErrorKind::TypeMismatch { field_type: FieldType::Keyword, operator: "range" }
    );
    assert_eq!(
        check(r#"{"must": [{"key": "year", "range": {"gte": "2000"}}]}"#, "filter.must[0].range.gte"),
        FilterErrorKind::Expected("a number")
    );
    assert_eq!(
        check(r#"{"should": [{"key": "nope", "match": {"value": 1}}]}"#, "filter.should[0].key"),
        FilterErrorKind::UnknownField("nope".into())
    );
    assert_eq!(
        check(r#"{"must_not": [{"key": "year", "match": {"value": "x"}}]}"#, "filter.must_not[0].match.value"),
        FilterErrorKind::WrongValue { field_type: FieldType::Integer, found: "string" }
    );
    assert_eq!(
        check(r#"{"must": [{"key": "tag", "match": {"any": ["a", 2]}}]}"#, "filter.must[0].match.any[1]"),
        FilterErrorKind::WrongValue { field_type: FieldType::Keyword, found: "integer" }
    );
    assert_eq!(
        check(r#"{"must": [{"key": "tag", "match": {"prefix": "a"}}]}"#, "filter.must[0].match.prefix"),
        FilterErrorKind::UnknownOperator("prefix".into())
    );
    assert_eq!(check(r#"{"must_nt": []}"#, "filter.must_nt"), FilterErrorKind::UnknownOperator("must_nt".into()));
    assert_eq!(
        check(r#"{"must": [{"must": [{"is_empty": {"key": "zzz"}}]}]}"#, "filter.must[0].must[0].is_empty.key"),
        FilterErrorKind::UnknownField("zzz".into())
    );
    check(r#"{"must": [{"key": "price", "match": {"value": 1}}]}"#, "filter.must[0].match.value");
    check(r#"{"must": [{"key": "ok", "match": {"any": [true]}}]}"#, "filter.must[0].match.any");
    check(r#"{"must": [{"key": "body", "match": {"value": "x"}}]}"#, "filter.must[0].match.value");
    check(r#"{"must": [{"key": "year", "match": {"value": 1}, "range": {}}]}"#, "filter.must[0]");
    check(r#"{"must": [{"has_id": [1, -2]}]}"#, "filter.must[0].has_id[1]");
    check(r#"{"must": [{"geo_radius": {}}]}"#, "filter.must[0].geo_radius");
    check(r#"{"must": 3}"#, "filter.must");
    check(r#"[1, 2]"#, "filter");
    check("{", "filter");
}

#[test]
fn too_deep_filters_are_rejected() {
    let mut text = String::from("{}");
    for _ in 0..40 {
        text = format!(r#"{{"must": [{text}]}}"#);
    }
    let e = Filter::from_json(&text).unwrap_err();
    assert_eq!(e.kind, FilterErrorKind::TooDeep);
}

/// The cases of Qdrant's own condition-checker tests: `is_empty`, `is_null` and `except` on
/// missing, `null`, `[]`, `[null]` and multi-valued fields.
#[test]
fn qdrant_semantics_of_empty_null_and_except() {
    let docs = [
        json!({}),                       // 0: absent
        json!({"tag": null}),            // 1: null
        json!({"tag": []}),              // 2: empty array
        json!({"tag": [null]}),          // 3: array of nulls
        json!({"tag": "a"}),             // 4
        json!({"tag": ["a", "b"]}),      // 5
        json!({"tag": ["a", null]}),     // 6
        json!({"tag": ["c", "b", "c"]}), // 7
    ];
    let p = build(&docs).to_aligned();
    let view = p.view().unwrap();
    view.verify().unwrap();
    let rows = |f: &str| matching_three_ways(&view, &docs, &Filter::from_json(f).unwrap());
    assert_eq!(rows(r#"{"must": [{"is_empty": {"key": "tag"}}]}"#), vec![0, 1, 2]);
    assert_eq!(rows(r#"{"must": [{"is_null": {"key": "tag"}}]}"#), vec![1]);
    assert_eq!(rows(r#"{"must": [{"key": "tag", "match": {"except": ["a"]}}]}"#), vec![5, 7]);
    assert_eq!(rows(r#"{"must": [{"key": "tag", "match": {"except": []}}]}"#), vec![4, 5, 6, 7]);
    assert_eq!(rows(r#"{"must_not": [{"key": "tag", "match": {"any": ["a"]}}]}"#), vec![0, 1, 2, 3, 7]);
    assert_eq!(rows(r#"{"must": [{"key": "tag", "match": {"value": "b"}}]}"#), vec![5, 7]);
    assert_eq!(rows(r#"{"should": [{"key": "tag", "match": {"value": "zz"}}, {"has_id": [3]}]}"#), vec![3]);
    assert_eq!(rows(r#"{"should": []}"#), (0..8).collect::<Vec<_>>());
    assert_eq!(
        rows(
            r#"{"min_should": {"conditions": [{"key": "tag", "match": {"value": "a"}}, {"key": "tag", "match": {"value": "b"}}], "min_count": 2}}"#
        ),
        vec![5]
    );
}

#[test]
fn numeric_ranges_and_documents_round_trip() {
    let docs = [
        json!({"year": 1999, "price": 9.5, "ok": true}),
        json!({"year": [2001, 2020], "price": [10, 50.25]}),
        json!({"year": -5, "price": -1e300, "ok": [false, true]}),
        json!({"body": "full text here", "tag": "x"}),
        Value::Null,
    ];
    let sections = build(&docs);
    let p = sections.to_aligned();
    let view = p.view().unwrap();
    view.verify().unwrap();
    // Stored in canonical form: the float field's integer 10 comes back as 10.0.
    let canonical = json!({"year": [2001, 2020], "price": [10.0, 50.25]});
    assert_ne!(canonical.to_string(), docs[1].to_string());
    let expect_docs = [docs[0].clone(), canonical, docs[2].clone(), docs[3].clone(), json!({})];
    for (r, d) in expect_docs.iter().enumerate() {
        assert_eq!(&view.document(r as u32).unwrap(), d);
    }
    let rows = |f: &str| view.compile(&Filter::from_json(f).unwrap(), &|_| None).unwrap().matching_points().to_rows();
    assert_eq!(rows(r#"{"must": [{"key": "year", "range": {"gte": 2000, "lt": 2010}}]}"#), vec![1]);
    assert_eq!(rows(r#"{"must": [{"key": "year", "range": {"gt": 2020.5}}]}"#), Vec::<u32>::new());
    assert_eq!(rows(r#"{"must": [{"key": "year", "range": {"lte": 1999}}]}"#), vec![0, 2]);
    assert_eq!(rows(r#"{"must": [{"key": "price", "range": {"gt": 10, "lte": 50.25}}]}"#), vec![1]);
    assert_eq!(rows(r#"{"must": [{"key": "price", "range": {"lt": 0}}]}"#), vec![2]);
    assert_eq!(rows(r#"{"must": [{"key": "ok", "match": {"value": false}}]}"#), vec![2]);
    assert_eq!(rows(r#"{"must": [{"is_empty": {"key": "body"}}]}"#), vec![0, 1, 2, 4]);
    let year = view.field_by_name("year").unwrap();
    assert_eq!(year.values(1), vec![ScalarValue::Integer(2001), ScalarValue::Integer(2020)]);
    // Same input, same bytes.
    assert_eq!(build(&docs), sections);
}

#[test]
fn has_id_uses_the_callers_mapping() {
    let docs: Vec<Value> = (0..10).map(|i| json!({"year": i})).collect();
    let p = build(&docs).to_aligned();
    let view = p.view().unwrap();
    let f = Filter::from_json(r#"{"must": [{"has_id": [1003, 1007, 5, 99999]}]}"#).unwrap();
    let q = view.compile(&f, &|id| id.as_num()?.checked_sub(1000).and_then(|r| u32::try_from(r).ok())).unwrap();
    assert_eq!(q.matching_points().to_rows(), vec![3, 7]);
    assert_eq!(q.estimate_cardinality().expected, 2);
}

#[test]
fn the_three_column_modes() {
    let n = 10_000u32;
    // Few distinct values: value sets.
    let offsets: Vec<u32> = (0..=n).collect();
    let vals: Vec<u32> = (0..n).map(|i| i % 3).collect();
    assert_eq!(build_column(3, &offsets, &vals, &[], &[]).0.meta.mode, MODE_SETS);
    // Many values, rare multi rows: inline codes + rank.
    let mut offsets = vec![0u32];
    let mut vals = Vec::new();
    for i in 0..n {
        vals.push(i % 1000);
        if i % 100 == 0 {
            vals.push((i + 1) % 1000);
            vals.push((i + 7) % 1000);
        }
        offsets.push(vals.len() as u32);
    }
    let (col, post) = build_column(1000, &offsets, &vals, &[], &[]);
    assert_eq!(col.meta.mode, MODE_CODES);
    assert_eq!(col.meta.width, 16);
    let c = col.as_ref();
    assert_eq!(c.multi_codes_of(200).collect::<Vec<_>>(), vec![202, 203, 209]);
    assert_eq!(c.code(201), 203);
    assert_eq!(post.all_rows().len(), vals.len());
    // Many multi rows: direct offsets.
    let mut offsets = vec![0u32];
    let mut vals = Vec::new();
    for i in 0..n {
        vals.extend([i % 1000, (i * 7 + 3) % 1000]);
        offsets.push(vals.len() as u32);
    }
    let (col, _) = build_column(1000, &offsets, &vals, &[], &[]);
    assert_eq!(col.meta.mode, MODE_COUNTED);
    let c = col.as_ref();
    assert_eq!(c.multi_codes_of(1).collect::<Vec<_>>(), vec![3, 12]);
    assert!(c.any_code(1, |x| x == 12) && !c.any_code(1, |x| x == 4));
}

#[test]
fn block_coded_keyword_lists_of_several_blocks_match_row_by_row() {
    // 3,000 rows, 40 keyword values (mostly one each, some two): lists of ~75-150 rows and one
    // value ("hot") on every third row — whole bit-packed blocks and a varint tail — and a
    // 60-value `any` (a bitmap code set). The integer field stays plain.
    let docs: Vec<Value> = (0..3000u32)
        .map(|i| {
            let tag = format!("t{}", (i * 7919) % 40);
            match i % 3 {
                0 => json!({"tag": [tag, "hot"], "year": i % 500}),
                1 => json!({"tag": tag, "year": i % 500}),
                _ => json!({"year": i % 500}),
            }
        })
        .collect();
    let p = build(&docs).to_aligned();
    let view = p.view().unwrap();
    view.verify().unwrap();
    let tag = view.field(view.schema().field("tag").unwrap().0);
    assert!(!tag.postings.starts.is_empty(), "keyword lists are block-coded");
    let year = view.field(view.schema().field("year").unwrap().0);
    assert!(year.postings.starts.is_empty() && !year.postings.rows.is_empty(), "numeric lists stay plain");
    let many: Vec<String> = (0..60).map(|i| format!("t{i}")).collect();
    for f in [
        json!({"must": [{"key": "tag", "match": {"value": "hot"}}]}),
        json!({"must": [{"key": "tag", "match": {"any": many}}], "must_not": [{"key": "year", "range": {"lt": 100}}]}),
        json!({"must": [{"key": "tag", "match": {"except": ["hot", "t3"]}}]}),
        json!({"must_not": [{"key": "tag", "match": {"any": ["t1", "t2", "hot"]}}]}),
    ] {
        assert!(!matching_three_ways(&view, &docs, &Filter::from_value(&f).unwrap()).is_empty());
    }
}

#[test]
fn repeated_keywords_in_one_row_are_one_posting() {
    // 600 rows whose tag arrays repeat a value: the lists are block-coded (smaller) and each
    // row is listed once per value.
    let docs: Vec<Value> = (0..600u32).map(|i| json!({"tag": ["a", format!("v{}", i % 3), "a"]})).collect();
    let p = build(&docs).to_aligned();
    let view = p.view().unwrap();
    view.verify().unwrap();
    assert!(!view.field(view.schema().field("tag").unwrap().0).postings.starts.is_empty());
    let f = Filter::from_json(r#"{"must": [{"key": "tag", "match": {"value": "a"}}]}"#).unwrap();
    assert_eq!(matching_three_ways(&view, &docs, &f).len(), 600);
}

/// Rows of 0, 1, 2 and up to 40 values (past the 15 a counted slot holds), over 1000 values.
fn many_counts(n: u32) -> (Vec<u32>, Vec<u32>) {
    let mut offsets = vec![0u32];
    let mut vals = Vec::new();
    for i in 0..n {
        let count = [0, 1, 2, 3, 14, 15, 16, 40][i as usize % 8];
        vals.extend((0..count).map(|j| (i * 13 + j * 17) % 1000));
        offsets.push(vals.len() as u32);
    }
    (offsets, vals)
}

#[test]
fn counted_and_legacy_direct_columns_read_the_same() {
    use shoal_payload::column::{COUNT_BITS, DIRECT_TAG, MODE_DIRECT};
    let n = 2000u32;
    let (offsets, vals) = many_counts(n);
    let (col, _) = build_column(1000, &offsets, &vals, &[], &[]);
    assert_eq!(col.meta.mode, MODE_COUNTED);
    // The same column as an older writer stored it: slot `2^31 + start`.
    let mut legacy = col.clone();
    legacy.meta.mode = MODE_DIRECT;
    for word in legacy.slots.iter_mut() {
        for half in 0..2 {
            let s = (*word >> (32 * half)) as u32;
            if s & DIRECT_TAG != 0 {
                let start = (s & !DIRECT_TAG) >> COUNT_BITS;
                *word = *word & !(0xFFFF_FFFFu64 << (32 * half)) | ((DIRECT_TAG | start) as u64) << (32 * half);
            }
        }
    }
    assert_ne!(legacy.slots, col.slots);
    for c in [col.as_ref(), legacy.as_ref()] {
        for r in 0..n {
            let mut want: Vec<u32> =
                vals[offsets[r as usize] as usize..offsets[r as usize + 1] as usize].iter().map(|v| v + 2).collect();
            want.sort_unstable();
            want.dedup();
            if want.len() > 1 {
                assert_eq!(c.multi_codes_of(r).collect::<Vec<_>>(), want, "row {r}");
            } else {
                assert_eq!(c.code(r), want.first().copied().unwrap_or(0), "row {r}");
                assert_eq!(c.multi_codes_of(r).count(), 0, "row {r}");
            }
            assert_eq!(c.value_count(r), want.len(), "row {r}");
            let mut seen = Vec::new();
            assert!(!c.any_code(r, |y| {
                seen.push(y);
                false
            }));
            assert_eq!(seen, want, "row {r}");
            if let Some(&last) = want.last() {
                assert!(c.any_code(r, |y| y == last), "row {r}");
            }
        }
    }
}

#[test]
fn a_wrong_count_in_a_counted_slot_is_a_verify_error() {
    let n = 400u32;
    let (offsets, vals) = many_counts(n);
    let docs: Vec<Value> =
        (0..n as usize).map(|r| json!({"year": vals[offsets[r] as usize..offsets[r + 1] as usize]})).collect();
    let sections = build(&docs);
    let p = sections.to_aligned();
    let view = p.view().unwrap();
    let year = view.schema().field("year").unwrap().0;
    assert_eq!(view.field(year).column.meta.mode, MODE_COUNTED);
    view.verify().unwrap();
    // Row 3 holds 3 values: its slot is the first with count 3; make it say 2.
    let slot = view.field(year).column.code(3);
    assert_eq!(slot & 15, 3);
    let mut parts: Vec<Vec<u8>> = sections.by_kind().iter().map(|(_, b)| b.to_vec()).collect();
    let at = parts[1].windows(4).position(|w| w == slot.to_le_bytes()).unwrap();
    parts[1][at..at + 4].copy_from_slice(&(slot - 1).to_le_bytes());
    let aligned: Vec<shoal_format::AlignedBytes> =
        parts.iter().map(|b| shoal_format::AlignedBytes::from_slice(b)).collect();
    let bytes = shoal_payload::PayloadSectionBytes {
        fields: aligned[0].as_slice(),
        columns: aligned[1].as_slice(),
        dicts: aligned[2].as_slice(),
        postings: aligned[3].as_slice(),
        docs: aligned[4].as_slice(),
    };
    let err = shoal_payload::PayloadView::open(bytes).unwrap().verify().unwrap_err();
    assert!(format!("{err}").contains("count is wrong"), "{err}");
}
