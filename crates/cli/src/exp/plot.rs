//! The seed plot, drawn with plotters (SVG or PNG): host-measured real seconds (native
//! and morph) on the left, modeled TM5600 seconds on the right with the 2005 figures
//! marked; bars are medians, whiskers the min–max over the runs; groups in table order.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::Summary;
use super::seed::REPORT_2005;

/// The image format.
#[derive(Clone, Copy)]
pub enum Format {
    /// Scalable vector graphics.
    Svg,
    /// A bitmap.
    Png,
}

const OFF: RGBColor = RGBColor(70, 130, 180);
const ON: RGBColor = RGBColor(230, 120, 40);
const SIZE: (u32, u32) = (1200, 540);

fn err<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("plot {}: {e}", path.display())
}

/// TrueType fonts tried for the plot's text ($MORPH_FONT first).
const FONTS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
];

/// Registers a system font as plotters' "sans-serif" (plotters lays out text with it,
/// for SVG and PNG alike; ab_glyph reads the file, no fontconfig or freetype).
pub fn load_font() -> anyhow::Result<()> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        let env = std::env::var("MORPH_FONT").ok();
        for p in env.iter().map(String::as_str).chain(FONTS.iter().copied()) {
            let Ok(bytes) = std::fs::read(p) else { continue };
            // Plotters keeps fonts for the process's lifetime: this one is read once.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return Ok(());
            }
        }
        Err(format!(
            "no TrueType font for the plot's text (tried $MORPH_FONT and {}; install fonts-dejavu-core)",
            FONTS.join(", ")
        ))
    })
    .clone()
    .map_err(anyhow::Error::msg)
}

/// Draws the seed plot of `cells` into `path`.
/// `footer` (what made the numbers) goes under the panels.
pub fn seed_plot(path: &Path, cells: &[Summary], footer: &str, f: Format) -> anyhow::Result<()> {
    load_font()?;
    match f {
        Format::Svg => draw(SVGBackend::new(path, SIZE).into_drawing_area(), cells, footer).map_err(err(path)),
        Format::Png => {
            let area = BitMapBackend::new(path, SIZE).into_drawing_area();
            draw(area, cells, footer).map_err(err(path))
        }
    }
}

/// One panel's values: per group, the off and on cells' (min, median, max).
type Bars = Vec<(String, [Option<(f64, f64, f64)>; 2])>;

fn groups(cells: &[Summary], value: fn(&Summary) -> Option<(f64, f64, f64)>) -> Bars {
    let mut out: Bars = Vec::new();
    for c in cells {
        // Short names under the bars (the table's `morph, key K` is `K` here).
        let label = if c.native { "native".to_string() } else { c.key.clone() };
        let Some(v) = value(c) else { continue };
        let slot = if c.aslr == "0" { 0 } else { 1 };
        match out.iter_mut().find(|(l, _)| *l == label) {
            Some((_, b)) => b[slot] = Some(v),
            None => {
                let mut b = [None, None];
                b[slot] = Some(v);
                out.push((label, b));
            }
        }
    }
    out
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, cells: &[Summary], footer: &str) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let (title, rest) = root.split_vertically(40);
    let (body, foot) = rest.split_vertically(SIZE.1 - 40 - 22);
    foot.draw(&Text::new(footer.to_string(), (10, 4), ("sans-serif", 11).into_font().color(&RGBColor(90, 90, 90))))
        .map_err(e)?;
    title
        .draw(&Text::new(
            "Seed workload (guests/seed/seed.sh): ASLR off vs on; bars = median, whiskers = min-max over the runs",
            (10, 12),
            ("sans-serif", 17).into_font(),
        ))
        .map_err(e)?;
    let (left, right) = body.split_horizontally(SIZE.0 / 2);
    let host = groups(cells, |c| Some((c.real_range.0, c.real_s, c.real_range.1)));
    panel(&root, &left, &host, "Measured on this host", "real time, seconds (host)", &[])?;
    let modeled = groups(cells, |c| (!c.native).then_some((c.modeled_range.0, c.modeled_s, c.modeled_range.1)));
    let [real, _, _] = REPORT_2005;
    let marks = [("2005 TM5600, ASLR off", real.1, OFF), ("2005 TM5600, ASLR on", real.2, ON)];
    panel(
        &root,
        &right,
        &modeled,
        "Modeled 533 MHz Crusoe TM5600 (cost model)",
        "modeled time, seconds (TM5600)",
        &marks,
    )?;
    root.present().map_err(e)?;
    Ok(())
}

/// A panel of grouped bars with whiskers and optional horizontal reference lines.
fn panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    area: &DrawingArea<DB, Shift>,
    bars: &Bars,
    caption: &str,
    y_desc: &str,
    marks: &[(&str, f64, RGBColor)],
) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    let n = bars.len().max(1) as f64;
    let top = bars
        .iter()
        .flat_map(|(_, b)| b.iter().flatten().map(|v| v.2))
        .chain(marks.iter().map(|m| m.1))
        .fold(0.1f64, f64::max)
        * 1.45; // room for the legend above the highest bar or mark
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 15))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..n, 0f64..top)
        .map_err(e)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .x_desc("native, or morph with key K (as in the table)")
        .y_desc(y_desc)
        .draw()
        .map_err(e)?;
    for (slot, (color, name)) in [(OFF, "ASLR off"), (ON, "ASLR on")].into_iter().enumerate() {
        let x0 = |i: usize| i as f64 + 0.12 + 0.39 * slot as f64;
        let rects = bars.iter().enumerate().filter_map(|(i, (_, b))| {
            b[slot].map(|(_, med, _)| Rectangle::new([(x0(i), 0.0), (x0(i) + 0.36, med)], color.filled()))
        });
        chart
            .draw_series(rects)
            .map_err(e)?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        let whiskers = bars.iter().enumerate().filter_map(|(i, (_, b))| {
            b[slot].map(|(lo, med, hi)| ErrorBar::new_vertical(x0(i) + 0.18, lo, med, hi, BLACK.stroke_width(1), 8))
        });
        chart.draw_series(whiskers).map_err(e)?;
        let above = TextStyle::from(("sans-serif", 11).into_font()).pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Bottom,
        ));
        let values = bars.iter().enumerate().filter_map(|(i, (_, b))| {
            b[slot].map(|(_, med, hi)| Text::new(format!("{med:.2}"), (x0(i) + 0.18, hi + top * 0.01), above.clone()))
        });
        chart.draw_series(values).map_err(e)?;
    }
    for &(label, v, color) in marks {
        chart
            .draw_series(DashedLineSeries::new([(0.0, v), (n, v)], 6, 4, color.stroke_width(2)))
            .map_err(e)?
            .label(format!("{label}: {v} s"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 12, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    // Group names under the axis, centred on their pair of bars.
    let style = TextStyle::from(("sans-serif", 13).into_font()).pos(plotters::style::text_anchor::Pos::new(
        plotters::style::text_anchor::HPos::Center,
        plotters::style::text_anchor::VPos::Top,
    ));
    // Many groups: every other name one line lower, so that neighbours do not overlap.
    let stagger = bars.len() > 5;
    for (i, (label, _)) in bars.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        let dy = if stagger && i % 2 == 1 { 22 } else { 6 };
        root.draw(&Text::new(label.clone(), (px, py + dy), style.clone())).map_err(e)?;
    }
    Ok(())
}
