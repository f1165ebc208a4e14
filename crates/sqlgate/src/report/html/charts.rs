//! The report's charts, drawn with plotters' SVG backend into strings the page inlines. Text
//! stays SVG text (no font is loaded: plotters' naive metrics lay it out), and plotters
//! XML-escapes every label it writes, so a tag value or a family name cannot break out of it.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Series colours, in order (colour-blind safe: Okabe and Ito's palette).
const PALETTE: [RGBColor; 4] = [
    RGBColor(0x00, 0x72, 0xb2),
    RGBColor(0xe6, 0x9f, 0x00),
    RGBColor(0x00, 0x9e, 0x73),
    RGBColor(0xcc, 0x79, 0xa7),
];
/// The colour of a failed or risky quantity.
const ALERT: RGBColor = RGBColor(0xd5, 0x5e, 0x00);
const FONT: &str = "sans-serif";
const WIDTH: u32 = 640;
/// Category labels longer than this are cut (the table beside the chart has them whole).
const LABEL_CHARS: usize = 28;

/// One bar: a value and, when known, an interval around it.
#[derive(Debug, Clone, Copy)]
pub struct Bar {
    /// The bar's length.
    pub value: f64,
    /// A 95% interval (or another range) drawn as a whisker.
    pub interval: Option<(f64, f64)>,
}

impl Bar {
    /// A bar without an interval.
    pub fn of(value: f64) -> Bar {
        Bar {
            value,
            interval: None,
        }
    }
}

/// A category: its label and one bar per series (`None`: no value for that series).
#[derive(Debug, Clone)]
pub struct Group {
    /// The category's label, on the left.
    pub label: String,
    /// One bar per series, in series order.
    pub bars: Vec<Option<Bar>>,
}

/// Horizontal bars, one group per category and one bar per series in each.
pub struct BarChart<'a> {
    /// Above the chart.
    pub title: &'a str,
    /// Under the value axis.
    pub axis: &'a str,
    /// Series names (a legend is drawn when there are several).
    pub series: &'a [&'a str],
    /// The categories, top to bottom.
    pub groups: Vec<Group>,
    /// The value axis' range; `None` fits the values (and 0).
    pub range: Option<(f64, f64)>,
    /// Decimals of the values written at the bars' ends.
    pub decimals: usize,
    /// A vertical dashed line (a threshold), with its label.
    pub reference: Option<(f64, String)>,
}

