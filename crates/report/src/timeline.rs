//! A schedule timeline as SVG: one lane per logical CPU, a coloured bar per stretch a task ran.

use crate::palette::{ink_on, text_width_px, CATEGORIES};
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

/// A colour per label, in the order of the sorted labels: distinct for up to 24 (beyond, the
/// colours repeat and the label drawn in each bar wide enough tells them apart).
fn colours<'a>(labels: &[&'a str]) -> std::collections::BTreeMap<&'a str, RGBColor> {
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| (*l, CATEGORIES[i % CATEGORIES.len()]))
        .collect()
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
    let colour = colours(&labels);
    // The legend: as many columns as the longest label allows.
    let entry_w = 16
        + labels
            .iter()
            .map(|l| text_width_px(l, 11))
            .max()
            .unwrap_or(0)
        + 14;
    let per_row = ((w - left - 20) / entry_w).max(1) as usize;
    let legend_rows = labels.len().div_ceil(per_row) as u32;
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
            let fill = colour[s.label.as_str()];
            root.draw(&Rectangle::new(
                [(x0, y + 4), (x1, y + lane_h as i32 - 4)],
                fill.filled(),
            ))
            .map_err(|e| e.to_string())?;
            if (x1 - x0) as u32 > text_width_px(&s.label, 10) + 4 {
                let ink = ink_on(fill);
                let style = TextStyle::from(font(10))
                    .color(&ink)
                    .pos(Pos::new(HPos::Center, VPos::Center));
                let centre = ((x0 + x1) / 2, y + lane_h as i32 / 2);
                root.draw(&Text::new(s.label.clone(), centre, style))
                    .map_err(|e| e.to_string())?;
            }
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
            let (row, col) = (i / per_row, i % per_row);
            let (x, y) = (
                left as i32 + (col as u32 * entry_w) as i32,
                axis_y + 20 + row as i32 * 18,
            );
            root.draw(&Rectangle::new(
                [(x, y - 6), (x + 12, y + 6)],
                colour[l].filled(),
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

    #[test]
    fn twenty_four_tasks_get_twenty_four_colours_and_long_bars_their_names() {
        let segs: Vec<Segment> = (0..24)
            .map(|i| Segment {
                lane: i % 2,
                start_s: (i / 2) as f64,
                end_s: (i / 2 + 1) as f64,
                label: format!("task-{i:02} ({i})"),
            })
            .collect();
        let svg =
            timeline_svg(&segs, 2, &["cpu 0".into(), "cpu 1".into()], 0.0, 12.0, "t").unwrap();
        let fills: std::collections::BTreeSet<&str> = svg
            .split("<rect")
            .skip(4) // the background and the two lanes
            .filter_map(|r| r.split("fill=\"").nth(1)?.split('"').next())
            .collect();
        assert_eq!(fills.len(), 24, "{fills:?}");
        // Each bar is 1/12 of about 900 px wide: room for its label (twice: bar and legend).
        assert_eq!(svg.matches(">\ntask-07 (7)\n</text>").count(), 2);
    }
}
