//! Box-and-whisker plots as the thesis draws the speedups of its pairs (Figs. 3.2 and 3.6, after
//! Tuck and Tullsen): per category (a subject program) one box per series (a placement), side by
//! side. The box spans the quartiles with the median across it, the whiskers reach the most
//! extreme values within 1.5 IQR of the box, and values beyond them are crosses.

use crate::palette::{text_width_px, OKABE_ITO};
use crate::stats::Summary;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Tukey's marks of one sample.
#[derive(Clone, Debug, PartialEq)]
pub struct Tukey {
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    /// The most extreme values within 1.5 IQR below the first and above the third quartile.
    pub whisker_low: f64,
    pub whisker_high: f64,
    /// The values beyond the whiskers.
    pub outliers: Vec<f64>,
}

impl Tukey {
    /// The marks of the finite values of `values`; `None` if there are none.
    pub fn of(values: &[f64]) -> Option<Tukey> {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let s = Summary::of(&finite)?;
        let (low_fence, high_fence) = (s.q1 - 1.5 * s.iqr, s.q3 + 1.5 * s.iqr);
        let inside = || {
            finite
                .iter()
                .copied()
                .filter(|&v| (low_fence..=high_fence).contains(&v))
        };
        Some(Tukey {
            q1: s.q1,
            median: s.median,
            q3: s.q3,
            whisker_low: inside().fold(f64::INFINITY, f64::min),
            whisker_high: inside().fold(f64::NEG_INFINITY, f64::max),
            outliers: finite
                .iter()
                .copied()
                .filter(|&v| !(low_fence..=high_fence).contains(&v))
                .collect(),
        })
    }
}

/// One category: its name and a sample per series (in the order of the series names).
pub struct BoxGroup {
    pub name: String,
    pub samples: Vec<Vec<f64>>,
}

const LABEL_PX: u32 = 11;
/// Width of one box, and the gap between categories.
const BOX_PX: u32 = 16;
const GAP_PX: u32 = 14;

