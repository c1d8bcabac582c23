//! The sweep's plot (plotters, SVG or PNG): retranslations, modeled TM5600 seconds and
//! measured host seconds per key, one bar per configuration (median over its runs, whiskers min–max), the
//! legend in the table's order.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;

use super::plot::{Format, load_font};
use super::*;

/// One line of the table (and one bar of the plot): the runs of one configuration.
pub struct Group<'a> {
    /// Key (with ASLR, threshold, capacity and workload, the configuration).
    pub key: &'a str,
    /// The `--aslr` value.
    pub aslr: &'a str,
    /// Threshold.
    pub threshold: u32,
    /// Translation-cache capacity in bytes.
    pub tc_size_bytes: u64,
    /// Workload.
    pub workload: &'a str,
    /// Its runs, in seed order.
    pub rows: Vec<&'a Row>,
}

impl Group<'_> {
    /// Whether `r` is a run of this configuration.
    fn holds(&self, r: &Row) -> bool {
        self.key == r.key
            && self.aslr == r.aslr
            && self.threshold == r.threshold
            && self.tc_size_bytes == r.tc_size_bytes
            && self.workload == r.workload
    }
}

/// Rows grouped by configuration, in the order of their first row.
pub fn groups(rows: &[Row]) -> Vec<Group<'_>> {
    let mut gs: Vec<Group> = Vec::new();
    for r in rows {
        match gs.iter_mut().find(|g| g.holds(r)) {
            Some(g) => g.rows.push(r),
            None => gs.push(Group {
                key: &r.key,
                aslr: &r.aslr,
                threshold: r.threshold,
                tc_size_bytes: r.tc_size_bytes,
                workload: &r.workload,
                rows: vec![r],
            }),
        }
    }
    gs
}

const SIZE: (u32, u32) = (1000, 1200);
const LEGEND_W: u32 = 250;

/// Colours of the bars, in legend order (distinguishable, also in grey).
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4c, 0x72, 0xb0),
    RGBColor(0xdd, 0x84, 0x52),
    RGBColor(0x55, 0xa8, 0x68),
    RGBColor(0xc4, 0x4e, 0x52),
    RGBColor(0x81, 0x72, 0xb3),
    RGBColor(0x93, 0x78, 0x60),
    RGBColor(0xda, 0x8b, 0xc3),
    RGBColor(0x8c, 0x8c, 0x8c),
    RGBColor(0xcc, 0xb9, 0x74),
    RGBColor(0x64, 0xb5, 0xcd),
];

/// Draws the plot of `gs` (the table's groups, in its order) to `path`.
pub fn plot(gs: &[Group], path: &Path, f: Format) -> anyhow::Result<()> {
    load_font()?;
    let r = match f {
        Format::Svg => draw(SVGBackend::new(path, SIZE).into_drawing_area(), gs),
        Format::Png => draw(BitMapBackend::new(path, SIZE).into_drawing_area(), gs),
    };
    r.with_context(|| format!("cannot draw the plot {}", path.display()))
}

fn err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// One series of bars: a configuration other than the key.
struct Series {
    label: String,
    aslr: String,
    threshold: u32,
    tc_size_bytes: u64,
    workload: String,
}

