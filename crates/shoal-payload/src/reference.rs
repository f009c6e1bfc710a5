//! The reference evaluator: a filter checked directly against a point's JSON payload, with
//! no columns, dictionaries or indexes. Slow and obviously right; the property tests compare
//! [`crate::CompiledFilter`] with it.

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
    let all = |cs: &[Condition]| cs.iter().all(|c| condition(c, doc, id));
    all(&filter.must)
        && (filter.should.is_empty() || filter.should.iter().any(|c| condition(c, doc, id)))
        && !filter.must_not.iter().any(|c| condition(c, doc, id))
        && filter
            .min_should
            .as_ref()
            .is_none_or(|m| m.conditions.iter().filter(|c| condition(c, doc, id)).count() >= m.min_count)
}

fn field<'d>(doc: &'d Value, key: &str) -> Option<&'d Value> {
    doc.as_object()?.get(key)
}

/// The non-null scalars of a field: the value itself, or an array's elements.
fn scalars<'d>(v: Option<&'d Value>) -> impl Iterator<Item = &'d Value> {
    let items: &'d [Value] = match v {
        None | Some(Value::Null) => &[],
        Some(Value::Array(a)) => a,
        Some(x) => core::slice::from_ref(x),
    };
    items.iter().filter(|x| !x.is_null())
}

fn literal_eq(l: &Literal, v: &Value) -> bool {
    match (l, v) {
        (Literal::Keyword(s), Value::String(t)) => s == t,
        (Literal::Bool(b), Value::Bool(c)) => b == c,
        (Literal::Integer(i), Value::Number(n)) => json_integer(n) == Some(*i),
        _ => false,
    }
}

fn condition(c: &Condition, doc: &Value, id: PointId) -> bool {
    match c {
        Condition::Filter(f) => matches(f, doc, id),
        Condition::HasId(ids) => ids.contains(&id),
        Condition::IsNull(k) => matches!(field(doc, k), Some(Value::Null)),
        Condition::IsEmpty(k) => match field(doc, k) {
            None | Some(Value::Null) => true,
            Some(Value::Array(a)) => a.is_empty(),
            Some(_) => false,
        },
        Condition::Field { key, check } => {
            let mut vals = scalars(field(doc, key));
            match check {
                FieldCheck::Value(l) => vals.any(|v| literal_eq(l, v)),
                FieldCheck::Any(list) => vals.any(|v| list.iter().any(|l| literal_eq(l, v))),
                FieldCheck::Except(list) => vals.any(|v| !list.iter().any(|l| literal_eq(l, v))),
                // Integers compare as `i64 as f64`, like the columns.
                FieldCheck::Range(r) => vals.any(|v| v.as_f64().is_some_and(|x| r.contains(x))),
            }
        }
    }
}
