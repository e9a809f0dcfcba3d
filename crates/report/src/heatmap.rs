//! A square heatmap as SVG (thesis Fig. 3.3's layout): a labelled cell per (row, column), full
//! names on both axes (the column names rotated), axis titles, and a colour bar. The canvas is
//! sized to its labels and title, so nothing is clipped however few or long the names.

use crate::palette::{ink_on, text_width_px, Scale};
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// What to draw.
pub struct Heatmap<'a> {
    pub title: String,
    /// A line under the title (what a cell is).
    pub subtitle: String,
    /// The names of the rows, and of the columns (the same list).
    pub labels: &'a [String],
    /// `cells[row][column]`; `None` is drawn grey and empty.
    pub cells: Vec<Vec<Option<f64>>>,
    pub scale: Scale,
    pub scale_title: &'a str,
    pub row_title: &'a str,
    pub column_title: &'a str,
    /// How a cell's value is printed in it.
    pub cell_text: fn(f64) -> String,
}

const CELL_PX: i32 = 36;
const LABEL_PX: u32 = 11;
const TITLE_PX: u32 = 16;
const BAR_W: i32 = 14;
const BAR_MIN_H: i32 = 160;
/// Steps of colour in the bar (finer is not visible and only makes the file larger).
const BAR_BANDS: i32 = 48;

type Area<'b> = DrawingArea<SVGBackend<'b>, plotters::coord::Shift>;

/// Room for the colour bar's tick labels (two decimals with a sign).
fn ticks_width() -> i32 {
    text_width_px("-0.00", LABEL_PX) as i32 + 8
}

fn font(px: u32) -> FontDesc<'static> {
    ("sans-serif", px).into_font()
}

fn draw<'b, E: Drawable<SVGBackend<'b>>>(root: &Area<'b>, e: E) -> Result<(), String>
where
    for<'x> &'x E: PointCollection<'x, (i32, i32)>,
{
    root.draw(&e).map_err(|e| e.to_string())
}

impl Heatmap<'_> {
    /// The SVG text.
    pub fn svg(&self) -> Result<String, String> {
        let n = self.labels.len() as i32;
        let name_w = self
            .labels
            .iter()
            .map(|l| text_width_px(l, LABEL_PX))
            .max()
            .unwrap_or(0) as i32;
        let head = 72; // title, subtitle, column-axis title
        let (left, top) = (26 + name_w + 8, head + name_w + 8);
        let grid = n * CELL_PX;
        let bar_h = grid.max(BAR_MIN_H);
        let bar_x = left + grid + 24;
        let right = bar_x + BAR_W + ticks_width() + 22;
        let width = right
            .max(10 + text_width_px(&self.title, TITLE_PX) as i32 + 10)
            .max(10 + text_width_px(&self.subtitle, LABEL_PX) as i32 + 10);
        let height = top + bar_h + 16;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (width as u32, height as u32))
                .into_drawing_area();
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            draw(
                &root,
                Text::new(self.title.clone(), (10, 20), font(TITLE_PX)),
            )?;
            draw(
                &root,
                Text::new(self.subtitle.clone(), (10, 38), font(LABEL_PX)),
            )?;
            let bold = ("sans-serif", 12, FontStyle::Bold).into_font();
            let centre = Pos::new(HPos::Center, VPos::Center);
            let across = TextStyle::from(bold.clone()).pos(centre);
            let column_title = self.column_title.to_string();
            draw(
                &root,
                Text::new(column_title, (left + grid / 2, 62), across),
            )?;
            let upwards = TextStyle::from(bold.transform(FontTransform::Rotate270)).pos(centre);
            let row_title = self.row_title.to_string();
            draw(&root, Text::new(row_title, (12, top + grid / 2), upwards))?;
            self.draw_labels(&root, left, top)?;
            self.draw_cells(&root, left, top)?;
            self.draw_bar(&root, bar_x, top, bar_h)?;
            root.present().map_err(|e| e.to_string())?;
        }
        Ok(svg)
    }

    fn draw_labels(&self, root: &Area, left: i32, top: i32) -> Result<(), String> {
        for (i, name) in self.labels.iter().enumerate() {
            let at = i as i32 * CELL_PX + CELL_PX / 2;
            let right_aligned =
                TextStyle::from(font(LABEL_PX)).pos(Pos::new(HPos::Right, VPos::Center));
            draw(
                root,
                Text::new(name.clone(), (left - 6, top + at), right_aligned),
            )?;
            // Rotated 270°, the text runs upwards from its anchor: left-aligned = bottom end.
            let upwards = TextStyle::from(font(LABEL_PX).transform(FontTransform::Rotate270))
                .pos(Pos::new(HPos::Left, VPos::Center));
            draw(root, Text::new(name.clone(), (left + at, top - 6), upwards))?;
        }
        Ok(())
    }

    fn draw_cells(&self, root: &Area, left: i32, top: i32) -> Result<(), String> {
        for (i, row) in self.cells.iter().enumerate() {
            for (j, c) in row.iter().enumerate() {
                let (x0, y0) = (left + j as i32 * CELL_PX, top + i as i32 * CELL_PX);
                // One pixel short of the cell on each side: the white background is the grid.
                let corners = [(x0 + 1, y0 + 1), (x0 + CELL_PX - 1, y0 + CELL_PX - 1)];
                let fill = c.map_or(RGBColor(220, 220, 220), |v| self.scale.colour(v));
                draw(root, Rectangle::new(corners, fill.filled()))?;
                if let Some(v) = c {
                    let ink = ink_on(fill);
                    let style = TextStyle::from(font(10))
                        .color(&ink)
                        .pos(Pos::new(HPos::Center, VPos::Center));
                    let centre = (x0 + CELL_PX / 2, y0 + CELL_PX / 2);
                    draw(root, Text::new((self.cell_text)(*v), centre, style))?;
                }
            }
        }
        Ok(())
    }

    /// A vertical colour bar from the scale's top value down to its bottom one, a tick per value of the scale's ticks, and
    /// its title rotated beside it.
    fn draw_bar(&self, root: &Area, x: i32, top: i32, h: i32) -> Result<(), String> {
        let (lo, hi) = self.scale.range();
        for band in 0..BAR_BANDS {
            let v = hi - (hi - lo) * (band as f64 + 0.5) / BAR_BANDS as f64;
            let (y0, y1) = (top + h * band / BAR_BANDS, top + h * (band + 1) / BAR_BANDS);
            let c = self.scale.colour(v);
            draw(root, Rectangle::new([(x, y0), (x + BAR_W, y1)], c.filled()))?;
        }
        draw(
            root,
            Rectangle::new([(x, top), (x + BAR_W, top + h)], BLACK.stroke_width(1)),
        )?;
        for v in self.scale.ticks() {
            let y = top + ((hi - v) / (hi - lo) * h as f64).round() as i32;
            draw(
                root,
                PathElement::new(vec![(x + BAR_W, y), (x + BAR_W + 4, y)], BLACK),
            )?;
            let style = TextStyle::from(font(10)).pos(Pos::new(HPos::Left, VPos::Center));
            draw(
                root,
                Text::new(format!("{v:.2}"), (x + BAR_W + 6, y), style),
            )?;
        }
        let ticks_w = ticks_width();
        let style = TextStyle::from(font(11).transform(FontTransform::Rotate90))
            .pos(Pos::new(HPos::Center, VPos::Center));
        draw(
            root,
            Text::new(
                self.scale_title.to_string(),
                (x + BAR_W + ticks_w + 10, top + h / 2),
                style,
            ),
        )
    }
}
