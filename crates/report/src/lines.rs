//! Line charts: one line per series over a shared x axis, e.g. the performance ratio per window
//! through a run against each background (thesis Figs. 3.9–3.17).

/// Where a chart's legend goes (see [`Axes`]).
pub use plotters::prelude::SeriesLabelPosition;
use plotters::prelude::*;

/// Colour-blind-safe palette (Okabe–Ito), cycled.
const PALETTE: [RGBColor; 8] = crate::palette::OKABE_ITO;

/// An SVG of `series` (label, y per point at x = 0, 1, …), with a legend when there are two or
/// more; non-finite points are left out.
pub fn lines_svg(
    series: &[(String, Vec<f64>)],
    title: &str,
    x_label: &str,
    y_label: &str,
) -> Result<String, String> {
    let points: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(label, ys)| {
            let xy = ys.iter().enumerate().map(|(x, &y)| (x as f64, y)).collect();
            (label.clone(), xy)
        })
        .collect();
    let axes = Axes {
        title,
        x_label,
        y_label,
        x_names: None,
        legend: SeriesLabelPosition::MiddleRight,
    };
    xy_svg(&points, &axes)
}

/// What a line chart's axes say.
pub struct Axes<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// Names for x = 0, 1, … (categories in order, such as cache sizes) instead of numbers;
    /// each point is then marked.
    pub x_names: Option<&'a [String]>,
    /// Where the legend goes (a chart of one series has none: its title and axes say what the
    /// line is).
    pub legend: SeriesLabelPosition,
}

/// An SVG of `series` (label, (x, y) points in order), with a legend when there are two or more;
/// points with a non-finite coordinate are left out.
pub fn xy_svg(series: &[(String, Vec<(f64, f64)>)], axes: &Axes) -> Result<String, String> {
    let finite: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|(_, p)| p.iter().copied())
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let span = |v: &mut dyn Iterator<Item = f64>| {
        v.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        })
    };
    let (x_lo, x_hi) = span(&mut finite.iter().map(|p| p.0));
    let (lo, hi) = span(&mut finite.iter().map(|p| p.1));
    if finite.len() < 2 {
        return Err("a line chart needs at least two finite points".into());
    }
    let pad = ((hi - lo) * 0.05).max(1e-3);
    // Points all at one x (a distribution of one value) still get an axis around them.
    let x_pad = if axes.x_names.is_some() {
        0.25
    } else {
        ((x_hi - x_lo) * 0.02).max(x_hi.abs().max(1.0) * 1e-3)
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .caption(axes.title, ("sans-serif", 16))
            .x_label_area_size(34)
            .y_label_area_size(56)
            .build_cartesian_2d((x_lo - x_pad)..(x_hi + x_pad), (lo - pad)..(hi + pad))
            .map_err(|e| e.to_string())?;
        let name_of = |x: &f64| match axes.x_names {
            // Only whole positions carry a name.
            Some(names) if (x - x.round()).abs() < 1e-9 && *x >= 0.0 => {
                names.get(x.round() as usize).cloned().unwrap_or_default()
            }
            Some(_) => String::new(),
            None => format!("{x}"),
        };
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(axes.x_label).y_desc(axes.y_label);
        if let Some(names) = axes.x_names {
            mesh.x_labels(names.len()).x_label_formatter(&name_of);
        }
        mesh.draw().map_err(|e| e.to_string())?;
        for (k, (label, points)) in series.iter().enumerate() {
            let colour = PALETTE[k % PALETTE.len()];
            let line: Vec<(f64, f64)> = points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            if axes.x_names.is_some() {
                chart
                    .draw_series(line.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                    .map_err(|e| e.to_string())?;
            }
            chart
                .draw_series(LineSeries::new(line, colour.stroke_width(1)))
                .map_err(|e| e.to_string())?
                .label(label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2))
                });
        }
        if series.len() > 1 {
            chart
                .configure_series_labels()
                .position(axes.legend.clone())
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// The empirical distribution of each sample (label, values) as a step line, the y axis the
/// share of values at most x, the legend in the upper left (where a distribution leaves room).
pub fn cdf_svg(
    samples: &[(String, Vec<f64>)],
    title: &str,
    x_label: &str,
    y_label: &str,
) -> Result<String, String> {
    let lines: Vec<(String, Vec<(f64, f64)>)> = samples
        .iter()
        .map(|(label, values)| (label.clone(), cdf_points(values)))
        .collect();
    let axes = Axes {
        title,
        x_label,
        y_label,
        x_names: None,
        legend: SeriesLabelPosition::UpperLeft,
    };
    xy_svg(&lines, &axes)
}

/// The empirical distribution of `values` as the corners of its step line: at each value, the
/// share of values at most that large (non-finite values left out).
pub fn cdf_points(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    let mut points = Vec::with_capacity(2 * v.len());
    for (i, &x) in v.iter().enumerate() {
        points.push((x, i as f64 / n));
        points.push((x, (i + 1) as f64 / n));
    }
    points
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
        // A distribution of one value is a vertical step, drawn.
        let one = [("one".to_string(), cdf_points(&[1.2]))];
        let axes = Axes {
            title: "t",
            x_label: "x",
            y_label: "y",
            x_names: None,
            legend: SeriesLabelPosition::UpperLeft,
        };
        assert!(xy_svg(&one, &axes).is_ok());
    }

    #[test]
    fn a_cdf_steps_up_by_one_share_per_value() {
        let p = cdf_points(&[1.3, 1.1, f64::NAN, 1.2, 1.0]);
        assert_eq!(
            p,
            vec![
                (1.0, 0.0),
                (1.0, 0.25),
                (1.1, 0.25),
                (1.1, 0.5),
                (1.2, 0.5),
                (1.2, 0.75),
                (1.3, 0.75),
                (1.3, 1.0)
            ]
        );
    }

    #[test]
    fn named_positions_label_the_x_axis_and_mark_each_point() {
        let names: Vec<String> = ["48 KB", "96 KB", "192 KB"].map(String::from).to_vec();
        let series = vec![("IPC".to_string(), vec![(0.0, 0.7), (1.0, 0.9), (2.0, 1.1)])];
        let axes = Axes {
            title: "t",
            x_label: "L2 size",
            y_label: "IPC",
            x_names: Some(&names),
            legend: SeriesLabelPosition::UpperLeft,
        };
        let svg = xy_svg(&series, &axes).unwrap();
        for n in &names {
            assert!(svg.contains(n.as_str()), "{n} missing: {svg}");
        }
        assert_eq!(svg.matches("<circle").count(), 3, "{svg}");
    }
}
