//! A schedule timeline as SVG: one lane per logical CPU, a coloured bar per stretch a task ran.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A stretch of time one task held a CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    pub lane: usize,
    pub start_s: f64,
    pub end_s: f64,
    pub label: String,
}

/// A distinct, stable colour for a label.
fn colour(label: &str) -> RGBColor {
    let mut h: u32 = 2166136261;
    for b in label.bytes() {
        h = (h ^ b as u32).wrapping_mul(16777619);
    }
    let hue = (h % 360) as f64;
    let (c, x) = (0.6, 0.6 * (1.0 - ((hue / 60.0) % 2.0 - 1.0).abs()));
    let (r, g, b) = match (hue / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let to = |v: f64| ((v + 0.3) * 255.0).min(255.0) as u8;
    RGBColor(to(r), to(g), to(b))
}

/// Renders `segments` on `lanes` lanes between `t0_s` and `t1_s`.
pub fn timeline_svg(
    segments: &[Segment],
    lanes: usize,
    lane_names: &[String],
    t0_s: f64,
    t1_s: f64,
    title: &str,
) -> Result<String, String> {
    let (w, lane_h, left, top) = (1000u32, 36u32, 70u32, 50u32);
    let mut labels: Vec<&str> = segments.iter().map(|s| s.label.as_str()).collect();
    labels.sort();
    labels.dedup();
    let legend_rows = labels.len().div_ceil(6) as u32;
    let h = top + lanes as u32 * lane_h + 40 + legend_rows * 18;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let font = |px: u32| ("sans-serif", px).into_font();
        root.draw(&Text::new(title.to_string(), (10, 15), font(15)))
            .map_err(|e| e.to_string())?;
        let span = (t1_s - t0_s).max(1e-12);
        let x_of = |t: f64| {
            left as i32 + (((t - t0_s) / span).clamp(0.0, 1.0) * (w - left - 20) as f64) as i32
        };
        for lane in 0..lanes {
            let y = (top + lane as u32 * lane_h) as i32;
            let name = lane_names
                .get(lane)
                .cloned()
                .unwrap_or_else(|| format!("cpu {lane}"));
            root.draw(&Text::new(
                name,
                (left as i32 - 6, y + lane_h as i32 / 2),
                TextStyle::from(font(11)).pos(Pos::new(HPos::Right, VPos::Center)),
            ))
            .map_err(|e| e.to_string())?;
            root.draw(&Rectangle::new(
                [(left as i32, y + 4), (w as i32 - 20, y + lane_h as i32 - 4)],
                RGBColor(240, 240, 240).filled(),
            ))
            .map_err(|e| e.to_string())?;
        }
        for s in segments
            .iter()
            .filter(|s| s.end_s > t0_s && s.start_s < t1_s)
        {
            let y = (top + s.lane as u32 * lane_h) as i32;
            let (x0, x1) = (x_of(s.start_s), x_of(s.end_s).max(x_of(s.start_s) + 1));
            root.draw(&Rectangle::new(
                [(x0, y + 4), (x1, y + lane_h as i32 - 4)],
                colour(&s.label).filled(),
            ))
            .map_err(|e| e.to_string())?;
        }
        let axis_y = (top + lanes as u32 * lane_h + 14) as i32;
        for k in 0..=4 {
            let t = t0_s + span * k as f64 / 4.0;
            root.draw(&Text::new(
                format!("{t:.2} s"),
                (x_of(t), axis_y),
                TextStyle::from(font(10)).pos(Pos::new(HPos::Center, VPos::Center)),
            ))
            .map_err(|e| e.to_string())?;
        }
        for (i, l) in labels.iter().enumerate() {
            let (row, col) = (i / 6, i % 6);
            let (x, y) = (
                left as i32 + col as i32 * 150,
                axis_y + 20 + row as i32 * 18,
            );
            root.draw(&Rectangle::new(
                [(x, y - 6), (x + 12, y + 6)],
                colour(l).filled(),
            ))
            .map_err(|e| e.to_string())?;
            root.draw(&Text::new(
                l.to_string(),
                (x + 16, y),
                TextStyle::from(font(11)).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_a_bar_per_visible_segment_and_a_legend_entry_per_task() {
        let seg = |lane, a, b, l: &str| Segment {
            lane,
            start_s: a,
            end_s: b,
            label: l.into(),
        };
        let segs = vec![
            seg(0, 0.0, 0.5, "gzip"),
            seg(1, 0.0, 1.0, "mcf"),
            seg(0, 0.5, 1.0, "mcf"),
            seg(0, 5.0, 6.0, "art"),
        ];
        let svg = timeline_svg(&segs, 2, &["cpu 2".into(), "cpu 3".into()], 0.0, 1.0, "t").unwrap();
        // Background + 2 lane backgrounds + 3 visible bars + 3 legend swatches.
        assert_eq!(svg.matches("<rect").count(), 1 + 2 + 3 + 3);
        assert!(svg.contains("cpu 3") && svg.contains("gzip"));
    }
}
