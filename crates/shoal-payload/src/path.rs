//! Qdrant's JSON paths over nested payloads (`docs/format.md`, "Nested payloads"): a first
//! key, then `.key`, `[]` (every element of an array) or `[n]` (element `n`); a key bare when
//! it is Unicode alphanumerics, `_` or `-`, else in double quotes. Resolving a path gives the
//! list of values it reaches, with no implicit step into arrays (`a.b` finds nothing when `a`
//! is an array; write `a[].b`).

use alloc::string::String;
use alloc::vec::Vec;

use serde_json::Value;

/// Longest path, in bytes.
pub const MAX_PATH: usize = 255;

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// An object's member.
    Key(String),
    /// Every element of an array (`[]`).
    All,
    /// Element `n` of an array (`[n]`).
    Index(usize),
}

fn bare(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Parses a path; `None` when it is not one (empty, a bad step, longer than [`MAX_PATH`]).
pub fn parse(path: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut rest = path;
    while !rest.is_empty() || steps.is_empty() {
        if let Some(r) = rest.strip_prefix('[') {
            let (inner, after) = r.split_once(']')?;
            steps.push(match inner {
                "" => Step::All,
                // Decimal digits, no leading zero (`usize` parsing alone would take `+1`, `01`).
                _ if inner.bytes().all(|b| b.is_ascii_digit()) && (inner == "0" || !inner.starts_with('0')) => {
                    Step::Index(inner.parse().ok()?)
                }
                _ => return None,
            });
            rest = after;
            continue;
        }
        if !steps.is_empty() {
            rest = rest.strip_prefix('.')?;
        }
        let (key, after) = match rest.strip_prefix('"') {
            Some(r) => r.split_once('"').filter(|(k, _)| !k.contains('\\'))?,
            None => rest.split_at(rest.find(|c: char| !bare(c)).unwrap_or(rest.len())),
        };
        if key.is_empty() && !rest.starts_with('"') {
            return None;
        }
        steps.push(Step::Key(key.into()));
        rest = after;
    }
    // A path starts with a key.
    (path.len() <= MAX_PATH && matches!(steps[0], Step::Key(_))).then_some(steps)
}

/// The values `steps` reach in `doc`, in document order.
pub fn resolve<'d>(doc: &'d Value, steps: &[Step]) -> Vec<&'d Value> {
    let mut now = alloc::vec![doc];
    for step in steps {
        let mut next = Vec::new();
        for v in now {
            match (step, v) {
                (Step::Key(k), Value::Object(o)) => next.extend(o.get(k.as_str())),
                (Step::All, Value::Array(a)) => next.extend(a.iter()),
                (Step::Index(i), Value::Array(a)) => next.extend(a.get(*i)),
                _ => {}
            }
        }
        now = next;
    }
    now
}

/// Most array elements one [`set_at`] may add (`null` padding for `[n]`), all arrays together:
/// a short path must not ask for an unbounded allocation.
pub const MAX_SET_GROWTH: usize = 1024;

/// Merges the keys of `src` into the object(s) `steps` name in `doc` — Qdrant's set payload
/// with a `key`: a missing key or a value of another kind on the way becomes an object (an
/// array for `[n]`, grown with `null`s to hold element `n`; an array for `[]`, left empty when
/// it was not one); `[]` applies the rest to every element. `steps` start with a key. Returns
/// `false` when that would add more than [`MAX_SET_GROWTH`] array elements; `doc` may then be
/// partly changed (use it on a copy).
pub fn set_at(
    doc: &mut serde_json::Map<alloc::string::String, Value>,
    steps: &[Step],
    src: &serde_json::Map<alloc::string::String, Value>,
) -> bool {
    let Some((Step::Key(first), rest)) = steps.split_first() else { return false };
    let mut budget = MAX_SET_GROWTH;
    set_in(doc.entry(first.as_str()).or_insert(Value::Null), rest, src, &mut budget)
}

fn set_in(
    at: &mut Value,
    steps: &[Step],
    src: &serde_json::Map<alloc::string::String, Value>,
    budget: &mut usize,
) -> bool {
    match steps.split_first() {
        None => {
            if !at.is_object() {
                *at = Value::Object(serde_json::Map::new());
            }
            if let Value::Object(o) = at {
                o.extend(src.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            true
        }
        Some((Step::Key(k), rest)) => {
            if !at.is_object() {
                *at = Value::Object(serde_json::Map::new());
            }
            match at {
                Value::Object(o) => set_in(o.entry(k.as_str()).or_insert(Value::Null), rest, src, budget),
                _ => true,
            }
        }
        Some((Step::Index(i), rest)) => {
            if !at.is_array() {
                *at = Value::Array(Vec::new());
            }
            let Value::Array(a) = at else { return true };
            if a.len() <= *i {
                let grow = i + 1 - a.len();
                if grow > *budget {
                    return false;
                }
                *budget -= grow;
                a.resize(i + 1, Value::Null);
            }
            set_in(&mut a[*i], rest, src, budget)
        }
        Some((Step::All, rest)) => match at {
            Value::Array(a) => a.iter_mut().all(|v| set_in(v, rest, src, budget)),
            other => {
                *other = Value::Array(Vec::new());
                true
            }
        },
    }
}

/// How deeply `v` nests (a scalar: 1; `[]` or `{}`: 1; `[[1]]`: 3).
pub fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 1,
    }
}

