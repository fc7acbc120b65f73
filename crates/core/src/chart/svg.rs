//! Drawing a planned chart as SVG, with the plotters library's SVG backend. Text from the data
//! (titles, column names, categories) is escaped by the backend; no script, no external
//! reference: the SVG is safe to show in a page or hand to a client as an image.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{civil_from_days, Chart, TimeUnit, XAxis};

const WIDTH: u32 = 720;
const HEIGHT: u32 = 420;
/// Characters of a category's label written beside its bar (longer ones end in `…`).
const LABEL_CHARS: usize = 32;
/// The report's and the answers' series colors, in order.
const COLORS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

type Failure = String;

/// The chart as an SVG document.
pub fn svg(chart: &Chart) -> String {
    let mut out = String::new();
    let drawn = match &chart.x {
        XAxis::Categories(names) => {
            let (height, draw) = bars(chart, names);
            let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
            draw(&root).and_then(|()| root.present().map_err(|e| e.to_string()))
        }
        XAxis::Time { unit, points } => {
            let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
            lines(&root, chart, *unit, points).and_then(|()| root.present().map_err(|e| e.to_string()))
        }
    };
    match drawn {
        Ok(()) => out,
        // Drawing fails only on coordinates it cannot place (NaN): say so in the picture.
        Err(e) => format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"40\"><text x=\"8\" y=\"24\">no chart: {}</text></svg>",
            escape(&e)
        ),
    }
}

/// A line chart of numeric x against y, one line per series, as the DBA report draws its
/// scores: `y_range` fixes the y axis (the report's scores lie in [0, 1]).
pub fn line_svg(title: &str, x_label: &str, series: &[(String, Vec<(f64, f64)>)], y_range: Option<(f64, f64)>) -> String {
    let mut xs: Vec<f64> = series.iter().flat_map(|(_, p)| p.iter().map(|(x, _)| *x)).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let mut out = String::new();
    let drawn = {
        let root = SVGBackend::with_string(&mut out, (WIDTH * 4 / 5, HEIGHT * 4 / 5)).into_drawing_area();
        let ys = series.iter().flat_map(|(_, p)| p.iter().map(|(_, y)| *y));
        let (y0, y1) = y_range.map_or_else(|| y_bounds(ys), |(lo, hi)| drawable(lo, hi));
        draw_lines(&root, title, x_label, "", &xs, (y0, y1), series, &|x: &f64| number(*x))
            .and_then(|()| root.present().map_err(|e| e.to_string()))
    };
    match drawn {
        Ok(()) => out,
        Err(e) => format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"40\"><text x=\"8\" y=\"24\">{}</text></svg>",
            escape(&e)
        ),
    }
}

fn lines(root: &DrawingArea<SVGBackend, Shift>, chart: &Chart, unit: TimeUnit, points: &[f64]) -> Result<(), Failure> {
    let series: Vec<(String, Vec<(f64, f64)>)> = chart
        .series
        .iter()
        .map(|s| (s.name.clone(), points.iter().zip(&s.values).filter_map(|(x, y)| y.map(|y| (*x, y))).collect()))
        .collect();
    let ys = series.iter().flat_map(|(_, p)| p.iter().map(|(_, y)| *y));
    let y_desc = if chart.series.len() == 1 { chart.series[0].name.as_str() } else { "" };
    match unit {
        TimeUnit::Number => draw_lines(root, &chart.title, &chart.x_label, y_desc, points, y_bounds(ys), &series, &|x: &f64| {
            let x = *x;
            // Whole units only (no "2020.5" between two years).
            if x.fract() == 0.0 {
                number(x)
            } else {
                String::new()
            }
        }),
        TimeUnit::Days => {
            let whole_days = points.iter().all(|d| d.fract() == 0.0);
            let months = whole_days && points.iter().all(|&d| civil_from_days(d as i64).2 == 1);
            let span = points.last().unwrap_or(&0.0) - points.first().unwrap_or(&0.0);
            draw_lines(root, &chart.title, &chart.x_label, y_desc, points, y_bounds(ys), &series, &move |x: &f64| {
                let x = *x;
                let (y, m, d) = civil_from_days(x.floor() as i64);
                if months {
                    format!("{y}-{m:02}")
                } else if whole_days || span > 3.0 {
                    format!("{y}-{m:02}-{d:02}")
                } else {
                    let minutes = ((x - x.floor()) * 1440.0).round() as i64;
                    format!("{m:02}-{d:02} {:02}:{:02}", minutes / 60, minutes % 60)
                }
            })
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn draw_lines(
    root: &DrawingArea<SVGBackend, Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    xs: &[f64],
    (y0, y1): (f64, f64),
    series: &[(String, Vec<(f64, f64)>)],
    x_format: &dyn Fn(&f64) -> String,
) -> Result<(), Failure> {
    let e = |e: DrawingAreaErrorKind<_>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let (x0, x1) = drawable(xs.first().copied().unwrap_or(0.0), xs.last().copied().unwrap_or(1.0));
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_labels(xs.len().clamp(2, 10))
        .y_labels(6)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(x_format)
        .y_label_formatter(&|y| number(*y))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()
        .map_err(e)?;
    for (i, (name, points)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))
            .map_err(e)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        if points.len() <= 60 {
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(e)?;
        }
    }
    if series.len() > 1 {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(0xbb, 0xbb, 0xbb))
            .draw()
            .map_err(e)?;
    }
    Ok(())
}

