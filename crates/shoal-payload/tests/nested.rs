//! Nested payloads (`docs/format.md`, "Nested payloads"): Qdrant's own filtering examples —
//! paths into objects and arrays, `is_empty` over paths, and the `nested` condition against
//! the same conditions without it — through the reference evaluator and through a segment's
//! payload sections, with no path declared (documents) and with paths declared as columns of
//! every type (strays answered from documents); random documents, paths and filters; `verify`
//! against documents; validation of paths and modes.

use serde_json::{Value, json};
use shoal_payload::{Condition, FieldType, Filter, FilterErrorKind, PayloadBuilder, PointId, Schema, reference};

/// Qdrant's filtering documentation: countries with cities.
fn countries() -> Vec<Value> {
    vec![
        json!({"country": {"name": "Germany", "cities": [
            {"name": "Berlin", "population": 3.7, "sightseeing": ["Brandenburg Gate", "Reichstag"]},
            {"name": "Munich", "population": 1.5, "sightseeing": ["Marienplatz", "Olympiapark"]}]}}),
        json!({"country": {"name": "Japan", "cities": [
            {"name": "Tokyo", "population": 9.3, "sightseeing": ["Tokyo Tower", "Tokyo Skytree"]},
            {"name": "Osaka", "population": 2.7, "sightseeing": ["Osaka Castle", "Universal Studios Japan"]}]}}),
        json!({"country": {"name": "Japan", "cities": []}}),
        json!({"country": {"name": "Japan", "cities": null}}),
        json!({"country": {"name": "Japan"}}),
        Value::Null,
    ]
}

/// Qdrant's `nested` example: dinosaurs and what they like to eat.
fn dinosaurs() -> Vec<Value> {
    vec![
        json!({"dinosaur": "t-rex", "diet": [{"food": "leaves", "likes": false}, {"food": "meat", "likes": true}]}),
        json!({"dinosaur": "diplodocus", "diet": [{"food": "leaves", "likes": true}, {"food": "meat", "likes": false}]}),
    ]
}

/// The keys of `f`'s conditions (inside `nested` too, which resolve them within elements).
fn keys(f: &Filter, out: &mut Vec<String>) {
    let lists = [&f.must, &f.should, &f.must_not];
    for c in lists.into_iter().flatten().chain(f.min_should.iter().flat_map(|m| &m.conditions)) {
        match c {
            Condition::Filter(inner) | Condition::Nested { filter: inner, .. } => keys(inner, out),
            Condition::IsEmpty(k) | Condition::IsNull(k) | Condition::Field { key: k, .. } => out.push(k.clone()),
            Condition::HasId(_) => {}
        }
    }
}

/// `docs` in payload sections with `paths` declared; for each filter, `matching_points` and
/// the rows `matches` takes (row `r` has id `r`).
fn section_rows(docs: &[Value], filters: &[Filter], paths: &[(&str, FieldType)]) -> Vec<(Vec<u32>, Vec<u32>)> {
    let schema = Schema::nested(paths).unwrap();
    let mut b = PayloadBuilder::new(schema.clone());
    for d in docs {
        b.push(d).unwrap();
    }
    let sections = b.finish().to_aligned();
    let view = sections.view().unwrap();
    view.verify().unwrap();
    assert_eq!(view.schema(), &schema);
    // The documents come back as they went in (no payload as `{}`), numbers in one form.
    for (r, d) in docs.iter().enumerate() {
        let mut want = if d.is_null() { json!({}) } else { d.clone() };
        shoal_payload::canonicalize(&schema, &mut want);
        assert_eq!(view.document(r as u32).unwrap(), want);
    }
    let row_of = |id: PointId| id.as_num().map(|n| n as u32);
    filters
        .iter()
        .map(|f| {
            let compiled = view.compile_for(f, &schema, &row_of).unwrap();
            let by_row = (0..docs.len() as u32).filter(|&r| compiled.matches(r)).collect();
            let c = compiled.estimate_cardinality();
            let all = compiled.matching_points().to_rows();
            assert!(c.min <= all.len() as u64 && all.len() as u64 <= c.max, "{c:?} for {}", all.len());
            (all, by_row)
        })
        .collect()
}

