//! Payload ingestion (JSON object → typed values per field) and the order keys of
//! `docs/format.md`.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::Value;

use crate::error::{PayloadError, PayloadErrorKind};
use crate::schema::{FieldType, Schema};

/// One typed value of a payload field.
#[derive(Clone, Debug, PartialEq)]
pub enum ScalarValue {
    /// A keyword.
    Keyword(String),
    /// An integer.
    Integer(i64),
    /// A float (never NaN; `-0.0` is stored as `+0.0`).
    Float(f64),
    /// A bool.
    Bool(bool),
    /// A full-text string.
    Text(String),
}

/// What one point holds in one field.
///
/// The distinctions follow Qdrant: `is_empty` is true for [`Absent`](Self::Absent),
/// [`Null`](Self::Null) and [`EmptyArray`](Self::EmptyArray); `is_null` only for
/// [`Null`](Self::Null). `null` elements inside an array are ignored, except that an array of
/// only `null`s is [`NullsOnly`](Self::NullsOnly): not empty, not null, no value.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValues {
    /// The key is not in the object.
    Absent,
    /// The value is `null`.
    Null,
    /// The value is `[]`.
    EmptyArray,
    /// A non-empty array whose elements are all `null`.
    NullsOnly,
    /// One value, or an array with at least one non-null element (the non-null elements, in
    /// input order).
    Values(Vec<ScalarValue>),
    /// Nested payloads: the path reaches something its column cannot hold — a value of
    /// another type, an object, an array inside an array, or `null` beside values — so the
    /// row's conditions on it are answered from its document (`docs/format.md`, "Nested
    /// payloads").
    Stray,
}

/// The JSON type name of a value, for error messages.
pub fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Rewrites the numbers of `doc`'s typed fields in one canonical form, so the same payload
/// stores the same bytes whichever language wrote it (JavaScript writes `2.0` as `2`): values
/// of `float` fields become `f64` numbers, integral values of `integer` fields `i64` numbers.
/// Other values are left alone (validation is [`parse_payload`]'s business). In a nested
/// schema every number at any depth takes JavaScript's form: an integral float of magnitude at
/// most 2^53 becomes that integer.
///
/// ```
/// let schema = shoal_payload::Schema::from_json(r#"{"price": "float", "n": "integer"}"#).unwrap();
/// let mut doc = serde_json::json!({"price": [0, 2.5], "n": 3.0, "other": 1});
/// shoal_payload::canonicalize(&schema, &mut doc);
/// assert_eq!(doc.to_string(), r#"{"n":3,"other":1,"price":[0.0,2.5]}"#);
/// ```
pub fn canonicalize(schema: &Schema, doc: &mut Value) {
    if schema.is_nested() {
        integral_numbers(doc);
        return;
    }
    let Some(obj) = doc.as_object_mut() else { return };
    for (name, v) in obj.iter_mut() {
        let fix: fn(&serde_json::Number) -> Option<Value> = match schema.field(name) {
            Some((_, FieldType::Float)) => {
                |n| n.as_f64().and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
            }
            Some((_, FieldType::Integer)) => |n| json_integer(n).map(Value::from),
            _ => continue,
        };
        let items: &mut [Value] = match v {
            Value::Array(a) => a,
            x => core::slice::from_mut(x),
        };
        for x in items {
            if let Value::Number(n) = x
                && let Some(c) = fix(n)
            {
                *x = c;
            }
        }
    }
}

