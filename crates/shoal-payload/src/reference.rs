//! The reference evaluator: a filter checked directly against a point's JSON payload, with
//! no columns, dictionaries or indexes. Slow and obviously right; the property tests compare
//! [`crate::CompiledFilter`] with it.

use alloc::vec::Vec;

use serde_json::Value;
use shoal_format::PointId;

use crate::filter::{Condition, FieldCheck, Filter, Literal};
use crate::values::json_integer;

/// Whether the point with payload `doc` (an object, or `null`) and external id `id` passes
/// `filter`. The filter must have been validated against the payload's schema.
///
/// ```
/// use shoal_payload::{Filter, PointId, reference};
/// let f = Filter::from_json(r#"{"must_not": [{"key": "tag", "match": {"any": ["x"]}}]}"#).unwrap();
/// assert!(reference::matches(&f, &serde_json::json!({"tag": ["a", "b"]}), PointId::Num(1)));
/// assert!(!reference::matches(&f, &serde_json::json!({"tag": ["a", "x"]}), PointId::Num(1)));
/// ```
pub fn matches(filter: &Filter, doc: &Value, id: PointId) -> bool {
    matches_in(filter, doc, id, false)
}

/// [`matches`] in either payload mode: `nested` resolves every key as a JSON path
/// ([`crate::path`]) and evaluates `nested` conditions (`docs/format.md`, "Nested payloads");
/// flat (`false`) reads keys as top-level field names. On a top-level key both agree.
pub fn matches_in(filter: &Filter, doc: &Value, id: PointId, nested: bool) -> bool {
    matches_by(filter, doc, &|ids| ids.contains(&id), nested)
}

/// [`matches_in`] with `has_id` answered by `has_id` (given a condition's ids).
pub(crate) fn matches_by(filter: &Filter, doc: &Value, has_id: &dyn Fn(&[PointId]) -> bool, nested: bool) -> bool {
    let holds = |c: &Condition| condition(c, doc, has_id, nested);
    filter.must.iter().all(holds)
        && (filter.should.is_empty() || filter.should.iter().any(holds))
        && !filter.must_not.iter().any(holds)
        && filter.min_should.as_ref().is_none_or(|m| m.conditions.iter().filter(|c| holds(c)).count() >= m.min_count)
}

/// The values a key reaches: the top-level field (flat), or every value of the path (nested).
fn reached<'d>(doc: &'d Value, key: &str, nested: bool) -> Vec<&'d Value> {
    if nested {
        crate::path::parse(key).map_or_else(Vec::new, |steps| crate::path::resolve(doc, &steps))
    } else {
        doc.as_object().and_then(|o| o.get(key)).into_iter().collect()
    }
}

/// The non-null scalars of the reached values: each value itself, or an array's elements
/// (one level).
fn scalars<'d>(reached: &[&'d Value]) -> impl Iterator<Item = &'d Value> {
    reached
        .iter()
        .flat_map(|&v| match v {
            Value::Array(a) => a.as_slice(),
            x => core::slice::from_ref(x),
        })
        .filter(|x| !x.is_null())
}

fn literal_eq(l: &Literal, v: &Value) -> bool {
    match (l, v) {
        (Literal::Keyword(s), Value::String(t)) => s == t,
        (Literal::Bool(b), Value::Bool(c)) => b == c,
        (Literal::Integer(i), Value::Number(n)) => json_integer(n) == Some(*i),
        _ => false,
    }
}

fn condition(c: &Condition, doc: &Value, has_id: &dyn Fn(&[PointId]) -> bool, nested: bool) -> bool {
    match c {
        Condition::Filter(f) => matches_by(f, doc, has_id, nested),
        Condition::HasId(ids) => has_id(ids),
        // Some reached value is null.
        Condition::IsNull(k) => reached(doc, k, nested).iter().any(|v| v.is_null()),
        // Every reached value is null or [] (true when none is reached).
        Condition::IsEmpty(k) => {
            reached(doc, k, nested).iter().all(|v| v.is_null() || v.as_array().is_some_and(|a| a.is_empty()))
        }
        Condition::Field { key, check } => {
            let reached = reached(doc, key, nested);
            let mut vals = scalars(&reached);
            match check {
                FieldCheck::Value(l) => vals.any(|v| literal_eq(l, v)),
                FieldCheck::Any(list) => vals.any(|v| list.iter().any(|l| literal_eq(l, v))),
                FieldCheck::Except(list) => vals.any(|v| !list.iter().any(|l| literal_eq(l, v))),
                // Integers compare as `i64 as f64`, like the columns.
                FieldCheck::Range(r) => vals.any(|v| v.as_f64().is_some_and(|x| r.contains(x))),
            }
        }
        // Some element of the array(s) at `key[]` passes the whole filter, its keys resolved
        // inside that element (flat payloads have no `nested`: validation refuses it).
        Condition::Nested { key, filter } => {
            let key = key.strip_suffix("[]").unwrap_or(key);
            let Some(mut steps) = crate::path::parse(key).filter(|_| nested) else { return false };
            steps.push(crate::path::Step::All);
            crate::path::resolve(doc, &steps).into_iter().any(|e| matches_by(filter, e, has_id, true))
        }
    }
}