/// The rows of `docs` (row `r` has id `r`) passing `f` by the reference evaluator.
fn reference_rows(docs: &[Value], f: &Filter) -> Vec<u32> {
    (0..docs.len() as u32)
        .filter(|&r| reference::matches_in(f, &docs[r as usize], PointId::Num(u64::from(r)), true))
        .collect()
}

/// The rows passing `filter`, by the reference evaluator and by sealed sections — with no
/// path declared (documents alone), and with every key of the filter declared as each type
/// (columns, their strays answered from the documents) — which must all agree.
fn rows(docs: &[Value], filter: Value) -> Vec<u32> {
    let schema = Schema::nested::<&str>(&[]).unwrap();
    let f = Filter::from_value(&filter).unwrap();
    f.validate(&schema).unwrap();
    let want = reference_rows(docs, &f);
    let mut declared = Vec::new();
    keys(&f, &mut declared);
    declared.retain(|k| Schema::nested(&[(k.as_str(), FieldType::Keyword)]).is_ok());
    declared.sort();
    declared.dedup();
    let f = [f];
    assert_eq!(section_rows(docs, &f, &[]), [(want.clone(), want.clone())], "{filter}");
    for ty in [FieldType::Keyword, FieldType::Integer, FieldType::Float, FieldType::Bool] {
        let paths: Vec<(&str, FieldType)> = declared.iter().map(|k| (k.as_str(), ty)).collect();
        assert_eq!(section_rows(docs, &f, &paths), [(want.clone(), want.clone())], "{filter} with {ty:?} columns");
    }
    want
}

#[test]
fn paths_into_objects_and_arrays() {
    let docs = countries();
    let m = |key: &str, v: Value| json!({"must": [{"key": key, "match": {"value": v}}]});
    assert_eq!(rows(&docs, m("country.name", json!("Germany"))), [0]);
    assert_eq!(rows(&docs, m("country.cities[].name", json!("Osaka"))), [1]);
    assert_eq!(rows(&docs, m("country.cities[].sightseeing", json!("Osaka Castle"))), [1]);
    // No implicit step into an array.
    assert!(rows(&docs, m("country.cities.name", json!("Osaka"))).is_empty());
    assert_eq!(rows(&docs, m("country.cities[1].name", json!("Munich"))), [0]);
    let range = json!({"must": [{"key": "country.cities[].population", "range": {"gte": 9.0}}]});
    assert_eq!(rows(&docs, range), [1]);
    // is_empty: every reached value null or [] (or none reached); is_null: some reached null.
    assert_eq!(rows(&docs, json!({"must": [{"is_empty": {"key": "country.cities"}}]})), [2, 3, 4, 5]);
    assert_eq!(rows(&docs, json!({"must": [{"is_null": {"key": "country.cities"}}]})), [3]);
    assert_eq!(rows(&docs, json!({"must_not": [{"is_empty": {"key": "country.cities[].name"}}]})), [0, 1]);
    // has_id beside path conditions.
    let either = json!({"should": [{"has_id": [4]}, {"key": "country.name", "match": {"value": "Germany"}}]});
    assert_eq!(rows(&docs, either), [0, 4]);
}

