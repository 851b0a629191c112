//! SVG plots for reports, drawn with plotters' SVG backend into strings.
//!
//! Two shapes cover the report: horizontal grouped bars (one row per
//! contender, one bar per series, so long names stay readable) and line charts
//! (a figure against a parameter such as concurrent callers or CPU count).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Colours for series, in order (ten: as many contenders as a report's
/// largest plot has, each its own).
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// Width of the line charts' legend column, right of the plotting area (the
/// legend drawn inside it would hide the points under it).
const LEGEND_WIDTH: u32 = 200;

/// A named series of values, one per category (bars) or per point (lines).
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Bars: one value per category, `None` where not measured. Lines: unused.
    pub values: Vec<Option<f64>>,
    /// Lines: (x, y) points. Bars: unused.
    pub points: Vec<(f64, f64)>,
    /// The palette entry, where a contender keeps its colour across plots
    /// whatever other series each leaves out; else the series' position.
    pub colour: Option<usize>,
}

impl Series {
    /// A bar series.
    pub fn bars(name: impl Into<String>, values: Vec<Option<f64>>) -> Series {
        Series {
            name: name.into(),
            values,
            points: Vec::new(),
            colour: None,
        }
    }

    /// A line series.
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            values: Vec::new(),
            points,
            colour: None,
        }
    }

    /// The same series in palette entry `i`.
    pub fn with_colour(mut self, i: usize) -> Series {
        self.colour = Some(i);
        self
    }

    fn palette_colour(&self, position: usize) -> RGBColor {
        PALETTE[self.colour.unwrap_or(position) % PALETTE.len()]
    }
}

fn finish(area: DrawingArea<SVGBackend<'_>, Shift>) {
    area.present().expect("drawing into a string cannot fail");
}

/// Horizontal grouped bars: `categories` down the side, each series a bar per
/// category. `log` uses a logarithmic value axis (for figures that span
/// orders of magnitude); values must then be positive.
pub fn bar_chart(
    title: &str,
    value_label: &str,
    categories: &[String],
    series: &[Series],
    log: bool,
) -> String {
    let mut svg = String::new();
    let rows = categories.len().max(1);
    let height = (90 + rows * (14 * series.len().max(1) + 10)).max(220) as u32;
    {
        let area = SVGBackend::with_string(&mut svg, (900, height)).into_drawing_area();
        area.fill(&WHITE).expect("fill");
        let values = series
            .iter()
            .flat_map(|s| s.values.iter().flatten().copied());
        let max = values.clone().fold(0.0f64, f64::max).max(1e-9);
        let min_pos = values.filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
        let label_width =
            (categories.iter().map(|c| c.len()).max().unwrap_or(4) as u32 * 7 + 16).min(260);
        let mut builder = ChartBuilder::on(&area);
        builder
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(label_width);
        // Category i is drawn top-down (row `rows - 1 - i` from the bottom), and
        // its series top-down within the row, so the picture reads like the table.
        let band = |i: usize, s: usize| {
            let per = 1.0 / (series.len().max(1) as f64 + 0.6);
            let row = (rows - 1 - i) as f64;
            let top = row + 1.0 - 0.3 * per - s as f64 * per;
            (top - per * 0.9, top)
        };
        let centre = |i: usize| (rows - 1 - i) as f64 + 0.5;
        // Headroom on the right keeps the legend off the longest bars.
        let lo = if log {
            if min_pos.is_finite() {
                min_pos / 2.0
            } else {
                0.1
            }
        } else {
            0.0
        };
        // Above `lo` even with no positive value (a log axis from 0.1 down
        // to 4e-8 would be drawn inverted).
        let hi = if log {
            (max * 40.0).max(lo * 10.0)
        } else {
            max * 1.45
        };
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(value_label)
                    .y_labels(0)
                    .disable_y_mesh()
                    .light_line_style(WHITE)
                    .draw()
                    .expect("mesh");
                for (s, ser) in series.iter().enumerate() {
                    let color = ser.palette_colour(s);
                    chart
                        .draw_series(ser.values.iter().enumerate().filter_map(|(i, v)| {
                            v.map(|v| {
                                let (a, b) = band(i, s);
                                Rectangle::new([(lo, a), (v.max(lo), b)], color.filled())
                            })
                        }))
                        .expect("bars")
                        .label(ser.name.as_str())
                        .legend(move |(x, y)| {
                            Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                        });
                }
                if series.len() > 1 {
                    chart
                        .configure_series_labels()
                        .position(SeriesLabelPosition::UpperRight)
                        .background_style(WHITE.mix(0.85))
                        .border_style(BLACK.mix(0.3))
                        .draw()
                        .expect("legend");
                }
                // Category names, right-aligned left of the plotting area.
                let style =
                    TextStyle::from(("sans-serif", 13)).pos(Pos::new(HPos::Right, VPos::Center));
                for (i, name) in categories.iter().enumerate() {
                    let (x, y) = chart.backend_coord(&(lo, centre(i)));
                    area.draw(&Text::new(name.as_str(), (x - 6, y), style.clone()))
                        .expect("label");
                }
            }};
        }
        if log {
            draw!(
                builder
                    .build_cartesian_2d((lo..hi).log_scale(), 0.0..rows as f64)
                    .expect("chart")
            );
        } else {
            draw!(
                builder
                    .build_cartesian_2d(lo..hi, 0.0..rows as f64)
                    .expect("chart")
            );
        }
        finish(area);
    }
    svg
}

