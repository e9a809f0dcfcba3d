//! Bars with error bars per placement: throughput on the left, p99 latency on the right
//! (`measure server`).

use plotters::prelude::*;

/// One placement's bars: (mean, sd) of each quantity; no sd (and no whisker) for one repetition,
/// whose spread is unknown.
#[derive(Clone, Debug, PartialEq)]
pub struct PlacementBar {
    pub name: String,
    pub throughput: (f64, Option<f64>),
    pub p99_ms: (f64, Option<f64>),
    pub throughput_label: String,
    pub latency_label: String,
}

/// Two bar charts side by side, one bar per placement, each with its ±sd whisker.
pub fn placement_svg(rows: &[PlacementBar], title: &str) -> Result<String, String> {
    if rows.is_empty() {
        return Err("no placements to draw".into());
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let root = root
            .titled(title, ("sans-serif", 18))
            .map_err(|e| e.to_string())?;
        let (left, right) = root.split_horizontally(450);
        let panels = [
            (left, rows[0].throughput_label.clone(), true),
            (right, rows[0].latency_label.clone(), false),
        ];
        for (area, label, throughput) in panels {
            let value = |r: &PlacementBar| if throughput { r.throughput } else { r.p99_ms };
            let top = rows
                .iter()
                .map(|r| value(r).0 + value(r).1.unwrap_or(0.0))
                .fold(0.0f64, f64::max)
                .max(1e-9)
                * 1.15;
            let n = rows.len() as i32;
            let mut chart = ChartBuilder::on(&area)
                .margin(12)
                .caption(&label, ("sans-serif", 14))
                .x_label_area_size(30)
                .y_label_area_size(60)
                .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..top)
                .map_err(|e| e.to_string())?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_label_formatter(&|x| match x {
                    SegmentValue::CenterOf(i) => rows
                        .get(*i as usize)
                        .map_or(String::new(), |r| r.name.clone()),
                    _ => String::new(),
                })
                .draw()
                .map_err(|e| e.to_string())?;
            // Okabe-Ito blue and vermilion: distinguishable with any colour vision.
            let colour = if throughput {
                RGBColor(0, 114, 178)
            } else {
                RGBColor(213, 94, 0)
            };
            chart
                .draw_series(rows.iter().enumerate().map(|(i, r)| {
                    let i = i as i32;
                    let mut bar = Rectangle::new(
                        [
                            (SegmentValue::Exact(i), 0.0),
                            (SegmentValue::Exact(i + 1), value(r).0),
                        ],
                        colour.filled(),
                    );
                    bar.set_margin(0, 0, 12, 12);
                    bar
                }))
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
                    let (m, sd) = value(r);
                    sd.map(|sd| {
                        ErrorBar::new_vertical(
                            SegmentValue::CenterOf(i as i32),
                            (m - sd).max(0.0),
                            m,
                            m + sd,
                            BLACK.stroke_width(1),
                            10,
                        )
                    })
                }))
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// One bar per row at its mean with a whisker over its 95% interval (clipped to the axis when
/// unbounded: one repetition), e.g. each policy's system speedup over the seeds.
pub fn interval_svg(
    rows: &[(String, crate::verdict::MeanInterval)],
    title: &str,
    y_label: &str,
) -> Result<String, String> {
    if rows.is_empty() {
        return Err("no bars to draw".into());
    }
    let finite = |v: f64, fallback: f64| if v.is_finite() { v } else { fallback };
    let top = rows
        .iter()
        .map(|(_, i)| finite(i.hi, i.mean))
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.15;
    let mut svg = String::new();
    {
        let width = (160 + 70 * rows.len() as u32).max(420);
        let root = SVGBackend::with_string(&mut svg, (width, 360)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let n = rows.len() as i32;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .caption(title, ("sans-serif", 16))
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..top)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc(y_label)
            .x_label_formatter(&|x| match x {
                SegmentValue::CenterOf(i) => {
                    rows.get(*i as usize).map_or(String::new(), |r| r.0.clone())
                }
                _ => String::new(),
            })
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, (_, v))| {
                let i = i as i32;
                let mut bar = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), v.mean),
                    ],
                    RGBColor(0, 114, 178).filled(),
                );
                bar.set_margin(0, 0, 10, 10);
                bar
            }))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, (_, v))| {
                ErrorBar::new_vertical(
                    SegmentValue::CenterOf(i as i32),
                    finite(v.lo, 0.0).max(0.0),
                    v.mean,
                    finite(v.hi, top).min(top),
                    BLACK.stroke_width(1),
                    10,
                )
            }))
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bar_and_one_whisker_per_placement_and_quantity() {
        let bar = |name: &str, spread: bool| PlacementBar {
            name: name.into(),
            throughput: (1000.0, spread.then_some(50.0)),
            p99_ms: (2.0, spread.then_some(0.1)),
            throughput_label: "requests/s".into(),
            latency_label: "p99 ms".into(),
        };
        let row = |name: &str| bar(name, true);
        let svg = placement_svg(&[row("UP"), row("1xHTP"), row("1x2")], "t").unwrap();
        // Whiskers only where a spread is known: giving one more row a spread adds the same
        // black strokes each time (the axes are alike: the tallest whisker is the same).
        let black = |spread: [bool; 3]| {
            let rows: Vec<_> = ["UP", "1xHTP", "1x2"]
                .iter()
                .zip(spread)
                .map(|(n, s)| bar(n, s))
                .collect();
            placement_svg(&rows, "t")
                .unwrap()
                .matches("#000000")
                .count()
        };
        let one = black([true, false, false]);
        let two = black([true, true, false]);
        assert!(two > one);
        assert_eq!(black([true; 3]) - two, two - one);
        for name in ["UP", "1xHTP", "1x2", "requests/s", "p99 ms"] {
            assert!(svg.contains(name), "{name} missing");
        }
        // Bars in the two colours: three each.
        assert_eq!(svg.matches("#0072B2").count(), 3);
        assert_eq!(svg.matches("#D55E00").count(), 3);
        assert!(placement_svg(&[], "t").is_err());
    }

    #[test]
    fn interval_bars_name_each_row() {
        use crate::verdict::MeanInterval;
        let rows = vec![
            (
                "naive".to_string(),
                MeanInterval::of(&[1.2, 1.3, 1.25]).unwrap(),
            ),
            ("plan".to_string(), MeanInterval::of(&[1.4]).unwrap()),
        ];
        let svg = interval_svg(&rows, "system speedup", "speedup").unwrap();
        for name in ["naive", "plan", "system speedup"] {
            assert!(svg.contains(name), "{name} missing");
        }
        assert_eq!(svg.matches("#0072B2").count(), 2);
        assert!(interval_svg(&[], "t", "y").is_err());
        // One row is one bar (the axis has as many slots as rows).
        let one = interval_svg(&rows[..1], "t", "y").unwrap();
        assert_eq!(one.matches("#0072B2").count(), 1);
    }
}
