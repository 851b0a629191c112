//! The report as a document model, rendered to markdown and to HTML.
//!
//! Both renderings come from one [`Document`], which is itself built only from
//! the measured results, so `report.md`, `report.html` and `results.json`
//! cannot disagree.

use std::fmt::Write as _;

/// A whole report.
#[derive(Debug, Default)]
pub struct Document {
    /// The title (an `h1`).
    pub title: String,
    /// Paragraphs under the title.
    pub intro: Vec<String>,
    /// The sections, in order.
    pub sections: Vec<Section>,
}

/// One section (an `h2`) and what it holds, in order.
#[derive(Debug, Default)]
pub struct Section {
    /// Heading text.
    pub title: String,
    /// Blocks in reading order.
    pub blocks: Vec<Block>,
}

/// A block of a section.
#[derive(Debug)]
pub enum Block {
    /// A paragraph. `*emphasis*` and `` `code` `` are the only inline markup.
    Paragraph(String),
    /// A table.
    Table(Table),
    /// A plot: an SVG document and the file it is written to (`plots/x.svg`).
    Plot {
        /// The SVG text.
        svg: String,
        /// Path relative to the report directory.
        file: String,
        /// Alternative text.
        caption: String,
    },
}

/// A table with a header row. Cells are plain text.
#[derive(Debug, Default)]
pub struct Table {
    /// Column headers.
    pub headers: Vec<String>,
    /// Which columns hold numbers (right-aligned).
    pub numeric: Vec<bool>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with `headers`; a header ending in `>` marks a numeric column
    /// (the `>` is dropped).
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers
                .iter()
                .map(|h| h.trim_end_matches('>').to_owned())
                .collect(),
            numeric: headers.iter().map(|h| h.ends_with('>')).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row; it must have one cell per header.
    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(
            cells.len(),
            self.headers.len(),
            "row width differs from header width"
        );
        self.rows.push(cells);
    }
}

impl Section {
    /// An empty section titled `title`.
    pub fn new(title: impl Into<String>) -> Section {
        Section {
            title: title.into(),
            blocks: Vec::new(),
        }
    }

    /// Appends a paragraph.
    pub fn paragraph(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Paragraph(text.into()));
    }

    /// Appends a table.
    pub fn table(&mut self, table: Table) {
        self.blocks.push(Block::Table(table));
    }

    /// Appends a plot.
    pub fn plot(&mut self, file: impl Into<String>, caption: impl Into<String>, svg: String) {
        self.blocks.push(Block::Plot {
            svg,
            file: file.into(),
            caption: caption.into(),
        });
    }
}

impl Document {
    /// Every plot, as (file, svg).
    pub fn plots(&self) -> impl Iterator<Item = (&str, &str)> {
        self.sections
            .iter()
            .flat_map(|s| s.blocks.iter())
            .filter_map(|b| match b {
                Block::Plot { svg, file, .. } => Some((file.as_str(), svg.as_str())),
                _ => None,
            })
    }

