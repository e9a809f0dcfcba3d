//! Colours every plot shares: colour-blind-safe scales for values (viridis for performance ratios,
//! purple–orange for differences) and a list of distinct colours for categories (tasks, series).

use plotters::prelude::RGBColor;

/// Okabe & Ito's eight colours, distinguishable under every common colour-vision deficiency.
pub const OKABE_ITO: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// Twenty-four categorical colours: Okabe & Ito's first seven, then Kelly's colours of maximum
/// contrast (1965) that differ from them. Beyond eight, colour alone does not separate every
/// pair for every reader, so plots that use more also label what they draw.
pub const CATEGORIES: [RGBColor; 24] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(135, 86, 146),
    RGBColor(161, 202, 241),
    RGBColor(190, 0, 50),
    RGBColor(194, 178, 128),
    RGBColor(132, 132, 130),
    RGBColor(0, 136, 86),
    RGBColor(230, 143, 172),
    RGBColor(0, 103, 165),
    RGBColor(249, 147, 121),
    RGBColor(96, 78, 151),
    RGBColor(246, 166, 0),
    RGBColor(179, 68, 108),
    RGBColor(220, 211, 0),
    RGBColor(136, 45, 23),
    RGBColor(141, 182, 0),
    RGBColor(101, 69, 34),
    RGBColor(43, 61, 38),
];

/// Matplotlib's viridis at nine stops (perceptually uniform, readable in grey and by
/// colour-blind readers); dark purple at 0, yellow at 1.
const VIRIDIS: [(u8, u8, u8); 9] = [
    (68, 1, 84),
    (71, 45, 123),
    (59, 82, 139),
    (44, 114, 142),
    (33, 145, 140),
    (40, 174, 128),
    (94, 201, 98),
    (173, 220, 48),
    (253, 231, 37),
];

/// ColorBrewer's PuOr (colour-blind safe, diverging): orange for negative, near-white at 0,
/// purple for positive.
const PURPLE_ORANGE: [(u8, u8, u8); 7] = [
    (179, 88, 6),
    (241, 163, 64),
    (254, 224, 182),
    (247, 247, 247),
    (216, 218, 235),
    (153, 142, 195),
    (84, 39, 136),
];

/// Linear interpolation through `stops` at `t` in [0, 1] (clamped).
fn through(stops: &[(u8, u8, u8)], t: f64) -> RGBColor {
    let x = t.clamp(0.0, 1.0) * (stops.len() - 1) as f64;
    let i = (x.floor() as usize).min(stops.len() - 2);
    let f = x - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
    let (a, b) = (stops[i], stops[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// A colour scale from values to colours, with the range its colour bar shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    /// Viridis from `min` (dark) to `max` (light); values outside take the end colours.
    Sequential { min: f64, max: f64 },
    /// Purple–orange symmetric about zero, saturated at ±`limit`.
    Diverging { limit: f64 },
}

impl Scale {
    /// The range of values the scale distinguishes.
    pub fn range(&self) -> (f64, f64) {
        match *self {
            Scale::Sequential { min, max } => (min, max),
            Scale::Diverging { limit } => (-limit, limit),
        }
    }

    /// The values a colour bar labels: the ends and evenly between (three steps over a
    /// sequential range, two on each side of a diverging one).
    pub fn ticks(&self) -> Vec<f64> {
        let (lo, hi) = self.range();
        let steps = match self {
            Scale::Sequential { .. } => 3,
            Scale::Diverging { .. } => 4,
        };
        (0..=steps)
            .map(|k| lo + (hi - lo) * k as f64 / steps as f64)
            .collect()
    }

    pub fn colour(&self, v: f64) -> RGBColor {
        let (lo, hi) = self.range();
        let t = (v - lo) / (hi - lo);
        match self {
            Scale::Sequential { .. } => through(&VIRIDIS, t),
            Scale::Diverging { .. } => through(&PURPLE_ORANGE, t),
        }
    }
}

/// Black or white, whichever reads better on `c` (relative luminance, ITU-R BT.709 weights).
pub fn ink_on(c: RGBColor) -> RGBColor {
    let y = 0.2126 * c.0 as f64 + 0.7152 * c.1 as f64 + 0.0722 * c.2 as f64;
    if y > 128.0 {
        RGBColor(0, 0, 0)
    } else {
        RGBColor(255, 255, 255)
    }
}

/// The width in pixels `text` takes at `px` pixels in a sans-serif font, generously estimated
/// (0.6 em per character; digits and lower case are narrower), for sizing a canvas to its labels.
pub fn text_width_px(text: &str, px: u32) -> u32 {
    (text.chars().count() as f64 * px as f64 * 0.6).ceil() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_are_distinct() {
        for (i, a) in CATEGORIES.iter().enumerate() {
            for b in &CATEGORIES[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn scales_hit_their_end_stops_and_clamp() {
        let s = Scale::Sequential {
            min: 0.25,
            max: 1.0,
        };
        assert_eq!(s.colour(0.25), RGBColor(68, 1, 84));
        assert_eq!(s.colour(1.0), RGBColor(253, 231, 37));
        assert_eq!(s.colour(5.0), s.colour(1.0));
        let d = Scale::Diverging { limit: 0.2 };
        assert_eq!(d.colour(0.0), RGBColor(247, 247, 247));
        assert_eq!(d.colour(-0.2), RGBColor(179, 88, 6));
        // Halfway between two stops is their mean.
        let mid = through(&[(0, 0, 0), (200, 100, 50)], 0.5);
        assert_eq!(mid, RGBColor(100, 50, 25));
    }

    #[test]
    fn ink_contrasts_with_its_background() {
        assert_eq!(ink_on(RGBColor(68, 1, 84)), RGBColor(255, 255, 255));
        assert_eq!(ink_on(RGBColor(253, 231, 37)), RGBColor(0, 0, 0));
    }
}