/// The part of `doc` whose paths `keep` accepts, as Qdrant selects payload keys (`with_payload`
/// include / exclude): every value is offered with its path — keys, and [`Step::All`] for an
/// array element — before its children; a value kept keeps those of its children that are kept
/// too (scalars whole).
pub fn select(
    doc: &serde_json::Map<alloc::string::String, Value>,
    keep: &dyn Fn(&[Step]) -> bool,
) -> serde_json::Map<alloc::string::String, Value> {
    let mut path = Vec::new();
    let mut out = serde_json::Map::new();
    for (k, v) in doc {
        path.push(Step::Key(k.clone()));
        if keep(&path) {
            out.insert(k.clone(), select_in(v, &mut path, keep));
        }
        path.pop();
    }
    out
}

fn select_in(v: &Value, path: &mut Vec<Step>, keep: &dyn Fn(&[Step]) -> bool) -> Value {
    match v {
        Value::Object(o) => {
            let mut out = serde_json::Map::new();
            for (k, x) in o {
                path.push(Step::Key(k.clone()));
                if keep(path) {
                    out.insert(k.clone(), select_in(x, path, keep));
                }
                path.pop();
            }
            Value::Object(out)
        }
        Value::Array(a) => {
            path.push(Step::All);
            // Every element has the same path: all are kept, or none.
            let out = if keep(path) { a.iter().map(|x| select_in(x, path, keep)).collect() } else { Vec::new() };
            path.pop();
            Value::Array(out)
        }
        other => other.clone(),
    }
}

/// Whether a value at `path` is kept by the include pattern `pattern`: one is a prefix of the
/// other, step by step (Qdrant's rule: `a.b` keeps `a` — with only its `b` — and all of `a.b`).
pub fn included(pattern: &[Step], path: &[Step]) -> bool {
    pattern.iter().zip(path).all(|(a, b)| a == b)
}