/// Lines with markers: each series a set of (x, y) points, joined in
/// order of x. `log_x`/`log_y` use logarithmic axes; points they cannot
/// show (not positive, or not finite) are left out, as from the axes'
/// bounds. The legend stands right of the plotting area.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_x: bool,
    log_y: bool,
) -> String {
    let mut svg = String::new();
    {
        let width = 900 + LEGEND_WIDTH;
        let area = SVGBackend::with_string(&mut svg, (width, 420)).into_drawing_area();
        area.fill(&WHITE).expect("fill");
        let shown = |v: f64, log: bool| v.is_finite() && (!log || v > 0.0);
        let lines: Vec<Vec<(f64, f64)>> = series
            .iter()
            .map(|s| {
                let mut points: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .copied()
                    .filter(|&(x, y)| shown(x, log_x) && shown(y, log_y))
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                points
            })
            .collect();
        let pts = || lines.iter().flatten().copied();
        let (x_lo, x_hi) = bounds(pts().map(|p| p.0), log_x);
        let (y_lo, y_hi) = bounds(pts().map(|p| p.1), log_y);
        let mut builder = ChartBuilder::on(&area);
        builder
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .margin_right(LEGEND_WIDTH + 12)
            .x_label_area_size(40)
            .y_label_area_size(70);
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(x_label)
                    .y_desc(y_label)
                    .light_line_style(WHITE)
                    .draw()
                    .expect("mesh");
                let style =
                    TextStyle::from(("sans-serif", 13)).pos(Pos::new(HPos::Left, VPos::Center));
                for (s, (ser, points)) in series.iter().zip(&lines).enumerate() {
                    let color = ser.palette_colour(s);
                    chart
                        .draw_series(LineSeries::new(
                            points.iter().copied(),
                            color.stroke_width(2),
                        ))
                        .expect("line");
                    chart
                        .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                        .expect("points");
                    // Its legend entry, in the column right of the plot.
                    let x = (width - LEGEND_WIDTH) as i32;
                    let y = 50 + 20 * s as i32;
                    area.draw(&PathElement::new(
                        [(x, y), (x + 18, y)],
                        color.stroke_width(2),
                    ))
                    .expect("legend line");
                    area.draw(&Circle::new((x + 9, y), 3, color.filled()))
                        .expect("legend marker");
                    area.draw(&Text::new(ser.name.as_str(), (x + 24, y), style.clone()))
                        .expect("legend text");
                }
            }};
        }
        match (log_x, log_y) {
            (false, false) => draw!(
                builder
                    .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)
                    .expect("chart")
            ),
            (true, false) => draw!(
                builder
                    .build_cartesian_2d((x_lo..x_hi).log_scale(), y_lo..y_hi)
                    .expect("chart")
            ),
            (false, true) => draw!(
                builder
                    .build_cartesian_2d(x_lo..x_hi, (y_lo..y_hi).log_scale())
                    .expect("chart")
            ),
            (true, true) => draw!(
                builder
                    .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
                    .expect("chart")
            ),
        }
        finish(area);
    }
    svg
}

