//! `matrix:`: one file, several scenarios. Every combination of the listed values is a variant;
//! `${name}` in any string of the file stands for the variant's value of `name`. Inside a
//! `repeat`, `${i}` (or the name its `index` gives) is the repeat's iteration, which is put in
//! as the steps run: expansion leaves those references in place, and refuses any `${…}` that
//! names neither.
//!
//! Expansion works on the positioned YAML tree, before decoding: each variant is decoded and
//! checked as if it had been written out, and its errors point into the one file.

use crate::suggest::closest;
use crate::yaml::error::quote_value;
use crate::yaml::{DecodeError, Entry, Node, Problem, Value};

use super::steps::DEFAULT_ITERATION;
use super::values::check_word;

/// The most variants one matrix may make.
pub const MAX_VARIANTS: usize = 1000;

/// One variant: its values, and the file's tree with them substituted.
#[derive(Debug, Clone)]
pub struct Variant {
    /// `name=value` pairs, in the order of the matrix (empty without a matrix).
    pub values: Vec<(String, String)>,
    /// The tree, without `matrix:` and with every `${name}` replaced.
    pub root: Node,
}

impl Variant {
    /// `request=VER_GET, nic=1`.
    pub fn label(&self) -> String {
        self.values.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
    }
}

/// A problem with `node`, whose field is `path`.
fn error(node: &Node, path: &str, problem: Problem) -> DecodeError {
    DecodeError { at: node.at, field: path.to_string(), problem }
}

/// `node` is not of the kind `expected` says.
fn wrong_type(node: &Node, path: &str, expected: &str) -> DecodeError {
    error(node, path, Problem::WrongType { expected: expected.into(), found: node.value.describe() })
}

/// The variants of a file (one, when it has no matrix).
pub fn expand(root: &Node) -> Result<Vec<Variant>, DecodeError> {
    let Value::Map(entries) = &root.value else {
        return Ok(vec![Variant { values: Vec::new(), root: root.clone() }]);
    };
    let mut vars: Vec<(String, Vec<Node>)> = Vec::new();
    if let Some(entry) = entries.iter().find(|e| e.key == "matrix") {
        let matrix = &entry.value;
        let Value::Map(list) = &matrix.value else {
            let expected = "a mapping of names to lists of values, as {request: [VER_GET, FUNC_RESET]}";
            return Err(wrong_type(matrix, "matrix", expected));
        };
        if list.is_empty() {
            return Err(error(matrix, "matrix", Problem::Empty { what: "the matrix".into() }));
        }
        for var in list {
            let path = format!("matrix.{}", var.key);
            check_word(&var.key).map_err(|r| DecodeError {
                at: var.key_at,
                field: path.clone(),
                problem: Problem::Invalid {
                    value: format!("{:?}", var.key),
                    expected: "a matrix name".into(),
                    reason: r,
                },
            })?;
            let Value::Seq(items) = &var.value.value else {
                return Err(wrong_type(&var.value, &path, "a list of values"));
            };
            if items.is_empty() {
                return Err(error(&var.value, &path, Problem::Empty { what: "the list of values".into() }));
            }
            for (i, item) in items.iter().enumerate() {
                if !matches!(item.value, Value::Str(_) | Value::Int(_) | Value::Bool(_)) {
                    return Err(wrong_type(item, &format!("{path}[{i}]"), "a word, a number or a boolean"));
                }
            }
            vars.push((var.key.clone(), items.clone()));
        }
        let count = vars.iter().try_fold(1usize, |n, (_, v)| n.checked_mul(v.len())).filter(|n| *n <= MAX_VARIANTS);
        if count.is_none() {
            let value = quote_value(&matrix.value);
            let reason = format!("it makes more than {MAX_VARIANTS} variants");
            return Err(error(matrix, "matrix", Problem::Invalid { value, expected: "a matrix".into(), reason }));
        }
        if let Some(name) = entries.iter().find(|e| e.key == "name")
            && let Value::Str(text) = &name.value.value
            && let Some((var, _)) = vars.iter().find(|(var, _)| !text.contains(&format!("${{{var}}}")))
        {
            return Err(error(
                &name.value,
                "name",
                Problem::Conflict(format!(
                    "with a matrix, the name must use ${{{var}}} (and every other matrix name) so that each variant has its own"
                )),
            ));
        }
    }

    let rest: Vec<Entry> = entries.iter().filter(|e| e.key != "matrix").cloned().collect();
    let body = Node { value: Value::Map(rest), at: root.at };
    let mut variants = Vec::new();
    for choice in combinations(&vars) {
        let bound: Vec<(&str, &Node)> = vars.iter().zip(&choice).map(|((k, vs), i)| (k.as_str(), &vs[*i])).collect();
        let root = substitute(&body, "", &bound, &[])?;
        let values = bound.iter().map(|(k, v)| (k.to_string(), scalar_text(v))).collect();
        variants.push(Variant { values, root });
    }
    Ok(variants)
}