    /// GitHub-flavoured markdown; plots are linked as images by file name.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "# {}\n", self.title);
        for p in &self.intro {
            let _ = writeln!(md, "{p}\n");
        }
        for section in &self.sections {
            let _ = writeln!(md, "## {}\n", section.title);
            for block in &section.blocks {
                match block {
                    Block::Paragraph(p) => {
                        let _ = writeln!(md, "{p}\n");
                    }
                    Block::Table(t) => {
                        let _ = writeln!(md, "| {} |", t.headers.join(" | "));
                        let align: Vec<&str> = t
                            .numeric
                            .iter()
                            .map(|n| if *n { "---:" } else { "---" })
                            .collect();
                        let _ = writeln!(md, "|{}|", align.join("|"));
                        for row in &t.rows {
                            let cells: Vec<String> = row.iter().map(|c| markdown_cell(c)).collect();
                            let _ = writeln!(md, "| {} |", cells.join(" | "));
                        }
                        md.push('\n');
                    }
                    Block::Plot { file, caption, .. } => {
                        let _ = writeln!(md, "![{caption}]({file})\n");
                    }
                }
            }
        }
        md
    }

    /// A self-contained HTML page: inline CSS, plots inlined as SVG, no
    /// network access needed to view it.
    pub fn to_html(&self) -> String {
        let mut h = String::new();
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>\n{}\n</style>\n</head>\n<body>\n",
            escape(&self.title),
            CSS
        );
        let _ = writeln!(h, "<h1>{}</h1>", escape(&self.title));
        for p in &self.intro {
            let _ = writeln!(h, "<p>{}</p>", inline(p));
        }
        for section in &self.sections {
            let _ = writeln!(h, "<section>\n<h2>{}</h2>", escape(&section.title));
            for block in &section.blocks {
                match block {
                    Block::Paragraph(p) => {
                        let _ = writeln!(h, "<p>{}</p>", inline(p));
                    }
                    Block::Table(t) => {
                        h.push_str("<table>\n<thead><tr>");
                        for (head, num) in t.headers.iter().zip(&t.numeric) {
                            let _ = write!(
                                h,
                                "<th{}>{}</th>",
                                if *num { " class=\"num\"" } else { "" },
                                inline(head)
                            );
                        }
                        h.push_str("</tr></thead>\n<tbody>\n");
                        for row in &t.rows {
                            h.push_str("<tr>");
                            for (cell, num) in row.iter().zip(&t.numeric) {
                                let _ = write!(
                                    h,
                                    "<td{}>{}</td>",
                                    if *num { " class=\"num\"" } else { "" },
                                    inline(cell)
                                );
                            }
                            h.push_str("</tr>\n");
                        }
                        h.push_str("</tbody>\n</table>\n");
                    }
                    Block::Plot { svg, caption, .. } => {
                        let _ = writeln!(
                            h,
                            "<figure class=\"plot\">\n{}\n<figcaption>{}</figcaption>\n</figure>",
                            strip_xml_prolog(svg),
                            escape(caption)
                        );
                    }
                }
            }
            h.push_str("</section>\n");
        }
        h.push_str("</body>\n</html>\n");
        h
    }
}

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b;line-height:1.45}\
h1{font-size:1.7rem}h2{margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}\
table{border-collapse:collapse;margin:1rem 0;font-size:.92rem}th,td{border:1px solid #d0d0d0;padding:.25rem .55rem}\
th{background:#f3f3f3}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}\
code{background:#f3f3f3;padding:0 .2rem;border-radius:3px}figure.plot{margin:1rem 0}figure.plot svg{max-width:100%;height:auto}\
figcaption{font-size:.85rem;color:#555}";

/// Escapes text for HTML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// Escapes text and renders the inline markup (`` `code` ``, `*em*`).
fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut code = false;
    for (i, part) in text.split('`').enumerate() {
        if i > 0 {
            out.push_str(if code { "</code>" } else { "<code>" });
            code = !code;
        }
        if code {
            out.push_str(&escape(part));
        } else {
            let mut em = false;
            for (j, piece) in part.split('*').enumerate() {
                if j > 0 {
                    out.push_str(if em { "</em>" } else { "<em>" });
                    em = !em;
                }
                out.push_str(&escape(piece));
            }
            if em {
                out.push_str("</em>");
            }
        }
    }
    if code {
        out.push_str("</code>");
    }
    out
}

/// A table cell as markdown: `|` escaped (it would end the cell), `<` as
/// `&lt;` (a renderer would take `<non-string panic payload>` for a tag and
/// drop it), and line breaks as `<br>` (a newline would end the row: panic
/// messages such as `assert_eq!`'s span lines). Inside a code span the
/// entity and the break show literally; the report puts none in cells.
fn markdown_cell(cell: &str) -> String {
    cell.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace("\r\n", "<br>")
        .replace(['\r', '\n'], "<br>")
}

fn strip_xml_prolog(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell with a line break stays in its row, and `<` stays visible
    /// (a renderer takes `<non-string panic payload>` for a tag). Until
    /// 2026-12-05 only `|` was escaped: an `assert_eq!` message ended the
    /// table at its first line.
    #[test]
    fn a_markdown_cell_keeps_its_row_and_its_text() {
        let mut doc = Document::default();
        let mut s = Section::new("Failures");
        let mut t = Table::new(&["name", "why"]);
        t.row(vec![
            "a".into(),
            "panicked: <non-string panic payload>\n  left: 1\n right: 2".into(),
        ]);
        s.table(t);
        doc.sections.push(s);
        let md = doc.to_markdown();
        assert!(
            md.contains(
                "| a | panicked: &lt;non-string panic payload><br>  left: 1<br> right: 2 |\n"
            ),
            "{md}"
        );
    }

    #[test]
    fn one_model_two_renderings() {
        let mut doc = Document {
            title: "T <1>".into(),
            intro: vec!["about *this* `x<y`".into()],
            ..Default::default()
        };
        let mut s = Section::new("Numbers");
        let mut t = Table::new(&["name", "ns>"]);
        t.row(vec!["a|b".into(), "1.50".into()]);
        s.table(t);
        s.plot(
            "plots/p.svg",
            "a plot",
            "<?xml version=\"1.0\"?><svg><rect/></svg>".into(),
        );
        doc.sections.push(s);
        let md = doc.to_markdown();
        assert!(
            md.contains("| name | ns |\n|---|---:|\n| a\\|b | 1.50 |"),
            "{md}"
        );
        assert!(md.contains("![a plot](plots/p.svg)"), "{md}");
        let html = doc.to_html();
        assert!(html.contains("<title>T &lt;1&gt;</title>"), "{html}");
        assert!(
            html.contains("about <em>this</em> <code>x&lt;y</code>"),
            "{html}"
        );
        assert!(html.contains("<td class=\"num\">1.50</td>"), "{html}");
        assert!(
            html.contains("<figure class=\"plot\">\n<svg><rect/></svg>"),
            "{html}"
        );
        assert!(!html.contains("<?xml"));
        assert_eq!(doc.plots().count(), 1);
    }

    /// Each character that HTML text or an attribute value gives a meaning
    /// becomes its entity, and the rest is left as it is: a bare `&` would
    /// start an entity (`p50 &lt` shows as `p50 <`), a bare `"` would end an
    /// attribute value.
    #[test]
    fn html_escapes_each_special_character_and_nothing_else() {
        for (text, escaped) in [
            ("p50 & p99", "p50 &amp; p99"),
            ("&lt;", "&amp;lt;"),
            ("x<y", "x&lt;y"),
            ("y>x", "y&gt;x"),
            ("the \"memb\" flavor", "the &quot;memb&quot; flavor"),
            (
                "rcu-lite's 1.5 µs *em* `code`",
                "rcu-lite's 1.5 µs *em* `code`",
            ),
        ] {
            assert_eq!(escape(text), escaped, "{text}");
        }
    }
}