/// Draws `chart` as an SVG document.
pub fn bars(chart: &BarChart) -> String {
    let rows: usize = chart.groups.len().max(1) * chart.series.len().max(1);
    let height = (70 + rows * 18 + chart.groups.len() * 8) as u32;
    let label_chars = chart
        .groups
        .iter()
        .map(|g| g.label.chars().count().min(LABEL_CHARS))
        .max()
        .unwrap_or(4);
    let label_width = (label_chars as u32 * 7 + 12).max(40);
    draw(WIDTH, height, |root| {
        let values = chart
            .groups
            .iter()
            .flat_map(|g| g.bars.iter().flatten())
            .flat_map(|b| {
                [
                    Some(b.value),
                    b.interval.map(|i| i.0),
                    b.interval.map(|i| i.1),
                ]
            })
            .flatten();
        let reference = chart.reference.as_ref().map(|r| r.0);
        let (low, high) = chart
            .range
            .unwrap_or_else(|| padded(values.chain([0.0]).chain(reference)));
        let n = chart.groups.len() as f64;
        let mut plot = ChartBuilder::on(root)
            .caption(chart.title, (FONT, 15))
            .margin(8)
            .margin_right(40)
            .x_label_area_size(34)
            .y_label_area_size(label_width)
            .build_cartesian_2d(low..high, 0.0..n.max(1.0))?;
        plot.configure_mesh()
            .disable_y_mesh()
            .light_line_style(TRANSPARENT)
            .y_labels(0)
            .x_desc(chart.axis)
            .x_label_formatter(&|v| trim_number(*v, 2))
            .label_style((FONT, 11))
            .draw()?;
        let slot = 0.8 / chart.series.len().max(1) as f64;
        let base = 0.0_f64.clamp(low, high);
        for (s, name) in chart.series.iter().enumerate() {
            let color = PALETTE[s % PALETTE.len()];
            let placed: Vec<(f64, Bar)> = chart
                .groups
                .iter()
                .enumerate()
                .filter_map(|(g, group)| {
                    let bar = (*group.bars.get(s)?)?;
                    Some((n - g as f64 - 0.1 - s as f64 * slot, bar))
                })
                .collect();
            let drawn = plot.draw_series(placed.iter().map(|(top, bar)| {
                let value = bar.value.clamp(low, high);
                Rectangle::new([(base, *top), (value, top - slot * 0.85)], color.filled())
            }))?;
            if chart.series.len() > 1 {
                drawn.label(*name).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
            }
            plot.draw_series(placed.iter().filter_map(|(top, bar)| {
                let (from, to) = bar.interval?;
                Some(ErrorBar::new_horizontal(
                    top - slot * 0.425,
                    from.clamp(low, high),
                    bar.value.clamp(low, high),
                    to.clamp(low, high),
                    BLACK.stroke_width(1),
                    6,
                ))
            }))?;
            plot.draw_series(placed.iter().map(|(top, bar)| {
                Text::new(
                    trim_number(bar.value, chart.decimals),
                    (bar.value.clamp(low, high), top - slot * 0.425),
                    TextStyle::from((FONT, 11).into_font()).pos(Pos::new(HPos::Left, VPos::Center)),
                )
            }))?;
        }
        if let Some((value, label)) = &chart.reference {
            let top = n.max(1.0);
            plot.draw_series(DashedLineSeries::new(
                [(*value, 0.0), (*value, top)],
                6,
                4,
                ALERT.stroke_width(2),
            ))?;
            plot.draw_series([Text::new(
                label.clone(),
                (*value, top),
                TextStyle::from((FONT, 11).into_font()).pos(Pos::new(HPos::Left, VPos::Top)),
            )])?;
        }
        if chart.series.len() > 1 {
            plot.configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .label_font((FONT, 11))
                .position(SeriesLabelPosition::LowerRight)
                .draw()?;
        }
        let style =
            TextStyle::from((FONT, 12).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
        for (g, group) in chart.groups.iter().enumerate() {
            let (x, y) = plot.backend_coord(&(low, n - g as f64 - 0.5));
            root.draw(&Text::new(cut(&group.label), (x - 6, y), style.clone()))?;
        }
        Ok(())
    })
}

/// A line through `points` (x ascending), with a dashed horizontal `reference` line and the
/// `marks` (a point and its label) highlighted.
pub struct LineChart<'a> {
    /// Above the chart.
    pub title: &'a str,
    /// Under the x axis.
    pub x_axis: &'a str,
    /// Beside the y axis.
    pub y_axis: &'a str,
    /// The line's points.
    pub points: Vec<(f64, f64)>,
    /// Points to mark, with their labels.
    pub marks: Vec<(f64, f64, String)>,
    /// A horizontal line (a threshold, RS = 0), with its label.
    pub reference: Option<(f64, String)>,
    /// Labels of the x axis' whole numbers (runs of a history), instead of numbers.
    pub x_names: Vec<String>,
}

/// Draws `chart` as an SVG document.
pub fn line(chart: &LineChart) -> String {
    draw(WIDTH, 280, |root| {
        let xs = chart.points.iter().map(|p| p.0);
        let (x_low, x_high) = match (
            xs.clone().fold(f64::INFINITY, f64::min),
            xs.fold(f64::NEG_INFINITY, f64::max),
        ) {
            (low, high) if low < high => (low, high),
            (low, _) if low.is_finite() => (low - 1.0, low + 1.0),
            _ => (0.0, 1.0),
        };
        let ys = chart
            .points
            .iter()
            .map(|p| p.1)
            .chain(chart.reference.as_ref().map(|r| r.0));
        let (y_low, y_high) = padded(ys);
        let mut plot = ChartBuilder::on(root)
            .caption(chart.title, (FONT, 15))
            .margin(10)
            .margin_right(24)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(x_low..x_high, y_low..y_high)?;
        let names = &chart.x_names;
        let by_name = |x: &f64| {
            let at = x.round();
            if (x - at).abs() > 1e-9 || at < 0.0 {
                return String::new();
            }
            names.get(at as usize).map(|n| cut(n)).unwrap_or_default()
        };
        let by_number = |x: &f64| trim_number(*x, 2);
        let mut mesh = plot.configure_mesh();
        mesh.x_desc(chart.x_axis)
            .light_line_style(TRANSPARENT)
            .y_desc(chart.y_axis)
            .y_label_formatter(&|v| trim_number(*v, 2))
            .label_style((FONT, 11));
        if names.is_empty() {
            mesh.x_label_formatter(&by_number);
        } else {
            mesh.x_labels(names.len()).x_label_formatter(&by_name);
        }
        mesh.draw()?;
        if let Some((value, label)) = &chart.reference {
            let dashed = DashedLineSeries::new(
                [(x_low, *value), (x_high, *value)],
                6,
                4,
                ALERT.stroke_width(1),
            );
            plot.draw_series(dashed)?;
            plot.draw_series([Text::new(
                label.clone(),
                (x_low, *value),
                TextStyle::from((FONT, 11).into_font()).pos(Pos::new(HPos::Left, VPos::Bottom)),
            )])?;
        }
        plot.draw_series(LineSeries::new(
            chart.points.iter().copied(),
            PALETTE[0].stroke_width(2),
        ))?;
        plot.draw_series(
            chart
                .points
                .iter()
                .map(|p| Circle::new(*p, 3, PALETTE[0].filled())),
        )?;
        for (x, y, label) in &chart.marks {
            plot.draw_series([Circle::new((*x, *y), 5, ALERT.filled())])?;
            plot.draw_series([Text::new(
                label.clone(),
                (*x, *y),
                TextStyle::from((FONT, 11).into_font()).pos(Pos::new(HPos::Left, VPos::Top)),
            )])?;
        }
        Ok(())
    })
}