/// Bars lie across, one row per category, first row on top: every category's label is
/// written in full beside its bar, however many there are.
fn bars<'a>(chart: &'a Chart, names: &'a [String]) -> (u32, impl Fn(&DrawingArea<SVGBackend, Shift>) -> Result<(), Failure> + 'a) {
    let n = names.len();
    let height = (90 + 26 * n as u32 * chart.series.len().max(1) as u32).max(240);
    let draw = move |root: &DrawingArea<SVGBackend, Shift>| {
        let e = |e: DrawingAreaErrorKind<_>| e.to_string();
        root.fill(&WHITE).map_err(e)?;
        let xs = chart.series.iter().flat_map(|s| s.values.iter().flatten().copied());
        let (x0, x1) = y_bounds(xs);
        let longest = names.iter().map(|s| s.chars().count().min(LABEL_CHARS)).max().unwrap_or(4);
        let mut plot = ChartBuilder::on(root)
            .caption(chart.title.as_str(), ("sans-serif", 18))
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size((longest as f64 * 6.5 + 16.0).clamp(40.0, 240.0) as u32)
            .build_cartesian_2d(x0..x1, -0.5f64..(n as f64 - 0.5))
            .map_err(e)?;
        // Row i (0 on top) sits at y = n - 1 - i.
        let label = |y: &f64| {
            let r = y.round();
            if (y - r).abs() > 1e-6 || r < 0.0 || r as usize >= n {
                return String::new();
            }
            shorten(&names[n - 1 - r as usize], LABEL_CHARS)
        };
        let x_desc = if chart.series.len() == 1 { chart.series[0].name.as_str() } else { "" };
        plot.configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .x_labels(6)
            .y_desc(chart.x_label.as_str())
            .x_desc(x_desc)
            .y_label_formatter(&label)
            .x_label_formatter(&|x| number(*x))
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw()
            .map_err(e)?;
        let k = chart.series.len() as f64;
        let band = 0.8 / k;
        for (j, s) in chart.series.iter().enumerate() {
            let color = COLORS[j % COLORS.len()];
            let top = |i: usize| (n - 1 - i) as f64 + 0.4 - j as f64 * band;
            plot.draw_series(
                s.values
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| v.map(|v| (i, v)))
                    .map(|(i, v)| Rectangle::new([(0.0f64.clamp(x0, x1), top(i)), (v, top(i) - band * 0.92)], color.filled())),
            )
            .map_err(e)?
            .label(s.name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        }
        if chart.series.len() > 1 {
            plot.configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(0xbb, 0xbb, 0xbb))
                .draw()
                .map_err(e)?;
        }
        Ok(())
    };
    (height, draw)
}

/// The y axis: from 0 (or the lowest value, when below 0) to a little above the highest.
fn y_bounds(ys: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = ys.filter(|y| y.is_finite()).fold((0.0f64, 0.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let pad = (hi - lo) * 0.08;
    drawable(if lo < 0.0 { lo - pad } else { lo }, if hi > 0.0 { hi + pad } else { hi })
}

/// A range plotters can lay ticks on: finite, wider than the precision of its numbers (a range
/// narrower than that, or infinite, makes its tick loop run forever), widened around a single
/// value; (0, 1) when the numbers cannot be drawn at all ([`super::plan`] refuses those).
pub(super) fn drawable(lo: f64, hi: f64) -> (f64, f64) {
    let magnitude = lo.abs().max(hi.abs());
    let (lo, hi) = if hi - lo <= magnitude * 1e-9 {
        let w = magnitude * 0.1 + 0.5;
        (lo - w, hi + w)
    } else {
        (lo, hi)
    };
    if lo.is_finite() && hi.is_finite() && (hi - lo).is_finite() && hi > lo {
        (lo, hi)
    } else {
        (0.0, 1.0)
    }
}

/// A number as an axis label: whole numbers plainly, large ones with k/M, others with up to
/// three decimals.
fn number(x: f64) -> String {
    let a = x.abs();
    let trim = |s: String| if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    if a >= 1e9 {
        trim(format!("{:.2}", x / 1e9)) + "G"
    } else if a >= 1e6 {
        trim(format!("{:.2}", x / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.1}", x / 1e3)) + "k"
    } else if x.fract() == 0.0 {
        format!("{}", x as i64)
    } else {
        trim(format!("{x:.3}"))
    }
}

fn shorten(s: &str, room: usize) -> String {
    if s.chars().count() <= room {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(room.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
