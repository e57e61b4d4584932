//! The layering rule of docs/architecture.md, checked: each module's
//! forbidden neighbours and the modules that must do no I/O are read from
//! the tables under "## Layers" in that file, and every `crate::` path (and
//! every I/O path) in `src/` is checked against them. Test code (after a
//! file's first `#[cfg(test)]`, and `tests/` folders) may reach anywhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `(module, forbidden)` rows of the table whose header names `column`.
fn table(doc: &str, column: &str) -> BTreeMap<String, Vec<String>> {
    let mut rows = BTreeMap::new();
    let mut inside = false;
    for line in doc.lines() {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        if cells.len() == 2 && cells[0] == "module" {
            inside = cells[1] == column;
            continue;
        }
        if !line.trim_start().starts_with('|') {
            inside = false;
            continue;
        }
        if inside && cells.len() == 2 && !cells[0].starts_with("---") {
            let names = |cell: &str| -> Vec<String> {
                cell.split(',')
                    .map(|n| n.trim().trim_matches('`').to_owned())
                    .filter(|n| !n.is_empty())
                    .collect()
            };
            if let Some(module) = names(cells[0]).pop() {
                rows.insert(module, names(cells[1]));
            }
        }
    }
    rows
}

fn sources(module: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "tests") {
                    walk(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    let single = PathBuf::from(format!("src/{module}.rs"));
    if single.exists() {
        files.push(single);
    }
    walk(Path::new(&format!("src/{module}")), &mut files);
    files
}

/// The non-test, non-comment lines of a file, numbered from 1.
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, line)| !line.contains("#[cfg(test)]"))
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .map(|(i, line)| (i + 1, line))
        .collect()
}

/// Whether `line` names `path` as a path (not as a longer identifier).
fn names(line: &str, path: &str) -> bool {
    line.match_indices(path).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + path.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

fn violations(doc: &str) -> Vec<String> {
    let mut found = Vec::new();
    let edges = table(doc, "must not use");
    let io = table(doc, "does no I/O through");
    assert!(
        edges.len() >= 5 && !io.is_empty(),
        "the layer tables are missing from docs/architecture.md"
    );
    for (module, forbidden) in &edges {
        for file in sources(module) {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            for (number, line) in code_lines(&text) {
                for other in forbidden {
                    if names(line, &format!("crate::{other}")) {
                        found.push(format!(
                            "{}:{number}: `{module}` uses `{other}`: {}",
                            file.display(),
                            line.trim()
                        ));
                    }
                }
                for path in io.get(module).into_iter().flatten() {
                    if names(line, path) {
                        found.push(format!(
                            "{}:{number}: `{module}` does I/O through `{path}`: {}",
                            file.display(),
                            line.trim()
                        ));
                    }
                }
            }
        }
    }
    found
}

#[test]
fn no_module_uses_a_layer_it_must_not() {
    let doc = std::fs::read_to_string("docs/architecture.md").unwrap();
    let found = violations(&doc);
    assert!(found.is_empty(), "forbidden edges:\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_a_forbidden_edge() {
    let doc = "| module | must not use |\n|---|---|\n| `domain` | `storage` |\n\
               | `storage` | `http` |\n| `identity` | `http` |\n| `oauth` | `http` |\n\
               | `mcp` | `http` |\n\n| module | does no I/O through |\n|---|---|\n\
               | `domain` | `std::fs` |\n";
    let edges = table(doc, "must not use");
    assert_eq!(edges["domain"], ["storage"]);
    assert!(names("use crate::storage::Store;", "crate::storage"));
    assert!(!names("use crate::storage_x;", "crate::storage"));
    assert!(!names("use my_crate::storage;", "crate::storage"));
    assert_eq!(
        code_lines("use a;\n// use crate::http;\n#[cfg(test)]\nuse crate::http;"),
        vec![(1, "use a;")]
    );
}