/// Points in the unit square, each a circle whose area grows with how many cases share it.
pub struct Scatter<'a> {
    /// Above the chart.
    pub title: &'a str,
    /// Under the x axis.
    pub x_axis: &'a str,
    /// Beside the y axis.
    pub y_axis: &'a str,
    /// `(x, y, cases)`.
    pub points: Vec<(f64, f64, usize)>,
}

/// Draws `chart` as an SVG document.
pub fn scatter(chart: &Scatter) -> String {
    draw(420, 400, |root| {
        let mut plot = ChartBuilder::on(root)
            .caption(chart.title, (FONT, 15))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(-0.02..1.02, -0.02..1.02)?;
        plot.configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_desc(chart.x_axis)
            .y_desc(chart.y_axis)
            .label_style((FONT, 11))
            .draw()?;
        plot.draw_series(chart.points.iter().map(|&(x, y, cases)| {
            let radius = (3.0 * (cases as f64).sqrt()).min(24.0) as u32;
            Circle::new((x, y), radius.max(3), PALETTE[0].mix(0.55).filled())
        }))?;
        Ok(())
    })
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Runs `paint` on a fresh white SVG canvas and returns the document. Plotters fails only on
/// a backend error, which a string backend never has; should it, the chart says so in place.
fn draw(
    width: u32,
    height: u32,
    paint: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> DrawResult,
) -> String {
    let mut svg = String::new();
    let outcome = {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| e.to_string())
            .and_then(|()| paint(&root).map_err(|e| e.to_string()))
            .and_then(|()| root.present().map_err(|e| e.to_string()))
    };
    match outcome {
        // Inline in HTML, an SVG needs no namespace: the page names no outside address.
        Ok(()) => svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1),
        Err(error) => format!(
            "<svg viewBox=\"0 0 {width} 40\"><text x=\"8\" y=\"24\">chart not drawn: {}</text></svg>",
            xml_escape(&error)
        ),
    }
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A range holding every value, with a margin; `(0, 1)` when there is none.
fn padded(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (low, high) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !low.is_finite() {
        return (0.0, 1.0);
    }
    let span = (high - low).max(high.abs().max(1e-9) * 0.1);
    (low - span * 0.08, high + span * 0.12)
}

fn cut(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        label.to_string()
    } else {
        let kept: String = label.chars().take(LABEL_CHARS - 1).collect();
        format!("{kept}…")
    }
}

/// `0.75`, `12.5`, `3`: at most `decimals` decimals, no trailing zeros.
fn trim_number(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    match text {
        "-0" => "0".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_no_namespace_is_named() {
        let svg = bars(&BarChart {
            title: "EX by <category>",
            axis: "EX",
            series: &["EX"],
            groups: vec![Group {
                label: "</svg><script>alert(1)</script>".to_string(),
                bars: vec![Some(Bar::of(0.5))],
            }],
            range: Some((0.0, 1.0)),
            decimals: 3,
            reference: None,
        });
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(!svg.contains("<script"), "{svg}");
        assert!(svg.contains("&lt;script&gt;"), "{svg}");
        assert!(!svg.contains("http://"), "{svg}");
        assert!(svg.contains("EX by &lt;category&gt;"), "{svg}");
    }

    #[test]
    fn numbers_are_written_compactly() {
        assert_eq!(trim_number(0.5, 3), "0.5");
        assert_eq!(trim_number(3.0, 2), "3");
        assert_eq!(trim_number(-0.0001, 2), "0");
        assert_eq!(trim_number(120.0, 0), "120");
    }

    #[test]
    fn a_range_holds_its_values() {
        let (low, high) = padded([-20.0, 80.0].into_iter());
        assert!(low < -20.0 && high > 80.0);
        assert_eq!(padded(std::iter::empty()), (0.0, 1.0));
    }
}