/// Every choice of one index per variable, the last variable varying fastest.
fn combinations(vars: &[(String, Vec<Node>)]) -> Vec<Vec<usize>> {
    let mut all = vec![Vec::new()];
    for (_, values) in vars {
        all = all
            .into_iter()
            .flat_map(|prefix| (0..values.len()).map(move |i| [prefix.clone(), vec![i]].concat()))
            .collect();
    }
    all
}

fn scalar_text(node: &Node) -> String {
    match &node.value {
        Value::Str(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Float(x) => x.to_string(),
        _ => String::new(),
    }
}

/// A repeat whose steps are being substituted: the name of its iteration, and its line.
type Repeat<'a> = (&'a str, u64);

/// The name a `repeat:` mapping gives its iteration: its `index`, or `i`.
fn iteration_name(repeat: &Node) -> &str {
    match &repeat.value {
        Value::Map(entries) => entries
            .iter()
            .find(|e| e.key == "index")
            .and_then(|e| match &e.value.value {
                Value::Str(name) => Some(name.as_str()),
                _ => None,
            })
            .unwrap_or(DEFAULT_ITERATION),
        _ => DEFAULT_ITERATION,
    }
}

fn substitute(node: &Node, path: &str, vars: &[(&str, &Node)], repeats: &[Repeat<'_>]) -> Result<Node, DecodeError> {
    let value = match &node.value {
        Value::Str(text) => return substitute_str(node, text, path, vars, repeats),
        Value::Seq(items) => Value::Seq(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| substitute(item, &format!("{path}[{i}]"), vars, repeats))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(entries) => Value::Map(
            entries
                .iter()
                .map(|e| {
                    let p = if path.is_empty() { e.key.clone() } else { format!("{path}.{}", e.key) };
                    let value = if e.key == "repeat" && matches!(e.value.value, Value::Map(_)) {
                        let inner: Vec<Repeat<'_>> =
                            repeats.iter().copied().chain([(iteration_name(&e.value), e.key_at.line)]).collect();
                        substitute(&e.value, &p, vars, &inner)?
                    } else {
                        substitute(&e.value, &p, vars, repeats)?
                    };
                    Ok(Entry { key: e.key.clone(), key_at: e.key_at, value })
                })
                .collect::<Result<_, DecodeError>>()?,
        ),
        other => other.clone(),
    };
    Ok(Node { value, at: node.at })
}

/// What a `${name}` stands for where it is written.
enum Reference<'n> {
    /// A matrix value.
    Value(&'n Node),
    /// The iteration of an enclosing repeat: left as written, for the runner.
    Iteration,
}

/// A string with `${name}`s replaced. A string that is only `${name}` takes the value as it is
/// (so `nic: ${nic}` is a number when the matrix lists numbers).
fn substitute_str(
    node: &Node,
    text: &str,
    path: &str,
    vars: &[(&str, &Node)],
    repeats: &[Repeat<'_>],
) -> Result<Node, DecodeError> {
    if !text.contains("${") {
        return Ok(node.clone());
    }
    let lookup = |name: &str| {
        let matrix = vars.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        let lines: Vec<u64> = repeats.iter().filter(|(k, _)| *k == name).map(|(_, line)| *line).collect();
        let ambiguous = |first: String| {
            let message = format!(
                "`${{{name}}}` is ambiguous here: {first} name `{name}`; give the repeat's iteration another name (`index: {name}2`)"
            );
            error(node, path, Problem::Conflict(message))
        };
        match (matrix, &lines[..]) {
            (Some(_), [line, ..]) => Err(ambiguous(format!("the matrix and the repeat at line {line} both"))),
            (None, [a, b, ..]) => Err(ambiguous(format!("the repeats at lines {a} and {b} both"))),
            (None, [_]) => Ok(Reference::Iteration),
            (Some(value), []) => Ok(Reference::Value(value)),
            (None, []) => {
                let known = vars.iter().map(|(k, _)| *k).chain(repeats.iter().map(|(k, _)| *k));
                let here: Vec<String> = repeats.iter().map(|(k, _)| format!("`{k}`")).collect();
                let what = match (vars.is_empty(), repeats.is_empty()) {
                    (true, true) => "matrix name or iteration (the file has no matrix, and a repeat's iteration is named only inside its steps)".to_string(),
                    (true, false) => format!("iteration (the file has no matrix; the iterations here: {})", here.join(", ")),
                    (false, true) => "matrix name".to_string(),
                    (false, false) => format!("matrix name or iteration (the iterations here: {})", here.join(", ")),
                };
                Err(error(
                    node,
                    path,
                    Problem::UnknownName {
                        what,
                        name: name.into(),
                        suggestion: closest(name, known).map(str::to_string),
                    },
                ))
            }
        }
    };
    if let Some(name) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}'))
        && !name.contains(['$', '{', '}'])
    {
        return Ok(match lookup(name)? {
            Reference::Value(value) => Node { value: value.value.clone(), at: node.at },
            Reference::Iteration => node.clone(),
        });
    }
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| {
            let (value, expected) = (quote_value(&node.value), "text with ${name} references".into());
            error(node, path, Problem::Invalid { value, expected, reason: "a `${` is not closed by `}`".into() })
        })?;
        match lookup(&after[..end])? {
            Reference::Value(value) => out.push_str(&scalar_text(value)),
            Reference::Iteration => out.push_str(&rest[start..start + 2 + end + 1]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(Node { value: Value::Str(out), at: node.at })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::node::parse;

    fn get<'a>(node: &'a Node, key: &str) -> &'a Node {
        match &node.value {
            Value::Map(entries) => &entries.iter().find(|e| e.key == key).unwrap().value,
            _ => panic!("not a map"),
        }
    }

    #[test]
    fn every_combination_is_a_variant_with_values_substituted() {
        let root =
            parse("name: x-${r}-${n}\nmatrix: {r: [A, B], n: [0, 1, 2]}\nnics: ${n}\nabout: r is ${r}\n").unwrap();
        let variants = expand(&root).unwrap();
        assert_eq!(variants.len(), 6);
        assert_eq!(variants[1].label(), "r=A, n=1");
        let v = &variants[4];
        assert_eq!(get(&v.root, "name").value, Value::Str("x-B-1".into()));
        assert_eq!(get(&v.root, "nics").value, Value::Int(1));
        assert_eq!(get(&v.root, "nics").at.line, 3);
        assert_eq!(get(&v.root, "about").value, Value::Str("r is B".into()));
        assert!(matches!(&v.root.value, Value::Map(e) if e.iter().all(|e| e.key != "matrix")));
    }

    #[test]
    fn unknown_names_unclosed_references_and_shared_names_are_errors() {
        let e = expand(&parse("name: x-${r}\nmatrix: {r: [A]}\nabout: ${rr}\n").unwrap()).unwrap_err();
        assert_eq!((e.at.line, e.field.as_str()), (3, "about"));
        assert!(e.to_string().contains("did you mean `r`"), "{e}");
        let e = expand(&parse("name: x-${r}\nmatrix: {r: [A]}\nabout: a ${r\n").unwrap()).unwrap_err();
        assert!(e.to_string().contains("not closed"), "{e}");
        let e = expand(&parse("name: x\nmatrix: {r: [A, B]}\n").unwrap()).unwrap_err();
        assert_eq!(e.field, "name");
        let e = expand(&parse("name: x\nabout: ${r}\n").unwrap()).unwrap_err();
        assert!(e.to_string().contains("no matrix"), "{e}");
        let e = expand(&parse("name: x-${r}\nmatrix: {r: []}\n").unwrap()).unwrap_err();
        assert_eq!(e.field, "matrix.r");
        let e = expand(&parse("name: x-${a}${b}${c}\nmatrix: {a: [1,2,3,4,5,6,7,8,9,10], b: [1,2,3,4,5,6,7,8,9,10], c: [1,2,3,4,5,6,7,8,9,10,11]}\n").unwrap()).unwrap_err();
        assert!(e.to_string().contains("more than 1000"), "{e}");
    }

    #[test]
    fn a_repeats_iteration_is_left_in_its_steps_and_refused_outside_them() {
        let text = "name: x\nsteps:\n  - repeat:\n      times: 2\n      index: j\n      steps:\n        - destroy: q${j}\n  - destroy: q${j}\n";
        let e = expand(&parse(text).unwrap()).unwrap_err();
        assert_eq!((e.at.line, e.field.as_str()), (8, "steps[1].destroy"));
        assert!(e.to_string().contains("named only inside its steps"), "{e}");
        let text =
            "name: x\nsteps:\n  - repeat:\n      times: 2\n      index: j\n      steps:\n        - destroy: q${j}\n";
        let v = expand(&parse(text).unwrap()).unwrap();
        let steps = get(&v[0].root, "steps");
        let Value::Seq(steps) = &steps.value else { panic!() };
        let inner = get(get(&steps[0], "repeat"), "steps");
        let Value::Seq(inner) = &inner.value else { panic!() };
        assert_eq!(get(&inner[0], "destroy").value, Value::Str("q${j}".into()));
        // A matrix value and an iteration of one name, where both could be meant.
        let text = "name: x-${i}\nmatrix: {i: [1]}\nsteps:\n  - repeat:\n      times: 2\n      steps:\n        - destroy: q${i}\n";
        let e = expand(&parse(text).unwrap()).unwrap_err();
        assert!(e.to_string().contains("the matrix and the repeat at line 4 both name `i`"), "{e}");
        // The matrix's own values still go in inside a repeat.
        let text = "name: x-${n}\nmatrix: {n: [3]}\nsteps:\n  - repeat:\n      times: 2\n      steps:\n        - destroy: q${n}_${i}\n";
        let v = expand(&parse(text).unwrap()).unwrap();
        let Value::Seq(steps) = &get(&v[0].root, "steps").value else { panic!() };
        let Value::Seq(inner) = &get(get(&steps[0], "repeat"), "steps").value else { panic!() };
        assert_eq!(get(&inner[0], "destroy").value, Value::Str("q3_${i}".into()));
    }

    #[test]
    fn a_file_without_a_matrix_is_one_variant() {
        let variants = expand(&parse("name: x\nnics: 1\n").unwrap()).unwrap();
        assert_eq!(variants.len(), 1);
        assert_eq!(variants[0].label(), "");
    }
}