impl Series {
    /// Whether `g` is this series' configuration (under some key).
    fn is(&self, g: &Group) -> bool {
        g.aslr == self.aslr
            && g.threshold == self.threshold
            && g.tc_size_bytes == self.tc_size_bytes
            && g.workload == self.workload
    }
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, gs: &[Group]) -> anyhow::Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let mut keys: Vec<&str> = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    let many = |f: &dyn Fn(&Group) -> String| gs.iter().map(f).collect::<BTreeSet<_>>().len() > 1;
    let (by_threshold, by_workload) = (many(&|g| g.threshold.to_string()), many(&|g| g.workload.to_string()));
    let by_tc_size = many(&|g| g.tc_size_bytes.to_string());
    for g in gs {
        if !keys.contains(&g.key) {
            keys.push(g.key);
        }
        if !series.iter().any(|s| s.is(g)) {
            let mut label = format!("aslr {}", g.aslr);
            if by_threshold {
                label += &format!(", threshold {}", g.threshold);
            }
            if by_tc_size {
                label += &format!(", tc {}", super::plan::fmt_size(g.tc_size_bytes));
            }
            if by_workload {
                label += &format!(", {}", g.workload);
            }
            series.push(Series {
                label,
                aslr: g.aslr.into(),
                threshold: g.threshold,
                tc_size_bytes: g.tc_size_bytes,
                workload: g.workload.into(),
            });
        }
    }
    let runs = gs.iter().map(|g| g.rows.len()).max().unwrap_or(0);
    let whiskers = if runs > 1 { format!("median of {runs} seeds, whiskers min–max") } else { "one seed".into() };
    let (plots, legend) = root.split_horizontally(SIZE.0 - LEGEND_W);
    let rows = plots.split_evenly((3, 1));
    let title = format!("Blocks translated again ({whiskers})");
    panel(&rows[0], gs, &keys, &series, &title, "retranslations / blocks", |r| r.retranslations as f64)?;
    let title = format!("Modeled TM5600 time ({whiskers})");
    panel(&rows[1], gs, &keys, &series, &title, "modeled time / s", |r| r.modeled_s)?;
    let title = format!("Measured host time, wall clock ({whiskers})");
    panel(&rows[2], gs, &keys, &series, &title, "host real time / s", |r| r.real_s)?;
    legend.draw(&Text::new("configuration", (10, 40), ("sans-serif", 15).into_font())).map_err(err)?;
    for (j, s) in series.iter().enumerate() {
        let y = 66 + 22 * j as i32;
        let c = PALETTE[j % PALETTE.len()];
        legend.draw(&Rectangle::new([(10, y), (24, y + 14)], c.filled())).map_err(err)?;
        legend.draw(&Text::new(s.label.clone(), (32, y), ("sans-serif", 13).into_font())).map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// The x axis: one unit per key, the key's name at the middle of its unit.
struct KeyAxis(usize);

impl Ranged for KeyAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let n = self.0.max(1) as f64;
        limit.0 + ((v / n) * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        (0..self.0).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        0.0..self.0 as f64
    }
}

/// An axis tick: integers without decimals, others with at most six.
fn tick(v: f64) -> String {
    if v == v.round() {
        format!("{v:.0}")
    } else {
        format!("{v:.6}").trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Min, median and max of `val` over a group's runs.
fn spread(g: &Group, val: fn(&Row) -> f64) -> (f64, f64, f64) {
    let mut v: Vec<f64> = g.rows.iter().map(|r| val(r)).collect();
    let m = median(&mut v);
    (v[0], m, v[v.len() - 1])
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    gs: &[Group],
    keys: &[&str],
    series: &[Series],
    title: &str,
    ydesc: &str,
    val: fn(&Row) -> f64,
) -> anyhow::Result<()> {
    let ymax = gs.iter().map(|g| spread(g, val).2).fold(0.0, f64::max);
    let ytop = if ymax > 0.0 { ymax * 1.08 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(78)
        .build_cartesian_2d(KeyAxis(keys.len()), 0.0..ytop)
        .map_err(err)?;
    let key_label = |x: &f64| keys.get((x - 0.5).round().max(0.0) as usize).map_or(String::new(), |k| k.to_string());
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_max_light_lines(1)
        .x_labels(keys.len())
        .x_label_formatter(&key_label)
        .y_label_formatter(&|y| tick(*y))
        .x_desc("translation-cache key")
        .y_desc(ydesc)
        .axis_desc_style(("sans-serif", 15))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    let slot = 0.8 / series.len().max(1) as f64;
    for (j, s) in series.iter().enumerate() {
        let color = PALETTE[j % PALETTE.len()];
        // (x0, x1, min, median, max) of this series' bar for each key it has.
        let bars: Vec<(f64, f64, f64, f64, f64)> = keys
            .iter()
            .enumerate()
            .filter_map(|(i, k)| {
                let g = gs.iter().find(|g| g.key == *k && s.is(g))?;
                let (lo, med, hi) = spread(g, val);
                let x0 = i as f64 + 0.1 + slot * j as f64;
                Some((x0 + slot * 0.05, x0 + slot * 0.95, lo, med, hi))
            })
            .collect();
        chart
            .draw_series(bars.iter().map(|b| Rectangle::new([(b.0, 0.0), (b.1, b.3)], color.filled())))
            .map_err(err)?;
        // A zero bar would be invisible: a thick line on the axis shows it is there.
        chart
            .draw_series(
                bars.iter()
                    .filter(|b| b.3 == 0.0)
                    .map(|b| PathElement::new(vec![(b.0, 0.0), (b.1, 0.0)], color.stroke_width(4))),
            )
            .map_err(err)?;
        chart
            .draw_series(
                bars.iter()
                    .filter(|b| b.4 > b.2)
                    .map(|b| ErrorBar::new_vertical((b.0 + b.1) / 2.0, b.2, b.3, b.4, BLACK.stroke_width(1), 6)),
            )
            .map_err(err)?;
    }
    Ok(())
}
