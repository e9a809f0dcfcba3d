//! Line charts: one line per series over a shared x axis, e.g. the performance ratio per window
//! through a run against each background (thesis Figs. 3.9–3.17).

use plotters::prelude::*;

/// Colour-blind-safe palette (Okabe–Ito), cycled.
const PALETTE: [RGBColor; 8] = crate::palette::OKABE_ITO;

/// An SVG of `series` (label, y per point at x = 0, 1, …) with a legend; non-finite points are
/// left out.
pub fn lines_svg(
    series: &[(String, Vec<f64>)],
    title: &str,
    x_label: &str,
    y_label: &str,
) -> Result<String, String> {
    let points = series.iter().map(|(_, ys)| ys.len()).max().unwrap_or(0);
    let finite: Vec<f64> = series
        .iter()
        .flat_map(|(_, ys)| ys.iter().copied())
        .filter(|y| y.is_finite())
        .collect();
    if points < 2 || finite.is_empty() {
        return Err("a line chart needs at least two finite points".into());
    }
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.05).max(1e-3);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .caption(title, ("sans-serif", 16))
            .x_label_area_size(34)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..(points - 1) as f64, (lo - pad)..(hi + pad))
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .draw()
            .map_err(|e| e.to_string())?;
        for (k, (label, ys)) in series.iter().enumerate() {
            let colour = PALETTE[k % PALETTE.len()];
            let line = ys
                .iter()
                .enumerate()
                .filter(|(_, y)| y.is_finite())
                .map(|(x, &y)| (x as f64, y));
            chart
                .draw_series(LineSeries::new(line, colour.stroke_width(1)))
                .map_err(|e| e.to_string())?
                .label(label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_one_path_per_series_with_its_label() {
        let series = vec![
            ("with mcf".to_string(), vec![0.5, 0.6, 0.55]),
            ("with art".to_string(), vec![0.7, f64::NAN, 0.8]),
        ];
        let svg = lines_svg(&series, "vortex", "window", "PR").unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("with mcf") && svg.contains("with art"));
        // Two data lines and two legend marks.
        assert!(svg.matches("<polyline").count() >= 2, "{svg}");
        assert!(lines_svg(&[("x".into(), vec![1.0])], "t", "x", "y").is_err());
    }
}