/// An SVG of `groups` with a box per series in each; `series` names them (a legend when more
/// than one). Categories with no finite values get no box.
pub fn boxplot_svg(
    groups: &[BoxGroup],
    series: &[String],
    title: &str,
    y_label: &str,
) -> Result<String, String> {
    let marks: Vec<Vec<Option<Tukey>>> = groups
        .iter()
        .map(|g| g.samples.iter().map(|s| Tukey::of(s)).collect())
        .collect();
    let all = || marks.iter().flatten().flatten();
    let lo = all()
        .map(|t| t.outliers.iter().fold(t.whisker_low, |a, &b| a.min(b)))
        .fold(f64::INFINITY, f64::min);
    let hi = all()
        .map(|t| t.outliers.iter().fold(t.whisker_high, |a, &b| a.max(b)))
        .fold(f64::NEG_INFINITY, f64::max);
    if !(lo.is_finite() && hi.is_finite()) {
        return Err("a box plot needs at least one finite value".into());
    }
    let pad = ((hi - lo) * 0.06).max(1e-3);
    let k = series.len().max(1);
    let per_group = BOX_PX * k as u32 + GAP_PX;
    let name_w = groups
        .iter()
        .map(|g| text_width_px(&g.name, LABEL_PX))
        .max()
        .unwrap_or(0);
    let legend_h = if k > 1 { 22 } else { 0 };
    let width = (90 + per_group * groups.len() as u32).max(420);
    let height = 330 + name_w + legend_h;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (plot, legend) = root.split_vertically(height - legend_h);
        let mut chart = ChartBuilder::on(&plot)
            .margin(12)
            .caption(title, ("sans-serif", 16))
            .x_label_area_size(name_w + 12)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..groups.len() as f64, (lo - pad)..(hi + pad))
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(y_label)
            .draw()
            .map_err(|e| e.to_string())?;
        // Category names under their boxes, rotated to read upwards.
        let upwards = TextStyle::from(("sans-serif", LABEL_PX).into_font())
            .transform(FontTransform::Rotate270)
            .pos(Pos::new(HPos::Right, VPos::Center));
        for (i, g) in groups.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(i as f64 + 0.5, lo - pad));
            root.draw(&Text::new(g.name.clone(), (x, y + 6), upwards.clone()))
                .map_err(|e| e.to_string())?;
        }
        for (i, per_series) in marks.iter().enumerate() {
            for (j, t) in per_series.iter().enumerate() {
                let Some(t) = t else { continue };
                // Boxes fill 80% of the category, side by side.
                let left = i as f64 + 0.1 + 0.8 * j as f64 / k as f64;
                let right = left + 0.8 / k as f64;
                draw_box(&mut chart, t, left, right, OKABE_ITO[j % OKABE_ITO.len()])?;
            }
        }
        if k > 1 {
            draw_legend(&legend, series)?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

fn draw_box(
    chart: &mut Chart,
    t: &Tukey,
    left: f64,
    right: f64,
    colour: RGBColor,
) -> Result<(), String> {
    let mid = (left + right) / 2.0;
    let ink = BLACK.stroke_width(1);
    let lines = [
        vec![(left, t.median), (right, t.median)],
        vec![(mid, t.q3), (mid, t.whisker_high)],
        vec![(mid, t.q1), (mid, t.whisker_low)],
        vec![
            (mid - 0.15 * (right - left), t.whisker_high),
            (mid + 0.15 * (right - left), t.whisker_high),
        ],
        vec![
            (mid - 0.15 * (right - left), t.whisker_low),
            (mid + 0.15 * (right - left), t.whisker_low),
        ],
    ];
    chart
        .draw_series([
            Rectangle::new([(left, t.q1), (right, t.q3)], colour.mix(0.45).filled()),
            Rectangle::new([(left, t.q1), (right, t.q3)], colour.stroke_width(1)),
        ])
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(lines.into_iter().map(|l| PathElement::new(l, ink)))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(
            t.outliers
                .iter()
                .map(|&v| Cross::new((mid, v), 3, colour.stroke_width(1))),
        )
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// A swatch and a name per series, in a row.
fn draw_legend(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    series: &[String],
) -> Result<(), String> {
    let style = TextStyle::from(("sans-serif", LABEL_PX).into_font())
        .pos(Pos::new(HPos::Left, VPos::Center));
    let mut x = 72;
    for (j, name) in series.iter().enumerate() {
        let colour = OKABE_ITO[j % OKABE_ITO.len()];
        area.draw(&Rectangle::new(
            [(x, 5), (x + 12, 17)],
            colour.mix(0.45).filled(),
        ))
        .map_err(|e| e.to_string())?;
        area.draw(&Rectangle::new(
            [(x, 5), (x + 12, 17)],
            colour.stroke_width(1),
        ))
        .map_err(|e| e.to_string())?;
        area.draw(&Text::new(name.clone(), (x + 18, 11), style.clone()))
            .map_err(|e| e.to_string())?;
        x += 30 + text_width_px(name, LABEL_PX) as i32;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1..=9 and 30: quartiles (type 7) 3.25, 5.5, 7.75, IQR 4.5, fences -3.5 and 14.5; the
    /// whiskers stop at 1 and 9 and 30 is the one outlier.
    #[test]
    fn whiskers_stop_within_one_and_a_half_iqr_and_the_rest_are_outliers() {
        let v = [30.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, f64::NAN];
        let t = Tukey::of(&v).unwrap();
        assert_eq!((t.q1, t.median, t.q3), (3.25, 5.5, 7.75));
        assert_eq!((t.whisker_low, t.whisker_high), (1.0, 9.0));
        assert_eq!(t.outliers, vec![30.0]);
        assert!(Tukey::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn one_box_per_series_and_category_and_a_cross_per_outlier() {
        let groups = vec![
            BoxGroup {
                name: "gzip".into(),
                samples: vec![vec![1.0, 1.1, 1.2, 1.3, 2.5], vec![1.8, 1.9]],
            },
            BoxGroup {
                name: "mcf".into(),
                samples: vec![vec![0.8, 0.9], vec![]],
            },
        ];
        let series = vec!["siblings".to_string(), "cores".to_string()];
        let svg = boxplot_svg(&groups, &series, "t", "system speedup").unwrap();
        assert!(svg.starts_with("<svg"));
        for name in ["gzip", "mcf", "siblings", "cores"] {
            assert!(svg.contains(name), "{name} missing");
        }
        // Three boxes (the empty sample has none), each a filled and an outlined rectangle,
        // plus two legend swatches of two rectangles each.
        let rects = svg.matches("<rect").count();
        assert_eq!(rects, 1 + 3 * 2 + 2 * 2, "{svg}");
        // gzip's 2.5 lies beyond 1.3 + 1.5 x 0.2: one cross, two strokes in the first colour;
        // no other sample has an outlier.
        let crosses = |colour: &str| {
            svg.matches(&format!("<line opacity=\"1\" stroke=\"{colour}\""))
                .count()
        };
        assert_eq!((crosses("#0072B2"), crosses("#E69F00")), (2, 0), "{svg}");
        assert!(boxplot_svg(&[], &series, "t", "y").is_err());
    }
}