#[test]
fn nested_checks_one_array_element_at_a_time() {
    let docs = dinosaurs();
    let conditions = json!([{"key": "food", "match": {"value": "meat"}}, {"key": "likes", "match": {"value": true}}]);
    // Without `nested`, each condition may hold on a different element: both dinosaurs.
    let flat = json!({"must": [{"key": "diet[].food", "match": {"value": "meat"}},
                               {"key": "diet[].likes", "match": {"value": true}}]});
    assert_eq!(rows(&docs, flat), [0, 1]);
    // With it, one element must satisfy the whole filter: only the t-rex likes meat.
    for key in ["diet", "diet[]"] {
        assert_eq!(rows(&docs, json!({"must": [{"nested": {"key": key, "filter": {"must": conditions}}}]})), [0]);
    }
    let none = json!({"must": [{"nested": {"key": "diet", "filter": {"must_not": [{"key": "likes", "match": {"value": true}}]}}}]});
    assert_eq!(rows(&docs, none), [0, 1]);
    // A nested condition inside a nested condition.
    let deep = vec![json!({"a": [{"b": [{"c": 1}, {"c": 2}]}, {"b": [{"c": 3}]}]}), json!({"a": [{"b": [{"c": 4}]}]})];
    let inner = json!({"must": [{"nested": {"key": "b", "filter": {"must": [{"key": "c", "range": {"gt": 2}}]}}}]});
    assert_eq!(rows(&deep, json!({"must": [{"nested": {"key": "a", "filter": inner}}]})), [0, 1]);
}

