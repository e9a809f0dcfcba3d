//! Bars with error bars per placement: throughput on the left, p99 latency on the right
//! (`measure server`).

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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
    let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let root = root
            .titled(title, ("sans-serif", 18))
            .map_err(|e| e.to_string())?;
        let (left, right) = root.split_horizontally(450);
        // Okabe-Ito blue and vermilion: distinguishable with any colour vision.
        let panels = [
            (left, &rows[0].throughput_label, true, RGBColor(0, 114, 178)),
            (right, &rows[0].latency_label, false, RGBColor(213, 94, 0)),
        ];
        for (area, label, throughput, colour) in panels {
            let bars: Vec<Bar> = rows
                .iter()
                .map(|r| {
                    let (m, sd) = if throughput { r.throughput } else { r.p99_ms };
                    Bar {
                        value: m,
                        whisker: sd.map(|sd| ((m - sd).max(0.0), m + sd)),
                    }
                })
                .collect();
            let panel = Panel {
                caption: (label, 14),
                y_label: "",
                colour,
            };
            draw_bars(&area, &panel, &names, &bars)?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// One bar: its height and, if known, the span of its whisker.
struct Bar {
    value: f64,
    whisker: Option<(f64, f64)>,
}

/// What a panel of bars says and how it looks.
struct Panel<'a> {
    caption: (&'a str, u32),
    y_label: &'a str,
    colour: RGBColor,
}

type Area<'b> = DrawingArea<SVGBackend<'b>, plotters::coord::Shift>;

/// A bar per name, from 0 up to its value, with its whisker; the names under the bars. The axis
/// has a slot per bar and no more.
fn draw_bars(area: &Area, panel: &Panel, names: &[String], bars: &[Bar]) -> Result<(), String> {
    // An unbounded whisker (one repetition) reaches the axis's end, which the rest decide.
    let top = bars
        .iter()
        .map(|b| match b.whisker {
            Some((_, hi)) if hi.is_finite() => hi.max(b.value),
            _ => b.value,
        })
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.15;
    let n = bars.len() as f64;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .caption(panel.caption.0, ("sans-serif", panel.caption.1))
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..n, 0.0..top)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(panel.y_label)
        .draw()
        .map_err(|e| e.to_string())?;
    let centre = |i: usize| i as f64 + 0.5;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            let (x0, x1) = (i as f64 + 0.15, i as f64 + 0.85);
            Rectangle::new([(x0, 0.0), (x1, b.value)], panel.colour.filled())
        }))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
            let (lo, hi) = b.whisker?;
            let (lo, hi) = (lo.max(0.0), hi.min(top));
            Some(ErrorBar::new_vertical(
                centre(i),
                lo,
                b.value,
                hi,
                BLACK.stroke_width(1),
                10,
            ))
        }))
        .map_err(|e| e.to_string())?;
    let under =
        TextStyle::from(("sans-serif", 12).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    // The chart gives canvas pixels; the area draws relative to its own corner.
    let (left, top_px) = area.get_base_pixel();
    for (i, name) in names.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(centre(i), 0.0));
        area.draw(&Text::new(
            name.clone(),
            (x - left, y - top_px + 6),
            under.clone(),
        ))
        .map_err(|e| e.to_string())?;
    }
    Ok(())
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
    let names: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    let bars: Vec<Bar> = rows
        .iter()
        .map(|(_, i)| Bar {
            value: i.mean,
            whisker: Some((i.lo, i.hi)),
        })
        .collect();
    let mut svg = String::new();
    {
        let width = (160 + 70 * rows.len() as u32).max(420);
        let root = SVGBackend::with_string(&mut svg, (width, 360)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let panel = Panel {
            caption: (title, 16),
            y_label,
            colour: RGBColor(0, 114, 178),
        };
        draw_bars(&root, &panel, &names, &bars)?;
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
        // Each name under its bar in both panels: left of the 450 px split, then right of it,
        // above the canvas's 420 px bottom.
        for name in ["UP", "1xHTP", "1x2"] {
            let at: Vec<(i32, i32)> = svg
                .split(&format!(">\n{name}\n</text>"))
                .take(2)
                .map(|before| {
                    let tag = before.rsplit("<text x=\"").next().unwrap();
                    let (x, rest) = tag.split_once('"').unwrap();
                    let y = rest.split("y=\"").nth(1).unwrap();
                    (
                        x.parse().unwrap(),
                        y[..y.find('"').unwrap()].parse().unwrap(),
                    )
                })
                .collect();
            assert!(
                at[0].0 < 450 && (450..900).contains(&at[1].0),
                "{name}: {at:?}"
            );
            assert!(at.iter().all(|&(_, y)| y < 420), "{name}: {at:?}");
        }
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
        // One row is one bar filling most of the plot (420 px less the 12 px margins and the
        // 60 px axis): the axis has a slot per row and no empty one after the last, which would
        // halve it.
        let width = |svg: &str| -> f64 {
            let bar = svg.split("fill=\"#0072B2\"").next().unwrap();
            let w = bar.rsplit("width=\"").next().unwrap();
            w[..w.find('"').unwrap()].parse().unwrap()
        };
        let one = interval_svg(&rows[..1], "t", "y").unwrap();
        assert_eq!(one.matches("#0072B2").count(), 1);
        assert!(width(&one) > 0.6 * (420.0 - 24.0 - 60.0), "{one}");
    }
}