/// Axis bounds with a margin; for log axes, positive bounds around the data;
/// a linear axis over data that is all at or above 0 starts at 0 at the
/// lowest (a margin below it would show negative values none of the data has).
fn bounds(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return if log { (0.1, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        (lo / 1.5, hi * 1.5)
    } else {
        let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.05).max(1e-9);
        let below = lo - pad;
        (if lo >= 0.0 { below.max(0.0) } else { below }, hi + pad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_chart_draws_every_category_and_series() {
        let cats = vec!["crossbeam-epoch".to_owned(), "hazptr".to_owned()];
        let svg = bar_chart(
            "ns/op",
            "ns",
            &cats,
            &[
                Series::bars("1 thread", vec![Some(2.0), Some(0.9)]),
                Series::bars("2 threads", vec![Some(3.0), None]),
            ],
            false,
        );
        assert!(
            svg.contains("<svg") && svg.contains("crossbeam-epoch") && svg.contains("hazptr"),
            "{svg}"
        );
        assert!(svg.contains("2 threads"));
        // Three bars drawn (one value is missing): three rects more than the
        // same chart with no value at all, which draws the background, the
        // legend's box and its swatches.
        let no_values = bar_chart(
            "ns/op",
            "ns",
            &cats,
            &[
                Series::bars("1 thread", vec![None, None]),
                Series::bars("2 threads", vec![None, None]),
            ],
            false,
        );
        assert_eq!(
            svg.matches("<rect").count(),
            no_values.matches("<rect").count() + 3,
            "{svg}"
        );
        let log = bar_chart(
            "acq",
            "per thread",
            &cats,
            &[Series::bars("w", vec![Some(0.5), Some(5000.0)])],
            true,
        );
        assert!(log.contains("<svg"));
    }

    /// The value of `name="..."` in an SVG element.
    fn attr(element: &str, name: &str) -> f64 {
        let from = element.find(&format!(" {name}=\"")).expect(name) + name.len() + 3;
        let len = element[from..].find('"').unwrap();
        element[from..from + len].parse().unwrap()
    }

    /// The bars of a bar chart, in drawing order (series by series), as
    /// (top, bottom, left, right) in pixels: the palette-filled rects that
    /// start at the value axis (legend swatches start elsewhere).
    fn bars(svg: &str) -> Vec<(f64, f64, f64, f64)> {
        let palette: Vec<String> = PALETTE
            .iter()
            .map(|c| format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2))
            .collect();
        let rects: Vec<(f64, f64, f64, f64)> = svg
            .lines()
            .filter(|l| l.starts_with("<rect") && palette.iter().any(|p| l.contains(p.as_str())))
            .map(|l| {
                let (x, y) = (attr(l, "x"), attr(l, "y"));
                (y, y + attr(l, "height"), x, x + attr(l, "width"))
            })
            .collect();
        let axis = rects.iter().map(|r| r.2).fold(f64::INFINITY, f64::min);
        rects.into_iter().filter(|r| r.2 == axis).collect()
    }

    /// The left edge of the legend box, and the right end of the longest bar.
    fn legend_and_longest(svg: &str) -> (f64, f64) {
        let legend = svg
            .lines()
            .find(|l| l.starts_with("<rect") && l.contains("opacity=\"0.85\""))
            .expect("a legend box");
        let longest = bars(svg).iter().map(|b| b.3).fold(0.0, f64::max);
        (attr(legend, "x"), longest)
    }

    /// The y of the text element whose content is `text`.
    fn text_y(svg: &str, text: &str) -> f64 {
        let lines: Vec<&str> = svg.lines().collect();
        let at = lines.iter().position(|l| *l == text).expect(text);
        attr(lines[at - 1], "y")
    }

    /// The picture reads like the table: categories top-down, each one's
    /// series top-down within its row, bars apart, lengths proportional to
    /// the values, each name beside its bars, the longest bar clear of the
    /// legend.
    #[test]
    fn bar_chart_rows_read_like_the_table() {
        let cats = vec!["alpha".to_owned(), "beta".to_owned()];
        let values = [[200.0, 100.0], [300.0, 400.0]]; // [series][category]
        let series: Vec<Series> = values
            .iter()
            .enumerate()
            .map(|(s, v)| Series::bars(format!("s{s}"), vec![Some(v[0]), Some(v[1])]))
            .collect();
        let svg = bar_chart("t", "ns", &cats, &series, false);
        let drawn = bars(&svg);
        assert_eq!(drawn.len(), 4, "{svg}");
        // Drawing order is s0 alpha, s0 beta, s1 alpha, s1 beta; top-down
        // the order must be alpha s0, alpha s1, beta s0, beta s1.
        let top_down = [drawn[0], drawn[2], drawn[1], drawn[3]];
        for pair in top_down.windows(2) {
            assert!(
                pair[0].1 <= pair[1].0,
                "overlap or out of order: {top_down:?}"
            );
        }
        let per_unit = (drawn[0].3 - drawn[0].2) / values[0][0];
        for (bar, v) in drawn.iter().zip([200.0, 100.0, 300.0, 400.0]) {
            let length = bar.3 - bar.2;
            assert!((length - v * per_unit).abs() <= 1.0, "{v}: {drawn:?}");
        }
        for (name, first, last) in [
            ("alpha", top_down[0], top_down[1]),
            ("beta", top_down[2], top_down[3]),
        ] {
            let y = text_y(&svg, name);
            assert!(first.0 <= y && y <= last.1, "{name} at {y}: {top_down:?}");
        }
        let (legend, longest) = legend_and_longest(&svg);
        assert!(longest < legend, "the longest bar under the legend:\n{svg}");
    }

    /// The chart grows with its rows, so a bar is as thick with 40
    /// categories as with 10, and a single row still gets a readable chart.
    #[test]
    fn bar_chart_bars_keep_their_thickness_however_many_rows() {
        let thickness = |rows: usize, series: usize| {
            let cats: Vec<String> = (0..rows).map(|i| format!("c{i}")).collect();
            let series: Vec<Series> = (0..series)
                .map(|s| Series::bars(format!("s{s}"), vec![Some(1.0 + s as f64); rows]))
                .collect();
            let svg = bar_chart("t", "ns", &cats, &series, false);
            let drawn = bars(&svg);
            assert_eq!(drawn.len(), rows * series.len(), "{svg}");
            let thick: Vec<f64> = drawn.iter().map(|b| b.1 - b.0).collect();
            let (least, most) = (
                thick.iter().copied().fold(f64::INFINITY, f64::min),
                thick.iter().copied().fold(0.0, f64::max),
            );
            assert!(most - least <= 1.0, "{thick:?}");
            (most, attr(svg.lines().next().unwrap(), "height"))
        };
        for series in [1, 3] {
            let (ten, _) = thickness(10, series);
            let (forty, _) = thickness(40, series);
            assert!(
                (ten - forty).abs() <= 1.0,
                "{series} series: {ten} vs {forty}"
            );
            assert!(ten >= 10.0, "{series} series: {ten} px bars");
        }
        let (_, one_row) = thickness(1, 1);
        assert_eq!(one_row, 220.0);
    }

    /// On a log axis every positive value, the smallest included, has a bar
    /// of some length, longer for a larger value, and the longest ends clear
    /// of the legend.
    #[test]
    fn log_bar_chart_shows_the_smallest_value_and_fits_the_largest() {
        let cats = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let svg = bar_chart(
            "t",
            "ns",
            &cats,
            &[
                Series::bars("w", vec![Some(0.05), Some(5.0), Some(5000.0)]),
                Series::bars("r", vec![Some(1.0), None, None]),
            ],
            true,
        );
        let drawn = bars(&svg);
        assert_eq!(drawn.len(), 4, "{svg}");
        let lengths: Vec<f64> = drawn[..3].iter().map(|b| b.3 - b.2).collect();
        assert!(
            lengths[0] >= 1.0 && lengths[0] < lengths[1] && lengths[1] < lengths[2],
            "{lengths:?}"
        );
        let (legend, longest) = legend_and_longest(&svg);
        assert!(longest < legend, "the longest bar under the legend:\n{svg}");
    }

    /// Axis bounds: the data's range with a margin (8% of the range, at
    /// least 5% of the top), not below 0 for data that is not, and halved
    /// and half again more on a log axis; not
    /// finite values, and on a log axis values not above 0, are left out;
    /// nothing left gives a default range.
    #[test]
    fn bounds_cover_the_data_with_a_margin() {
        let nan = f64::NAN;
        let inf = f64::INFINITY;
        let cases: &[(&[f64], bool, (f64, f64))] = &[
            (&[1.0, 3.0], false, (0.84, 3.16)),
            (&[100.0, 225.0], false, (88.75, 236.25)),
            (&[5.0, 5.0], false, (4.75, 5.25)),
            (&[-4.0, -2.0], false, (-4.16, -1.84)),
            (&[0.0], false, (0.0, 1e-9)),
            // The margin would dip below 0: the axis starts at 0.
            (&[0.1, 10.0], false, (0.0, 10.792)),
            (&[-1.0, 3.0], false, (-1.32, 3.32)),
            (&[1.0, nan, inf, -inf, 3.0], false, (0.84, 3.16)),
            (&[], false, (0.0, 1.0)),
            (&[nan], false, (0.0, 1.0)),
            (&[1.0, 100.0], true, (1.0 / 1.5, 150.0)),
            (&[0.0, -1.0, 10.0, inf, 1000.0], true, (10.0 / 1.5, 1500.0)),
            (&[0.0, -1.0], true, (0.1, 10.0)),
            (&[], true, (0.1, 10.0)),
        ];
        for (values, log, want) in cases {
            let got = bounds(values.iter().copied(), *log);
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1e-9);
            assert!(
                close(got.0, want.0) && close(got.1, want.1),
                "{values:?} log {log}: {got:?}, want {want:?}"
            );
        }
    }

    #[test]
    fn line_chart_draws_points() {
        let svg = line_chart(
            "per-GP",
            "callers",
            "us",
            &[Series::line(
                "shared",
                vec![(1.0, 10.0), (4.0, 3.0), (16.0, 1.0)],
            )],
            true,
            true,
        );
        assert!(svg.contains("<svg") && svg.contains("shared"));
        assert!(svg.matches("<circle").count() >= 3, "{svg}");
    }

    /// Every line series has its own colour (eight here, as rcuscale's
    /// plots have), a series keeps the colour it is given whatever the
    /// others, and the legend stands right of the plotting area, where it
    /// hides no point: until 2026-12-05 it sat over the plot's upper left,
    /// on the 1-writer points, and the palette repeated after six.
    #[test]
    fn line_chart_colours_and_legend() {
        let series: Vec<Series> = (0..8)
            .map(|i| {
                Series::line(
                    format!("series-{i}"),
                    vec![(1.0, 1.0 + i as f64), (16.0, 2.0)],
                )
            })
            .collect();
        let svg = line_chart("t", "x", "y", &series, true, true);
        let colour = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        for (i, c) in PALETTE.iter().take(8).enumerate() {
            assert!(
                svg.contains(&colour(*c)),
                "series {i}'s colour missing: {svg}"
            );
        }
        // The legend's text starts in the column right of the plot.
        let at = svg
            .find("\nseries-0\n</text>")
            .unwrap_or_else(|| panic!("no legend text: {svg}"));
        let tag = &svg[svg[..at].rfind("<text").expect("a text element")..at];
        let x: i32 = tag
            .split("x=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|x| x.parse().ok())
            .expect("the text's x");
        assert!(x > 900, "legend text at x = {x}: {tag}");
        // A series given palette entry 9 is drawn in it, first or not.
        let svg = line_chart(
            "t",
            "x",
            "y",
            &[Series::line("only", vec![(1.0, 1.0), (2.0, 2.0)]).with_colour(9)],
            false,
            false,
        );
        assert!(svg.contains(&colour(PALETTE[9])), "{svg}");
        assert!(!svg.contains(&colour(PALETTE[0])), "{svg}");
    }

    /// Points a log axis cannot show are left out of the line, not drawn
    /// off the chart; the rest are joined in order of x.
    #[test]
    fn line_chart_leaves_out_what_a_log_axis_cannot_show() {
        let svg = line_chart(
            "t",
            "x",
            "y",
            &[Series::line(
                "s",
                vec![(16.0, 2.0), (1.0, 0.0), (4.0, 1.0), (2.0, f64::NAN)],
            )],
            true,
            true,
        );
        assert_eq!(
            svg.matches("<circle").count(),
            2 + 1,
            "two points and the legend's: {svg}"
        );
        assert!(!svg.contains("-2147483648"), "{svg}");
    }
}
