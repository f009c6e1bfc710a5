//! Nested payloads (`docs/format.md`, "Nested payloads"): Qdrant's own filtering examples —
//! paths into objects and arrays, `is_empty` over paths, and the `nested` condition against
//! the same conditions without it — through the reference evaluator and through a segment's
//! payload sections (documents only); validation of paths and modes.

use serde_json::{Value, json};
use shoal_payload::{Filter, FilterErrorKind, PayloadBuilder, PointId, Schema, reference};

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

/// The rows passing `filter`, by the reference evaluator and by the sealed sections (which
/// must agree).
fn rows(docs: &[Value], filter: Value) -> Vec<u32> {
    let schema = Schema::nested::<&str>(&[]).unwrap();
    let f = Filter::from_value(&filter).unwrap();
    f.validate(&schema).unwrap();
    let want: Vec<u32> = (0..docs.len() as u32)
        .filter(|&r| reference::matches_in(&f, &docs[r as usize], PointId::Num(u64::from(r)), true))
        .collect();
    let mut b = PayloadBuilder::new(schema.clone());
    for d in docs {
        b.push(d).unwrap();
    }
    let sections = b.finish().to_aligned();
    let view = sections.view().unwrap();
    let compiled = view.compile_for(&f, &schema, &|id| id.as_num().map(|n| n as u32)).unwrap();
    assert_eq!(compiled.matching_points().to_rows(), want, "{filter}");
    assert_eq!((0..docs.len() as u32).filter(|&r| compiled.matches(r)).collect::<Vec<_>>(), want, "{filter}");
    // The documents come back as they went in (no payload as `{}`).
    for (r, d) in docs.iter().enumerate() {
        let want = if d.is_null() { json!({}) } else { d.clone() };
        assert_eq!(view.document(r as u32).unwrap(), want);
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