/// Whether a value at `path` is removed by the exclude pattern `pattern`: the pattern is a
/// prefix of the path (Qdrant's rule).
pub fn excluded(pattern: &[Step], path: &[Step]) -> bool {
    path.starts_with(pattern)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn include_and_exclude_select_by_path_as_qdrant() {
        let doc = json!({"a": {"b": [{"c": 1}, {"c": 2}, {"d": {"e": 3}}]}, "f": 3, "g": ["g0", "g1", "g2"]});
        let Value::Object(doc) = doc else { panic!("an object") };
        let inc = |ps: &[&str]| {
            let ps: Vec<Vec<Step>> = ps.iter().map(|p| parse(p).unwrap()).collect();
            Value::Object(select(&doc, &|path| ps.iter().any(|p| included(p, path))))
        };
        let exc = |ps: &[&str]| {
            let ps: Vec<Vec<Step>> = ps.iter().map(|p| parse(p).unwrap()).collect();
            Value::Object(select(&doc, &|path| !ps.iter().any(|p| excluded(p, path))))
        };
        // Qdrant's own case (`json_path/filter.rs`).
        assert_eq!(inc(&["a.b[].c"]), json!({"a": {"b": [{"c": 1}, {"c": 2}, {}]}}));
        assert_eq!(inc(&["f", "g"]), json!({"f": 3, "g": ["g0", "g1", "g2"]}));
        assert_eq!(inc(&["a"]), json!({"a": {"b": [{"c": 1}, {"c": 2}, {"d": {"e": 3}}]}}));
        assert_eq!(inc(&["nope"]), json!({}));
        assert_eq!(exc(&["a.b[].c", "g"]), json!({"a": {"b": [{}, {}, {"d": {"e": 3}}]}, "f": 3}));
        assert_eq!(exc(&["a"]), json!({"f": 3, "g": ["g0", "g1", "g2"]}));
    }

    /// Qdrant's own cases (`json_path/set.rs`), with the same results.
    #[test]
    fn set_at_merges_into_the_objects_a_path_names() {
        let set = |doc: Value, path: &str, src: Value| {
            let (Value::Object(mut d), Value::Object(s)) = (doc, src) else { panic!("objects") };
            assert!(set_at(&mut d, &parse(path).unwrap(), &s));
            Value::Object(d)
        };
        let doc = json!({"a": {"b": [{"c": 1}, {"c": 2}, {"d": {"e": 3}}]}, "f": 3, "g": ["g0", "g1", "g2"]});
        assert_eq!(set(doc.clone(), "a", json!({"b": 5})), json!({"a": {"b": 5}, "f": 3, "g": ["g0", "g1", "g2"]}));
        let mut want = doc.clone();
        want["a"]["b"][1]["c"] = json!(5);
        assert_eq!(set(doc.clone(), "a.b[1]", json!({"c": 5})), want);
        assert_eq!(set(doc.clone(), "a.b[1]", json!({})), doc);
        assert_eq!(set(json!({}), "key1.key2", json!({"c": 1})), json!({"key1": {"key2": {"c": 1}}}));
        assert_eq!(
            set(json!({}), "key1.key2[3]", json!({"c": 1})),
            json!({"key1": {"key2": [null, null, null, {"c": 1}]}})
        );
        assert_eq!(set(json!({}), "key1.key2[].key3", json!({"c": 1})), json!({"key1": {"key2": []}}));
        assert_eq!(set(json!({"a": 10}), "a.b.c", json!({"x": 1})), json!({"a": {"b": {"c": {"x": 1}}}}));
        // `[]` reaches every element.
        let tags = json!({"tags": [{"n": 1}, {"n": 2}]});
        assert_eq!(
            set(tags, "tags[]", json!({"seen": true})),
            json!({"tags": [{"n": 1, "seen": true}, {"n": 2, "seen": true}]})
        );
        // Growth past the budget is refused: one index, or several together.
        let mut d = serde_json::Map::new();
        assert!(!set_at(&mut d, &parse("a[1024]").unwrap(), &serde_json::Map::new()));
        assert!(set_at(&mut d, &parse("b[1023]").unwrap(), &serde_json::Map::new()));
        assert!(!set_at(&mut d, &parse("c[600].d[600]").unwrap(), &serde_json::Map::new()));
        let mut wide = json!({"a": [[], [], [], []]}).as_object().unwrap().clone();
        assert!(!set_at(&mut wide, &parse("a[][300]").unwrap(), &serde_json::Map::new()));
        assert_eq!(depth(&json!(1)), 1);
        assert_eq!(depth(&json!({"a": [[1], {}]})), 4);
    }

    fn key(k: &str) -> Step {
        Step::Key(k.into())
    }

    #[test]
    fn paths_parse_as_qdrant_writes_them() {
        assert_eq!(parse("a"), Some(alloc::vec![key("a")]));
        assert_eq!(parse("metadata.topic"), Some(alloc::vec![key("metadata"), key("topic")]));
        assert_eq!(parse("tags[].name"), Some(alloc::vec![key("tags"), Step::All, key("name")]));
        assert_eq!(parse("a[2][]"), Some(alloc::vec![key("a"), Step::Index(2), Step::All]));
        assert_eq!(parse(r#"a."b c".d"#), Some(alloc::vec![key("a"), key("b c"), key("d")]));
        assert_eq!(parse("état-1_x"), Some(alloc::vec![key("état-1_x")]));
        for bad in ["", ".a", "a.", "a..b", "[]", "[0].a", "a[01]", "a[x]", "a[", r#"a."b"#, "a b", "a.[]"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        assert_eq!(parse(&"a".repeat(256)), None);
    }

    #[test]
    fn resolution_takes_no_implicit_step_into_arrays() {
        let doc = json!({"country": {"cities": [{"name": "Paris", "population": 2.1}, {"name": "Lyon"}]},
                         "a": [{"b": 1}, {"b": [2, 3]}], "n": null});
        let at = |p: &str| resolve(&doc, &parse(p).unwrap()).into_iter().cloned().collect::<Vec<_>>();
        assert_eq!(at("country.cities[].name"), [json!("Paris"), json!("Lyon")]);
        assert_eq!(at("country.cities[1].name"), [json!("Lyon")]);
        assert_eq!(at("country.cities[].population"), [json!(2.1)]);
        assert_eq!(at("a.b"), Vec::<Value>::new());
        assert_eq!(at("a[].b"), [json!(1), json!([2, 3])]);
        assert_eq!(at("a[].b[]"), [json!(2), json!(3)]);
        assert_eq!(at("n"), [Value::Null]);
        assert_eq!(at("missing.x"), Vec::<Value>::new());
    }
}
