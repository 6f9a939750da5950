//! The pages, rendered from facts: the model's page (its metadata, its
//! tensors as a tree by their dotted names) and a tensor's page (its
//! statistics, its histogram drawn, its first values, its heatmap).
//! Every string from the model is escaped ([`html::esc`]).

use std::fmt::Write;

use super::html::{esc, href_name, page};
use crate::stats::{short_number, Stats};

/// What the model's page lists of one tensor.
pub struct Row {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    pub bytes: u64,
    pub layout: String,
    pub encoding: String,
}

/// The model's page.
pub fn index(
    source: &str,
    format: &str,
    rows: &[Row],
    metadata: &[(String, String)],
    config: Option<&str>,
    token: &str,
) -> String {
    let mut b = String::new();
    let _ = write!(
        b,
        "<h1>{}</h1><p class=\"meta\">{} &middot; {} tensors</p>",
        esc(source),
        esc(format),
        rows.len()
    );
    b += "<h2>Tensors</h2>";
    b += &tree(rows, token);
    if !metadata.is_empty() {
        b += "<h2>Metadata</h2><table>";
        for (k, v) in metadata {
            let _ = write!(b, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
        }
        b += "</table>";
    }
    if let Some(c) = config {
        let _ = write!(b, "<h2>config.json</h2><pre>{}</pre>", esc(c));
    }
    page(&format!("ztfs view: {source}"), &b)
}

/// A node of the tree: a segment of dotted names, maybe a tensor itself.
#[derive(Default)]
struct Node {
    tensor: Option<usize>,
    children: Vec<(String, Node)>,
}

/// The tensors as nested lists by their dotted names, in the file's order.
fn tree(rows: &[Row], token: &str) -> String {
    let mut root = Node::default();
    for (i, r) in rows.iter().enumerate() {
        let mut node = &mut root;
        for seg in r.name.split('.') {
            let k = match node.children.iter().position(|(s, _)| s == seg) {
                Some(k) => k,
                None => {
                    node.children.push((seg.to_string(), Node::default()));
                    node.children.len() - 1
                }
            };
            node = &mut node.children[k].1;
        }
        node.tensor = Some(i);
    }
    let mut out = String::new();
    render(&root, rows, token, 0, &mut out);
    out
}

fn render(node: &Node, rows: &[Row], token: &str, depth: usize, out: &mut String) {
    *out += "<ul>";
    for (seg, child) in &node.children {
        *out += "<li>";
        let label = match child.tensor {
            Some(i) => {
                let r = &rows[i];
                format!(
                    "<a class=\"tensor\" href=\"/tensor?name={}&amp;token={}\">{}</a> <span class=\"meta\">{} {:?} {} {} {}</span>",
                    href_name(&r.name),
                    esc(token),
                    esc(seg),
                    esc(&r.dtype),
                    r.shape,
                    esc(&crate::report::human(r.bytes)),
                    esc(&r.layout),
                    esc(&r.encoding)
                )
            }
            None => esc(seg),
        };
        if child.children.is_empty() {
            *out += &label;
        } else {
            let open = if depth < 2 { " open" } else { "" };
            let _ = write!(out, "<details{open}><summary>{label}</summary>");
            render(child, rows, token, depth + 1, out);
            *out += "</details>";
        }
        *out += "</li>";
    }
    *out += "</ul>";
}

/// What a tensor's page shows.
pub struct Tensor<'a> {
    pub row: &'a Row,
    pub stats: Result<&'a Stats, String>,
    pub first: Vec<f64>,
    /// The heatmap's size (height, width), for a 2-D tensor.
    pub heatmap: Option<(u64, u64)>,
}

/// Width and height of the histogram's drawing.
pub const HIST_W: u64 = 640;
pub const HIST_H: u64 = 200;

/// A tensor's page.
pub fn tensor(t: &Tensor, token: &str) -> String {
    let r = t.row;
    let mut b = String::new();
    let _ = write!(
        b,
        "<p><a href=\"/?token={}\">&larr; all tensors</a></p><h1>{}</h1><p class=\"meta\">{} {:?} &middot; {} &middot; {} {}</p>",
        esc(token),
        esc(&r.name),
        esc(&r.dtype),
        r.shape,
        esc(&crate::report::human(r.bytes)),
        esc(&r.layout),
        esc(&r.encoding)
    );
    b += "<h2>Statistics</h2>";
    match &t.stats {
        Ok(s) => {
            b += &stats_table(s);
            b += &histogram(s);
        }
        Err(why) => {
            let _ = write!(b, "<p>no statistics: {}</p>", esc(why));
        }
    }
    if !t.first.is_empty() {
        b += "<h2>First values</h2><p><code id=\"first\">";
        let shown: Vec<String> = t.first.iter().map(|&x| short_number(x)).collect();
        b += &esc(&shown.join(", "));
        b += "</code></p>";
    }
    if let Some((h, w)) = t.heatmap {
        let _ = write!(
            b,
            "<h2>Heatmap</h2><p class=\"meta\">{h} x {w} pixels, each the mean of its block</p>\
             <img class=\"heat\" id=\"heatmap\" alt=\"heatmap\" width=\"{w}\" height=\"{h}\" src=\"/heatmap.png?name={}&amp;token={}\">",
            href_name(&r.name),
            esc(token)
        );
    }
    page(&format!("ztfs view: {}", r.name), &b)
}

fn stats_table(s: &Stats) -> String {
    let opt = |x: Option<f64>| x.map_or("-".to_string(), short_number);
    let rows = [
        ("values", s.count.to_string()),
        ("NaN", s.nan.to_string()),
        ("+inf", s.posinf.to_string()),
        ("-inf", s.neginf.to_string()),
        ("zero", s.zero.to_string()),
        ("min", opt(s.min)),
        ("max", opt(s.max)),
        ("mean", opt(s.mean)),
        ("std", opt(s.std)),
    ];
    let mut b = String::from("<table id=\"stats\">");
    for (k, v) in rows {
        let _ = write!(
            b,
            "<tr><th>{k}</th><td class=\"n\" data-key=\"{k}\">{}</td></tr>",
            esc(&v)
        );
    }
    b + "</table>"
}

/// The histogram as an SVG: a bar a bin, its height the bin's count over
/// the fullest bin's, of [`HIST_H`].
fn histogram(s: &Stats) -> String {
    let Some(counts) = &s.counts else {
        return "<p>no histogram: the range has no equal bins in float64</p>".into();
    };
    let top = counts.iter().copied().max().unwrap_or(0).max(1);
    let n = counts.len() as f64;
    let bar = HIST_W as f64 / n;
    let mut b = format!(
        "<svg id=\"hist\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{HIST_W}\" height=\"{HIST_H}\" viewBox=\"0 0 {HIST_W} {HIST_H}\">"
    );
    for (i, &c) in counts.iter().enumerate() {
        let height = c as f64 / top as f64 * HIST_H as f64;
        let _ = write!(
            b,
            "<rect x=\"{:.3}\" y=\"{:.3}\" width=\"{:.3}\" height=\"{:.3}\" fill=\"#4472c4\" data-count=\"{c}\"><title>{c}</title></rect>",
            i as f64 * bar,
            HIST_H as f64 - height,
            bar,
            height
        );
    }
    b += "</svg>";
    if let (Some(lo), Some(hi)) = (s.min, s.max) {
        let _ = write!(
            b,
            "<p class=\"meta\">{} bins over [{}, {}]</p>",
            counts.len(),
            esc(&short_number(lo)),
            esc(&short_number(hi))
        );
    }
    b
}
