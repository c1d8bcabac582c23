//! No import cycle between the modules of any crate of the workspace (crates/*): a
//! module reaches another through `crate::`, `super::` or `self::` paths, and a parent
//! reaches its children; the graph of those edges (tests left out) has no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every module of the crate whose sources are in `src`: its path
/// (`syscall::net::addr`, `` for the root) → its file.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                parts.pop();
            }
            (parts.join("::"), f)
        })
        .collect()
}

/// The source without comments and without the `#[cfg(test)] mod tests` at its end.
fn code(path: &Path) -> String {
    let s = std::fs::read_to_string(path).unwrap();
    let s = s.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
    s.lines().map(|l| l.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// The module a path such as `super::file::at_dir` names, seen from `from`: the longest
/// prefix that is a module.
fn target(from: &str, path: &[&str], names: &BTreeSet<String>) -> Option<String> {
    let mut base: Vec<&str> = if from.is_empty() { Vec::new() } else { from.split("::").collect() };
    let mut segs = path;
    match segs.first() {
        Some(&"crate") => {
            base.clear();
            segs = &segs[1..];
        }
        Some(&"self") => segs = &segs[1..],
        Some(&"super") => {
            while segs.first() == Some(&"super") {
                base.pop();
                segs = &segs[1..];
            }
        }
        _ => return None,
    }
    let mut best = None;
    for i in 0..=segs.len() {
        let m: Vec<&str> = base.iter().copied().chain(segs[..i].iter().copied()).collect();
        let m = m.join("::");
        if names.contains(&m) {
            best = Some(m);
        }
    }
    best
}

/// The paths in `code` that start with `crate`, `super` or `self`, `use` groups
/// (`use super::{a, b::c}`) expanded.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        if !ident(b[i]) || (i > 0 && (ident(b[i - 1]) || b[i - 1] == b':')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && (ident(b[i]) || b[i] == b':') {
            i += 1;
        }
        let path = &code[start..i];
        let segs: Vec<String> = path.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect();
        if !matches!(segs.first().map(String::as_str), Some("crate" | "super" | "self")) {
            continue;
        }
        if path.ends_with("::") && b.get(i) == Some(&b'{') {
            let end = code[i..].find('}').map_or(b.len(), |e| i + e);
            for item in code[i + 1..end].split(',') {
                let mut p = segs.clone();
                p.extend(
                    item.trim().split("::").filter(|s| !s.is_empty()).map(|s| s.split(' ').next().unwrap().to_string()),
                );
                out.push(p);
            }
        }
        out.push(segs);
    }
    out
}

/// The edges of the import graph of the crate in `src`.
fn edges(src: &Path) -> (BTreeMap<String, PathBuf>, BTreeMap<String, BTreeSet<String>>) {
    let mods = modules(src);
    let names: BTreeSet<String> = mods.keys().cloned().collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, file) in &mods {
        // A parent reaches its children.
        if !m.is_empty() {
            let parent = m.rsplit_once("::").map_or("", |(p, _)| p).to_string();
            edges.entry(parent).or_default().insert(m.clone());
        }
        for p in paths(&code(file)) {
            let segs: Vec<&str> = p.iter().map(String::as_str).collect();
            if let Some(t) = target(m, &segs, &names)
                && &t != m
                && !t.is_empty()
                && !m.starts_with(&format!("{t}::"))
            {
                edges.entry(m.clone()).or_default().insert(t);
            }
        }
    }
    (mods, edges)
}

/// A cycle of the graph, if it has one.
fn cycle(mods: &BTreeMap<String, PathBuf>, edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // Depth-first search for a back edge.
    fn visit(
        m: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(2) => return None,
            Some(1) => {
                let i = stack.iter().position(|s| s == m).unwrap();
                return Some(stack[i..].to_vec());
            }
            _ => {}
        }
        state.insert(m.to_string(), 1);
        stack.push(m.to_string());
        for t in edges.get(m).into_iter().flatten() {
            if let Some(c) = visit(t, edges, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    mods.keys().find_map(|m| visit(m, edges, &mut state, &mut Vec::new()))
}

#[test]
fn no_import_cycle_between_modules_of_any_crate() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut checked = Vec::new();
    for e in std::fs::read_dir(crates).unwrap() {
        let src = e.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        let (mods, edges) = edges(&src);
        if let Some(c) = cycle(&mods, &edges) {
            panic!("import cycle in {}: {} -> {}", src.display(), c.join(" -> "), c[0]);
        }
        checked.push(src.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned());
    }
    checked.sort();
    assert!(checked.len() >= 6 && checked.contains(&"dbt".to_string()), "{checked:?}");
    // The check sees the layering it is meant to see.
    let (_, os) = edges(&crates.join("os/src"));
    assert!(os["machine"].contains("syscall") && os["syscall::common"].contains("kernel"));
    let (_, dbt) = edges(&crates.join("dbt/src"));
    assert!(dbt["generate"].contains("tcache") && dbt["tcache"].contains("made"));
}