/// Nested documents' one form of a number, whatever language wrote it: a float with an
/// integral value of magnitude at most 2^53 is written as that integer (`3.0` → `3`, `-0.0` →
/// `0`), as JavaScript, which has no other form, writes it. Walks every level.
fn integral_numbers(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            const LIMIT: f64 = 9_007_199_254_740_992.0;
            // (`no_std`: no `fract`; `as i64` is exact on integral values within ±2^53.)
            if let Some(x) = n.as_f64().filter(|&x| (-LIMIT..=LIMIT).contains(&x) && (x as i64) as f64 == x) {
                *v = Value::from(x as i64);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(integral_numbers),
        Value::Object(o) => o.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

/// The `i64` a JSON number denotes, if it is integral and in range (`3` and `3.0` are 3;
/// `3.5` and `2^63` are not integers).
pub fn json_integer(n: &serde_json::Number) -> Option<i64> {
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    if n.is_u64() {
        return None;
    }
    let f = n.as_f64()?;
    if f.is_finite() && libm_trunc(f) == f && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
        Some(f as i64)
    } else {
        None
    }
}

fn libm_trunc(f: f64) -> f64 {
    // `f64::trunc` needs std; truncation by a cast is exact for |f| < 2^63 and every float of
    // larger magnitude is integral already.
    if f.abs() < 9_223_372_036_854_775_808.0 { (f as i64) as f64 } else { f }
}

/// Order key of an integer: sorting keys as `u64` sorts the integers.
#[inline]
pub fn key_of_i64(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

/// Inverse of [`key_of_i64`].
#[inline]
pub fn i64_of_key(k: u64) -> i64 {
    (k ^ (1 << 63)) as i64
}

/// Order key of a float (`-0.0` maps like `+0.0`): sorting keys sorts the floats.
#[inline]
pub fn key_of_f64(x: f64) -> u64 {
    let x = if x == 0.0 { 0.0 } else { x };
    let b = x.to_bits();
    if b >> 63 == 1 { !b } else { b ^ (1 << 63) }
}

/// Inverse of [`key_of_f64`].
#[inline]
pub fn f64_of_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k ^ (1 << 63) } else { !k })
}

/// Parses one point's payload (a JSON object, or `null` for "no payload") against `schema`:
/// one [`FieldValues`] per schema field, in schema order.
///
/// ```
/// use shoal_payload::{FieldValues, ScalarValue, Schema, parse_payload};
/// let schema = Schema::from_json(r#"{"tag": "keyword", "year": "integer"}"#).unwrap();
/// let doc = serde_json::json!({"tag": ["a", "b"], "year": null});
/// let v = parse_payload(&schema, &doc).unwrap();
/// assert_eq!(v[0], FieldValues::Values(vec![ScalarValue::Keyword("a".into()), ScalarValue::Keyword("b".into())]));
/// assert_eq!(v[1], FieldValues::Null);
/// let err = parse_payload(&schema, &serde_json::json!({"year": 1.5})).unwrap_err();
/// assert_eq!(err.path, "payload.year");
/// ```
pub fn parse_payload(schema: &Schema, doc: &Value) -> Result<Vec<FieldValues>, PayloadError> {
    let mut out = alloc::vec![FieldValues::Absent; schema.len()];
    let obj = match doc {
        Value::Null => return Ok(out),
        // Nested mode: any object; each declared path gives what it reaches.
        Value::Object(_) if schema.is_nested() => {
            for (i, (path, ty)) in schema.fields().enumerate() {
                let steps = crate::path::parse(path).expect("declared paths parse");
                out[i] = nested_values(ty, &crate::path::resolve(doc, &steps));
            }
            return Ok(out);
        }
        Value::Object(o) => o,
        _ => return Err(PayloadError::new("payload", PayloadErrorKind::NotAnObject)),
    };
    for (name, value) in obj {
        let Some((i, ty)) = schema.field(name) else {
            return Err(PayloadError::new(format!("payload.{name}"), PayloadErrorKind::UnknownField));
        };
        out[i] = parse_field(ty, value, name)?;
    }
    Ok(out)
}

/// Parses one point's payload given as JSON text; see [`parse_payload`].
pub fn parse_payload_str(schema: &Schema, text: &str) -> Result<(Value, Vec<FieldValues>), PayloadError> {
    let doc: Value = serde_json::from_slice(text.as_bytes())
        .map_err(|e| PayloadError::new("payload", PayloadErrorKind::InvalidJson(e.to_string())))?;
    let values = parse_payload(schema, &doc)?;
    Ok((doc, values))
}

