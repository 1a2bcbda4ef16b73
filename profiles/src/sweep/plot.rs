//! The sweep's SVG plots (plotters) and its progress bar (indicatif): the `plots` feature, on by
//! default; without it `--plot` is refused and progress is a line of text.

use super::Point;
#[cfg(feature = "plots")]
use super::Series;
use std::path::Path;

/// Progress on a terminal: a bar over the points (indicatif) with the current step.
pub(super) struct Bar {
    #[cfg(feature = "plots")]
    bar: Option<indicatif::ProgressBar>,
    #[cfg(not(feature = "plots"))]
    on: bool,
}

#[cfg(feature = "plots")]
impl Bar {
    pub(super) fn new(points: usize, on: bool) -> Self {
        let bar = on.then(|| {
            let b =
                indicatif::ProgressBar::with_draw_target(Some(points as u64), indicatif::ProgressDrawTarget::stderr());
            if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} points, {elapsed}  {msg}")
            {
                b.set_style(style);
            }
            b
        });
        Self { bar }
    }
    pub(super) fn start(&self, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
        }
    }
    pub(super) fn detail(&self, what: &str, msg: &str) {
        if let Some(b) = &self.bar {
            b.set_message(format!("{what}: {msg}"));
        }
    }
    pub(super) fn done(&self) {
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }
    pub(super) fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(not(feature = "plots"))]
impl Bar {
    pub(super) fn new(_points: usize, on: bool) -> Self {
        Self { on }
    }
    pub(super) fn start(&self, what: &str) {
        self.detail(what, "");
    }
    pub(super) fn detail(&self, what: &str, msg: &str) {
        if self.on {
            eprint!("\r\x1b[2K{what}: {msg}");
        }
    }
    pub(super) fn done(&self) {}
    pub(super) fn finish(&self) {
        if self.on {
            eprint!("\r\x1b[2K");
        }
    }
}

/// Plots every series run: per series, frame times (top) and ratios (bottom) against the swept
/// variable, log-log.
#[cfg(feature = "plots")]
pub(super) fn plot(points: &[Point], path: &Path) -> Result<(), String> {
    use plotters::prelude::*;
    let e = |e: &dyn std::fmt::Display| format!("plotting {}: {e}", path.display());
    let series: Vec<Series> = Series::ALL.into_iter().filter(|s| points.iter().any(|p| p.series == *s)).collect();
    let root = SVGBackend::new(path, (420 * series.len() as u32, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let columns = root.split_evenly((2, series.len()));
    let colors = [RGBColor(0x1f, 0x77, 0xb4), RGBColor(0xd6, 0x27, 0x28), RGBColor(0x2c, 0xa0, 0x2c)];
    for (i, &s) in series.iter().enumerate() {
        let pts: Vec<&Point> = points.iter().filter(|p| p.series == s).collect();
        let baseline = pts[0].baseline();
        let times: Vec<(&str, Vec<(f64, f64)>)> = vec![
            ("kernel", pts.iter().map(|p| (p.x, p.frame_ms)).collect()),
            (baseline, pts.iter().map(|p| (p.x, p.baseline_ms)).collect()),
        ];
        let mut ratios: Vec<(&str, Vec<(f64, f64)>)> = vec![(
            if s == Series::Connections { "sharing (per connection / shared)" } else { "speedup vs reference" },
            pts.iter().map(|p| (p.x, p.speedup)).collect(),
        )];
        if s != Series::Connections {
            ratios
                .push(("fraction of memcmp", pts.iter().filter_map(|p| Some((p.x, p.fraction_of_memcmp?))).collect()));
        }
        for (row, (title, lines)) in [("frame time, ms (median)", times), ("ratio", ratios)].into_iter().enumerate() {
            let area = &columns[row * series.len() + i];
            let positive = |v: &(f64, f64)| v.0 > 0.0 && v.1 > 0.0 && v.1.is_finite();
            let all: Vec<(f64, f64)> = lines.iter().flat_map(|(_, l)| l.iter().copied()).filter(positive).collect();
            if all.is_empty() {
                continue;
            }
            let (x0, x1) = all.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
            let (y0, y1) = all.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
            let mut chart = ChartBuilder::on(area)
                .caption(format!("{}: {title}", s.name()), ("sans-serif", 16))
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(56)
                // Room above the lines for the legend.
                .build_cartesian_2d((x0 * 0.8..x1 * 1.25).log_scale(), (y0 * 0.7..y1 * 4.0).log_scale())
                .map_err(|x| e(&x))?;
            chart
                .configure_mesh()
                .x_desc(s.axis())
                .y_labels(6)
                .light_line_style(WHITE)
                .x_label_formatter(&|v| format!("{v}"))
                .y_label_formatter(&|v| short(*v))
                .draw()
                .map_err(|x| e(&x))?;
            for (k, (name, line)) in lines.iter().enumerate() {
                let color = colors[k % colors.len()];
                let line: Vec<(f64, f64)> = line.iter().copied().filter(positive).collect();
                chart
                    .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                    .map_err(|x| e(&x))?
                    .label(*name)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
                chart.draw_series(line.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(|x| e(&x))?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(|x| e(&x))?;
        }
    }
    root.present().map_err(|x| e(&x))
}

/// A number for an axis label: three significant digits at most, no trailing zeros.
#[cfg(feature = "plots")]
fn short(v: f64) -> String {
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else if v >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(not(feature = "plots"))]
pub(super) fn plot(_points: &[Point], path: &Path) -> Result<(), String> {
    Err(format!("{}: this shadowrep was built without plots (the `plots` feature)", path.display()))
}

#[cfg(all(test, feature = "plots"))]
mod tests {
    use super::short;

    #[test]
    fn axis_labels_are_short() {
        assert_eq!(short(100.0), "100");
        assert_eq!(short(12.5), "12.5");
        assert_eq!(short(2.0), "2");
        assert_eq!(short(0.125), "0.125");
        assert_eq!(short(0.1), "0.1");
    }
}