#[test]
fn modes_and_paths_are_validated() {
    let flat = Schema::from_json(r#"{"a": "keyword"}"#).unwrap();
    let nested = Schema::nested::<&str>(&[]).unwrap();
    let kind = |f: Value, s: &Schema| Filter::from_value(&f).unwrap().validate(s).unwrap_err().kind;
    let nest = json!({"must": [{"nested": {"key": "a", "filter": {"must": [{"key": "b", "match": {"value": 1}}]}}}]});
    assert_eq!(kind(nest, &flat), FilterErrorKind::NestedOnly);
    assert!(matches!(
        kind(json!({"must": [{"key": "a..b", "match": {"value": 1}}]}), &nested),
        FilterErrorKind::BadPath(_)
    ));
    let id_inside = json!({"must": [{"nested": {"key": "a", "filter": {"must": [{"has_id": [1]}]}}}]});
    assert!(matches!(kind(id_inside, &nested), FilterErrorKind::BadPath(_)));
    // Any key and any value type is a valid condition in nested mode (no schema to check).
    let any = json!({"must": [{"key": "metadata.topic", "match": {"value": 3}}, {"key": "x", "range": {"lt": 1}}]});
    Filter::from_value(&any).unwrap().validate(&nested).unwrap();
    // Declared paths: keys and [], no [n], no text.
    assert!(Schema::nested(&[("metadata.topic", shoal_payload::FieldType::Keyword)]).is_ok());
    assert!(Schema::nested(&[("tags[].name", shoal_payload::FieldType::Keyword)]).is_ok());
    assert!(Schema::nested(&[("tags[0]", shoal_payload::FieldType::Keyword)]).is_err());
    assert!(Schema::nested(&[("body", shoal_payload::FieldType::Text)]).is_err());
    // Nested mode takes any object (and null), nothing else.
    let mut b = PayloadBuilder::new(nested);
    b.push(&json!({"page_content": "x", "metadata": {"topic": ["a", {"deep": [1, null]}]}})).unwrap();
    b.push(&Value::Null).unwrap();
    assert!(b.push(&json!([1])).is_err());
    assert!(!Schema::nested::<&str>(&[]).unwrap().is_empty());
}

/// Random nested documents, declared paths and filters: columns (with their strays) give the
/// reference evaluator's answers.
mod random {
    use super::*;
    use proptest::prelude::*;

    const KEYS: [&str; 3] = ["a", "b", "c"];
    /// Paths the filters use; most may be declared.
    const PATHS: [&str; 10] = ["a", "b", "c", "a.b", "a.c", "a[].b", "b[].a", "c.a.b", "a[]", "b[].c[]"];
    const TYPES: [FieldType; 4] = [FieldType::Keyword, FieldType::Integer, FieldType::Float, FieldType::Bool];

    /// A scalar; `wide` adds 40 keywords and 80 integers, so that columns of larger
    /// segments leave the small-dictionary (value set) mode.
    fn scalar(wide: bool) -> BoxedStrategy<Value> {
        let narrow = prop_oneof![
            Just(json!("x")),
            Just(json!("y")),
            Just(json!("")),
            (-3i64..3).prop_map(|x| json!(x)),
            Just(json!(2.5)),
            Just(json!(-0.0)),
            Just(json!(1e20)),
            Just(json!(9_007_199_254_740_993u64)),
            Just(json!(9_007_199_254_740_992u64)),
            Just(json!(u64::MAX)),
            any::<bool>().prop_map(|b| json!(b)),
            Just(Value::Null),
            Just(json!(i64::MIN)),
            Just(json!(i64::MAX)),
        ];
        if !wide {
            return narrow.boxed();
        }
        prop_oneof![
            2 => narrow,
            1 => (0u32..40).prop_map(|i| json!(format!("k{i:02}"))),
            1 => (-40i64..40).prop_map(|x| json!(x)),
        ]
        .boxed()
    }

    fn value(wide: bool) -> BoxedStrategy<Value> {
        scalar(wide)
            .prop_recursive(3, 24, 4, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    proptest::collection::vec((0..3usize, inner), 0..3).prop_map(|kv| {
                        Value::Object(kv.into_iter().map(|(k, v)| (KEYS[k].to_string(), v)).collect())
                    }),
                ]
            })
            .boxed()
    }

    fn doc(wide: bool) -> BoxedStrategy<Value> {
        prop_oneof![
            1 => Just(Value::Null),
            8 => proptest::collection::vec((0..3usize, value(wide)), 0..4).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (KEYS[k].to_string(), v)).collect())
            }),
        ]
        .boxed()
    }

    fn literal() -> BoxedStrategy<Value> {
        prop_oneof![
            Just(json!("x")),
            Just(json!("y")),
            (-3i64..3).prop_map(|x| json!(x)),
            Just(json!(9_007_199_254_740_993u64)),
            Just(json!(9_007_199_254_740_992u64)),
            Just(json!(i64::MIN)),
            Just(json!(i64::MAX)),
            Just(json!("k07")),
            (-40i64..40).prop_map(|x| json!(x)),
            any::<bool>().prop_map(|b| json!(b)),
        ]
        .boxed()
    }

    fn condition(keys: &'static [&'static str]) -> BoxedStrategy<Value> {
        let key = proptest::sample::select(keys);
        prop_oneof![
            (key.clone(), literal()).prop_map(|(k, l)| json!({"key": k, "match": {"value": l}})),
            (key.clone(), proptest::collection::vec(literal(), 1..3))
                .prop_map(|(k, l)| json!({"key": k, "match": {"any": l}})),
            (key.clone(), proptest::collection::vec(literal(), 1..3))
                .prop_map(|(k, l)| json!({"key": k, "match": {"except": l}})),
            (key.clone(), -6i32..6, 0i32..6).prop_map(|(k, lo, w)| {
                json!({"key": k, "range": {"gte": f64::from(lo) / 2.0, "lt": f64::from(lo + w) / 2.0}})
            }),
            key.clone().prop_map(|k| json!({"is_null": {"key": k}})),
            key.prop_map(|k| json!({"is_empty": {"key": k}})),
        ]
        .boxed()
    }

    fn filter() -> BoxedStrategy<Value> {
        let leaf = prop_oneof![
            6 => condition(&PATHS),
            1 => proptest::collection::vec(0u64..12, 1..3).prop_map(|ids| json!({"has_id": ids})),
            1 => (proptest::sample::select(&PATHS[..]), condition(&KEYS))
                .prop_map(|(k, c)| json!({"nested": {"key": k, "filter": {"must": [c]}}})),
        ];
        let list = proptest::collection::vec(leaf, 0..3);
        (list.clone(), list.clone(), list.clone(), proptest::option::of((list, 0usize..3)))
            .prop_map(|(must, should, must_not, min)| {
                let mut f = json!({"must": must, "should": should, "must_not": must_not});
                if let Some((conditions, min_count)) = min {
                    f["min_should"] = json!({"conditions": conditions, "min_count": min_count});
                }
                f
            })
            .boxed()
    }

    /// One condition of each kind on `key`, with literals of every type.
    fn single_conditions(key: &str) -> Vec<Value> {
        let m = |check: Value| json!({"must": [{"key": key, "match": check}]});
        let mut out = vec![
            json!({"must": [{"is_null": {"key": key}}]}),
            json!({"must": [{"is_empty": {"key": key}}]}),
            m(json!({"any": ["x", 1, true]})),
            m(json!({"except": ["x"]})),
            m(json!({"except": [0, false]})),
            json!({"must": [{"key": key, "range": {"gte": 0, "lt": 1.5}}]}),
            json!({"must": [{"key": key, "range": {"gt": -1e30}}]}),
        ];
        for l in [json!("x"), json!(""), json!(0), json!(-1), json!(true), json!(9_007_199_254_740_993u64)] {
            out.push(m(json!({"value": l})));
        }
        out
    }

    /// `docs` with `declared` paths: every filter (the random one, then one condition of each
    /// kind on every path) gives the reference evaluator's rows.
    fn check(docs: &[Value], declared: &[Option<usize>], filter: Value) -> Result<(), TestCaseError> {
        let mut filters = vec![filter];
        filters.extend(PATHS.iter().flat_map(|p| single_conditions(p)));
        let parsed: Vec<Filter> = filters.iter().map(|f| Filter::from_value(f).unwrap()).collect();
        for f in &parsed {
            f.validate(&Schema::nested::<&str>(&[]).unwrap()).unwrap();
        }
        let paths: Vec<(&str, FieldType)> =
            PATHS.iter().zip(declared).filter_map(|(p, t)| Some((*p, TYPES[(*t)?]))).collect();
        let got = section_rows(docs, &parsed, &paths);
        for ((f, json), (all, by_row)) in parsed.iter().zip(&filters).zip(&got) {
            let want = reference_rows(docs, f);
            prop_assert_eq!(all, &want, "{} with {:?}", json, paths);
            prop_assert_eq!(by_row, &want, "{} with {:?}", json, paths);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn columns_by_path_answer_as_the_documents(
            docs in proptest::collection::vec(doc(false), 1..12),
            declared in proptest::collection::vec(proptest::option::weighted(0.8, 0..4usize), PATHS.len()),
            filter in filter(),
        ) {
            check(&docs, &declared, filter)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Hundreds of rows over larger dictionaries: every column mode, and selective
        /// conditions taking the narrowing path of `matching_points`.
        #[test]
        fn columns_of_larger_segments_answer_as_the_documents(
            docs in proptest::collection::vec(doc(true), 100..400),
            declared in proptest::collection::vec(proptest::option::weighted(0.8, 0..4usize), PATHS.len()),
            filter in filter(),
        ) {
            check(&docs, &declared, filter)?;
        }
    }
}
/// `verify` re-derives every path's column from the documents: documents that no longer say
/// what the columns say (here, another segment's, of the same length) are `Malformed`, though
/// each section on its own is well formed.
#[test]
fn verify_finds_columns_that_disagree_with_the_documents() {
    let schema = Schema::nested(&[("a", FieldType::Keyword), ("b[].c", FieldType::Integer)]).unwrap();
    let sections = |docs: &[Value]| {
        let mut b = PayloadBuilder::new(schema.clone());
        docs.iter().for_each(|d| _ = b.push(d).unwrap());
        b.finish()
    };
    let one = sections(&[json!({"a": "x", "b": [{"c": 1}]}), json!({"a": 7, "b": [{"c": 2}]})]);
    let other = sections(&[json!({"a": 7, "b": [{"c": 1}]}), json!({"a": "x", "b": [{"c": 2}]})]);
    for s in [&one, &other] {
        s.to_aligned().view().unwrap().verify().unwrap();
    }
    let mixed = shoal_payload::PayloadSections { docs: other.docs.clone(), ..one.clone() }.to_aligned();
    let view = mixed.view().unwrap();
    assert!(matches!(view.verify(), Err(shoal_payload::LayoutError::Malformed { .. })));
}