/// What a declared path of type `ty` holds, given the values `reached` it reaches in one
/// document (`docs/format.md`, "Nested payloads"): the non-null values of the members (an
/// array member's elements, one level), `Null` when some member is `null`, `NullsOnly` when
/// some member is a non-empty array of `null`s, else `Absent`; `Stray` when the column cannot
/// say what the reference evaluator would (a value of another type, an object, an array in an
/// array, `null` beside values, or both `null` and an array of `null`s).
fn nested_values(ty: FieldType, reached: &[&Value]) -> FieldValues {
    let (mut vals, mut null, mut nulls_only) = (Vec::new(), false, false);
    for &m in reached {
        let items = match m {
            Value::Null => {
                null = true;
                continue;
            }
            Value::Array(a) => {
                nulls_only |= !a.is_empty() && a.iter().all(Value::is_null);
                a.as_slice()
            }
            x => core::slice::from_ref(x),
        };
        for x in items.iter().filter(|x| !x.is_null()) {
            match nested_scalar(ty, x) {
                Some(v) => vals.push(v),
                None => return FieldValues::Stray,
            }
        }
    }
    match (vals.is_empty(), null, nulls_only) {
        (false, false, _) => FieldValues::Values(vals),
        (false, true, _) | (true, true, true) => FieldValues::Stray,
        (true, true, false) => FieldValues::Null,
        (true, false, true) => FieldValues::NullsOnly,
        (true, false, false) => FieldValues::Absent,
    }
}

/// A nested path's scalar as its column holds it: strings in `keyword`, integral numbers in
/// `integer` (as [`json_integer`] reads them), numbers that are exactly an `f64` in `float`,
/// booleans in `bool`; `None` for anything else.
fn nested_scalar(ty: FieldType, v: &Value) -> Option<ScalarValue> {
    Some(match (ty, v) {
        (FieldType::Keyword, Value::String(s)) => ScalarValue::Keyword(s.clone()),
        (FieldType::Bool, Value::Bool(b)) => ScalarValue::Bool(*b),
        (FieldType::Integer, Value::Number(n)) => ScalarValue::Integer(json_integer(n)?),
        (FieldType::Float, Value::Number(n)) => {
            let f = n.as_f64()?;
            // An integer the `f64` rounds (beyond 2^53) would match the wrong literals.
            // (`as` saturates: 2^63 and 2^64 are no `i64` and no `u64`.)
            let exact = match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => f != 9_223_372_036_854_775_808.0 && f as i64 == i,
                (None, Some(u)) => f != 18_446_744_073_709_551_616.0 && f as u64 == u,
                _ => true,
            };
            if !exact {
                return None;
            }
            ScalarValue::Float(if f == 0.0 { 0.0 } else { f })
        }
        _ => return None,
    })
}

fn parse_field(ty: FieldType, value: &Value, name: &str) -> Result<FieldValues, PayloadError> {
    match value {
        Value::Null => Ok(FieldValues::Null),
        Value::Array(items) => {
            if items.is_empty() {
                return Ok(FieldValues::EmptyArray);
            }
            let mut vals = Vec::with_capacity(items.len());
            for (j, item) in items.iter().enumerate() {
                if item.is_null() {
                    continue;
                }
                vals.push(parse_scalar(ty, item, || format!("payload.{name}[{j}]"))?);
            }
            Ok(if vals.is_empty() { FieldValues::NullsOnly } else { FieldValues::Values(vals) })
        }
        _ => Ok(FieldValues::Values(alloc::vec![parse_scalar(ty, value, || format!("payload.{name}"))?])),
    }
}

fn parse_scalar(ty: FieldType, v: &Value, path: impl Fn() -> String) -> Result<ScalarValue, PayloadError> {
    let wrong = || PayloadError::new(path(), PayloadErrorKind::WrongType { expected: ty, found: json_type_name(v) });
    Ok(match (ty, v) {
        (FieldType::Keyword, Value::String(s)) => ScalarValue::Keyword(s.clone()),
        (FieldType::Text | FieldType::TextEn, Value::String(s)) => ScalarValue::Text(s.clone()),
        (FieldType::Bool, Value::Bool(b)) => ScalarValue::Bool(*b),
        (FieldType::Integer, Value::Number(n)) => ScalarValue::Integer(
            json_integer(n).ok_or_else(|| PayloadError::new(path(), PayloadErrorKind::NotAnInteger))?,
        ),
        (FieldType::Float, Value::Number(n)) => {
            let f = n.as_f64().ok_or_else(wrong)?;
            ScalarValue::Float(if f == 0.0 { 0.0 } else { f })
        }
        _ => return Err(wrong()),
    })
}
